"""The TaskExecutor's launch contract: what a driver puts into a process's environment is what the runner reads back."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobcluster.errors import IllegalConfigurationError
from jobcluster.runtime.entrypoint import layout
from jobcluster.runtime.taskexecutor.launch import TaskExecutorLaunch, TaskExecutorLaunchSettings, TaskExecutorLocation
from jobcluster.spark.processes import SparkMasterAddress

SETTINGS = TaskExecutorLaunchSettings(
    "wc", "http://10.0.0.5:6123", "rm-1", SparkMasterAddress("spark://10.0.0.5:7077", "http://10.0.0.5:8080")
)


def test_a_local_launch_reads_back_as_it_was_written_and_the_secret_leaves_the_environment(tmp_path):
    location = TaskExecutorLocation(tmp_path / "cluster", tmp_path / "log", "127.0.0.1")
    env = SETTINGS.environment("wc-taskmanager-1", secret="s3cr3t", location=location)
    launch = TaskExecutorLaunch.from_environ(env)
    assert launch == TaskExecutorLaunch(SETTINGS, "wc-taskmanager-1", location, "s3cr3t")
    assert layout.ENV_CLUSTER_SECRET not in env, "the processes the TaskExecutor starts do not inherit the secret"


def test_a_platform_that_ships_the_secret_and_sets_the_location_gets_neither(tmp_path):
    env = SETTINGS.environment("container_1_0001_01_000002")
    assert not {layout.ENV_CLUSTER_SECRET, layout.ENV_CLUSTER_DIR, layout.ENV_LOG_DIR, layout.ENV_BIND_HOST} & set(env)
    # as YARN's launch script and the pod's entry script do: the location, and the secret as a private file
    (tmp_path / layout.SECRET_FILE).write_text("from-a-file\n")
    env |= {layout.ENV_CLUSTER_DIR: str(tmp_path), layout.ENV_LOG_DIR: str(tmp_path / "log"), layout.ENV_BIND_HOST: "10.0.0.7"}
    launch = TaskExecutorLaunch.from_environ(env)
    assert launch.secret == "from-a-file" and launch.location.bind_host == "10.0.0.7"
    assert launch.settings.spark_master == SETTINGS.spark_master


def test_a_process_not_started_by_a_driver_is_told_what_is_missing(tmp_path):
    with pytest.raises(IllegalConfigurationError, match=r"JOBCLUSTER_RESOURCE_ID, .*JOBCLUSTER_CLUSTER_DIR, JOBCLUSTER_LOG_DIR not set"):
        TaskExecutorLaunch.from_environ({"JOBCLUSTER_RESOURCE_MANAGER_ADDRESS": "x", "JOBCLUSTER_RESOURCE_MANAGER_ID": "y"})
    env = SETTINGS.environment("tm-1", location=TaskExecutorLocation(Path(tmp_path), Path(tmp_path), "127.0.0.1"))
    with pytest.raises(IllegalConfigurationError, match="no cluster secret"):
        TaskExecutorLaunch.from_environ(env)
