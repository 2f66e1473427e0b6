"""Flink's own CLI and RestClusterClient (Flink 1.20 and 2.3, from Maven Central) against jobcluster's RestEndpoint.

The endpoint is the real one, in-process, in front of a stand-in dispatcher of
one job (tests/support/rest_standin.py), so that every answer Flink's client
can meet (running, finished, failed, cancelled, a refused stop, a savepoint, a
stop with one, a disposal) is cheap to produce; tests/e2e/test_local_failures.py
and test_local_streaming.py run Flink 1.20's CLI against a real job cluster. A
failure here means Flink's client cannot read a body (its strict mapper or
custom deserializers), however right the body looks. Every test runs once per
release (the ``flink_client`` fixture); each CLI command and each probe is a JVM
start, so the probes read several things at once.

``flink info`` is not here: it prints the plan of a JAR program, locally, and
never calls the cluster.
"""

from __future__ import annotations

import pytest

from jobcluster.jobgraph.job_status import JobStatus
from tests.support.rest_standin import JOB_ID, TOKEN, StandInDispatcher, with_endpoint

pytestmark = pytest.mark.flink


def test_flink_cli_lists_refuses_to_stop_and_cancels_with_the_token(flink_client):
    def scenario(url, dispatcher):
        listed = flink_client.cli(url, "list")
        assert listed.returncode == 0, listed.stderr
        assert f": {JOB_ID} : wordcount (RUNNING)" in listed.stdout

        stopped = flink_client.cli(url, "stop", JOB_ID, token=TOKEN)
        assert stopped.returncode != 0
        assert f"CheckpointException: Job {JOB_ID} is not a streaming job" in stopped.stdout + stopped.stderr

        refused = flink_client.cli(url, "cancel", JOB_ID)
        assert refused.returncode != 0 and "needs the cluster's token" in refused.stdout + refused.stderr
        assert dispatcher.cancelled == []

        cancelled = flink_client.cli(url, "cancel", JOB_ID.upper(), token=TOKEN)
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
        assert f"Cancelled job {JOB_ID}" in cancelled.stdout
        assert dispatcher.cancelled == [JOB_ID]
        assert flink_client.probe(url, "result", JOB_ID)["application-status"] == "CANCELED"

    with_endpoint(scenario)


def test_flink_cli_takes_a_savepoint_disposes_of_it_and_stops_a_streaming_job_with_one(flink_client):
    streaming = StandInDispatcher()
    streaming.queries = [{"name": "wordcount", "id": "q-1", "committedBatchId": 7, "checkpoint": f"file:/cp/{JOB_ID}/wordcount"}]

    def scenario(url, dispatcher):
        taken = flink_client.cli(url, "savepoint", JOB_ID, "file:/sp", token=TOKEN)
        assert taken.returncode == 0, taken.stdout + taken.stderr
        path = f"file:/sp/savepoint-{JOB_ID[:6]}-000000000000"
        assert f"Savepoint completed. Path: {path}" in taken.stdout
        assert dispatcher.state == "RUNNING"

        disposed = flink_client.cli(url, "savepoint", "--dispose", path, token=TOKEN)
        assert disposed.returncode == 0, disposed.stdout + disposed.stderr
        assert f"Savepoint '{path}' disposed." in disposed.stdout
        assert dispatcher.disposed == [path]

        stopped = flink_client.cli(url, "stop", "--savepointPath", "file:/last", JOB_ID, token=TOKEN)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert f"Savepoint completed. Path: file:/last/savepoint-{JOB_ID[:6]}-000000000000" in stopped.stdout
        # each as the CLI asked: a savepoint into file:/sp, then a stop (without draining) with one into file:/last
        assert dispatcher.triggered == [("file:/sp", False, False), ("file:/last", True, False)]
        assert dispatcher.state == "FINISHED"

    with_endpoint(scenario, streaming)


def test_flink_rest_cluster_client_reads_the_job_the_cluster_and_its_config(flink_client):
    flink2 = flink_client.major >= 2
    reads = ["status", "details", "overview", "config", "taskmanagers", *(["applications"] if flink2 else [])]

    def scenario(url, dispatcher):
        read = flink_client.probe(url, reads, JOB_ID)
        assert read["status"] == "RUNNING"
        assert (read["jid"], read["name"], read["state"], read["vertices"]) == (JOB_ID, "wordcount", "RUNNING", "1")
        assert "RUNNING=3" in read["vertex-tasks"] and "FINISHED=6" in read["vertex-tasks"]
        assert "RUNNING=1" in read["status-counts"] and read["running-since"] == "1200"
        assert (read["taskmanagers"], read["slots-total"], read["jobs-running"]) == ("1", "2", "1")
        assert read["web-cancel"] == "true"
        assert read["taskmanager"] == "tm-1 slots 2 free 1" and read["cpu-cores"] == "8"
        assert read["task-heap"] == str(512 << 20) and int(read["last-heartbeat"]) > 0
        if flink2:  # Flink 2's TaskManagerInfo and application types
            assert read["assigned-tasks"] == "1"  # one of two slots in use
            assert read["application"] == f"{JOB_ID} RUNNING SingleJobApplication(wordcount)"
            assert (read["application-id"], read["application-state"]) == (JOB_ID, "RUNNING")
            assert "RUNNING=1000" in read["application-timestamps"] and "FINISHED=0" in read["application-timestamps"]
            assert read["application-job"] == f"{JOB_ID} RUNNING"
        else:
            assert "assigned-tasks" not in read and "application" not in read
        dispatcher.finish(JobStatus.FINISHED, exit_code=0)
        result = flink_client.probe(url, "result", JOB_ID)
        finished = {"application-status": "SUCCEEDED", "net-runtime": "3000"}
        assert result == (finished | {"job-status": "FINISHED"} if flink2 else finished)

    with_endpoint(scenario)


def test_flink_rest_cluster_client_reads_a_failed_jobs_cause(flink_client):
    failed = StandInDispatcher()
    failed.finish(JobStatus.FAILED, "the PySpark program exited with code 3\nTraceback (most recent call last):\nValueError: boom", 3)

    def scenario(url, dispatcher):
        read = flink_client.probe(url, ["status", "result"], JOB_ID)
        assert read["status"] == "FAILED" and read["application-status"] == "FAILED"
        assert read["failure"].startswith("jobcluster.JobFailure: the PySpark program exited with code 3")
        if flink_client.major >= 2:
            assert read["job-status"] == "FAILED"

    with_endpoint(scenario, failed)
