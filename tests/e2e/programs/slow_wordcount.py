"""WordCount that takes its time: each partition sleeps before counting.

Used to kill a TaskExecutor, or cancel the job, while Spark tasks still run.
It reuses the example's tokenizer, shipped with ``--py-files``.
"""

import argparse
import time
from operator import add

from pyspark.sql import SparkSession

from wordcount import tokenize


def slow_tokenize(lines, delay):
    time.sleep(delay)
    for line in lines:
        yield from tokenize(line)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds each partition sleeps")
    parser.add_argument("--partitions", type=int, default=24)
    args = parser.parse_args()
    spark = SparkSession.builder.appName("SlowWordCount").getOrCreate()
    lines = spark.read.option("recursiveFileLookup", "true").text(args.input).rdd.map(lambda r: r.value).repartition(args.partitions)
    counts = lines.mapPartitions(lambda it: slow_tokenize(it, args.delay)).map(lambda w: (w, 1)).reduceByKey(add)
    spark.createDataFrame(counts.map(lambda wc: (f"{wc[0]}\t{wc[1]}",)), ["value"]).write.mode("overwrite").text(args.output)
    print("done")
    spark.stop()


if __name__ == "__main__":
    main()
