"""Bad input and failures on the local targets: a clear error, a non-zero exit, nothing left running or staged.

The job's own behaviour runs on ``local`` (the MiniCluster); a killed TaskExecutor process and a PySpark worker's
memory limit (set for executors, which a MiniCluster has none of) on ``local-cluster``,
the one target whose TaskExecutors are processes of their own.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import requests
from support import (
    PROGRAMS,
    REPO,
    WORDCOUNT,
    independent_word_count,
    jobcluster,
    memory_error_cause,
    read_word_counts,
    run_timing_stderr,
    staging_dirs,
)

pytestmark = pytest.mark.e2e


def assert_refused(result: subprocess.CompletedProcess, *phrases: str) -> None:
    assert result.returncode != 0, result
    text = result.stderr
    for phrase in phrases:
        assert phrase in text, f"{phrase!r} not in stderr:\n{text}"
    assert "Traceback" not in text, text


def test_missing_program(home):
    assert_refused(jobcluster("run", "no/such/program.py"), "no/such/program.py does not exist")
    assert staging_dirs(home) == []


def test_missing_jars_are_refused_before_anything_is_deployed(home):
    result = jobcluster("run", "--jars", f"{WORDCOUNT},no/such/connector.jar", str(WORDCOUNT))
    assert_refused(result, "Error: jar no/such/connector.jar (--jars) does not exist")
    assert result.returncode == 1
    assert not (home / "clusters").exists() or staging_dirs(home) == []


def test_program_that_raises_fails_the_job_after_its_restarts(home):
    result = jobcluster(
        "run",
        "-p",
        "1",
        "-D",
        "taskmanager.numberOfTaskSlots=1",
        "-D",
        "restart-strategy.type=fixed-delay",
        "-D",
        "restart-strategy.fixed-delay.attempts=1",
        "-D",
        "restart-strategy.fixed-delay.delay=1 s",
        str(PROGRAMS / "failing.py"),
    )
    assert result.returncode == 1
    assert re.search(r"Job [0-9a-f]{32} \(failing\) FAILED in [\d.]+ s, 1 restart\(s\)", result.stderr), result.stderr
    assert "this pipeline fails on purpose" in result.stderr
    assert staging_dirs(home) == []


@pytest.mark.spark35
def test_a_python_task_past_its_pyspark_workers_limit_fails_in_seconds_with_memory_error_and_the_options(home):
    """The shipped sizes, -p 2 on one TaskExecutor of 2 slots: each PySpark worker may use 268 MiB (PYTHON's share of
    the 768 MiB managed memory, over the slots). Tasks that each fill 1,000 MiB fail with MemoryError as soon as
    they run, the job fails with the limit and the options that raise it in its cause, and the TaskExecutor lives on."""
    argv = [
        sys.executable,
        "-m",
        "jobcluster",
        "run",
        "-t",
        "local-cluster",
        "-p",
        "2",
        str(PROGRAMS / "python_memory_hog.py"),
        "--mib",
        "1000",
    ]
    stderr, _ = memory_error_cause(*run_timing_stderr(argv))
    assert len(re.findall(r"TaskExecutor \S+ registered", stderr)) == 1, "no TaskExecutor was lost or replaced"
    # the limit the daemon that forks the PySpark workers set (its stderr is the executor's), and no address-space
    # limit of Spark's (pyspark/worker.py's "Setting mem limits", from spark.executor.pyspark.memory)
    executor_logs = list((home / "log").glob("*/*-work/app-*/*/stderr"))
    lines = [line for log in executor_logs for line in log.read_text().splitlines()]
    assert "jobcluster: each PySpark worker's memory limit (RLIMIT_DATA): 268 MiB" in lines, executor_logs
    assert not [line for line in lines if line.startswith("Setting mem limits")]
    assert staging_dirs(home) == []


def test_parallelism_must_be_a_positive_integer(home):
    assert_refused(jobcluster("run", "-p", "0", str(WORDCOUNT)), "-p", "0")
    assert_refused(jobcluster("run", "-p", "four", str(WORDCOUNT)), "four", "is not a valid integer")
    assert staging_dirs(home) == []


def test_unknown_target(home):
    assert_refused(jobcluster("run", "-t", "mesos", str(WORDCOUNT)), "unknown execution.target 'mesos'", "local")


def test_memory_configuration_flink_rejects(home):
    result = jobcluster("run", "-D", "taskmanager.memory.process.size=300m", str(WORDCOUNT))
    assert_refused(result, "TaskManager memory configuration failed")
    assert staging_dirs(home) == []


def test_task_manager_too_small_for_spark(home):
    result = jobcluster("run", "-D", "taskmanager.memory.process.size=1728m", str(WORDCOUNT))
    assert_refused(result, "Spark")
    assert "taskmanager.memory" in result.stderr
    assert staging_dirs(home) == []


def test_rest_port_already_taken(home, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = jobcluster("run", "-D", f"rest.port={port}", str(WORDCOUNT), "--input", "x", "--output", str(tmp_path / "o"))
    assert_refused(result, f"rest.port {port}", "already in use")
    assert staging_dirs(home) == []


def test_cancel_unknown_job(home):
    assert_refused(jobcluster("cancel", "0123456789abcdef0123456789abcdef"), "no running job with JobID 0123456789abcdef0123456789abcdef")


def _slow_run_args(corpus: Path, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        "-p",
        "4",
        "-D",
        "taskmanager.numberOfTaskSlots=2",
        *extra,
        "--py-files",
        str(WORDCOUNT),
        str(PROGRAMS / "slow_wordcount.py"),
        "--input",
        str(corpus),
        "--output",
        str(out),
        "--delay",
        "3",
    ]


@pytest.mark.spark35
def test_detached_run_list_and_cancel(home, corpus, tmp_path, flink_client):
    """A detached job is listed by jobcluster's CLI and by Flink's, read by Flink's RestClusterClient, and cancelled by Flink's CLI."""
    result = jobcluster(*_slow_run_args(corpus, tmp_path / "out", "-d"), check=True)
    job_id = re.search(r"JobID ([0-9a-f]{32})", result.stdout).group(1)
    assert f"jobcluster cancel {job_id}" in result.stdout

    listing = jobcluster("list", check=True)
    assert job_id in listing.stdout and "slow_wordcount" in listing.stdout
    rest = _cluster_rest_url(home)
    _check_flink_rest_bodies(rest, job_id)

    flink_listing = flink_client.cli(rest, "list")
    assert flink_listing.returncode == 0, flink_listing.stderr
    assert re.search(rf": {job_id} : .+ \((CREATED|RUNNING)\)", flink_listing.stdout), flink_listing.stdout
    details = flink_client.probe(rest, "details", job_id)
    assert details["jid"] == job_id and details["vertices"] == "1"
    stop = flink_client.cli(rest, "stop", job_id, token=_rest_token(home))
    assert stop.returncode != 0 and "is not a streaming job" in stop.stdout + stop.stderr
    assert flink_client.probe(rest, "status", job_id)["status"] in ("CREATED", "RUNNING")

    cancelled = flink_client.cli(rest, "cancel", job_id, token=_rest_token(home))
    assert cancelled.returncode == 0 and f"Cancelled job {job_id}" in cancelled.stdout, cancelled.stdout + cancelled.stderr
    deadline = time.monotonic() + 60
    while staging_dirs(home) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert staging_dirs(home) == [], "the cancelled cluster shut down and removed its staging directory"
    assert job_id not in jobcluster("list", check=True).stdout


def _rest_token(home: Path) -> str:
    (token,) = (home / "clusters").glob("*/rest-token")
    return token.read_text().strip()


def _check_flink_rest_bodies(rest: str, job_id: str) -> None:
    """The live cluster's /jobs/overview and /taskmanagers carry Flink's fields with true values, under /v1 too."""
    (job,) = requests.get(f"{rest}/v1/jobs/overview", timeout=10).json()["jobs"]
    assert job["jid"] == job_id and job["jobType"] == "BATCH" and job["pending-operators"] == 0
    tasks = job["tasks"]
    assert all(type(n) is int and n >= 0 for n in tasks.values()) and {"total", "running", "finished", "failed"} <= tasks.keys()
    assert tasks["finished"] + tasks["running"] <= tasks["total"]
    deadline = time.monotonic() + 120  # a detached run returns before its TaskExecutors have registered
    while not requests.get(f"{rest}/taskmanagers", timeout=10).json()["taskmanagers"] and time.monotonic() < deadline:
        time.sleep(0.5)
    last_heartbeats = []  # Flink writes the time of the last heartbeat (ms since the epoch) as timeSinceLastHeartbeat
    for _ in range(6):
        managers = requests.get(f"{rest}/taskmanagers", timeout=10).json()["taskmanagers"]
        assert managers
        for tm in managers:
            memory = tm["memoryConfiguration"]
            assert memory["totalProcessMemory"] == memory["totalFlinkMemory"] + memory["jvmMetaspace"] + memory["jvmOverhead"]
            assert type(tm["hardware"]["cpuCores"]) is int and tm["hardware"]["cpuCores"] >= 1
            last_heartbeats.append((tm["timeSinceLastHeartbeat"], time.time() * 1000))
        time.sleep(0.5)
    assert all(type(t) is int and now - 60_000 < t <= now + 5 for t, now in last_heartbeats), last_heartbeats
    assert any(t < now - 1 for t, now in last_heartbeats), "the heartbeat's time is the heartbeat manager's, not the request's"
    assert requests.get(f"{rest}/jobs/not-a-job-id", timeout=10).status_code == 400


def _cluster_rest_url(home: Path, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for rest in (home / "clusters").glob("*/rest.json"):
            return json.loads(rest.read_text())["rest_url"]
        time.sleep(0.5)
    raise AssertionError("no cluster came up")


def test_killed_task_executor_is_replaced_and_the_job_finishes(home, corpus, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobcluster", *_slow_run_args(corpus, out, "-t", "local-cluster")],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        rest = _cluster_rest_url(home)
        victim = None
        deadline = time.monotonic() + 300
        while victim is None and time.monotonic() < deadline:
            jobs = requests.get(f"{rest}/jobs/overview", timeout=5).json()["jobs"]
            if jobs:
                details = requests.get(f"{rest}/jobs/{jobs[0]['jid']}", timeout=5).json()
                spark = details.get("spark") or {}
                if details["state"] == "RUNNING" and spark.get("tasks_completed", 0) >= 1:
                    victim = requests.get(f"{rest}/taskmanagers", timeout=5).json()["taskmanagers"][0]
            time.sleep(0.5)
        assert victim is not None, "the job never got running"
        cluster_dir = next((home / "clusters").iterdir())
        victim_scratch = _assert_spark_scratch_in_cluster(cluster_dir, victim["id"])
        psutil.Process(victim["pid"]).send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 60
        while victim_scratch.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not victim_scratch.exists(), "the killed TaskExecutor's scratch files are removed with it"
        _stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    registered = set(re.findall(r"TaskExecutor (\S+) registered", stderr))
    assert len(registered) == 3 and victim["id"] in registered, stderr
    # why it ended, as the job's details have it, and again with the TaskExecutor that replaces it
    sigkill = "signal SIGKILL: killed by SIGKILL (a kill -9, a memory limit, or the kernel's out-of-memory killer)"
    assert f"TaskExecutor {victim['id']} lost: worker terminated: {sigkill}" in stderr, stderr
    replacements = re.findall(r"TaskExecutor (\S+) registered: .*; it replaces (\S+), which ended with (.*)", stderr)
    assert [(old, why) for _, old, why in replacements] == [(victim["id"], sigkill)], stderr
    assert replacements[0][0] != victim["id"] and replacements[0][0] in registered
    assert read_word_counts(out) == independent_word_count(corpus)
    progress = [(int(done), int(total)) for done, total in re.findall(r"(\d+)/(\d+) tasks done", stderr)]
    assert progress and all(done <= total for done, total in progress), stderr


def _assert_spark_scratch_in_cluster(cluster_dir: Path, task_executor_id: str, timeout: float = 60) -> Path:
    """Spark's scratch space (executor dirs, java.io.tmpdir) is inside the cluster's directory; returns the
    scratch directory of ``task_executor_id`` once its executor has created its directory there."""
    scratch = cluster_dir / "tmp" / task_executor_id
    deadline = time.monotonic() + timeout
    while not list(scratch.glob("spark-*/executor-*")) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert list(scratch.glob("spark-*/executor-*")), f"no executor directory under {scratch}"
    executors = []
    for p in psutil.process_iter(["cmdline", "environ"]):
        try:
            env = p.info["environ"] or {}
            if "CoarseGrainedExecutorBackend" in " ".join(p.info["cmdline"] or []) and env.get("JOBCLUSTER_CLUSTER_DIR") == str(
                cluster_dir
            ):
                executors.append(env)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    assert executors, "the cluster's executors were found"
    for env in executors:
        assert env["SPARK_EXECUTOR_DIRS"].startswith(str(cluster_dir / "tmp")), env["SPARK_EXECUTOR_DIRS"]
        assert f"-Djava.io.tmpdir={cluster_dir / 'tmp'}" in env["JAVA_TOOL_OPTIONS"]
    return scratch
