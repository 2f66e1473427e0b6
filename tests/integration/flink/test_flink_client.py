"""Flink's own CLI and RestClusterClient (Flink 1.20, from Maven Central) against jobcluster's RestEndpoint.

The endpoint is the real one, in-process, in front of a stand-in dispatcher of
one job (tests/support/rest_standin.py), so that every answer Flink's client
can meet (running, finished, failed, cancelled, a refused savepoint) is cheap
to produce; tests/e2e/test_local_failures.py runs the same CLI against a real
job cluster. A failure here means Flink's client cannot read a body (its
strict mapper or custom deserializers), however right the body looks.
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


def test_flink_rest_cluster_client_reads_the_job_the_cluster_and_its_config(flink_client):
    def scenario(url, dispatcher):
        assert flink_client.probe(url, "status", JOB_ID) == {"status": "RUNNING"}
        details = flink_client.probe(url, "details", JOB_ID)
        assert (details["jid"], details["name"], details["state"], details["vertices"]) == (JOB_ID, "wordcount", "RUNNING", "1")
        assert "RUNNING=3" in details["vertex-tasks"] and "FINISHED=6" in details["vertex-tasks"]
        assert "RUNNING=1" in details["status-counts"] and details["running-since"] == "1200"
        overview = flink_client.probe(url, "overview")
        assert (overview["taskmanagers"], overview["slots-total"], overview["jobs-running"]) == ("1", "2", "1")
        assert flink_client.probe(url, "config")["web-cancel"] == "true"
        managers = flink_client.probe(url, "taskmanagers")
        assert managers["taskmanager"] == "tm-1 slots 2 free 1" and managers["cpu-cores"] == "8"
        assert managers["task-heap"] == str(512 << 20) and int(managers["last-heartbeat"]) > 0
        dispatcher.finish(JobStatus.FINISHED, exit_code=0)
        result = flink_client.probe(url, "result", JOB_ID)
        assert result == {"application-status": "SUCCEEDED", "net-runtime": "3000"}

    with_endpoint(scenario)


def test_flink_rest_cluster_client_reads_a_failed_jobs_cause(flink_client):
    failed = StandInDispatcher()
    failed.finish(JobStatus.FAILED, "the PySpark program exited with code 3\nTraceback (most recent call last):\nValueError: boom", 3)

    def scenario(url, dispatcher):
        assert flink_client.probe(url, "status", JOB_ID) == {"status": "FAILED"}
        result = flink_client.probe(url, "result", JOB_ID)
        assert result["application-status"] == "FAILED"
        assert result["failure"].startswith("jobcluster.JobFailure: the PySpark program exited with code 3")

    with_endpoint(scenario, failed)
