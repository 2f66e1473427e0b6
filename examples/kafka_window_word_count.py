"""Windowed word count from a Kafka topic to JSON files, exactly once, with Flink's savepoints.

Words of the topic's records (split on whitespace) are counted per word in
tumbling event-time windows (``--window``, default 10 seconds) of the records'
Kafka timestamps. A window is written once, when it is complete: when the
watermark (the latest timestamp seen minus ``--watermark``, default 5 seconds)
has passed its end, so records up to that late still count and later ones are
dropped. Spark's file sink writes the windows as JSON lines
``{"start", "end", "word", "count"}`` under ``--output`` and logs every file it
commits in ``--output/_spark_metadata``; read the output through that log
(``spark.read.json(OUTPUT)`` does) and every window is there exactly once, even
after failures.

The query is named (``window_word_count``), and the program sets no checkpoint
location: the job cluster's checkpoint root gives it one, so restarts and
savepoints work as in Flink::

    JARS=spark-sql-kafka-0-10_2.13-4.3.0.jar,spark-token-provider-kafka-0-10_2.13-4.3.0.jar,kafka-clients-3.9.2.jar,commons-pool2-2.13.1.jar
    jobcluster run -d -D execution.checkpointing.dir=/tmp/checkpoints --jars "$JARS" \
        examples/kafka_window_word_count.py --bootstrap-servers localhost:9092 --topic words --output /tmp/window-counts
    jobcluster stop -p /tmp/savepoints JOB_ID

and the same ``jobcluster run`` with ``-s SAVEPOINT_PATH`` (the path ``stop`` printed)
resumes it: windows written before the stop are not written again. A savepoint
the job ran on after (``jobcluster savepoint``) is restored into a new
``--output``: the file sink's log lives in the output, not the savepoint, and
skips the batch ids it already has (docs/concepts/streaming.md, what each sink gets).
``--jars`` ships Spark's Kafka connector of pyspark's exact Spark version and what
it needs (Maven: ``org.apache.spark:spark-sql-kafka-0-10_2.13`` for Spark 4, ``_2.12``
for 3.5; docs/deployment/spark-versions.md).
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--bootstrap-servers", required=True, help="Kafka's bootstrap servers, HOST:PORT[,...]")
parser.add_argument("--topic", required=True)
parser.add_argument("--output", required=True, help="directory of the JSON files (any file system Spark writes)")
parser.add_argument("--window", default="10 seconds", help="length of the tumbling event-time windows")
parser.add_argument("--watermark", default="5 seconds", help="how late a record may be and still count")
parser.add_argument("--trigger", default="1 second", help="interval of the micro-batches")
args = parser.parse_args()

spark = SparkSession.builder.appName("KafkaWindowWordCount").getOrCreate()
records = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", args.bootstrap_servers)
    .option("subscribe", args.topic)
    .option("startingOffsets", "earliest")
    .load()
)
words = records.select(F.explode(F.split(F.col("value").cast("string"), r"\s+")).alias("word"), "timestamp").where("word != ''")
counts = words.withWatermark("timestamp", args.watermark).groupBy(F.window("timestamp", args.window), "word").count()
rows = counts.select(F.col("window.start").alias("start"), F.col("window.end").alias("end"), "word", "count")

query = (
    rows.writeStream.outputMode("append")  # each window once, when the watermark closes it
    .format("json")
    .option("path", args.output)
    .queryName("window_word_count")  # its checkpoint is <checkpoint root>/window_word_count
    .trigger(processingTime=args.trigger)
    .start()
)
query.awaitTermination()
