"""Streaming with Flink's guarantees on ``yarn-per-job``, counted against a real Kafka topic, on the real YARN and HDFS.

The chain of tests/e2e/test_local_streaming.py on YARN: one topic, two job
clusters, each step counted exactly (no record lost, none counted twice) by
tests/support/streaming.py. The checkpoint root and every savepoint are on
HDFS. The first cluster loses a TaskExecutor container mid-stream, then its
JobManager (the ApplicationMaster's process), so that YARN starts attempt 2,
which reads the same JobGraph and resumes the program from its last committed
micro-batch; a savepoint is taken while it runs, then it is stopped with one.
The second starts from the stop's savepoint with another parallelism after
more records arrived, and is stopped with a savepoint of its own; the running
savepoint is disposed of through WebHDFS. Bad savepoints on
HDFS are refused by the client before YARN hears of an application.

The word count writes to a local directory (``file://``): the NodeManager
runs its containers on this machine as this user, so the test reads each
batch as it lands without a WebHDFS round trip per file while it polls; HDFS
is exercised by what the guarantees depend on (checkpoints and savepoints).
"""

from __future__ import annotations

import re
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
import requests

from jobcluster.backends.yarn.descriptor import rest_url_of
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.staging import HdfsPaths
from jobcluster.backends.yarn.yarn_client import ACTIVE_STATES, YarnClient
from tests.infra.kafka.cluster import KafkaCluster
from tests.integration.hadoop.test_yarn_client import hadoop_conf, paths, yarn  # noqa: F401 - fixtures
from tests.integration.hadoop.test_yarn_job_cluster import (  # noqa: F401 - fixtures
    application_id_in,
    cli,
    cli_env,
    container_process,
    job_id_in,
    node_containers,
    wait_for,
    yarn_clean,
)
from tests.support.streaming import PROGRAM, lines, local_batches, wait_for_committed_batch, wait_for_counts, wait_for_job, word_counts

pytestmark = [pytest.mark.hadoop, pytest.mark.kafka]

COUNT_TIMEOUT = 300  # seconds for a job to count what was produced (a new ApplicationMaster attempt included)
YARN = ("-t", "yarn-per-job")
EVERY_STATE = (*ACTIVE_STATES, "FINISHED", "FAILED", "KILLED")
# This machine's Python is on the only node: nothing is packed or shipped.
LOCAL_PYTHON = ("-D", f"jobcluster.yarn.python={sys.executable}")


@pytest.fixture
def hdfs_dir(paths: HdfsPaths) -> Iterator[str]:  # noqa: F811
    """A fresh directory on HDFS (as a ``hdfs://`` URI), removed afterwards."""
    path = f"{paths.staging_base(None)}/streaming-{uuid.uuid4().hex[:8]}"
    paths.client.makedirs(path)
    yield paths.qualify(path)
    paths.client.delete(path, recursive=True)


def hdfs_exists(paths: HdfsPaths, uri: str) -> bool:  # noqa: F811
    return paths.client.status(urlsplit(uri).path, strict=False) is not None


def _savepoint_path(result) -> str:  # type: ignore[no-untyped-def]
    assert result.returncode == 0, result.stderr
    return re.search(r"Savepoint completed\. Path: (\S+)", result.stdout).group(1)


def _run_detached(env: dict[str, str], *args: str) -> tuple[str, str]:
    result = cli(env, "run", *YARN, "-d", *LOCAL_PYTHON, *args)
    assert result.returncode == 0, result.stderr
    return application_id_in(result.stderr), job_id_in(result.stdout)


def _rest(yarn: YarnClient, application: str) -> str:  # noqa: F811
    """The REST URL of the ApplicationMaster attempt that serves now."""
    report = wait_for(lambda: (r := yarn.report(application)).state == "RUNNING" and r.rpc_port > 0 and r, f"{application} serving")
    return rest_url_of(report)


def _attempts(hadoop_conf: HadoopConfiguration, application: str) -> list[dict]:  # noqa: F811
    """The application's attempts as the ResourceManager's REST API lists them."""
    url = f"{hadoop_conf.resourcemanager_webapp_url()}/ws/v1/cluster/apps/{application}/appattempts"
    return list(requests.get(url, headers={"Accept": "application/json"}, timeout=10).json()["appAttempts"]["appAttempt"])


def _ended(yarn: YarnClient, application: str) -> tuple[str, str]:  # noqa: F811
    report = yarn.follow(application, timeout=120)
    return report.state, report.final_status


def _streaming(details: dict) -> bool:
    return bool(details["state"] == "RUNNING" and details["job-type"] == "STREAMING")


def _processes_of(applications: list[str]) -> list[psutil.Process]:
    """Processes of this machine still running in a container of ``applications``."""
    suffixes = tuple(a.split("_", 1)[1] for a in applications)
    found = []
    for proc in psutil.process_iter(["environ"]):
        try:
            container = (proc.info["environ"] or {}).get("CONTAINER_ID", "")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if any(f"_{s}_" in container for s in suffixes):
            found.append(proc)
    return found


def test_a_streaming_word_count_on_yarn_is_exactly_once_through_failover_savepoints_and_restores(
    cli_env: dict[str, str],  # noqa: F811
    yarn: YarnClient,  # noqa: F811
    paths: HdfsPaths,  # noqa: F811
    hadoop_conf: HadoopConfiguration,  # noqa: F811
    hdfs_dir: str,
    tmp_path: Path,
    kafka_cluster: KafkaCluster,
    spark_kafka_jars: list[Path],
    yarn_clean: None,  # noqa: F811
) -> None:
    topic = f"words-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, partitions=2)
    # The first part spans three micro-batches of the first cluster, for its two faults mid-stream; the rest is
    # kept to few batches (each costs seconds of Spark and HDFS on a loaded machine).
    parts = [lines(0, 60), lines(1, 30), lines(2, 30), lines(3, 60)]
    produced: list[str] = []

    def produce(part: list[str]) -> Counter[str]:
        kafka_cluster.produce(topic, [(None, line) for line in part])
        produced.extend(part)
        return word_counts(produced)

    checkpoints, savepoints = f"{hdfs_dir}/checkpoints", f"{hdfs_dir}/savepoints"
    common = [
        "-D",
        f"execution.checkpointing.dir={checkpoints}",
        "-D",
        f"execution.checkpointing.savepoint-dir={savepoints}",
        "--jars",
        ",".join(str(j) for j in spark_kafka_jars),
    ]

    def program(output: Path, per_batch: int = 20) -> list[str]:
        args = ["--kafka", kafka_cluster.bootstrap_servers, "--topic", topic, "--output", f"file://{output}", "--per-batch", str(per_batch)]
        return [str(PROGRAM), *args]

    out = tmp_path / "out"
    applications: list[str] = []
    expected = produce(parts[0])
    first, job = _run_detached(
        cli_env, "-p", "2", "-D", "taskmanager.numberOfTaskSlots=1", "-D", "yarn.application-attempts=2", *common, *program(out)
    )
    applications.append(first)
    rest = _rest(yarn, first)
    # A TaskExecutor's container killed mid-stream: Spark carries on with the other, the ResourceManager asks YARN for another.
    wait_for_committed_batch(rest, job, 0, COUNT_TIMEOUT)
    container_process(first, "01_000002", "jobcluster.runtime.taskexecutor").kill()
    # The JobManager killed: YARN starts ApplicationMaster attempt 2, which runs the program again on the same checkpoint root.
    committed = wait_for_committed_batch(rest, job, 1, COUNT_TIMEOUT)["committedBatchId"]
    written_before = {d.name: d.stat().st_mtime_ns for d in out.glob("batch=*") if int(d.name.split("=")[1]) <= committed}
    container_process(first, "01_000001", "jobcluster.backends.yarn.entrypoint").kill()
    wait_for(lambda: len(_attempts(hadoop_conf, first)) == 2, "ApplicationMaster attempt 2", timeout=120)
    rest = _rest(yarn, first)
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "after a TaskExecutor and the ApplicationMaster were killed")
    # attempt 1 may have counted all of it before it was killed: attempt 2's query runs once its slots arrived
    details = wait_for_job(rest, job, _streaming, COUNT_TIMEOUT, "attempt 2's streaming query running")
    assert details["streaming"]["queries"][0]["checkpoint"] == f"{checkpoints}/{job}/wordcount"
    # Resumed, not started over: attempt 2 ran only batches after those attempt 1 committed, and did not write those again.
    ran = [entry["batchId"] for entry in details["streaming"]["queries"][0]["history"]]
    assert all(batch > committed for batch in ran), f"attempt 2 ran batches {ran}; attempt 1 had committed {committed}"
    rewritten = {name for name, mtime in written_before.items() if (out / name).stat().st_mtime_ns != mtime}
    assert rewritten == set(), f"attempt 2 wrote committed batches again: {sorted(rewritten)}"

    # A savepoint on HDFS while the job runs; more records; then stop-with-savepoint into the default directory.
    expected = produce(parts[1])
    running_savepoint = _savepoint_path(cli(cli_env, "savepoint", *YARN, job, f"{hdfs_dir}/running-savepoints"))
    assert re.fullmatch(rf"{hdfs_dir}/running-savepoints/savepoint-{job[:6]}-[0-9a-f]{{12}}", running_savepoint), running_savepoint
    expected = produce(parts[2])
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "after a savepoint was taken")
    stopped = _savepoint_path(cli(cli_env, "stop", *YARN, job))
    assert stopped.startswith(f"{savepoints}/savepoint-{job[:6]}-"), stopped
    assert hdfs_exists(paths, f"{stopped}/_metadata")
    assert _ended(yarn, first) == ("FINISHED", "SUCCEEDED")

    # Restored with another parallelism after more records arrived: it goes on where the stop left it.
    expected = produce(parts[3])
    second, restored = _run_detached(cli_env, "-p", "1", "-s", stopped, *common, *program(out, per_batch=60))
    applications.append(second)
    rest = _rest(yarn, second)
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "restored from the stop's savepoint with parallelism 1")
    stats = requests.get(f"{rest}/jobs/{restored}/checkpoints", timeout=10).json()
    assert stats["counts"]["restored"] == 1 and stats["latest"]["restored"]["external_path"] == stopped
    assert hdfs_exists(paths, f"{checkpoints}/{restored}/wordcount/commits"), "the new job checkpoints under its own JobID"
    last = _savepoint_path(cli(cli_env, "stop", *YARN, restored, "--savepointPath", f"{hdfs_dir}/last"))
    assert last.startswith(f"{hdfs_dir}/last/savepoint-{restored[:6]}-") and hdfs_exists(paths, f"{last}/_metadata"), last
    assert _ended(yarn, second) == ("FINISHED", "SUCCEEDED")

    # YARN's own view: attempt 2 of the first application, one attempt of the second; nothing left running.
    assert [len(_attempts(hadoop_conf, a)) for a in applications] == [2, 1]
    wait_for(lambda: not any(node_containers(hadoop_conf, a) for a in applications), "the NodeManager to run none of their containers")
    wait_for(lambda: not _processes_of(applications), "the containers' processes to be gone", timeout=60)

    disposed = cli(cli_env, "savepoint", *YARN, "--dispose", running_savepoint)
    assert disposed.returncode == 0 and "disposed" in disposed.stdout, disposed.stderr
    assert not hdfs_exists(paths, running_savepoint) and hdfs_exists(paths, stopped)


def test_a_savepoint_on_hdfs_that_cannot_be_restored_is_refused_before_deploying(
    cli_env: dict[str, str],  # noqa: F811
    yarn: YarnClient,  # noqa: F811
    paths: HdfsPaths,  # noqa: F811
    hdfs_dir: str,
    tmp_path: Path,
    yarn_clean: None,  # noqa: F811
) -> None:
    checkpoints = ("-D", f"execution.checkpointing.dir={hdfs_dir}/checkpoints")
    program = [str(PROGRAM), "--kafka", "localhost:9", "--topic", "none", "--output", f"file://{tmp_path}/out"]
    paths.client.write(f"{urlsplit(hdfs_dir).path}/not-a-savepoint/offsets/0", data=b"v1", overwrite=True)
    before = {r.application_id for r in yarn.applications(["jobcluster"], states=EVERY_STATE)}
    for savepoint, message in [
        (f"{hdfs_dir}/missing", f"savepoint {hdfs_dir}/missing does not exist"),
        (f"{hdfs_dir}/not-a-savepoint", f"{hdfs_dir}/not-a-savepoint is not a savepoint: it has no _metadata file"),
    ]:
        refused = cli(cli_env, "run", *YARN, *LOCAL_PYTHON, "-s", savepoint, *checkpoints, *program)
        assert refused.returncode == 1 and message in refused.stderr, refused.stderr
        assert "YARN application" not in refused.stderr, refused.stderr
        disposed = cli(cli_env, "savepoint", *YARN, "--dispose", savepoint)
        assert disposed.returncode == 1 and message in disposed.stderr, disposed.stderr
    after = {r.application_id for r in yarn.applications(["jobcluster"], states=EVERY_STATE)}
    assert after == before, "a refused savepoint must not create a YARN application"
    assert hdfs_exists(paths, f"{hdfs_dir}/not-a-savepoint/offsets/0"), "a directory that is not a savepoint is not disposed"
