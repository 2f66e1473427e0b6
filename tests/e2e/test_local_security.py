"""Security of a running local-cluster job cluster, looked at from outside (docs/deployment/security.md).

One job cluster serves every check: it runs a program that keeps its
executors busy, with the data plane encrypted, while the test checks every
socket and environment of its processes, lets a Spark client without the
secret try to register with the job's master, and tries to cancel the job
over REST without the token; the job must carry on through all of it, and
``jobcluster cancel`` (which finds the token) must then end it.
"""

from __future__ import annotations

import json
import os
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
from support import PROGRAMS, jobcluster, processes_of, staging_dirs

from jobcluster.security import spark_secret

pytestmark = pytest.mark.e2e

BIND_ADDRESSES = {"127.0.0.1", "::ffff:127.0.0.1"}  # the local target's bind host, as IPv4 and as Java's IPv4-mapped IPv6
INTRUDER_TIMEOUT = 120  # seconds for the intruder's JVM to start and give up on the master


def _wait_for(condition, what: str, timeout: float = 120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _completed_spark_jobs(rest_url: str, job_id: str) -> int:
    """Spark jobs the job has completed so far; fails once the job is terminal."""
    details = requests.get(f"{rest_url}/jobs/{job_id}", timeout=10).json()
    assert details["state"] not in ("FINISHED", "FAILED", "CANCELED"), details
    return (details.get("spark") or {}).get("jobs_completed", 0)


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.NoSuchProcess:
        return ""


def _one(procs: list[psutil.Process], marker: str) -> psutil.Process:
    found = [p for p in procs if marker in _cmdline(p)]
    assert len(found) == 1, f"{marker}: {[(p.pid, _cmdline(p)[:100]) for p in found]}"
    return found[0]


def _option(cmdline: str, name: str) -> str:
    return re.search(rf"{name} (\S+)", cmdline).group(1)


def _listening(proc: psutil.Process) -> list[tuple[str, int]]:
    """(ip, port) of every listening TCP socket of ``proc``, and of every bound UDP socket of a Python process (the
    StatsD receivers of the JVM metrics). A JVM's UDP socket is Spark's StatsD sink sending a report: a fresh,
    unconnected socket on an ephemeral port of the wildcard address for each report, never read from."""
    try:
        conns = proc.net_connections(kind="inet")
        receives_udp = proc.name().startswith("python")
    except psutil.NoSuchProcess:
        return []
    return [(c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN or (c.type == socket.SOCK_DGRAM and receives_udp)]


def _run_intruder(master_url: str, log: Path) -> str:
    """Run the intruder until it gives up or INTRUDER_TIMEOUT passes; returns its output."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONF_DIR", "_SPARK_AUTH_SECRET", "SPARK_LOCAL_IP")}
    with open(log, "w") as out:
        intruder = subprocess.Popen(
            [sys.executable, str(PROGRAMS / "intruder.py"), master_url],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        _wait_for(lambda: "Failed to connect to master" in log.read_text() or intruder.poll() is not None, "the intruder", INTRUDER_TIMEOUT)
    finally:
        os.killpg(intruder.pid, signal.SIGKILL)
        intruder.wait()
    return log.read_text()


def test_running_cluster_admits_only_itself(home, tmp_path):
    result = jobcluster(
        "run",
        "-t",
        "local-cluster",
        "-d",
        "-p",
        "2",
        "-D",
        "taskmanager.numberOfTaskSlots=2",
        "-D",
        "jobcluster.security.encrypt-data-plane=true",
        str(PROGRAMS / "ticking.py"),
        check=True,
    )
    job_id = re.search(r"JobID ([0-9a-f]{32})", result.stdout).group(1)
    (cluster_dir,) = staging_dirs(home)
    rest_url = json.loads((cluster_dir / "rest.json").read_text())["rest_url"]
    _wait_for(lambda: _completed_spark_jobs(rest_url, job_id) >= 1, "the job's first Spark job")

    # The REST token: a 0600 file in the 0700 staging directory.
    assert (cluster_dir / "rest-token").stat().st_mode & 0o777 == 0o600
    assert cluster_dir.stat().st_mode & 0o777 == 0o700

    procs = processes_of(home)
    entrypoint = _one(procs, "jobcluster.backends.local.entrypoint")
    master = _one(procs, "org.apache.spark.deploy.master.Master")
    executor = _one(procs, "CoarseGrainedExecutorBackend")
    driver_python = _one([p for p in procs if p.name().startswith("python")], "ticking.py")
    task_executors = [p for p in procs if "jobcluster.runtime.taskexecutor" in _cmdline(p)]
    assert task_executors

    # Every socket of every process of the cluster is bound to the cluster's host.
    listening = {p.pid: _listening(p) for p in procs}
    wildcard = {pid: socks for pid, socks in listening.items() if any(ip not in BIND_ADDRESSES for ip, _ in socks)}
    assert not wildcard, {pid: (socks, _cmdline(psutil.Process(pid))[:100]) for pid, socks in wildcard.items()}
    ports = {port for socks in listening.values() for _, port in socks}
    master_port, master_ui_port = int(_option(_cmdline(master), "--port")), int(_option(_cmdline(master), "--webui-port"))
    assert {int(rest_url.rsplit(":", 1)[1]), master_port, master_ui_port} <= ports, ports
    assert len(ports) >= 8, listening  # REST, RPC x2, master x2, worker x2, driver (UI, RPC, blocks, py4j), executor blocks

    # The cluster secret is a staged file (0600) and stays with the entrypoint and the TaskExecutors; no secret is on a
    # command line, and the entrypoint has it in no environment.
    secret_file = cluster_dir / "cluster-secret"
    assert secret_file.stat().st_mode & 0o777 == 0o600
    cluster_secret = secret_file.read_text().strip()
    assert "JOBCLUSTER_CLUSTER_SECRET" not in entrypoint.environ()
    others = [p for p in procs if p.pid != entrypoint.pid and p not in task_executors]
    assert driver_python in others and master in others and executor in others
    for proc in others:
        try:
            environ = proc.environ()
        except psutil.NoSuchProcess:
            continue
        leaked = [key for key, value in environ.items() if cluster_secret in value]
        assert not leaked, f"{_cmdline(proc)[:100]} has the cluster secret in {leaked}"
    for proc in procs:
        assert cluster_secret not in _cmdline(proc) and spark_secret(cluster_secret) not in _cmdline(proc), _cmdline(proc)[:100]
    # Spark's settings reached the executors through Spark itself.
    assert "-Dspark.authenticate=true" in _cmdline(executor) and "-Dspark.network.crypto.enabled=true" in _cmdline(executor)

    # A Spark client without the secret cannot register an application with the job's master.
    intruder_output = _run_intruder(f"spark://127.0.0.1:{master_port}", tmp_path / "intruder.log")
    assert "Failed to connect to master" in intruder_output, intruder_output[-3000:]
    assert "REGISTERED" not in intruder_output
    status = requests.get(f"http://127.0.0.1:{master_ui_port}/json/", timeout=10).json()
    assert [a["name"] for a in status["activeapps"] + status["completedapps"]] == ["ticking"], status

    # Cancelling over REST needs the cluster's token.
    cancel_url = f"{rest_url}/jobs/{job_id}?mode=cancel"
    for headers in ({}, {"Authorization": "Bearer not-the-token"}, {"Authorization": "Basic dXNlcjpwYXNz"}):
        refused = requests.patch(cancel_url, headers=headers, timeout=10)
        assert refused.status_code == 401, (headers, refused.status_code, refused.text)
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")

    # The job carried on through all of it.
    done_before = _completed_spark_jobs(rest_url, job_id)
    _wait_for(lambda: _completed_spark_jobs(rest_url, job_id) > done_before, "the job to carry on")

    # The CLI finds the token in the cluster's directory, from a shell of its own.
    cancelled = jobcluster("cancel", job_id, check=True)
    assert f"Cancelled job {job_id}" in cancelled.stdout
    _wait_for(lambda: not staging_dirs(home), "the cancelled cluster to shut down", 60)
