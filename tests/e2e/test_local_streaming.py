"""Streaming with Flink's guarantees on the local targets, counted against a real Kafka topic.

One chain of job clusters reading one topic, each step checked exactly (no
record lost, none counted twice) by tests/support/streaming.py. The first
runs on ``local-cluster``, whose TaskExecutors are processes: a TaskExecutor
and then the program's driver are killed mid-stream (the restart strategy
resumes on the same checkpoint root), a savepoint is taken while the job
runs, and the job is stopped with a savepoint. The rest of the chain runs on
``local`` (the MiniCluster), from those savepoints: the stop's savepoint is
refused to a program that renamed its query, and restored with another
parallelism after more records arrived, where Flink 1.20's own CLI lists it,
takes a savepoint and disposes of it, and where Flink 2.3's dashboard (the
default) shows the restore as the job's rescale (its Rescales tab, in headless
Chromium); the running savepoint is restored too, attached, at the parallelism
it was taken with (no rescale), with Flink 1.20.3's dashboard selected
(``jobcluster.web.dashboard-version``), and stopped by Flink's CLI. Bad
savepoints are refused before anything is deployed.

Kafka's sink, which writes a micro-batch it sees again a second time, is
counted record by record through a stop and a restore on ``local``: nothing
lost, and written twice only what the stop reported it had interrupted.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import psutil
import pytest
import requests
from selenium.webdriver.common.by import By
from support import PROGRAMS, REPO, jobcluster, processes_of, staging_dirs

from jobcluster.spark.driver_agent.settings import EXIT_NOT_RESTARTABLE
from tests.infra.flink.client import FlinkClient
from tests.infra.kafka.cluster import KafkaCluster
from tests.support.browser import headless_chromium
from tests.support.streaming import (
    PROGRAM,
    Steps,
    lines,
    local_batches,
    wait_for_committed_batch,
    wait_for_counts,
    wait_for_job,
    word_counts,
)

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.flink]

COUNT_TIMEOUT = 240  # seconds for a job to count what was produced
PAGE_TIMEOUT = 60  # seconds for a dashboard page to show what it must (it polls every 3 s)
KAFKA_TO_KAFKA = PROGRAMS / "kafka_to_kafka.py"


def _run_detached(*args: str) -> tuple[str, str]:
    result = jobcluster("run", "-d", *args, check=True)
    job_id = re.search(r"JobID ([0-9a-f]{32})", result.stdout).group(1)
    rest = re.search(r"REST API at (http://\S+)", result.stderr).group(1)
    return job_id, rest


def _savepoint_path(result) -> str:
    """The path in ``Savepoint completed. Path: ...``, as jobcluster's CLI and Flink's print it."""
    assert result.returncode == 0, result.stdout + result.stderr
    return re.search(r"Savepoint completed\. Path: (\S+)", result.stdout).group(1)


def _local(uri: str, *parts: str) -> Path:
    return Path(uri.removeprefix("file:"), *parts)


def _wait_until_gone(home: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while (processes_of(home) or staging_dirs(home)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not staging_dirs(home), "the stopped cluster left its staging directory"


def _driver(home: Path) -> psutil.Process:
    return next(p for p in processes_of(home) if "jobcluster.spark.driver_agent" in " ".join(p.cmdline()))


@pytest.mark.browser
def test_a_streaming_word_count_is_exactly_once_through_failures_savepoints_and_restores(
    home, tmp_path, kafka_cluster: KafkaCluster, spark_kafka_jars: list[Path], flink_client: FlinkClient, browser_artefacts: Path
):
    topic = f"words-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, partitions=2)
    parts = [lines(seed, 60) for seed in range(4)]
    produced: list[str] = []

    def produce(part: list[str]) -> Counter[str]:
        kafka_cluster.produce(topic, [(None, line) for line in part])
        produced.extend(part)
        return word_counts(produced)

    checkpoints, savepoints, out = tmp_path / "checkpoints", tmp_path / "savepoints", tmp_path / "out"
    jars = [str(j) for j in spark_kafka_jars]
    common = [
        "-D",
        f"execution.checkpointing.dir={checkpoints}",
        "-D",
        f"execution.checkpointing.savepoint-dir={savepoints}",
        # the jars both ways spark-submit takes them: comma-separated, and the option repeated
        *("--jars", ",".join(jars[:2]), "--jars", ",".join(jars[2:])),
    ]

    def program(output: Path) -> list[str]:
        return [str(PROGRAM), "--kafka", kafka_cluster.bootstrap_servers, "--topic", topic, "--output", str(output), "--per-batch", "20"]

    expected = produce(parts[0])
    job, rest = _run_detached(
        "-t", "local-cluster", "-p", "2", "-D", "taskmanager.numberOfTaskSlots=1", "-D", "restart-strategy.type=fixed-delay",
        *common, *program(out),
    )  # fmt: skip
    # A TaskExecutor killed mid-stream: Spark carries on with the other, the ResourceManager replaces it.
    wait_for_committed_batch(rest, job, 0, COUNT_TIMEOUT)
    victim = requests.get(f"{rest}/taskmanagers", timeout=5).json()["taskmanagers"][0]
    psutil.Process(victim["pid"]).send_signal(signal.SIGKILL)
    # The program's driver killed: the restart strategy runs it again, on the same checkpoint root.
    wait_for_committed_batch(rest, job, 1, COUNT_TIMEOUT)
    _driver(home).send_signal(signal.SIGKILL)
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "after a TaskExecutor and the driver were killed")
    # the counts can be complete before the JobMaster has seen the driver's death and restarted it
    details = wait_for_job(rest, job, lambda d: d["restarts"] >= 1 and d["state"] == "RUNNING", COUNT_TIMEOUT, "the restart")
    assert (details["state"], details["restarts"], details["job-type"]) == ("RUNNING", 1, "STREAMING")
    assert details["streaming"]["queries"][0]["checkpoint"] == f"file:{checkpoints}/{job}/wordcount"

    # A savepoint while the job runs; more records; then stop-with-savepoint into the default directory.
    expected = produce(parts[1])
    running_savepoint = _savepoint_path(jobcluster("savepoint", job, str(tmp_path / "running-savepoints")))
    assert re.fullmatch(rf"file:{tmp_path}/running-savepoints/savepoint-{job[:6]}-[0-9a-f]{{12}}", running_savepoint)
    expected = produce(parts[2])
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "after a savepoint was taken")
    stopped = _savepoint_path(jobcluster("stop", job))
    assert stopped.startswith(f"file:{savepoints}/savepoint-{job[:6]}-")
    assert json.loads(_local(stopped, "_metadata").read_text())["parallelism"] == 2, "the savepoint records its job's parallelism"
    _wait_until_gone(home)

    # The savepoint restored into a program whose query has another name: refused, naming the query left out, and not
    # restarted (a restart could not pass the check) although the job has restarts to spare.
    renamed = jobcluster("run", "-s", stopped, *common, *program(tmp_path / "renamed-out"), "--query-name", "renamed")
    assert renamed.returncode == EXIT_NOT_RESTARTABLE, renamed.stderr
    assert "holds state of the streaming query 'wordcount', which the program did not start" in renamed.stderr
    assert "--allowNonRestoredState" in renamed.stderr
    _wait_until_gone(home)

    # Restored with another parallelism after more records arrived: it goes on where the stop left it.
    expected = produce(parts[3])
    restored, rest = _run_detached("-p", "1", "-s", stopped, *common, *program(out))
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "restored from the stop's savepoint with parallelism 1")
    # Its state keeps the first run's 2 partitions (spark.sql.shuffle.partitions, fixed in the checkpoint): REST says so.
    deadline = time.monotonic() + 30
    while (vertex := requests.get(f"{rest}/jobs/{restored}", timeout=5).json()["vertices"][0])["maxParallelism"] != 2:
        assert time.monotonic() < deadline, f"maxParallelism is not the state's 2 partitions: {vertex}"
        time.sleep(1)
    assert vertex["parallelism"] == 1
    stats = requests.get(f"{rest}/jobs/{restored}/checkpoints", timeout=5).json()
    assert stats["counts"]["restored"] == 1 and stats["latest"]["restored"]["external_path"] == stopped
    assert (checkpoints / restored / "wordcount" / "commits").is_dir(), "the new job checkpoints under its own JobID"
    _rescaled_from_2_to_1(rest, restored, browser_artefacts)

    # Flink 1.20's own CLI with the cluster's token: it lists the job, takes a savepoint, and disposes of it
    # through the running cluster (POST /savepoint-disposal), refusing a directory that is not one.
    (token_file,) = (home / "clusters").glob("*/rest-token")
    token = token_file.read_text().strip()
    listed = flink_client.cli(rest, "list")
    assert listed.returncode == 0 and f": {restored} : " in listed.stdout and "(RUNNING)" in listed.stdout, listed.stdout + listed.stderr
    by_flink = _savepoint_path(flink_client.cli(rest, "savepoint", restored, str(tmp_path / "flink"), token=token))
    assert json.loads(_local(by_flink, "_metadata").read_text())["queries"]["wordcount"]["committedBatchId"] >= 0
    refused = flink_client.cli(rest, "savepoint", "-d", str(tmp_path / "flink"), token=token)
    assert refused.returncode != 0 and "no _metadata file" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    disposed = flink_client.cli(rest, "savepoint", "-d", by_flink, token=token)
    assert disposed.returncode == 0 and f"Savepoint '{by_flink}' disposed." in disposed.stdout, disposed.stdout + disposed.stderr
    assert not _local(by_flink).exists() and (tmp_path / "flink").is_dir()
    jobcluster("cancel", restored, check=True)
    _wait_until_gone(home)

    # The savepoint taken while running, restored into a fresh output: its state plus what came after it.
    # Attached, as a user runs it: the queries' progress at a steady pace, then FINISHED once stopped.
    settings = ["-D", "taskmanager.numberOfTaskSlots=2", "-D", "jobcluster.client.streaming-progress-interval=2s"]
    settings += ["-D", "jobcluster.web.dashboard-version=1.20.3"]  # Flink 1.20's dashboard, one option away
    attached = subprocess.Popen(
        [sys.executable, "-m", "jobcluster", "run", "-p", "2", *settings, "-s", running_savepoint, *common, *program(tmp_path / "out3")],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_counts(local_batches(tmp_path / "out3"), expected, COUNT_TIMEOUT, "restored from the running savepoint")
        listing = jobcluster("list", check=True).stdout
        again = re.search(r"^\S+ \S+\s+([0-9a-f]{32})\s", listing, re.M).group(1)
        rest = re.search(r"(http://\S+)\s*$", listing, re.M).group(1)
        _flink_1_20s_dashboard_shows_the_job(rest, again, browser_artefacts)
        (token_file,) = (home / "clusters").glob("*/rest-token")
        # stopped by Flink's CLI: `flink stop --savepointPath` prints the path, the job ends FINISHED
        flink_stop = flink_client.cli(rest, "stop", "--savepointPath", str(tmp_path / "last"), again, token=token_file.read_text().strip())
        assert _local(_savepoint_path(flink_stop), "_metadata").is_file()
        stdout, stderr = attached.communicate(timeout=COUNT_TIMEOUT)
    finally:
        if attached.poll() is None:
            attached.kill()
    assert attached.returncode == 0, stderr
    assert re.search(r"Query wordcount started \(id ", stderr), stderr
    assert re.search(r"Query wordcount: batch \d+, .* rows/s in, .* rows/s processed, [\d,]+ state rows", stderr), stderr
    assert "Query wordcount stopped" in stderr and f"Job {again} (streaming_wordcount) FINISHED" in stderr, stderr
    assert "query wordcount stopped after batch" in stdout, "the program went on after its query stopped, and ended"
    _wait_until_gone(home)

    disposed = jobcluster("savepoint", "--dispose", running_savepoint, check=True)
    assert "disposed" in disposed.stdout and not Path(running_savepoint.removeprefix("file:")).exists()


def test_a_savepoint_that_cannot_be_restored_is_refused_before_anything_is_deployed(home, tmp_path):
    checkpoints = ["-D", f"execution.checkpointing.dir={tmp_path / 'checkpoints'}"]
    args = [str(PROGRAM), "--kafka", "127.0.0.1:9", "--topic", "none", "--output", str(tmp_path / "out")]
    for savepoint, message in [
        (tmp_path / "missing", f"savepoint {tmp_path / 'missing'} does not exist"),
        (tmp_path, f"{tmp_path} is not a savepoint: it has no _metadata file"),
    ]:
        refused = jobcluster("run", "-s", str(savepoint), *checkpoints, *args)
        assert refused.returncode == 1 and message in refused.stderr, refused.stderr
    refused = jobcluster("run", "-s", str(tmp_path), *args)
    assert refused.returncode == 1 and "set execution.checkpointing.dir" in refused.stderr, refused.stderr
    assert staging_dirs(home) == [] and processes_of(home) == []


def _rescaled_from_2_to_1(rest: str, job: str, artefacts: Path) -> None:
    """The restore at parallelism 1 of a savepoint taken at 2 is the job's one rescale in Flink 2.3's history (its
    initial schedule), which Flink 2.3's dashboard shows on the job's Rescales tab, with no console error and no
    request refused."""
    deadline = time.monotonic() + 30  # the JobMaster learns of the restore from the driver agent at its next read
    while not (history := requests.get(f"{rest}/jobs/{job}/rescales/history", timeout=5).json()):
        assert time.monotonic() < deadline, "no rescale in the restored job's history"
        time.sleep(1)
    (rescale,) = history
    assert (rescale["triggerCause"], rescale["terminalState"]) == ("INITIAL_SCHEDULE", "COMPLETED"), rescale
    details = requests.get(f"{rest}/jobs/{job}/rescales/details/{rescale['rescaleUuid']}", timeout=5).json()
    ((vertex_id, vertex),) = details["vertices"].items()
    assert (vertex["preRescaleParallelism"], vertex["postRescaleParallelism"]) == (2, 1), vertex
    with headless_chromium(artefacts) as browser:
        browser.open(f"{rest}/?page=rescales#/job/running/{job}/rescales")
        browser.wait_for_text("Completed: 1", PAGE_TIMEOUT)
        shown = browser.wait_for_text("INITIAL_SCHEDULE", PAGE_TIMEOUT)
        assert re.search(rf"{vertex_id[:8]}\s+\S.*\s2\s+1\s+1\s+1\s", shown), "the vertex's row: previous 2, acquired 1"
        browser.screenshot("rescales")
        browser.driver.find_element(By.XPATH, "//*[contains(@class, 'ant-tabs-tab')][normalize-space()='History']").click()
        shown = browser.wait_for_text("Terminated Reason", PAGE_TIMEOUT)
        assert re.search(rf"{rescale['rescaleUuid'][:8]}\s.*INITIAL_SCHEDULE\s+COMPLETED\s+SUCCEEDED", shown, re.S), shown[-600:]
        browser.screenshot("rescales-history")
        assert browser.console_errors() == []
        assert [(r.url, r.status) for r in browser.requests() if r.status is not None and r.status >= 400] == []
        assert {f"/jobs/{job}/rescales/{p}" for p in ("config", "history", "overview", "summary")} <= browser.paths(rest)


def _flink_1_20s_dashboard_shows_the_job(rest: str, job: str, artefacts: Path) -> None:
    """With ``jobcluster.web.dashboard-version: 1.20.3`` the cluster serves Flink 1.20's dashboard, which shows the
    streaming job and its checkpoints with no console error and no request refused; restored at the parallelism its
    savepoint was taken with, the job has no rescale."""
    assert requests.get(f"{rest}/jobs/{job}/rescales/history", timeout=5).json() == []
    with headless_chromium(artefacts) as browser:
        browser.open(f"{rest}/?page=job#/job/running/{job}/overview")
        browser.wait_for_text("PySpark: streaming_wordcount.py", PAGE_TIMEOUT)
        shown = browser.wait_for_text("STREAMING", PAGE_TIMEOUT)
        assert "Running Applications" not in shown and "Rescales" not in shown, "Flink 1.20's dashboard, which has neither"
        browser.open(f"{rest}/?page=checkpoints#/job/running/{job}/checkpoints")
        browser.wait_for_text("Latest Completed Checkpoint", PAGE_TIMEOUT)
        browser.screenshot("flink-1.20-checkpoints")
        assert browser.console_errors() == []
        assert [(r.url, r.status) for r in browser.requests() if r.status is not None and r.status >= 400] == []
        assert not [p for p in browser.paths(rest) if p.startswith(("/applications", f"/jobs/{job}/rescales"))]


def _read_up_to(savepoint: Path, query: str, topic: str, batch: int | None) -> dict[int, int]:
    """Where micro-batch ``batch`` of ``query`` ends in each partition of the Kafka ``topic``, by the savepoint's copy of
    Spark's offset log (``offsets/<batch>``: ``v1``, the batch's metadata, then one line per source); {} for None."""
    if batch is None:
        return {}
    log = (savepoint / query / "offsets" / str(batch)).read_text().splitlines()
    return {int(p): int(o) for p, o in json.loads(log[2])[topic].items()}


def _interrupted_records(savepoint: Path, query: str, topic: str) -> tuple[int | None, set[str], int]:
    """The micro-batch a stop interrupted (its savepoint's ``plannedBatchId`` past ``committedBatchId``; None when it
    interrupted none), its records as ``partition:offset`` (what a restore runs again), and how many records the job had
    planned to read by the stop."""
    cut = json.loads((savepoint / "_metadata").read_text())["queries"][query]
    planned, committed = cut["plannedBatchId"], cut["committedBatchId"]
    end = _read_up_to(savepoint, query, topic, planned if planned is not None else committed)
    if planned is None or planned == committed:
        return None, set(), sum(end.values())
    start = _read_up_to(savepoint, query, topic, committed)
    return planned, {f"{p}:{o}" for p, last in end.items() for o in range(start.get(p, 0), last)}, sum(end.values())


def _all_records(kafka: KafkaCluster, topic: str) -> set[str]:
    """Every record of ``topic`` so far, as ``partition:offset``."""
    return {f"{p}:{o}" for p, end in kafka.end_offsets(topic).items() for o in range(end)}


def _wait_for_sink(kafka: KafkaCluster, sink: str, expected: set[str], timeout: float) -> Counter[str]:
    """How often the sink topic holds each value, once it holds every one of ``expected`` (AssertionError after ``timeout``
    seconds with how many are missing)."""
    deadline = time.monotonic() + timeout
    while True:
        written = Counter(value.decode() for _, value in kafka.consume_all(sink))
        if expected <= written.keys():
            return written
        if time.monotonic() > deadline:
            raise AssertionError(f"after {timeout:.0f} s the sink holds {len(expected - written.keys())} of {len(expected)} records not")
        time.sleep(1.0)


def test_a_kafka_sink_loses_nothing_through_a_stop_and_a_restore_and_duplicates_only_the_batch_the_stop_interrupted(
    home, tmp_path, kafka_cluster: KafkaCluster, spark_kafka_jars: list[Path]
):
    steps = Steps()
    source, sink = f"copy-in-{uuid.uuid4().hex[:8]}", f"copy-out-{uuid.uuid4().hex[:8]}"
    for topic in (source, sink):
        kafka_cluster.create_topic(topic, partitions=2)
    # 40 micro-batches of 50, back to back at 0.2-0.3 s each: the stop, 2-4 s after the first commit, finds input left
    first = 2000
    kafka_cluster.produce(source, [(None, f"line {i}") for i in range(first)])
    common = [
        "-p", "2",
        "-D", f"execution.checkpointing.dir={tmp_path / 'checkpoints'}",
        "-D", f"execution.checkpointing.savepoint-dir={tmp_path / 'savepoints'}",
        "--jars", ",".join(str(j) for j in spark_kafka_jars),
        str(KAFKA_TO_KAFKA), "--kafka", kafka_cluster.bootstrap_servers, "--source-topic", source, "--sink-topic", sink,
        "--per-batch", "50",
    ]  # fmt: skip
    job, rest = _run_detached(*common)
    wait_for_committed_batch(rest, job, 0, COUNT_TIMEOUT)
    steps("run to a committed batch")
    savepoint = _local(_savepoint_path(jobcluster("stop", job)))
    steps("stop")
    _wait_until_gone(home)
    steps("cluster gone")

    batch, interrupted, read = _interrupted_records(savepoint, "copy", source)
    assert read < first, f"the stop came after the job had read all {first} records: it shows nothing of a stop while reading"
    (driver_err,) = (home / "log").glob("*/driver.err")
    # the stop's warning goes to the program's stderr (and the JobManager's log), not to the stop command's output
    warning = re.search(r"the stop interrupted micro-batch (\d+) of query 'copy'", driver_err.read_text())
    warned = int(warning.group(1)) if warning else None
    assert warned == batch, f"the savepoint says the stop interrupted batch {batch}, the program's stderr {warned}"

    kafka_cluster.produce(source, [(None, f"line {i}") for i in range(first, first + 500)])
    restored, _ = _run_detached("-s", str(savepoint), *common)
    _wait_for_sink(kafka_cluster, sink, _all_records(kafka_cluster, source), COUNT_TIMEOUT)
    steps("restore to every record")
    jobcluster("cancel", restored, check=True)
    _wait_until_gone(home)
    steps("cancel")

    expected = _all_records(kafka_cluster, source)
    written = Counter(value.decode() for _, value in kafka_cluster.consume_all(sink))
    twice = {record: n - 1 for record, n in written.items() if n > 1}
    stopped_in = f"batch {batch} ({len(interrupted)} records)" if batch is not None else "no batch"
    report = (
        f"{len(expected)} records, {sum(written.values())} written, {sum(twice.values())} duplicates; the stop interrupted {stopped_in}"
    )
    print(f"Kafka sink through a stop and a restore: {report}\n{steps.summary('the test')}")
    lost, unknown = sorted(expected - written.keys()), sorted(written.keys() - expected)
    assert not lost and not unknown, f"{report}: lost {lost[:10]}, unknown {unknown[:10]}"
    assert max(twice.values(), default=0) <= 1 and twice.keys() <= interrupted, (
        f"{report}: written twice outside the interrupted batch, or more than twice: {sorted(twice.items())[:10]}"
    )
