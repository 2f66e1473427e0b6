"""The streaming examples of examples/, run for real on the local target with the commands their docstrings give.

Each example's docstring shows how to run it; the test takes that command from
the docstring (so it cannot drift from what is tested), puts its own port,
topic, paths and jars in, and checks the counts exactly: the socket example's
windows as its console sink prints them, the Kafka example's windows in the
files its file sink committed (``_spark_metadata``), after a stop with a savepoint.
"""

from __future__ import annotations

import ast
import json
import queue
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta
from importlib import metadata
from pathlib import Path

import pytest
from support import REPO, jobcluster

from tests.infra.kafka.cluster import KafkaCluster
from tests.support.streaming import lines, wait_for_committed_batch, word_counts

pytestmark = pytest.mark.e2e

EXAMPLES = REPO / "examples"
COUNT_TIMEOUT = 240  # seconds for a job to count what it was given


def docstring_command(example: Path, starts: str, values: dict[str, str]) -> list[str]:
    """The command of ``example``'s docstring that starts with ``starts`` (``\\`` joins lines), split as the
    shell splits it, each word that is a key of ``values`` replaced by its value; AssertionError when there is none."""
    text = ast.get_docstring(ast.parse(example.read_text())) or ""
    for line in text.replace("\\\n", " ").splitlines():
        if line.strip().startswith(starts):
            return [values.get(word, word) for word in shlex.split(line)]
    raise AssertionError(f"the docstring of {example} has no command starting with {starts!r}")


def _cli_args(command: list[str]) -> list[str]:
    """The arguments of a documented ``jobcluster ...`` command."""
    assert command[0] == "jobcluster", command
    return command[1:]


def _serve_lines(text: list[str]) -> tuple[int, threading.Event]:
    """A TCP server on a free local port that sends ``text`` (one line each) to its first client and keeps the
    connection open until the returned event is set (Spark's socket source ends its stream when it closes)."""
    server = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        with server:
            conn, _ = server.accept()
            with conn:
                conn.sendall("".join(f"{line}\n" for line in text).encode())
                done.wait()

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1], done


_CONSOLE_ROW = re.compile(r"^\|([^|]+)\|([^|]+)\|([^|]+)\|\s*(\d+)\s*\|$")


def test_the_socket_window_word_count_prints_every_words_count_per_window(home, tmp_path):
    text = lines(21, 30)
    port, done = _serve_lines(text)
    args = _cli_args(docstring_command(EXAMPLES / "socket_window_word_count.py", "jobcluster run", {"9999": str(port)}))
    stderr_file = tmp_path / "stderr.txt"
    with open(stderr_file, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "jobcluster", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True)
    rows: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for row in proc.stdout:
            rows.put(row)
        rows.put(None)

    threading.Thread(target=read, daemon=True).start()
    expected = word_counts(text)
    latest: dict[tuple[str, str], int] = {}  # (window start, word): its count as last printed
    try:
        deadline = time.monotonic() + COUNT_TIMEOUT
        counted: Counter[str] = Counter()
        while counted != expected:
            row = rows.get(timeout=max(deadline - time.monotonic(), 0.1))
            assert row is not None, f"the run ended before counting every word:\n{stderr_file.read_text()[-3000:]}"
            match = _CONSOLE_ROW.match(row.strip())
            if match and match[3].strip() != "word":
                start, end, word, count = (cell.strip() for cell in match.groups())
                assert datetime.fromisoformat(end) - datetime.fromisoformat(start) == timedelta(seconds=5), row
                latest[(start, word)] = int(count)
                counted = Counter()
                for (_, w), c in latest.items():
                    counted[w] += c
                over = {w: (c, expected[w]) for w, c in counted.items() if c > expected[w]}
                assert not over, f"counted too often (word: (counted, expected)): {over}"
        job = re.search(r"\(job ([0-9a-f]{32})\)", stderr_file.read_text()).group(1)
        jobcluster("cancel", job, check=True)
        assert proc.wait(timeout=120) == 1, "a cancelled job's run exits 1"
    finally:
        done.set()
        if proc.poll() is None:
            proc.kill()


def _committed_json_rows(output: Path) -> list[dict]:
    """The rows of the files Spark's file sink committed under ``output``, read through its ``_spark_metadata``
    log (the latest compacted file, then every batch's file after it), so a file of an uncommitted batch is ignored."""
    log = output / "_spark_metadata"
    if not log.is_dir():
        return []
    batches = sorted((int(f.name.split(".")[0]), f) for f in log.iterdir() if re.fullmatch(r"\d+(\.compact)?", f.name))
    compacted = [batch for batch, f in batches if f.name.endswith(".compact")]
    rows = []
    for batch, f in batches:
        if compacted and batch < compacted[-1]:
            continue
        for entry in f.read_text().splitlines()[1:]:  # the first line is the log's version
            file = json.loads(entry)
            assert file["action"] == "add", file
            rows += [json.loads(row) for row in Path(file["path"].removeprefix("file://")).read_text().splitlines() if row]
    return rows


def _windows(rows: list[dict]) -> dict[str, Counter[str]]:
    """Each window's word counts, by the window's start in ms since the epoch; AssertionError when a word is twice in one."""
    found: dict[str, Counter[str]] = {}
    for row in rows:
        start = str(int(datetime.fromisoformat(row["start"]).timestamp() * 1000))
        counts = found.setdefault(start, Counter())
        assert row["word"] not in counts, f"window {row['start']} was written twice: {row}"
        counts[row["word"]] = row["count"]
    return found


@pytest.mark.kafka
def test_the_kafka_window_word_count_writes_each_closed_window_once(
    home, tmp_path, kafka_cluster: KafkaCluster, spark_kafka_jars: list[Path]
):
    topic = f"words-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, partitions=2)
    # the start of a 10-second window a few minutes ago (older records would fall to the topic's retention)
    base = int(time.time() * 1000) // 10_000 * 10_000 - 300_000
    first, second = lines(31, 30), lines(32, 30)
    kafka_cluster.produce(topic, [(None, line) for line in first], timestamp_ms=base + 1_000)
    kafka_cluster.produce(topic, [(None, line) for line in second], timestamp_ms=base + 12_000)
    example = EXAMPLES / "kafka_window_word_count.py"
    documented_jars = docstring_command(example, "JARS=", {})[0].removeprefix("JARS=").split(",")
    # the docstring names the connector of pyspark's version; the tests resolve Maven Central's newest of its line
    resolved = re.search(r"spark-sql-kafka-0-10_[\d.]+-(\S+)\.jar", " ".join(j.name for j in spark_kafka_jars)).group(1)
    as_resolved = [name.replace(f"-{metadata.version('pyspark')}.jar", f"-{resolved}.jar") for name in documented_jars]
    assert sorted(as_resolved) == sorted(j.name for j in spark_kafka_jars), "the docstring names the connector's jars"
    values = {
        "execution.checkpointing.dir=/tmp/checkpoints": f"execution.checkpointing.dir={tmp_path / 'checkpoints'}",
        "$JARS": ",".join(str(j) for j in spark_kafka_jars),
        "localhost:9092": kafka_cluster.bootstrap_servers,
        "words": topic,
        "/tmp/window-counts": str(tmp_path / "out"),
    }
    started = jobcluster(*_cli_args(docstring_command(example, "jobcluster run", values)), check=True)
    job = re.search(r"JobID ([0-9a-f]{32})", started.stdout).group(1)
    rest = re.search(r"REST API at (http://\S+)", started.stderr).group(1)

    # Both windows are in the first micro-batch; a later record moves the watermark past them, closing them.
    wait_for_committed_batch(rest, job, 0, COUNT_TIMEOUT)
    kafka_cluster.produce(topic, [(None, "late")], timestamp_ms=base + 60_000)
    expected = {str(base): word_counts(first), str(base + 10_000): word_counts(second)}
    deadline = time.monotonic() + COUNT_TIMEOUT
    while (windows := _windows(_committed_json_rows(tmp_path / "out"))) != expected:
        assert set(windows) <= set(expected) and time.monotonic() < deadline, f"windows written: {windows}"
        time.sleep(1.0)

    values = {"/tmp/savepoints": str(tmp_path / "savepoints"), "JOB_ID": job}
    stopped = jobcluster(*_cli_args(docstring_command(example, "jobcluster stop", values)), check=True)
    savepoint = Path(re.search(r"Savepoint completed\. Path: file:(\S+)", stopped.stdout).group(1))
    assert (savepoint / "_metadata").is_file() and (savepoint / "window_word_count" / "commits").is_dir()
    # Stopped: still each closed window once, and the window of the late record, still open, not written.
    assert _windows(_committed_json_rows(tmp_path / "out")) == expected
