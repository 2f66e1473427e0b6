"""Reading why a PySpark driver failed, and the Spark settings derived from the JobGraph."""

from __future__ import annotations

from jobcluster.jobgraph.model import JobGraph, JobVertex, new_job_id
from jobcluster.runtime.jobmaster.spark_application import last_python_traceback, submit_conf
from jobcluster.spark.processes import SparkMasterAddress

DRIVER_OUTPUT = """some output
Traceback (most recent call last):
  File "a.py", line 1, in <module>
    first()
ValueError: first failure
more output
Traceback (most recent call last):
  File "b.py", line 7, in <module>
    raise RuntimeError("boom")
RuntimeError: boom
26/11/21 INFO ShutdownHookManager: Shutdown hook called
"""


def test_last_traceback_is_cut_at_its_exception_line():
    tb = last_python_traceback(DRIVER_OUTPUT)
    assert tb.splitlines()[0].startswith("Traceback")
    assert tb.splitlines()[-1] == "RuntimeError: boom"
    assert "first failure" not in tb and "ShutdownHookManager" not in tb


def test_no_traceback():
    assert last_python_traceback("all good\n") is None


def test_parallelism_reaches_spark():
    graph = JobGraph(
        job_id=new_job_id(),
        job_name="wc",
        vertices=[JobVertex(id=new_job_id(), name="v", program="wc.py", parallelism=6, max_parallelism=128)],
    )
    conf = submit_conf(graph, SparkMasterAddress("spark://h:1", "http://h:2"), "127.0.0.1", 4040, {"spark.executor.memory": "703m"})
    assert conf["spark.cores.max"] == conf["spark.default.parallelism"] == conf["spark.sql.shuffle.partitions"] == "6"
    assert conf["spark.master"] == "spark://h:1" and conf["spark.submit.deployMode"] == "client"
    assert conf["spark.executor.memory"] == "703m"
