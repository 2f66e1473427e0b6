"""Fails the way its argument says: ``py4j`` (a Java exception through Py4J) or ``exit3`` (``sys.exit(3)``)."""

import sys

from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("FailingWays").getOrCreate()
print("started")
if sys.argv[1] == "py4j":
    spark._jvm.java.lang.Class.forName("no.such.Klass")
elif sys.argv[1] == "exit3":
    sys.exit(3)
