"""Parallelism, resource checks and Spark settings on the local targets, through the real CLI and real Spark.

How Spark's executors get the slots' cores, and the machine check of a cluster of processes, on ``local-cluster``;
on ``local`` (the MiniCluster) the program's Spark runs in local mode on as many threads as the job has slots.
"""

from __future__ import annotations

import re

import pytest
from support import PROGRAMS, WORDCOUNT, jobcluster, processes_of, staging_dirs

pytestmark = pytest.mark.e2e

SPARK_CORES = PROGRAMS / "spark_cores.py"


def reported(stdout: str, name: str) -> str:
    found = re.search(rf"^{re.escape(name)}=(.*)$", stdout, re.M)
    assert found, f"{name} not in the program's output:\n{stdout}"
    return found.group(1)


MARKER = "passed through = a:b #c !d \\e"  # what a Java properties file would mangle unescaped


def test_parallelism_below_the_slots_of_a_task_executor_runs_on_exactly_its_cores_with_user_spark_settings(home):
    # -p 1 with 2 slots per TaskExecutor used to wait for ever (spark.cores.max 1 < spark.executor.cores 2)
    result = jobcluster(
        "run",
        "-t",
        "local-cluster",
        "-p",
        "1",
        "-D",
        "taskmanager.numberOfTaskSlots=2",
        "-D",
        f"spark.jobcluster.test.marker={MARKER}",
        "-D",
        "spark.sql.shuffle.partitions=7",
        str(SPARK_CORES),
        "spark.jobcluster.test.marker",
        "spark.sql.shuffle.partitions",
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert reported(result.stdout, "EXECUTOR_CORES") == "1"
    assert reported(result.stdout, "EXECUTORS") == "1"
    assert reported(result.stdout, "DEFAULT_PARALLELISM") == "1"
    assert reported(result.stdout, "CONF spark.jobcluster.test.marker") == MARKER
    assert reported(result.stdout, "ON_A_COMMAND_LINE spark.jobcluster.test.marker") == "False", "a user's settings are on no command line"
    assert reported(result.stdout, "CONF spark.sql.shuffle.partitions") == "7", "the user's value wins over the one -p suggests"
    assert staging_dirs(home) == []


def test_parallelism_not_a_multiple_of_the_slots_uses_every_task_executor(home):
    # -p 3 with 2 slots: two TaskExecutors, and Spark uses 3 cores on both (it used to run one 2-core executor)
    result = jobcluster("run", "-t", "local-cluster", "-p", "3", "-D", "taskmanager.numberOfTaskSlots=2", str(SPARK_CORES), timeout=300)
    assert result.returncode == 0, result.stderr
    assert len(set(re.findall(r"TaskExecutor (\S+) registered", result.stderr))) == 2, result.stderr
    assert reported(result.stdout, "EXECUTOR_CORES") == "3"
    assert reported(result.stdout, "EXECUTORS") == "2"
    assert reported(result.stdout, "DEFAULT_PARALLELISM") == "3"
    # 2 x 2 slots are 4 cores on this 2-core machine: a warning that names what to change, and the job runs
    if "the machine has 2" in result.stderr:
        assert "Lower -p" in result.stderr


def test_the_mini_clusters_spark_runs_in_local_mode_on_a_thread_per_slot_of_its_task_executors(home):
    # -p 3 with 2 slots: two TaskExecutors in the JobManager's process, and the program's Spark in local mode on 3 threads
    result = jobcluster("run", "-p", "3", "-D", "taskmanager.numberOfTaskSlots=2", str(SPARK_CORES), "spark.master", timeout=300)
    assert result.returncode == 0, result.stderr
    assert len(set(re.findall(r"TaskExecutor (\S+) registered: 2 slots", result.stderr))) == 2, result.stderr
    assert "Slots offered to the job: 3/3" in result.stderr, result.stderr
    assert reported(result.stdout, "CONF spark.master") == "local[3]"
    assert reported(result.stdout, "DEFAULT_PARALLELISM") == "3"
    assert reported(result.stdout, "EXECUTORS") == "0", "no executor of its own: the driver runs the tasks"
    assert staging_dirs(home) == []


def test_cluster_larger_than_the_machine_is_refused_before_anything_starts(home, tmp_path):
    result = jobcluster(
        "run", "-t", "local-cluster", "-p", "64", str(WORDCOUNT), "--input", str(tmp_path), "--output", str(tmp_path / "out"), timeout=60
    )
    assert result.returncode == 1, result
    assert "Error: this machine cannot hold the job cluster: 32 TaskExecutor(s) of 2560 MiB" in result.stderr
    for option in ("-p", "taskmanager.numberOfTaskSlots", "taskmanager.memory.process.size"):
        assert option in result.stderr
    assert "Traceback" not in result.stderr
    assert staging_dirs(home) == [] and not (home / "log").exists(), "nothing staged, no cluster logs"
    assert processes_of(home) == []


def test_spark_settings_the_cluster_decides_are_refused_before_anything_starts(home, tmp_path):
    result = jobcluster(
        "run", "-D", "spark.executor.memory=4g", "-D", "spark.cores.max=8", str(WORDCOUNT), "--input", str(tmp_path), timeout=60
    )
    assert result.returncode == 1, result
    assert "spark.executor.memory (set taskmanager.memory.task.heap.size" in result.stderr
    assert "spark.cores.max (set -p (parallelism.default)" in result.stderr
    assert "Traceback" not in result.stderr
    assert staging_dirs(home) == []


def test_application_without_executors_fails_after_the_bound_with_the_cause(home):
    # a real fault: the executor JVM starts suspended, waiting for a debugger, and never registers with the driver
    suspended = "-agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=127.0.0.1:0"
    result = jobcluster(
        "run",
        "-t",
        "local-cluster",
        "-p",
        "1",
        "-D",
        "taskmanager.numberOfTaskSlots=1",
        "-D",
        "jobcluster.executor.registration.timeout=15 s",
        "-D",
        f"spark.executor.extraJavaOptions={suspended}",
        str(SPARK_CORES),
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
    assert re.search(r"Job [0-9a-f]{32} \(spark_cores\) FAILED", result.stderr), result.stderr
    assert "got no executor within jobcluster.executor.registration.timeout (15 s)" in result.stderr
    assert "holds its 1 slot(s)" in result.stderr
    # the cause shows the executor's own output: its command line with the user's option, and what the JVM said
    assert "-agentlib:jdwp=transport=dt_socket" in result.stderr and "Listening for transport dt_socket" in result.stderr
    assert staging_dirs(home) == []
