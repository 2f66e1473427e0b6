"""A stateless streaming job into Spark's file sink, for the tests of what a stop and a restore give a sink.

Input: new text files in --input-dir, one per micro-batch. Output: one JSON
row per word in --output, through Spark's file sink, whose log
(``<output>/_spark_metadata/<batch id>``) skips a batch id it already holds:
the sink that a re-planned batch id would lose data in. A line ``__slow__``
makes its micro-batch take --slow-seconds (a stop that lands in it must wait
for its commit).
"""

import argparse
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

parser = argparse.ArgumentParser()
parser.add_argument("--input-dir", required=True)
parser.add_argument("--output", required=True)
parser.add_argument("--query-name", default="words")
parser.add_argument("--slow-seconds", type=float, default=20.0)
args = parser.parse_args()


def slow_down(word):
    if word == "__slow__":
        time.sleep(args.slow_seconds)
    return word


spark = SparkSession.builder.getOrCreate()
lines = spark.readStream.format("text").option("maxFilesPerTrigger", 1).load(args.input_dir)
words = lines.select(F.explode(F.split("value", r"\s+")).alias("word")).where("word != ''")
words = words.select(F.udf(slow_down, StringType())("word").alias("word"))
# start(path, format, outputMode, partitionBy, queryName) by position, as a program may: jobcluster still sees its name
query = words.writeStream.trigger(processingTime="1 second").start(args.output, "json", "append", None, args.query_name)
query.awaitTermination()
