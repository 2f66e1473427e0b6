"""Reports what Spark really gave this application: its executors' cores, and chosen Spark settings.

Prints ``EXECUTOR_CORES=<sum of the executors' cores>``, ``EXECUTORS=<count>``,
``DEFAULT_PARALLELISM=<n>`` and ``CONF <key>=<value>`` for each key given as an
argument. The cores come from Spark's monitoring API, read once they stopped
changing, after a job that needs all of them (none in Spark's local mode, where the driver runs the tasks).
"""

import json
import sys
import time
import urllib.request

from pyspark.sql import SparkSession


def executors(spark: SparkSession) -> list[dict]:
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/executors"
    with urllib.request.urlopen(url, timeout=10) as response:
        return [e for e in json.load(response) if e["id"] != "driver" and e.get("isActive", True)]


def settled_executors(spark: SparkSession, quiet_seconds: float = 5.0, timeout: float = 120.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        current = executors(spark)
        key = sorted((e["id"], e["totalCores"]) for e in current)
        if key != last:
            last, since = key, time.monotonic()
        elif current and time.monotonic() - since >= quiet_seconds:
            return current
        time.sleep(0.5)
    return executors(spark)


def main() -> None:
    spark = SparkSession.builder.appName("SparkCores").getOrCreate()
    sc = spark.sparkContext
    n = sc.defaultParallelism * 4
    sc.parallelize(range(n), n).map(lambda x: (time.sleep(0.2), x)[1]).count()
    # in local mode (the MiniCluster) the driver runs the tasks: there is no executor to wait for
    found = [] if sc.master.startswith("local") else settled_executors(spark)
    print(f"EXECUTOR_CORES={sum(e['totalCores'] for e in found)}")
    print(f"EXECUTORS={len(found)}")
    print(f"DEFAULT_PARALLELISM={sc.defaultParallelism}")
    for key in sys.argv[1:]:
        print(f"CONF {key}={spark.conf.get(key, None)}")
    spark.stop()


if __name__ == "__main__":
    main()
