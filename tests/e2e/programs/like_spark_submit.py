"""Does what users expect of a program that ``spark-submit`` runs in client mode from their shell.

Run it from a directory holding ``input.txt``, as ``like_spark_submit.py OUTPUT`` with
``--py-files lib/shipped_lib.py``. It prints its working directory, what stdin
gives, the line count of ``input.txt`` read by Spark through a relative path,
results computed with a sibling module and a ``--py-files`` module, writes
OUTPUT (relative) with Spark, prints 2,000 numbered lines of 100 bytes
(200 KB), a line to stderr, then ``waiting for go`` and waits until a file
``go`` appears in its working directory (so the caller can check the line
arrives while the program still runs) before it prints ``got go`` and ends.
"""

import os
import sys
import time

import shipped_lib
import sibling_helper
from pyspark.sql import SparkSession

GO_TIMEOUT = 300  # seconds to wait for the go-ahead


def main() -> None:
    output = sys.argv[1]
    print(f"cwd={os.getcwd()}")
    print(f"stdin={sys.stdin.read()!r}")
    print(f"helper={sibling_helper.NAME}")
    print("this line goes to stderr only", file=sys.stderr)
    spark = SparkSession.builder.appName("like-spark-submit").getOrCreate()
    sc = spark.sparkContext
    print(f"input lines={spark.read.text('input.txt').count()}")
    print(f"shipped={sc.parallelize(range(4), 2).map(shipped_lib.double).collect()}")
    spark.createDataFrame([("written",)], ["value"]).write.text(output)
    for i in range(2000):
        print(f"line {i:05d} " + "x" * 89)
    print("waiting for go")
    deadline = time.monotonic() + GO_TIMEOUT
    while not os.path.exists("go"):
        if time.monotonic() > deadline:
            sys.exit("no go-ahead came: the caller never saw 'waiting for go'")
        time.sleep(0.2)
    print("got go")
    spark.stop()


if __name__ == "__main__":
    main()
