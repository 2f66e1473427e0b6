"""SocketWindowWordCount in PySpark: words of the lines read from a socket, counted per 5-second window.

Flink's example of the same name, written with Spark Structured Streaming:
lines come from a TCP server (``--hostname``, ``--port``), words are split on
whitespace, counted per word in tumbling windows of 5 seconds of the time each
line arrived (processing time, as Flink's example windows), and printed by
Spark's console sink, each window's counts again whenever they change. Try it
with ``nc`` as the server, typing lines into it::

    nc -lk 9999
    jobcluster run examples/socket_window_word_count.py --hostname localhost --port 9999

The driver connects to the server (in a job cluster: the JobManager's host
must reach it). Spark's socket source keeps nothing replayable, so the job has
no exactly-once guarantee and no state to savepoint: end it with
``jobcluster cancel JOB_ID`` (Ctrl-C only leaves an attached run, the job goes on).
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--hostname", default="localhost")
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--window", default="5 seconds", help="length of the tumbling windows")
args = parser.parse_args()

spark = SparkSession.builder.appName("SocketWindowWordCount").getOrCreate()
lines = (
    spark.readStream.format("socket")
    .option("host", args.hostname)
    .option("port", args.port)
    .option("includeTimestamp", True)  # when the line arrived: the processing time the windows cut
    .load()
)
words = lines.select(F.explode(F.split("value", r"\s+")).alias("word"), "timestamp").where("word != ''")
counts = words.groupBy(F.window("timestamp", args.window), "word").count()
# flat columns print as a readable table: window start, end, word, count
rows = counts.select(F.col("window.start").alias("start"), F.col("window.end").alias("end"), "word", "count")

query = (
    rows.writeStream.outputMode("update")
    .format("console")
    .option("truncate", False)
    .option("numRows", 1000)
    .trigger(processingTime=args.window)
    .start()
)
query.awaitTermination()
