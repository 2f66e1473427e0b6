"""A streaming query through Spark Connect: the program makes its own Connect session (a local server in the driver).

A rate source counted into the noop sink, as query --query-name; the program
waits for it. jobcluster's driver agent cannot take savepoints of such a query:
the tests check that a stop or savepoint is refused while the job runs on, and
that a restore (-s) is refused before the query starts.
"""

import argparse

from pyspark.sql import SparkSession

parser = argparse.ArgumentParser()
parser.add_argument("--query-name", default="ticks")
args = parser.parse_args()

spark = SparkSession.builder.remote("local[1]").getOrCreate()
ticks = spark.readStream.format("rate").option("rowsPerSecond", 5).load()
query = ticks.writeStream.format("noop").queryName(args.query_name).trigger(processingTime="1 second").start()
query.awaitTermination()
