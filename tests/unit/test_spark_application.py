"""The Spark settings derived from the JobGraph."""

from __future__ import annotations

from jobcluster.jobgraph.model import JobGraph, JobVertex, new_job_id
from jobcluster.runtime.jobmaster.spark_application import submit_conf
from jobcluster.spark.processes import SparkMasterAddress


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
