"""A stateful streaming word count, for the checkpoint and savepoint tests: running counts per word, per micro-batch.

Input: new text files in --input-dir (Spark's file source), or a Kafka topic
(--kafka BOOTSTRAP --topic NAME). Output: for each micro-batch, the words
whose count changed and their running count, as JSON in --output/batch=<id>/;
a batch run again (after a failover) replaces its own directory, so the sink
is idempotent and a word's count is the one of the last batch that has it.
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

parser = argparse.ArgumentParser()
parser.add_argument("--input-dir")
parser.add_argument("--kafka")
parser.add_argument("--topic")
parser.add_argument("--output", required=True)
parser.add_argument("--query-name", default="wordcount")
parser.add_argument("--per-batch", type=int, default=1, help="files (or Kafka records) per micro-batch")
parser.add_argument("--trigger", default="1 second")
args = parser.parse_args()

spark = SparkSession.builder.getOrCreate()
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
