"""A PySpark job whose tasks allocate native memory in the executor JVM, outside every limit of the memory model.

An ordinary PySpark script (plain ``spark-submit`` runs it). Each task calls Spark's own
``org.apache.spark.unsafe.Platform.allocateMemory`` and ``setMemory`` through Spark SQL's ``reflect``
(no jar needed), so that ``--mib`` MiB are allocated and every byte written (resident), then holds them
for ``--hold`` seconds and ends (the memory is never freed: the executor keeps it until it exits).
None of the JVM's limits (``-Xmx``, ``-XX:MaxDirectMemorySize``, ``-XX:MaxMetaspaceSize``) covers such
memory, as none covers a JNI library's: it comes out of the container's JVM overhead. Given more than
that, YARN's physical-memory check or a pod's memory limit kills the container, and on ``local`` the
JobManager warns that the TaskExecutor is over its size.

Output: ``ALLOCATED <partitions> x <mib> MiB`` once every task has held its memory.

    spark-submit tests/e2e/programs/native_memory.py --mib 3072 --hold 10 [--partitions 1]
"""

from __future__ import annotations

import argparse

from pyspark.sql import SparkSession

PLATFORM = "'org.apache.spark.unsafe.Platform'"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, required=True, help="MiB of native memory each task allocates and writes")
    parser.add_argument("--hold", type=float, default=10.0, help="seconds each task holds it before it ends")
    parser.add_argument("--partitions", type=int, default=1, help="tasks")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("NativeMemory").getOrCreate()
    size = f"CAST({args.mib << 20} AS BIGINT)"
    address = f"CAST(reflect({PLATFORM}, 'allocateMemory', {size}) AS BIGINT)"
    written = f"reflect({PLATFORM}, 'setMemory', {address}, CAST(1 AS TINYINT), {size})"  # void: NULL, once every byte is written
    # one nested expression, so that the order holds whatever the optimizer does: allocate, write, then hold
    held = f"reflect('java.lang.Thread', 'sleep', CAST({int(args.hold * 1000)} + coalesce(length({written}), 0) AS BIGINT))"
    rows = spark.range(args.partitions, numPartitions=args.partitions).selectExpr(f"{held} AS held").collect()
    print(f"ALLOCATED {len(rows)} x {args.mib} MiB", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
