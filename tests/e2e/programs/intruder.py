"""A Spark client that tries to register an application with a job's Spark master, guessing the secret.

``intruder.py SPARK_MASTER_URL``: prints ``REGISTERED <app id>`` if the master took it.
"""

import sys

from pyspark.sql import SparkSession

spark = (
    SparkSession.builder.master(sys.argv[1])
    .appName("intruder")
    .config("spark.ui.enabled", "false")
    .config("spark.authenticate", "true")
    .config("spark.authenticate.secret", "a-guess")
    .getOrCreate()
)
print("REGISTERED", spark.sparkContext.applicationId, flush=True)
print("SUM", spark.sparkContext.parallelize(range(10)).sum(), flush=True)
