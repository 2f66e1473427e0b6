"""A job cluster's life on the local targets: options checked before deploying, cancel and a dead
JobManager end everything at once, and what the cluster writes is private to the user.

A cancel after the client died runs on ``local`` (the MiniCluster); a killed JobManager process on
``local-cluster``, where its TaskExecutors and their Spark workers are processes that must go with it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from support import PROGRAMS, REPO, WORDCOUNT, jobcluster, processes_of, staging_dirs

pytestmark = pytest.mark.e2e

WAITS = PROGRAMS / "waits.py"
# One TaskExecutor with one slot: the smallest cluster that runs a task.
SMALL = ["-p", "1", "-D", "taskmanager.numberOfTaskSlots=1"]


@pytest.mark.parametrize(
    ("option", "phrases"),
    [
        ("heartbeat.timeout=abc", ["heartbeat.timeout", "'abc'", "a duration such as"]),
        ("rest.port=99999", ["rest.port", "'99999'", "0 to 65535"]),
        ("restart-strategy.fixed-delay.attempts=-1", ["restart-strategy.fixed-delay.attempts", "at least 0"]),
        ("restart-strategy.type=sometimes", ["unknown restart-strategy.type 'sometimes'", "fixed-delay"]),
    ],
)
def test_invalid_option_is_refused_by_info_and_run_before_anything_starts(home, option, phrases):
    for command in ("info", "run"):
        result = jobcluster(command, "-D", option, str(WORDCOUNT), "--input", "x", "--output", "y")
        assert result.returncode == 1, (command, result)
        assert "Traceback" not in result.stderr and result.stderr.startswith("Error: "), result.stderr
        for phrase in phrases:
            assert phrase in result.stderr, (command, result.stderr)
    assert staging_dirs(home) == []
    assert not (home / "log").exists() or list((home / "log").iterdir()) == []


def test_dynamic_property_without_equals_is_a_usage_error(home):
    for command in ("info", "run", "memory"):
        args = [command, "-D", "heartbeat.timeout"] + ([] if command == "memory" else [str(WORDCOUNT)])
        result = jobcluster(*args)
        assert result.returncode == 2, (command, result)
        assert "'heartbeat.timeout' has no '='" in result.stderr, result.stderr
    assert staging_dirs(home) == []


def _start_attached(home: Path, seconds: int, target: str = "local") -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "jobcluster", "run", "-t", target, *SMALL, str(WAITS), str(seconds)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )


def _ctrl_c_as_in_a_terminal() -> None:
    """SIGINT's default action, which Python turns into KeyboardInterrupt: a suite started in the background (as CI
    and `nohup make test &` do) ignores SIGINT, and its children would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_until_executors_run(home: Path, client: subprocess.Popen, timeout: float = 300) -> dict:
    """The cluster.json of the one cluster, once its job is RUNNING with a Spark executor that did work."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert client.poll() is None, client.communicate()
        for rest in (home / "clusters").glob("*/rest.json"):
            url = json.loads(rest.read_text())["rest_url"]
            jobs = requests.get(f"{url}/jobs/overview", timeout=5).json()["jobs"]
            details = requests.get(f"{url}/jobs/{jobs[0]['jid']}", timeout=5).json() if jobs else {}
            spark = details.get("spark") or {}
            if details.get("state") == "RUNNING" and spark.get("executors", 0) >= 1 and spark.get("tasks_completed", 0) >= 1:
                return {**json.loads((rest.parent / "cluster.json").read_text()), "rest_url": url}
        time.sleep(0.5)
    raise AssertionError("the job never got running with an executor")


def _seconds_until_no_process_of(home: Path, timeout: float = 60) -> float:
    start = time.monotonic()
    while processes_of(home) and time.monotonic() - start < timeout:
        time.sleep(0.2)
    return time.monotonic() - start


def _not_private(root: Path) -> list[str]:
    """``root`` if another user could enter it, and the cluster's own files in it that others could read.

    The files directly in ``root`` are jobcluster's own (configuration,
    JobGraph, token, logs) and must be 0600-like. Deeper down, the executors'
    work and scratch files get the program's umask by design (as under
    spark-submit); the 0700 ``root`` keeps them from other users.
    """
    found = [f"{root.name} {stat.filemode(root.stat().st_mode)}"] if root.stat().st_mode & 0o077 else []
    for path in root.iterdir():
        mode = path.lstat().st_mode
        if stat.S_ISREG(mode) and mode & 0o077:
            found.append(f"{path.relative_to(root.parent)} {stat.filemode(mode)}")
    return found


def test_cancel_after_the_attached_client_was_interrupted_ends_the_cluster_at_once(home):
    """Ctrl-C on an attached run: the client exits 130 saying how to cancel the job, which keeps running; the
    command it printed, run as written, ends the cluster at once (it does not wait for its gone client)."""
    client = _start_attached(home, 300)
    try:
        cluster = _wait_until_executors_run(home, client)
        staging = home / "clusters" / cluster["cluster_id"]
        assert _not_private(staging) == []
        client.send_signal(signal.SIGINT)
        _, err = client.communicate(timeout=60)
        assert client.returncode == 130, err
        hint = re.search(r"The job keeps running; cancel it with: jobcluster (cancel .*)", err)
        assert hint and cluster["job_id"] in hint.group(1), err
        assert processes_of(home), "the interrupted client left its cluster running"
        cancelled = jobcluster(*shlex.split(hint.group(1)), check=True)
        assert f"Cancelled job {cluster['job_id']}" in cancelled.stdout
        took = _seconds_until_no_process_of(home)
    finally:
        if client.poll() is None:
            client.kill()
    print(f"cluster gone {took:.1f} s after the cancel")
    assert took < 20, f"the cancelled cluster took {took:.1f} s to go (it waited for its dead client)"
    assert staging_dirs(home) == []
    log_dir = Path(cluster["log_dir"])
    assert (log_dir / "jobmanager.log").exists() and (log_dir / "driver.log").exists()  # Spark's driver log too
    assert _not_private(log_dir) == []
    assert stat.S_IMODE(home.joinpath("log").stat().st_mode) == 0o700


def test_attached_client_notices_its_job_manager_killed(home):
    client = _start_attached(home, 300, "local-cluster")
    try:
        cluster = _wait_until_executors_run(home, client)
        os.kill(cluster["pid"], signal.SIGKILL)
        killed = time.monotonic()
        try:
            _, stderr = client.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            client.kill()
            raise
        took = time.monotonic() - killed
    finally:
        if client.poll() is None:
            client.kill()
    print(f"client exited {took:.1f} s after its JobManager was killed")
    assert client.returncode == 1, stderr
    assert "its JobManager process has died" in stderr and cluster["log_dir"] in stderr, stderr
    assert "Traceback" not in stderr, stderr
    assert took < 10, f"the client took {took:.1f} s to notice"
    gone = _seconds_until_no_process_of(home)
    print(f"cluster processes gone {gone:.1f} s after the client exited")
    assert processes_of(home) == []
    assert staging_dirs(home) == []
