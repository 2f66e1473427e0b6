"""A PySpark program that raises: the job must end FAILED with this message."""

from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("Failing").getOrCreate()
spark.sparkContext.parallelize(range(10)).count()
raise RuntimeError("this pipeline fails on purpose")
