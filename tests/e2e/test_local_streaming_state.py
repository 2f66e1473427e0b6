"""A stateful query's state across a stop with a savepoint and a restore, on the state machinery of the Spark in use.

On Spark 4 (``make test``'s default lane) the program is streaming_state_v2.py:
transformWithStateInPandas with a ValueState under a time to live and a
processing-time timer per word, on the RocksDB state store with checkpoint
format v2. Every word's count is exact and its timer fires exactly once: the
timers of words first seen just before the stop are in the savepoint and fire
after the restore (those of earlier words may fire before it, on a slow
machine, and are then not fired again). On Spark 3.5 (the 3.5 lane, where neither exists) it is the classic
stateful word count on RocksDB. Files are the source, so no broker is needed:
the stop's savepoint is restored after more files arrived, into the same output.
While the first job runs, a second job whose query would write its checkpoint
is refused (the checkpoint's lease is the first job's).
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from importlib import metadata
from pathlib import Path

import pytest
from support import PROGRAMS, jobcluster, processes_of, staging_dirs

from jobcluster.spark.driver_agent.settings import EXIT_NOT_RESTARTABLE
from tests.support.streaming import PROGRAM as CLASSIC_PROGRAM
from tests.support.streaming import latest_counts, lines, local_batches, wait_for_committed_batch, wait_for_counts, word_counts

pytestmark = [pytest.mark.e2e, pytest.mark.spark35]

SPARK_4 = int(metadata.version("pyspark").split(".")[0]) >= 4
TIMEOUT = 240  # seconds for a job to count what arrived
TIMER_DELAY = 60  # seconds from a word's first sight to its timer: past the stop for the words seen just before it, under load too
LATE = ["kilo lima", "mike kilo"]  # words outside the vocabulary, first seen in the last batch before the stop
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def _rows(output: Path) -> list[tuple[int, dict]]:
    """(batch id, row) of every row the job wrote, in batch order."""
    found = []
    for directory in sorted(output.glob("batch=*")):
        batch = int(directory.name.split("=")[1])
        found += [(batch, json.loads(row)) for part in directory.glob("part-*.json") for row in part.read_text().splitlines() if row]
    return found


def _timers(output: Path) -> Counter[str]:
    """How many batches fired each word's timer."""
    return Counter(row["word"] for _, row in _rows(output) if row.get("kind") == "timer")


def _last_batch_with(output: Path, word: str) -> int:
    """The id of the newest micro-batch whose output counts ``word``."""
    return max(batch for batch, row in _rows(output) if row["word"] == word and row.get("kind", "count") == "count")


def _wait(what: str, check, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(1.0)
    return result


def _write(directory: Path, name: str, text_lines: list[str]) -> None:
    (directory / f".{name}.tmp").write_text("\n".join(text_lines) + "\n")
    (directory / f".{name}.tmp").rename(directory / f"{name}.txt")  # whole, as Spark's file source expects


def _a_second_driver_on_its_checkpoint_is_refused(job: str, settings: list[str], program: list[str], tmp_path: Path) -> None:
    """Another job whose query checkpoints where the running job's does (its session's checkpoint root is that job's)
    is refused before its query starts, naming the job that holds the checkpoint, and is not restarted."""
    output = program.index("--output") + 1
    intruder = [*program[:output], str(tmp_path / "intruder-out"), *program[output + 1 :]]
    shared = ["-D", f"spark.sql.streaming.checkpointLocation={tmp_path / 'checkpoints' / job}"]
    refused = jobcluster("run", *settings, *shared, *intruder)
    assert refused.returncode == EXIT_NOT_RESTARTABLE, refused.stdout + refused.stderr
    assert f"is in use: its lease is held by job {job}" in refused.stderr, refused.stderr
    assert not list((tmp_path / "intruder-out").glob("batch=*")), "the refused job's query never ran"


def test_a_stateful_query_is_exact_across_a_stop_with_savepoint_and_a_restore(home, tmp_path):
    source, output = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    settings = [
        *("-D", f"execution.checkpointing.dir={tmp_path / 'checkpoints'}"),
        *("-D", f"execution.checkpointing.savepoint-dir={tmp_path / 'savepoints'}"),
        *("-D", f"spark.sql.streaming.stateStore.providerClass={ROCKSDB}"),
        *("-D", "spark.sql.shuffle.partitions=2"),
    ]
    if SPARK_4:
        settings += ["-D", "spark.sql.streaming.stateStore.checkpointFormatVersion=2"]
        program = [str(PROGRAMS / "streaming_state_v2.py"), "--timer-delay", str(TIMER_DELAY), "--query-name", "wordcount"]
    else:
        program = [str(CLASSIC_PROGRAM)]
    program += ["--input-dir", str(source), "--output", str(output), "--per-batch", "2"]
    parts = [lines(seed, 40) for seed in (11, 12, 13)]

    for n, part in enumerate(parts[:2]):
        _write(source, f"part-{n}", part)
    started = jobcluster("run", "-d", *settings, *program, check=True)
    job = re.search(r"JobID ([0-9a-f]{32})", started.stdout).group(1)
    rest = re.search(r"REST API at (http://\S+)", started.stderr).group(1)
    expected = word_counts(parts[0] + parts[1])
    wait_for_counts(local_batches(output), expected, TIMEOUT, "the first job")
    _a_second_driver_on_its_checkpoint_is_refused(job, settings, program, tmp_path)
    _write(source, "late", LATE)
    expected += word_counts(LATE)
    wait_for_counts(local_batches(output), expected, TIMEOUT, "the late words")
    wait_for_committed_batch(rest, job, _last_batch_with(output, "kilo"), TIMEOUT)

    stopped = jobcluster("stop", job)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    savepoint = Path(re.search(r"Savepoint completed\. Path: file:(\S+)", stopped.stdout).group(1))
    if SPARK_4:
        fired = _timers(output)
        assert not set(fired) & set(word_counts(LATE)), "the late words' timers are pending at the stop: the savepoint must carry them"
        assert all(n == 1 for n in fired.values()), f"a timer fired twice before the stop: {fired}"
        last_commit = max((c for c in (savepoint / "wordcount" / "commits").iterdir() if c.name.isdigit()), key=lambda c: int(c.name))
        assert "stateUniqueIds" in last_commit.read_text(), "checkpoint format v2: the commit names its state files"
    assert list(savepoint.glob("wordcount/state/*/*/*.zip")), "RocksDB's state files are in the savepoint"
    _wait("the stopped cluster's processes to end", lambda: not processes_of(home) and not staging_dirs(home), 120)

    _write(source, "part-2", parts[2])
    restored = jobcluster("run", "-d", "-s", f"file:{savepoint}", *settings, *program, check=True)
    job = re.search(r"JobID ([0-9a-f]{32})", restored.stdout).group(1)
    expected = word_counts(parts[0] + parts[1] + LATE + parts[2])
    wait_for_counts(local_batches(output), expected, TIMEOUT, "restored from the stop's savepoint")
    if SPARK_4:  # each word's timer fired once, after the restore, with the count at that time
        _wait("every word's timer", lambda: set(_timers(output)) == set(expected), TIMER_DELAY + TIMEOUT)
        assert _timers(output) == Counter(set(expected)), "each timer fired exactly once"
    assert latest_counts(local_batches(output)()) == expected, "nothing counted twice while the timers fired"
    jobcluster("cancel", job, check=True)
    _wait("the restored cluster's processes to end", lambda: not processes_of(home) and not staging_dirs(home), 120)
