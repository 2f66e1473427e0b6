"""What a stop and a restore give Spark's file sink, whose log skips a batch id it already holds, counted row by row.

One chain on ``local`` (the MiniCluster), with Spark's maintenance keeping only
2 batches (``spark.sql.streaming.minBatchesToRetain=2``), which a savepoint's
copy must not fall behind: a stop whose savepoint cannot be written leaves the
job running; a savepoint taken while input keeps arriving is complete; a stop
that lands in a 20 s micro-batch waits for its commit; the stop's savepoint,
restored into the same output, and the running one, restored into a fresh
output, each give every input word exactly once (no batch id planned anew and
skipped by the sink, none written twice); the running one restored into the
same output, whose sink log is past it, is refused.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import requests
from support import REPO, jobcluster, processes_of, staging_dirs

from tests.support.streaming import lines, wait_for_committed_batch, word_counts

pytestmark = [pytest.mark.e2e]

PROGRAM = REPO / "tests" / "e2e" / "programs" / "streaming_file_sink.py"
TIMEOUT = 420  # seconds for a job to write what it was given (a busy 2-core machine starts a job in 1-2 min)


def _run_detached(*args: str) -> tuple[str, str]:
    result = jobcluster("run", "-d", *args, check=True)
    return re.search(r"JobID ([0-9a-f]{32})", result.stdout).group(1), re.search(r"REST API at (http://\S+)", result.stderr).group(1)


def _savepoint(result) -> tuple[str, dict]:
    assert result.returncode == 0, result.stdout + result.stderr
    path = re.search(r"Savepoint completed\. Path: (\S+)", result.stdout).group(1)
    return path, json.loads(Path(path.removeprefix("file:"), "_metadata").read_text())


def _sink_batches(output: Path) -> dict[int, Counter[str]]:
    """Each batch id in the file sink's log, with the words of the files it committed."""
    batches = {}
    for log in (output / "_spark_metadata").glob("[0-9]*"):
        if log.name.isdigit():
            entries = [json.loads(line) for line in log.read_text().splitlines()[1:] if line]
            rows = [json.loads(r)["word"] for e in entries for r in Path(e["path"].removeprefix("file:")).read_text().splitlines() if r]
            batches[int(log.name)] = Counter(rows)
    return batches


def _total(batches: dict[int, Counter[str]], up_to: int | None = None) -> Counter[str]:
    return sum((c for b, c in batches.items() if up_to is None or b <= up_to), Counter())


def _wait_for_words(output: Path, expected: Counter[str], what: str, also: Counter[str] | None = None) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        found = _total(_sink_batches(output)) + (also or Counter())
        if found == expected:
            return
        time.sleep(1)
    raise AssertionError(f"{what}: the sink holds {found - expected} more and {expected - found} fewer words than the input")


def _wait_until_gone(home: Path) -> None:
    deadline = time.monotonic() + 120
    while (processes_of(home) or staging_dirs(home)) and time.monotonic() < deadline:
        time.sleep(0.5)


def test_the_file_sink_is_exact_across_a_refused_stop_a_running_savepoint_a_slow_stop_and_restores(home, tmp_path):
    inputs, out = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    fed: list[str] = []
    written = iter(range(1000))

    def feed(text_lines: list[str]) -> None:
        name = f"part-{next(written):04d}"
        (inputs / f".{name}").write_text("\n".join(text_lines) + "\n")
        (inputs / f".{name}").rename(inputs / f"{name}.txt")  # whole when the file source lists it
        fed.extend(text_lines)

    common = [
        "-t", "local", "-p", "2",
        "-D", f"execution.checkpointing.dir={tmp_path / 'checkpoints'}",
        "-D", f"execution.checkpointing.savepoint-dir={tmp_path / 'savepoints'}",
        "-D", "spark.sql.streaming.minBatchesToRetain=2",
        "-D", "spark.sql.streaming.fileSink.log.compactInterval=1000",  # one log file per batch, to count by batch
    ]  # fmt: skip
    for seed in range(4):
        feed(lines(seed, 30))
    job, rest = _run_detached(*common, str(PROGRAM), "--input-dir", str(inputs), "--output", str(out))
    wait_for_committed_batch(rest, job, 3, TIMEOUT)

    # A stop whose savepoint cannot be written: refused with the reason, and the job runs on.
    (tmp_path / "a-file").write_text("not a directory")
    refused = jobcluster("stop", "--savepointPath", str(tmp_path / "a-file" / "savepoints"), job)
    assert refused.returncode != 0 and "cannot create the savepoint directory" in refused.stderr, refused.stderr
    assert "Py4JJavaError" not in refused.stderr and "ParentNotDirectoryException" in refused.stderr
    assert requests.get(f"{rest}/jobs/{job}", timeout=5).json()["state"] == "RUNNING"
    assert job in jobcluster("list", check=True).stdout

    # A savepoint while input keeps arriving and Spark keeps only 2 batches: complete, cut where Spark would recover.
    keep_feeding = threading.Event()

    def feeder() -> None:
        seed = 10
        while not keep_feeding.wait(0.7):
            feed(lines(seed, 30))
            seed += 1

    thread = threading.Thread(target=feeder)
    thread.start()
    try:
        running, running_meta = _savepoint(jobcluster("savepoint", job, str(tmp_path / "running")))
    finally:
        keep_feeding.set()
        thread.join()
    cut = running_meta["queries"]["words"]["committedBatchId"]
    assert cut is not None and running_meta["stopped"] is False
    _wait_for_words(out, word_counts(fed), "after the running savepoint")

    # A stop that lands in a 20 s micro-batch waits for its commit: nothing is interrupted, nothing replays.
    feed(["__slow__ kilo lima"])
    time.sleep(4)  # the next trigger has planned it
    started = time.monotonic()
    stopped, stopped_meta = _savepoint(jobcluster("stop", job))
    assert time.monotonic() - started > 5, "the stop waited for the running micro-batch"
    query = stopped_meta["queries"]["words"]
    assert query["plannedBatchId"] == query["committedBatchId"] and stopped_meta["stopped"] is True
    assert _total(_sink_batches(out))["__slow__"] == 1
    _wait_until_gone(home)

    # The stop's savepoint restored into the same output: it goes on exactly where the stop left it.
    feed(lines(100, 30))
    feed(lines(101, 30))
    restored, rest = _run_detached(*common, "-s", stopped, str(PROGRAM), "--input-dir", str(inputs), "--output", str(out))
    _wait_for_words(out, word_counts(fed), "restored from the stop's savepoint into the same output")
    jobcluster("cancel", restored, check=True)
    _wait_until_gone(home)

    # The running savepoint restored into the same output: refused before the query starts, as the file sink would skip
    # the batch ids its log already holds past the savepoint (and lose them).
    into_same = jobcluster("run", *common, "-s", running, str(PROGRAM), "--input-dir", str(inputs), "--output", str(out))
    assert into_same.returncode != 0 and "already holds batches up to" in into_same.stderr, into_same.stderr
    assert "Restore into a new output path" in into_same.stderr
    _wait_until_gone(home)

    # The running savepoint restored into a fresh output: with what the first job wrote up to its cut, every word once.
    fork = tmp_path / "fork-out"
    before_cut = _total(_sink_batches(out), up_to=cut)
    forked, _ = _run_detached(*common, "-s", running, str(PROGRAM), "--input-dir", str(inputs), "--output", str(fork))
    _wait_for_words(fork, word_counts(fed), "restored from the running savepoint into a fresh output", also=before_cut)
    jobcluster("cancel", forked, check=True)
    _wait_until_gone(home)
