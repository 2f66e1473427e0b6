"""A word count on Spark 4's streaming state: transformWithStateInPandas over RocksDB, checkpoint format v2.

Input: new text files in --input-dir (Spark's file source). Per word, the
processor keeps its running count in a ValueState with a time to live
(--ttl-seconds, long enough never to expire in a test) and, when it first sees
the word, registers a processing-time timer --timer-delay seconds later. Output,
per micro-batch, as JSON in --output/batch=<id>/ (a batch run again replaces
its own directory): a ``count`` row for each word whose count changed, and a
``timer`` row for each word whose timer fired, with the count at that time. So
across a stop with a savepoint and a restore, every word's last count is exact
and every word's timer fires exactly once: none lost, none registered twice.

Needs Spark 4 (pandas, pyarrow, protobuf) and, as the test passes them with -D,
``spark.sql.streaming.stateStore.providerClass`` set to RocksDB's provider and
``spark.sql.streaming.stateStore.checkpointFormatVersion=2``.
"""

import argparse

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

parser = argparse.ArgumentParser()
parser.add_argument("--input-dir", required=True)
parser.add_argument("--output", required=True)
parser.add_argument("--query-name", default="words")
parser.add_argument("--per-batch", type=int, default=1, help="files per micro-batch")
parser.add_argument("--trigger", default="1 second")
parser.add_argument("--timer-delay", type=float, default=10.0, help="seconds from a word's first sight to its timer")
parser.add_argument("--ttl-seconds", type=int, default=3600)
args = parser.parse_args()

OUTPUT = "word string, count long, kind string"


class CountWithTimer(StatefulProcessor):
    def init(self, handle):
        self.handle = handle
        self.count = handle.getValueState("count", "count long", ttlDurationMs=args.ttl_seconds * 1000)

    def handleInputRows(self, key, rows, timerValues):
        seen = sum(len(frame) for frame in rows)
        before = self.count.get()[0] if self.count.exists() else 0
        if before == 0:
            self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + int(args.timer_delay * 1000))
        self.count.update((before + seen,))
        yield pd.DataFrame({"word": [key[0]], "count": [before + seen], "kind": ["count"]})

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        yield pd.DataFrame({"word": [key[0]], "count": [self.count.get()[0]], "kind": ["timer"]})

    def close(self):
        pass


spark = SparkSession.builder.getOrCreate()
lines = spark.readStream.format("text").option("maxFilesPerTrigger", args.per_batch).load(args.input_dir)
words = lines.select(F.explode(F.split("value", r"\s+")).alias("word")).where("word != ''")
counted = words.groupBy("word").transformWithStateInPandas(
    statefulProcessor=CountWithTimer(), outputStructType=OUTPUT, outputMode="Update", timeMode="ProcessingTime"
)


def write_batch(batch, batch_id):
    batch.coalesce(1).write.mode("overwrite").json(f"{args.output}/batch={batch_id:06d}")


query = (
    counted.writeStream.outputMode("update")
    .foreachBatch(write_batch)
    .queryName(args.query_name)
    .trigger(processingTime=args.trigger)
    .start()
)
query.awaitTermination()
print(f"query {args.query_name} stopped after batch {query.lastProgress['batchId'] if query.lastProgress else None}")
