"""The Spark settings derived from the JobGraph, and the driver's environment."""

from __future__ import annotations

import pytest

from jobcluster.jobgraph.model import JobGraph, JobVertex, new_job_id
from jobcluster.runtime.jobmaster.spark_application import active_executors, driver_env, submit_conf
from jobcluster.spark.processes import SparkLocalMode, SparkMasterAddress


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


def test_the_driver_waits_for_all_of_the_jobs_cores_unless_the_user_says_otherwise():
    graph = JobGraph(
        job_id=new_job_id(),
        job_name="wc",
        vertices=[JobVertex(id=new_job_id(), name="v", program="wc.py", parallelism=4, max_parallelism=128)],
    )
    master = SparkMasterAddress("spark://h:1", "http://h:2")
    conf = submit_conf(graph, master, "127.0.0.1", 4040, {}, resources_wait=120.4)
    assert conf["spark.scheduler.minRegisteredResourcesRatio"] == "1.0"
    assert conf["spark.scheduler.maxRegisteredResourcesWaitingTime"] == "120s"
    users = submit_conf(graph, master, "127.0.0.1", 4040, {"spark.scheduler.minRegisteredResourcesRatio": "0.5"})
    assert users["spark.scheduler.minRegisteredResourcesRatio"] == "0.5"


def test_in_local_mode_the_job_runs_on_as_many_threads_as_slots_with_no_executors_to_wait_for():
    graph = JobGraph(
        job_id=new_job_id(),
        job_name="wc",
        vertices=[JobVertex(id=new_job_id(), name="v", program="wc.py", parallelism=4, max_parallelism=128)],
    )
    master = SparkLocalMode(graph.required_slots()).address
    conf = submit_conf(graph, master, "127.0.0.1", 4040, {})
    assert master.local_mode and conf["spark.master"] == "local[4]"
    assert conf["spark.default.parallelism"] == conf["spark.sql.shuffle.partitions"] == "4"
    assert not {"spark.cores.max", "spark.scheduler.minRegisteredResourcesRatio"} & set(conf)
    with pytest.raises(ValueError, match="at least one core"):
        SparkLocalMode(0)


def test_in_local_mode_the_driver_is_the_executor_that_runs_tasks():
    executors = [{"id": "driver", "isActive": True}]
    assert active_executors(executors, local_mode=True) == 1
    assert active_executors(executors, local_mode=False) == 0
    assert active_executors([*executors, {"id": "0"}, {"id": "1", "isActive": False}], local_mode=False) == 1


def test_the_driver_does_not_take_yarns_web_proxy_path_as_its_uis_root(monkeypatch, tmp_path):
    # YARN sets it in the ApplicationMaster's environment; Spark's UI would prefer it to the root the REST endpoint gives it
    monkeypatch.setenv("APPLICATION_WEB_PROXY_BASE", "/proxy/application_1_0001")
    env = driver_env(tmp_path / "driver.properties", [], tmp_path / "log4j2.properties", {"SPARK_LOCAL_IP": "127.0.0.1"})
    assert "APPLICATION_WEB_PROXY_BASE" not in env
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1" and f"--properties-file {tmp_path / 'driver.properties'}" in env["PYSPARK_SUBMIT_ARGS"]
