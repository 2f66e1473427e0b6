"""Reports what Spark really gave this application: its executors' cores, and chosen Spark settings.

Prints ``EXECUTOR_CORES=<sum of the executors' cores>``, ``EXECUTORS=<count>``,
``DEFAULT_PARALLELISM=<n>``, ``CONF <key>=<value>`` for each key given as an
argument with ``ON_A_COMMAND_LINE <key>=<True|False>``: whether a descendant's command line holds its
value. The cores come from Spark's monitoring API, read once they stopped changing, after a job that
needs all of them (none in Spark's local mode, where the driver runs the tasks).
"""

import json
import os
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
    command_lines = descendants_command_lines()
    for key in sys.argv[1:]:
        value = spark.conf.get(key, None)
        print(f"CONF {key}={value}")
        print(f"ON_A_COMMAND_LINE {key}={bool(value) and any(value in line for line in command_lines)}")
    spark.stop()


def descendants_command_lines() -> list[str]:
    """The command lines of this process's descendants (the driver JVM), as `ps` shows them to every user."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    mine, found = {os.getpid()}, True
    while found:
        found = False
        for pid, parent in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                found = True
    lines = []
    for pid in mine - {os.getpid()}:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                lines.append(cmdline.read().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return lines


if __name__ == "__main__":
    main()
