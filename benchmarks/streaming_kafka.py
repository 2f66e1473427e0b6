"""Benchmark: a streaming word count from Kafka on a local job cluster: sustained throughput, and stop-with-savepoint.

    .venv/bin/python benchmarks/streaming_kafka.py [--records 1000000] [--per-batch 100000] [--stops 3]

Starts the Kafka test broker (tests/infra/kafka), pre-produces ``--records``
lines of 1-5 words into a topic of 2 partitions, and runs the stateful word
count of the streaming tests (tests/e2e/programs/streaming_wordcount.py:
running counts per word, each micro-batch's changes written as JSON) detached
at parallelism 2 (2 TaskExecutors of 1 slot), reading at most ``--per-batch``
records per micro-batch. Throughput comes from the query's progress as the
REST API gives it (``GET /jobs/{id}``: each committed micro-batch's input rows
and duration): rows/s per batch (median, after the first, which starts the
executors' Kafka consumers and the state store), over all batches but the first
(rows / summed durations), and by the wall clock from the first batch's commit
to the last's.

Then ``--stops`` times: more records are produced, the job is resumed from the
previous savepoint (``run -s``), and once it has committed a micro-batch of
them, ``jobcluster stop`` is timed until it prints the savepoint's path (and
until it returns). Prints every number and the medians; they go to
docs/development/benchmarks.md and are never asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import requests

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.infra.kafka.cluster import KafkaCluster, spark_kafka_connector_jars  # noqa: E402 - needs the repository root on sys.path
from tests.support.streaming import PROGRAM, lines  # noqa: E402

PRODUCE_CHUNK = 50_000  # lines per produce() call: bounded memory for a large topic


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


def throughput(env: dict[str, str], common: list[str], records: int) -> tuple[str, str, dict[int, dict[str, Any]]]:
    """Run the job until it has read ``records`` rows; (job, REST URL, each committed batch's history entry by batch id)."""
    job, rest = run_detached(env, common)
    batches: dict[int, dict[str, Any]] = {}
    while sum(b["numInputRows"] for b in batches.values()) < records:
        time.sleep(0.5)
        view = query(rest, job)
        for entry in (view or {}).get("history") or []:
            if entry["batchId"] not in batches:
                batches[entry["batchId"]] = entry
    return job, rest, batches


def wait_for_batch_after(rest: str, job: str, batch: int) -> int:
    while True:
        view = query(rest, job)
        committed = (view or {}).get("committedBatchId")
        if committed is not None and committed > batch:
            return int(committed)
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--per-batch", type=int, default=100_000, help="maxOffsetsPerTrigger")
    parser.add_argument("--stops", type=int, default=3)
    parser.add_argument("--stop-records", type=int, default=200_000, help="records produced before each resumed run")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-streaming-") as tmp, KafkaCluster(heap="512m") as kafka:
        env = {**os.environ, "JOBCLUSTER_HOME": f"{tmp}/home"}
        topic = f"words-{uuid.uuid4().hex[:8]}"
        kafka.create_topic(topic, partitions=2)
        began = time.monotonic()
        produce(kafka, topic, args.records, seed=1)
        print(f"produced {args.records} records in {time.monotonic() - began:.1f} s", flush=True)
        common = [
            "-p",
            "2",
            "-D",
            "taskmanager.numberOfTaskSlots=1",
            "-D",
            f"execution.checkpointing.dir={tmp}/checkpoints",
            "-D",
            f"execution.checkpointing.savepoint-dir={tmp}/savepoints",
            "--jars",
            ",".join(str(j) for j in spark_kafka_connector_jars()),
            str(PROGRAM),
            "--kafka",
            kafka.bootstrap_servers,
            "--topic",
            topic,
            "--output",
            f"{tmp}/out",
            "--per-batch",
            str(args.per_batch),
        ]

        job, rest, batches = throughput(env, common, args.records)
        ordered = [batches[b] for b in sorted(batches)]
        for b in ordered:
            rate = b["numInputRows"] / (b["durationMs"] / 1000) if b["durationMs"] else 0.0
            print(f"batch {b['batchId']}: {b['numInputRows']} rows in {b['durationMs']} ms ({rate:,.0f} rows/s)")
        steady = ordered[1:] or ordered
        per_batch = [b["numInputRows"] / (b["durationMs"] / 1000) for b in steady if b["durationMs"]]
        rows = sum(b["numInputRows"] for b in steady)
        first, last = min(batches), max(batches)
        wall = (batches[last]["triggerTime"] + batches[last]["durationMs"]) - (batches[first]["triggerTime"] + batches[first]["durationMs"])
        print(f"median per batch (after the first): {statistics.median(per_batch):,.0f} rows/s")
        print(
            f"after the first batch: {rows} rows in {sum(b['durationMs'] for b in steady) / 1000:.1f} s of batches = "
            f"{rows / (sum(b['durationMs'] for b in steady) / 1000):,.0f} rows/s; wall clock {rows / (wall / 1000):,.0f} rows/s"
        )
        print(f"first batch: {batches[first]['numInputRows']} rows in {batches[first]['durationMs'] / 1000:.1f} s")

        savepoint: str | None = None
        to_path, to_return = [], []
        for i in range(args.stops + 1):
            if i > 0:  # resumed from the previous stop's savepoint, with more to read
                produce(kafka, topic, args.stop_records, seed=10 + i)
                job, rest = run_detached(env, common, "-s", savepoint)
                wait_for_batch_after(rest, job, -1)
                # stop while it works: the restored job's first batch done, the next ones reading
            start = time.monotonic()
            proc = subprocess.Popen(
                [sys.executable, "-m", "jobcluster", "stop", job],
                env=env,
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            path_at = None
            for line in proc.stdout:  # type: ignore[union-attr]
                found = re.search(r"Savepoint completed\. Path: (\S+)", line)
                if found:
                    savepoint, path_at = found.group(1), time.monotonic() - start
            if proc.wait() != 0 or path_at is None:
                raise SystemExit(f"jobcluster stop failed: {proc.stderr.read()[-3000:]}")  # type: ignore[union-attr]
            to_path.append(path_at)
            to_return.append(time.monotonic() - start)
            size = sum(f.stat().st_size for f in Path(savepoint.removeprefix("file:")).rglob("*") if f.is_file())
            kib = size / 1024
            print(f"stop {i}: savepoint path after {path_at:.2f} s, command returned after {to_return[-1]:.2f} s, savepoint {kib:.0f} KiB")
            deadline = time.monotonic() + 120
            while list(Path(f"{tmp}/home/clusters").glob("*")) and time.monotonic() < deadline:
                time.sleep(0.5)
        print(
            f"stop to savepoint path: median {statistics.median(to_path):.2f} s of {len(to_path)}; "
            f"to the command's return: median {statistics.median(to_return):.2f} s"
        )
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
