"""A stateless copy of one Kafka topic into another, for the test of what a stop and a restore give Kafka's sink.

Input: --source-topic, from its earliest offset, at most --per-batch records
per micro-batch. Output: one record per input record in --sink-topic, through
Spark's Kafka sink (at least once), whose value is the input record's
``<partition>:<offset>``: unique per input record, so a record the sink wrote
twice shows as the same value twice in the sink topic. The query is named and
checkpoints in the job's checkpoint root (``execution.checkpointing.dir``).
"""

import argparse

from pyspark.sql import SparkSession

parser = argparse.ArgumentParser()
parser.add_argument("--kafka", required=True, help="bootstrap servers")
parser.add_argument("--source-topic", required=True)
parser.add_argument("--sink-topic", required=True)
parser.add_argument("--query-name", default="copy")
parser.add_argument("--per-batch", type=int, default=50, help="Kafka records per micro-batch (maxOffsetsPerTrigger)")
parser.add_argument("--trigger", default="0 seconds", help="processing-time trigger; 0: micro-batches back to back")
args = parser.parse_args()

spark = SparkSession.builder.getOrCreate()
source = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", args.kafka)
    .option("subscribe", args.source_topic)
    .option("startingOffsets", "earliest")
    .option("maxOffsetsPerTrigger", args.per_batch)
    .load()
)
tagged = source.selectExpr("CAST(CONCAT(partition, ':', offset) AS STRING) AS value")
query = (
    tagged.writeStream.format("kafka")
    .option("kafka.bootstrap.servers", args.kafka)
    .option("topic", args.sink_topic)
    .queryName(args.query_name)
    .trigger(processingTime=args.trigger)
    .start()
)
query.awaitTermination()
print(f"query {args.query_name} stopped after batch {query.lastProgress['batchId'] if query.lastProgress else None}")
