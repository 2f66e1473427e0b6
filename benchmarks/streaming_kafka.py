"""Benchmark: a streaming word count from Kafka, on a local job cluster and under spark-submit: throughput, and stop-with-savepoint.

    .venv/bin/python benchmarks/streaming_kafka.py [--records 1000000] [--per-batch 100000] [--stops 3]

Starts the Kafka test broker (tests/infra/kafka), pre-produces ``--records``
lines of 1-5 words into a topic of 2 partitions, and runs on it, one after the
other, the stateful word count of the streaming tests
(tests/e2e/programs/streaming_wordcount.py: running counts per word, each
micro-batch's changes written as JSON) with the same arguments, reading at
most ``--per-batch`` records per micro-batch from the earliest offset:

- under PySpark's own ``spark-submit --master local[2]``, with its own
  checkpoint and output directories, until it has read every record (then it
  is killed). That is the layout jobcluster runs below: ``-t local`` is the
  MiniCluster, whose program runs Spark in local mode with as many threads as
  the job has slots (``local[2]`` at ``-p 2``), the driver's JVM sized as the
  JobManager's driver. So spark-submit gets the same driver sizes (jobcluster's
  own mapping, as standalone_cluster.py does), ``spark.default.parallelism``
  and ``spark.sql.shuffle.partitions`` 2 (what jobcluster sets to ``-p``), and
  Spark's Kafka connector by ``--jars``. Two executors of 1 core would be
  ``local-cluster`` against a standalone cluster started by hand; the
  stop-with-savepoint timings below are of ``local``, so both sides are;
- jobcluster, detached at parallelism 2 (2 TaskExecutors of 1 slot), until
  it has read every record.

Throughput comes from the query's progress reports, the same on both sides:
each micro-batch that ran (its input rows, its ``triggerExecution``
duration). For jobcluster as the REST API gives them (``GET /jobs/{id}``);
under spark-submit, which has no such API (Spark's monitoring REST API has no
Structured Streaming progress), the program appends each report to a file
(``--progress-file``, a StreamingQueryListener, given to both runs so that
they run the same program). Per side, over the batches after the first
(which starts the Kafka consumers and the state store) that read at least
half of ``--per-batch`` (not the few rows left at the topic's end): rows/s
per batch (median), rows / their summed durations, and by the wall clock from
the first batch's commit to the last's; then the ratios jobcluster /
spark-submit (goal: at least 0.95 of the median).

Then ``--stops`` times: more records are produced, the job is resumed from the
previous savepoint (``run -s``), and once it has committed a micro-batch of
them, ``jobcluster stop`` is timed until it prints the savepoint's path (and
until it returns). Prints every number and the medians; they go to
docs/development/benchmarks.md and are never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(REPO), str(REPO / "benchmarks")) if p not in sys.path]

from startup_side_by_side import spark_submit  # noqa: E402 - needs benchmarks/ on sys.path

from jobcluster.config.loader import load_configuration  # noqa: E402
from jobcluster.memory.jobmanager import job_manager_process_spec_from_config  # noqa: E402
from jobcluster.spark.sizing import spark_sizing_for_job_manager  # noqa: E402
from tests.infra.kafka.cluster import KafkaCluster, spark_kafka_connector_jars  # noqa: E402 - needs the repository root on sys.path
from tests.support.streaming import PROGRAM, lines  # noqa: E402

PRODUCE_CHUNK = 50_000  # lines per produce() call: bounded memory for a large topic
PARALLELISM = 2  # jobcluster's -p, and spark-submit's local[N]
GOAL = 0.95  # jobcluster's median rows/s per batch over spark-submit's, at least

#: a micro-batch that ran, as the REST API's query history gives it: batchId, triggerTime (ms since the epoch),
#: durationMs (its triggerExecution), numInputRows
Batch = dict[str, Any]


def jobcluster(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "jobcluster", *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"jobcluster {args[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-3000:]}")
    return done


def produce(kafka: KafkaCluster, topic: str, count: int, seed: int) -> None:
    for start in range(0, count, PRODUCE_CHUNK):
        kafka.produce(topic, [(None, line) for line in lines(seed * 1_000_000 + start, min(PRODUCE_CHUNK, count - start))])


def query(rest: str, job: str) -> dict[str, Any] | None:
    try:
        queries = (requests.get(f"{rest}/jobs/{job}", timeout=10).json().get("streaming") or {}).get("queries") or []
    except requests.RequestException:
        return None
    return queries[0] if queries else None


def run_detached(env: dict[str, str], common: list[str], *extra: str) -> tuple[str, str]:
    started = jobcluster(env, "run", "-d", *extra, *common)
    job = re.search(r"JobID ([0-9a-f]{32})", started.stdout).group(1)
    rest = re.search(r"REST API at (http://\S+)", started.stderr).group(1)
    return job, rest


def throughput(env: dict[str, str], common: list[str], records: int) -> tuple[str, str, dict[int, Batch]]:
    """Run the job until it has read ``records`` rows; (job, REST URL, each committed batch's history entry by batch id)."""
    job, rest = run_detached(env, common)
    batches: dict[int, Batch] = {}
    while sum(b["numInputRows"] for b in batches.values()) < records:
        time.sleep(0.5)
        view = query(rest, job)
        for entry in (view or {}).get("history") or []:
            if entry["batchId"] not in batches:
                batches[entry["batchId"]] = entry
    return job, rest, batches


def program_args(kafka: KafkaCluster, topic: str, per_batch: int, prefix: Path) -> list[str]:
    """The program's arguments, the same on both sides but for where its output and progress go (``prefix``-out,
    ``prefix``-progress.jsonl)."""
    return [
        "--kafka", kafka.bootstrap_servers, "--topic", topic, "--per-batch", str(per_batch),
        "--output", f"{prefix}-out", "--progress-file", f"{prefix}-progress.jsonl",
    ]  # fmt: skip


def jobcluster_driver_conf() -> dict[str, str]:
    """The driver's sizes jobcluster gives a program at 1 slot per TaskExecutor (its JobManager's memory model)."""
    config = load_configuration(None, {"taskmanager.numberOfTaskSlots": "1"})
    return spark_sizing_for_job_manager(job_manager_process_spec_from_config(config)).driver_conf()


def progress_batch(report: dict[str, Any]) -> Batch | None:
    """A progress report of a micro-batch that ran (it has ``durationMs.addBatch``) as a REST history entry, else None."""
    durations = report.get("durationMs") or {}
    if "addBatch" not in durations:
        return None  # a trigger that found no new input
    started = datetime.fromisoformat(report["timestamp"].replace("Z", "+00:00"))
    return {
        "batchId": int(report["batchId"]),
        "triggerTime": int(started.timestamp() * 1000),
        "durationMs": int(durations.get("triggerExecution", 0)),
        "numInputRows": int(report.get("numInputRows", 0)),
    }


def read_progress(path: Path) -> dict[int, Batch]:
    """The micro-batches that ran, by batch id, from a --progress-file so far (its last line may be half written)."""
    batches: dict[int, Batch] = {}
    if path.exists():
        for text in path.read_text().splitlines():
            try:
                batch = progress_batch(json.loads(text))
            except ValueError:
                continue
            if batch is not None:
                batches[batch["batchId"]] = batch
    return batches


def spark_submit_throughput(tmp: str, program_args: list[str], progress: Path, records: int) -> dict[int, Batch]:
    """Run the program under ``spark-submit --master local[2]`` until it has read ``records`` rows, then kill it.

    Each micro-batch that ran, by batch id. Its checkpoint and output are its
    own (under ``tmp``); its Spark log goes to ``tmp/spark-submit.log``.
    """
    conf = {
        **jobcluster_driver_conf(),
        "spark.default.parallelism": str(PARALLELISM),
        "spark.sql.shuffle.partitions": str(PARALLELISM),
        "spark.sql.streaming.checkpointLocation": f"{tmp}/submit-checkpoints",
        "spark.ui.showConsoleProgress": "false",
    }
    jars = [str(j) for j in spark_kafka_connector_jars()]
    argv, env = spark_submit(f"local[{PARALLELISM}]", PROGRAM, program_args, conf, jars)
    log = Path(tmp, "spark-submit.log")
    with open(log, "w") as out:  # its own session: killing it takes the driver's Python and JVM with it
        driver = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        batches: dict[int, Batch] = {}
        while sum(b["numInputRows"] for b in batches.values()) < records:
            if driver.poll() is not None:
                raise SystemExit(f"spark-submit ended ({driver.returncode}) before it read {records} records; see {log}")
            time.sleep(0.5)
            batches = read_progress(progress)
        return batches
    finally:
        stop_session(driver)


def stop_session(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to ``process``'s session, SIGKILL after 30 s."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def summary(name: str, batches: dict[int, Batch], per_batch: int) -> tuple[float, float]:
    """Print each batch and the rates of one side; (median rows/s per batch, rows/s over their summed durations).

    Both over the batches after the first that read at least half of ``per_batch`` rows: the
    last batch of a topic read to its end may have a few rows, and would weigh as much as a
    full one in the median while measuring only a trigger's fixed cost.
    """
    print(f"\n{name}:")
    ordered = [batches[b] for b in sorted(batches)]
    for b in ordered:
        rate = b["numInputRows"] / (b["durationMs"] / 1000) if b["durationMs"] else 0.0
        print(f"batch {b['batchId']}: {b['numInputRows']} rows in {b['durationMs']} ms ({rate:,.0f} rows/s)")
    steady = [b for b in ordered[1:] if b["numInputRows"] >= per_batch / 2] or ordered
    median = statistics.median(b["numInputRows"] / (b["durationMs"] / 1000) for b in steady if b["durationMs"])
    rows, seconds = sum(b["numInputRows"] for b in steady), sum(b["durationMs"] for b in steady) / 1000
    first, last = ordered[0], steady[-1]
    wall = (last["triggerTime"] + last["durationMs"]) - (first["triggerTime"] + first["durationMs"])
    print(f"median per batch (the {len(steady)} full ones after the first): {median:,.0f} rows/s")
    print(f"those batches: {rows} rows in {seconds:.1f} s of batches = {rows / seconds:,.0f} rows/s", end="")
    print(f"; wall clock {rows / (wall / 1000):,.0f} rows/s" if wall > 0 else "")
    print(f"first batch: {first['numInputRows']} rows in {first['durationMs'] / 1000:.1f} s")
    return median, rows / seconds


def wait_for_batch_after(rest: str, job: str, batch: int) -> int:
    while True:
        view = query(rest, job)
        committed = (view or {}).get("committedBatchId")
        if committed is not None and committed > batch:
            return int(committed)
        time.sleep(0.2)


def timed_stop(env: dict[str, str], job: str) -> tuple[str, float, float]:
    """``jobcluster stop job``: the savepoint's path, seconds until it printed it, seconds until it returned."""
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobcluster", "stop", job], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    savepoint, path_at = None, None
    for line in proc.stdout:  # type: ignore[union-attr]
        found = re.search(r"Savepoint completed\. Path: (\S+)", line)
        if found:
            savepoint, path_at = found.group(1), time.monotonic() - start
    if proc.wait() != 0 or savepoint is None or path_at is None:
        raise SystemExit(f"jobcluster stop failed: {proc.stderr.read()[-3000:]}")  # type: ignore[union-attr]
    return savepoint, path_at, time.monotonic() - start


def stops(env: dict[str, str], kafka: KafkaCluster, topic: str, common: list[str], job: str, args: argparse.Namespace, home: Path) -> None:
    """Time ``args.stops`` + 1 stops: of ``job``, then of the job resumed from each previous savepoint with more to read."""
    savepoint = ""
    to_path, to_return = [], []
    for i in range(args.stops + 1):
        if i > 0:  # resumed from the previous stop's savepoint, with more to read
            produce(kafka, topic, args.stop_records, seed=10 + i)
            job, rest = run_detached(env, common, "-s", savepoint)
            wait_for_batch_after(rest, job, -1)
            # stop while it works: the restored job's first batch done, the next ones reading
        savepoint, path_at, returned = timed_stop(env, job)
        to_path.append(path_at)
        to_return.append(returned)
        kib = sum(f.stat().st_size for f in Path(savepoint.removeprefix("file:")).rglob("*") if f.is_file()) / 1024
        print(f"stop {i}: savepoint path after {path_at:.2f} s, command returned after {returned:.2f} s, savepoint {kib:.0f} KiB")
        deadline = time.monotonic() + 120
        while list((home / "clusters").glob("*")) and time.monotonic() < deadline:
            time.sleep(0.5)
    print(
        f"stop to savepoint path: median {statistics.median(to_path):.2f} s of {len(to_path)}; "
        f"to the command's return: median {statistics.median(to_return):.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--per-batch", type=int, default=100_000, help="maxOffsetsPerTrigger")
    parser.add_argument("--stops", type=int, default=3)
    parser.add_argument("--stop-records", type=int, default=200_000, help="records produced before each resumed run")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-streaming-") as tmp, KafkaCluster(heap="512m") as kafka:
        home = Path(tmp, "home")
        env = {**os.environ, "JOBCLUSTER_HOME": str(home)}
        topic = f"words-{uuid.uuid4().hex[:8]}"
        kafka.create_topic(topic, partitions=2)
        began = time.monotonic()
        produce(kafka, topic, args.records, seed=1)
        print(f"produced {args.records} records in {time.monotonic() - began:.1f} s; load average {os.getloadavg()[0]:.1f}", flush=True)

        # spark-submit first: the stops below produce more into the topic
        submit_args = program_args(kafka, topic, args.per_batch, Path(tmp, "submit"))
        loads = [os.getloadavg()[0]]  # a shared machine's other work shows here, and weighs on one side only
        submitted = spark_submit_throughput(tmp, submit_args, Path(tmp, "submit-progress.jsonl"), args.records)
        loads.append(os.getloadavg()[0])
        common = [
            "-p", str(PARALLELISM),
            "-D", "taskmanager.numberOfTaskSlots=1",
            "-D", f"execution.checkpointing.dir={tmp}/checkpoints",
            "-D", f"execution.checkpointing.savepoint-dir={tmp}/savepoints",
            "--jars", ",".join(str(j) for j in spark_kafka_connector_jars()),
            str(PROGRAM), *program_args(kafka, topic, args.per_batch, Path(tmp, "jobcluster")),
        ]  # fmt: skip
        job, _, batches = throughput(env, common, args.records)
        loads.append(os.getloadavg()[0])

        submit_median, submit_rate = summary(f"spark-submit --master local[{PARALLELISM}]", submitted, args.per_batch)
        median, rate = summary(f"jobcluster -p {PARALLELISM}", batches, args.per_batch)
        ratio = median / submit_median
        print(
            f"\njobcluster / spark-submit: median per batch {ratio:.2f}x (goal >= {GOAL}x: {'met' if ratio >= GOAL else 'not met'}), "
            f"over summed durations {rate / submit_rate:.2f}x; load average {loads[0]:.1f} at spark-submit's start, "
            f"{loads[1]:.1f} at jobcluster's, {loads[2]:.1f} at its end\n"
        )
        stops(env, kafka, topic, common, job, args, home)
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
