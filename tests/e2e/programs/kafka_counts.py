"""Reads a Kafka topic with Spark Structured Streaming through Spark's own Kafka connector (shipped with --jars).

Usage: kafka_counts.py BOOTSTRAP_SERVERS TOPIC OUTPUT_DIR CHECKPOINT_DIR

One query with ``trigger(availableNow=True)``: everything in the topic now,
written as JSON lines (key, value, partition, offset) to OUTPUT_DIR, then the
query ends. Then a batch read of that output prints ``COUNT <key> <n>`` per key,
sorted, and ``ROWS <n>``. The offsets are planned on the driver (its classpath
needs the connector) and the records read by the executors' tasks (so do theirs).
"""

import sys

from pyspark.sql import SparkSession

bootstrap, topic, output, checkpoint = sys.argv[1:5]
spark = SparkSession.builder.appName("kafka-counts").getOrCreate()

records = (
    spark.readStream.format("kafka")
    .option("kafka.bootstrap.servers", bootstrap)
    .option("subscribe", topic)
    .option("startingOffsets", "earliest")
    .load()
    .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "partition", "offset")
)
query = (
    records.writeStream.format("json").option("path", output).option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
)
query.awaitTermination()

written = spark.read.json(output)
for row in sorted(written.groupBy("key").count().collect()):
    print(f"COUNT {row['key']} {row['count']}")
print(f"ROWS {written.count()}")
spark.stop()
