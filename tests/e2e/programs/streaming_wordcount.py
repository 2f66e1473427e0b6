"""A stateful streaming word count, for the checkpoint and savepoint tests: running counts per word, per micro-batch.

Input: new text files in --input-dir (Spark's file source), or a Kafka topic
(--kafka BOOTSTRAP --topic NAME). Output: for each micro-batch, the words
whose count changed and their running count, as JSON in --output/batch=<id>/;
a batch run again (after a failover) replaces its own directory, so the sink
is idempotent and a word's count is the one of the last batch that has it.
With --progress-file, each progress report of the query is appended there as
one line of JSON (Spark's StreamingQueryProgress), for a benchmark that runs
the program under spark-submit, where no REST API reports it.
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQueryListener

parser = argparse.ArgumentParser()
parser.add_argument("--input-dir")
parser.add_argument("--kafka")
parser.add_argument("--topic")
parser.add_argument("--output", required=True)
parser.add_argument("--query-name", default="wordcount")
parser.add_argument("--per-batch", type=int, default=1, help="files (or Kafka records) per micro-batch")
parser.add_argument("--trigger", default="1 second")
parser.add_argument("--progress-file", help="append each progress report here, one JSON line each")
args = parser.parse_args()

spark = SparkSession.builder.getOrCreate()


class ProgressToFile(StreamingQueryListener):
    """Appends each progress report to --progress-file; Spark calls it on the listener bus, off the query's thread."""

    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        with open(args.progress_file, "a") as out:
            out.write(event.progress.json + "\n")

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        pass


if args.progress_file:
    spark.streams.addListener(ProgressToFile())
if args.kafka:
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.kafka)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", args.per_batch)
        .load()
    )
    lines = source.selectExpr("CAST(value AS STRING) AS line")
else:
    lines = (
        spark.readStream.format("text").option("maxFilesPerTrigger", args.per_batch).load(args.input_dir).withColumnRenamed("value", "line")
    )

words = lines.select(F.explode(F.split("line", r"\s+")).alias("word")).where("word != ''")
counts = words.groupBy("word").count()


def write_batch(batch, batch_id):
    batch.coalesce(1).write.mode("overwrite").json(f"{args.output}/batch={batch_id:06d}")


query = (
    counts.writeStream.outputMode("update")
    .foreachBatch(write_batch)
    .queryName(args.query_name)
    .trigger(processingTime=args.trigger)
    .start()
)
query.awaitTermination()
print(f"query {args.query_name} stopped after batch {query.lastProgress['batchId'] if query.lastProgress else None}")
