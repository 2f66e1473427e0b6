"""Spark Connect under a job cluster: never a silently incomplete savepoint or restore.

A job cluster's driver is classic PySpark, so ``-D spark.api.mode=connect`` is
refused before anything is deployed. A program that makes its own Connect
session (here a local Connect server in the driver, the only kind this machine
has) runs, but its streaming query is out of the driver agent's reach: a stop
with a savepoint and a savepoint are refused while the job runs on, and a
restore (``-s``) fails the job before the query starts.
"""

from __future__ import annotations

import json
import re
import time

import pytest
import requests
from support import PROGRAMS, jobcluster, processes_of, staging_dirs

pytestmark = pytest.mark.e2e

PROGRAM = str(PROGRAMS / "connect_stream.py")
TIMEOUT = 180  # seconds for the program's query to start


def _wait_for_query(rest: str, job: str) -> dict:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        details = requests.get(f"{rest}/jobs/{job}", timeout=5).json()
        queries = (details.get("streaming") or {}).get("queries") or []
        if queries and queries[0].get("batchId") is not None:
            return queries[0]
        assert details["state"] in ("CREATED", "INITIALIZING", "RUNNING"), details
        time.sleep(1.0)
    raise AssertionError(f"the query of job {job} did not run within {TIMEOUT} s")


def test_spark_connect_by_configuration_is_refused_before_anything_is_deployed(home):
    refused = jobcluster("run", "-D", "spark.api.mode=connect", PROGRAM)
    assert refused.returncode == 1
    assert "spark.api.mode=connect (Spark Connect: the job's driver runs in the JobManager as a classic PySpark driver" in refused.stderr
    assert not staging_dirs(home) and not processes_of(home)


def test_a_query_through_spark_connect_refuses_savepoints_and_restores_and_the_job_runs_on(home, tmp_path):
    settings = ["-D", f"execution.checkpointing.dir={tmp_path / 'checkpoints'}"]
    started = jobcluster("run", "-d", *settings, PROGRAM, check=True)
    job = re.search(r"JobID ([0-9a-f]{32})", started.stdout).group(1)
    rest = re.search(r"REST API at (http://\S+)", started.stderr).group(1)
    query = _wait_for_query(rest, job)
    assert query["name"] == "ticks" and query["active"], query

    for command in (["stop", job, "-p", str(tmp_path / "savepoints")], ["savepoint", job, str(tmp_path / "savepoints")]):
        refused = jobcluster(*command)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "runs the streaming query ticks through Spark Connect" in refused.stderr, refused.stderr
    assert requests.get(f"{rest}/jobs/{job}", timeout=5).json()["state"] == "RUNNING", "a refused stop leaves the job running"
    assert not (tmp_path / "savepoints").exists() or not any((tmp_path / "savepoints").iterdir())
    jobcluster("cancel", job, check=True)

    # a savepoint to restore from (only its _metadata is read before the query would start)
    savepoint = tmp_path / "savepoint"
    savepoint.mkdir()
    metadata = {"jobId": job, "jobName": "connect", "created": 1, "queries": {"ticks": {"committedBatchId": 3, "source": "x"}}}
    (savepoint / "_metadata").write_text(json.dumps(metadata))
    restored = jobcluster("run", "-s", str(savepoint), *settings, PROGRAM)
    assert restored.returncode == 1, restored.stdout + restored.stderr
    assert f"cannot restore streaming query ticks from savepoint {savepoint}" in restored.stderr, restored.stderr
    assert "it starts through Spark Connect" in restored.stderr
