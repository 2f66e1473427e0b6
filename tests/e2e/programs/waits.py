"""A PySpark program that keeps its job RUNNING for a while: a tiny Spark job every second.

Used to cancel the job, or kill its JobManager or client, while executors run.
Arguments: SECONDS [GATE]: it finishes after SECONDS, or once the file GATE exists.
"""

import os
import sys
import time

from pyspark.sql import SparkSession


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 120.0
    gate = sys.argv[2] if len(sys.argv) > 2 else None
    spark = SparkSession.builder.appName("Waits").getOrCreate()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (gate and os.path.exists(gate)):
        spark.sparkContext.parallelize(range(10), 1).count()
        time.sleep(1)
    print("done")
    spark.stop()


if __name__ == "__main__":
    main()
