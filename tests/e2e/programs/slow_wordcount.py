"""WordCount that takes its time: each partition sleeps before counting.

Used to kill a TaskExecutor or a JobManager, or cancel the job, while Spark tasks still run.
It reuses the example's input reading (local paths and hdfs:// alike) and tokenizer,
shipped with ``--py-files``.
"""

import argparse
import shutil
import tempfile
import time
from operator import add

from pyspark.sql import SparkSession
from wordcount import input_lines, tokenize


def slow_words(lines, delay):
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
    scratch = tempfile.mkdtemp(prefix="slow-wordcount-")
    try:
        _, lines = input_lines(spark.sparkContext, args.input, scratch)
        words = lines.repartition(args.partitions).mapPartitions(lambda it: slow_words(it, args.delay))
        counts = words.map(lambda w: (w, 1)).reduceByKey(add)
        spark.createDataFrame(counts.map(lambda wc: (f"{wc[0]}\t{wc[1]}",)), "value string").write.mode("overwrite").text(args.output)
        print("done")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
