"""A PySpark job that uses memory where a TaskManager container has it: Python objects, cached blocks, a shuffle.

An ordinary PySpark script (plain ``spark-submit`` runs it), written to show that the memory model's
container sizes hold under load (YARN with its physical-memory check on kills a container that outgrows
its size). What it allocates, with the defaults (``--partitions 8 --mib 24``):

- Python: each task builds a dict of ``MIB`` MiB of 1 KiB random strings (24 MiB of text, about 27 MiB
  with the string headers, the dict and the keys) and holds it until its partition is cached. With 2
  slots per TaskExecutor two PySpark workers do this at once, roughly 2 x 60 MiB resident, within their
  limit: with the shipped configuration each may use 268 MiB (PYTHON's share of managed memory over the
  2 slots).
- Executor heap: the records, cached ``MEMORY_ONLY`` (PySpark caches the pickled records in the executor
  JVM): ``PARTITIONS x MIB`` = 192 MiB spread over the executors, within the storage memory of one
  executor of the shipped 2560m TaskManager (``spark.executor.memory`` 703m: (703 - 300) x 0.6 = 241 MiB
  unified memory). Each cached partition is one block of ``MIB`` MiB.
- Shuffle: every record is shuffled to a partition chosen by its checksum (all 192 MiB go through shuffle
  files and, between executors, Netty's direct buffers), then each partition is checked.

Measured with the shipped configuration (``jobcluster run -t local -p 2``: one TaskExecutor, 2 slots):
all 8 partitions cached (194 MiB), the TaskExecutor's whole process tree (TaskExecutor, Spark worker,
executor, PySpark workers) peaked at 1134 MiB resident of its 2560 MiB; the job ran 80 s on 2 loaded cores.

Output: ``CACHED <in memory>/<partitions> partitions, <MiB> MiB`` (what Spark's block managers held after the
first pass), then ``RESULT <records> <checksum>``, where checksum is the sum of the CRC-32 of every
record's text. The numbers depend only on the arguments (:func:`expected` computes them without Spark),
so a lost or duplicated record changes them.

    spark-submit tests/e2e/programs/memory_heavy.py [--partitions 8] [--mib 24]
"""

from __future__ import annotations

import argparse
import base64
import random
import zlib
from collections.abc import Iterator

from pyspark import StorageLevel
from pyspark.sql import SparkSession

RECORD_BYTES = 1024
RECORDS_PER_MIB = (1 << 20) // RECORD_BYTES


def texts(partition: int, count: int) -> Iterator[str]:
    """The records of ``partition``: ``count`` texts of 1 KiB (base64 of seeded random bytes). Random, because
    repetitive text takes almost nothing in Spark's cache and shuffle (measured: 96 MiB of it cached as 2 MiB)."""
    rng = random.Random(partition)
    for _ in range(count):
        yield base64.b64encode(rng.randbytes(RECORD_BYTES * 3 // 4)).decode("ascii")


def build_partition(partition: int, mib: int) -> Iterator[tuple[int, str]]:
    """The records of one partition, built first as a dict that the task holds while it emits them."""
    table = dict(enumerate(texts(partition, mib * RECORDS_PER_MIB)))
    for index, value in table.items():
        yield partition * mib * RECORDS_PER_MIB + index, value


def expected(partitions: int, mib: int) -> tuple[int, int]:
    """(records, checksum) as the job must print them, computed here without Spark."""
    sums = [(1, zlib.crc32(t.encode())) for p in range(partitions) for t in texts(p, mib * RECORDS_PER_MIB)]
    return len(sums), sum(c for _, c in sums)


def check_partition(records: Iterator[tuple[int, str]]) -> Iterator[tuple[int, int]]:
    count = checksum = 0
    for _, value in records:
        count += 1
        checksum += zlib.crc32(value.encode())
    yield count, checksum


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=8, help="tasks that build records (and cached blocks)")
    parser.add_argument("--mib", type=int, default=24, help="MiB of record text each task builds and caches")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("MemoryHeavy").getOrCreate()
    sc = spark.sparkContext
    mib = args.mib
    records = (
        sc.parallelize(range(args.partitions), args.partitions)
        .flatMap(lambda partition: build_partition(partition, mib))
        .persist(StorageLevel.MEMORY_ONLY)
    )
    first = records.count()

    cached = [info for info in sc._jsc.sc().getRDDStorageInfo() if info.id() == records.id()]
    in_memory = cached[0].numCachedPartitions() if cached else 0
    memory_mib = cached[0].memSize() / (1 << 20) if cached else 0.0
    print(f"CACHED {in_memory}/{args.partitions} partitions, {memory_mib:.0f} MiB", flush=True)

    shuffled = records.map(lambda kv: (zlib.crc32(kv[1].encode()), kv[1])).partitionBy(args.partitions)
    count, checksum = shuffled.mapPartitions(check_partition).reduce(lambda a, b: (a[0] + b[0], a[1] + b[1]))
    if count != first:
        raise SystemExit(f"Error: {first} records cached but {count} after the shuffle")
    print(f"RESULT {count} {checksum}", flush=True)
    records.unpersist()
    spark.stop()


if __name__ == "__main__":
    main()
