"""Flink 1.20's own CLI driving a streaming job cluster on the local target, counted against a real Kafka topic.

A user with Flink's tools takes a savepoint of the running word count, lists
the job, disposes of that savepoint through the running cluster, and stops the
job with a savepoint, all with ``flink`` and the cluster's REST token; then
``jobcluster run -s`` resumes from the stop's savepoint and counts exactly
(tests/support/streaming.py): nothing lost, nothing counted twice.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import pytest
from support import jobcluster, processes_of, staging_dirs

from tests.infra.flink.client import FlinkClient
from tests.infra.kafka.cluster import KafkaCluster
from tests.support.streaming import PROGRAM, lines, local_batches, wait_for_committed_batch, wait_for_counts, word_counts

pytestmark = [pytest.mark.e2e, pytest.mark.flink, pytest.mark.kafka]

COUNT_TIMEOUT = 240  # seconds for a job to count what was produced


def _flink_savepoint_path(done) -> str:
    """The path in Flink's ``Savepoint completed. Path: ...`` line."""
    assert done.returncode == 0, done.stdout + done.stderr
    return re.search(r"Savepoint completed\. Path: (\S+)", done.stdout).group(1)


def _local(uri: str) -> Path:
    return Path(uri.removeprefix("file:"))


def test_flink_cli_savepoints_lists_disposes_and_stops_a_streaming_job_that_resumes_exactly(
    home, tmp_path, kafka_cluster: KafkaCluster, spark_kafka_jars: list[Path], flink_client: FlinkClient
):
    topic = f"words-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, partitions=2)
    first, second = lines(11, 40), lines(12, 40)
    kafka_cluster.produce(topic, [(None, line) for line in first])
    out = tmp_path / "out"
    common = [
        "-D",
        f"execution.checkpointing.dir={tmp_path / 'checkpoints'}",
        "--jars",
        ",".join(str(j) for j in spark_kafka_jars),
        str(PROGRAM),
        "--kafka",
        kafka_cluster.bootstrap_servers,
        "--topic",
        topic,
        "--output",
        str(out),
        "--per-batch",
        "20",
    ]
    started = jobcluster("run", "-d", *common, check=True)
    job = re.search(r"JobID ([0-9a-f]{32})", started.stdout).group(1)
    rest = re.search(r"REST API at (http://\S+)", started.stderr).group(1)
    (token_file,) = (home / "clusters").glob("*/rest-token")
    token = token_file.read_text().strip()
    wait_for_committed_batch(rest, job, 0, COUNT_TIMEOUT)

    # `flink savepoint JOBID DIR`: Flink's CLI prints the path of a real savepoint, the query's checkpoint in it.
    running = _flink_savepoint_path(flink_client.cli(rest, "savepoint", job, str(tmp_path / "running"), token=token))
    assert re.fullmatch(rf"file:{tmp_path}/running/savepoint-{job[:6]}-[0-9a-f]{{12}}", running), running
    metadata = json.loads((_local(running) / "_metadata").read_text())
    assert list(metadata["queries"]) == ["wordcount"] and metadata["queries"]["wordcount"]["committedBatchId"] >= 0
    assert (_local(running) / "wordcount" / "commits").is_dir()
    listed = flink_client.cli(rest, "list")
    assert listed.returncode == 0 and f": {job} : " in listed.stdout and "(RUNNING)" in listed.stdout, listed.stdout + listed.stderr

    # `flink savepoint -d PATH` through the running cluster (POST /savepoint-disposal): a directory that is
    # no savepoint is refused and kept; the savepoint is deleted.
    not_a_savepoint = tmp_path / "not-a-savepoint"
    not_a_savepoint.mkdir()
    refused = flink_client.cli(rest, "savepoint", "-d", str(not_a_savepoint), token=token)
    assert refused.returncode != 0 and "no _metadata file" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert not_a_savepoint.is_dir()
    disposed = flink_client.cli(rest, "savepoint", "-d", running, token=token)
    assert disposed.returncode == 0 and f"Savepoint '{running}' disposed." in disposed.stdout, disposed.stdout + disposed.stderr
    assert not _local(running).exists()

    # `flink stop --savepointPath DIR JOBID`: the path is printed, the job ends FINISHED and the cluster goes away.
    kafka_cluster.produce(topic, [(None, line) for line in second])
    stopped = _flink_savepoint_path(flink_client.cli(rest, "stop", "--savepointPath", str(tmp_path / "stopped"), job, token=token))
    assert (_local(stopped) / "_metadata").is_file() and stopped.startswith(f"file:{tmp_path}/stopped/savepoint-{job[:6]}-")
    deadline = time.monotonic() + 120
    while (processes_of(home) or staging_dirs(home)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not staging_dirs(home) and not processes_of(home), "the stopped job's cluster went away"
    (log,) = (home / "log").glob("*/jobmanager.log")
    assert f"job {job} reached terminal state FINISHED" in log.read_text()

    # Resumed from the stop's savepoint: every record of both parts counted once, whatever the stop had reached.
    resumed = jobcluster("run", "-d", "-s", stopped, *common, check=True)
    job = re.search(r"JobID ([0-9a-f]{32})", resumed.stdout).group(1)
    wait_for_counts(local_batches(out), word_counts(first + second), COUNT_TIMEOUT, "resumed from Flink's stop-with-savepoint")
    jobcluster("cancel", job, check=True)
