"""A PySpark program whose driver reserves address space it never touches, as JVMs and allocators do.

An ordinary PySpark script (plain ``spark-submit`` runs it). After one small Spark job it maps ``--mib`` MiB
that no page is ever written to (read-only: no memory is used, no commit charged), then waits ``--hold``
seconds. Only a check of virtual memory sees it: YARN's (``yarn.nodemanager.vmem-check-enabled``, Hadoop's
default) kills the container the driver runs in, the ApplicationMaster's.

    spark-submit tests/e2e/programs/address_space.py --mib 16384 --hold 120
"""

from __future__ import annotations

import argparse
import mmap
import time

from pyspark.sql import SparkSession


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, required=True, help="MiB of address space the driver reserves")
    parser.add_argument("--hold", type=float, default=120.0, help="seconds it holds them before it ends")
    args = parser.parse_args()
    spark = SparkSession.builder.appName("AddressSpace").getOrCreate()
    spark.range(10).count()
    reserved = mmap.mmap(-1, args.mib << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ)
    print(f"RESERVED {args.mib} MiB", flush=True)
    time.sleep(args.hold)
    reserved.close()
    spark.stop()


if __name__ == "__main__":
    main()
