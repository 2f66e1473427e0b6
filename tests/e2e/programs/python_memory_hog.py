"""A PySpark job whose Python tasks each hold more memory than a PySpark worker of the shipped TaskManager may use.

An ordinary PySpark script (plain ``spark-submit`` runs it). Each of ``--tasks`` tasks fills ``--mib`` MiB
(default 1,000) and holds it while it reports. With the shipped configuration a PySpark worker may use
268 MiB (PYTHON's share of managed memory over 2 slots), so every task
fails at once with ``MemoryError`` and the job fails; without a limit the workers would fill the container
(and on YARN or Kubernetes get it killed for memory).

Output when the memory was there: ``HELD <tasks> x <MiB> MiB``.

    spark-submit tests/e2e/programs/python_memory_hog.py [--tasks 2] [--mib 1000]
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from pyspark.sql import SparkSession


def hold(mib: int) -> Iterator[int]:
    held = bytes([1]) * (mib << 20)  # every page written, so all of it is resident
    yield len(held) >> 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=2, help="tasks that each hold --mib MiB at once")
    parser.add_argument("--mib", type=int, default=1000, help="MiB each task fills and holds")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("PythonMemoryHog").getOrCreate()
    mib = args.mib
    held = spark.sparkContext.parallelize(range(args.tasks), args.tasks).mapPartitions(lambda _: hold(mib)).collect()
    print(f"HELD {len(held)} x {min(held)} MiB", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
