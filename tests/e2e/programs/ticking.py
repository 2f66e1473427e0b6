"""A job that keeps its executors busy with one small Spark job per tick until it is cancelled.

Used to look at a running job cluster from outside: its sockets, its processes'
environments, and how it treats callers without its secret or token.
"""

import argparse
import time

from pyspark.sql import SparkSession


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=600)
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between ticks")
    args = parser.parse_args()
    sc = SparkSession.builder.appName("ticking").getOrCreate().sparkContext
    for tick in range(args.ticks):
        total = sc.parallelize(range(1000), 2).map(lambda x: x * x).sum()
        print(f"tick {tick}: {total}", flush=True)
        time.sleep(args.interval)


if __name__ == "__main__":
    main()
