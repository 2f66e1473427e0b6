"""Exactly-once, counted: what the streaming tests feed a word count and how they read what it wrote.

The program is tests/e2e/programs/streaming_wordcount.py: a stateful running
count per word, written per micro-batch to ``<output>/batch=<id>/`` (a batch
run again replaces its own directory). A word's count is the one in the last
batch that has it, so the output holds the whole truth of the job: a record
lost leaves a count too low, a record processed twice one too high. Reading
is pluggable (a local directory, HDFS through WebHDFS, S3) so one check serves
every target.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import requests

from tests.infra.s3.server import S3Server

PROGRAM = Path(__file__).resolve().parents[1] / "e2e" / "programs" / "streaming_wordcount.py"
VOCABULARY = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")

#: (batch id, JSON lines of its output files) for every batch directory the job wrote.
BatchReader = Callable[[], Iterable[tuple[int, Iterable[str]]]]


def lines(seed: int, count: int) -> list[str]:
    """``count`` lines of 1-5 words of VOCABULARY, the same for the same seed."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(1, 5))) for _ in range(count)]


def word_counts(text_lines: Iterable[str]) -> Counter[str]:
    return Counter(word for line in text_lines for word in line.split())


def latest_counts(batches: Iterable[tuple[int, Iterable[str]]]) -> Counter[str]:
    """Each word's count in the last batch that has it."""
    latest: dict[str, tuple[int, int]] = {}
    for batch_id, rows in batches:
        for row in rows:
            record = json.loads(row)
            if record["word"] not in latest or latest[record["word"]][0] < batch_id:
                latest[record["word"]] = (batch_id, int(record["count"]))
    return Counter({word: count for word, (_, count) in latest.items()})


def local_batches(output: Path) -> BatchReader:
    """Reads the batch directories of ``output`` on this machine."""

    def read() -> list[tuple[int, list[str]]]:
        found = []
        for directory in output.glob("batch=*"):
            rows = [row for part in directory.glob("part-*.json") for row in part.read_text().splitlines() if row]
            found.append((int(directory.name.split("=")[1]), rows))
        return found

    return read


def s3_batches(server: S3Server, bucket: str, prefix: str) -> BatchReader:
    """Reads the batch directories under ``s3a://<bucket>/<prefix>`` through the S3 server's API."""

    def read() -> list[tuple[int, list[str]]]:
        found: dict[int, list[str]] = {}
        for key in server.keys(bucket, f"{prefix}/batch="):
            batch, _, name = key[len(prefix) + len("/batch=") :].partition("/")
            if name.startswith("part-") and name.endswith(".json"):
                found.setdefault(int(batch), []).extend(row for row in server.read_text(bucket, key).splitlines() if row)
        return list(found.items())

    return read


def wait_for_counts(read: BatchReader, expected: Counter[str], timeout: float, what: str) -> Counter[str]:
    """Wait until the output's counts are ``expected``; AssertionError at once when one is above it (a record
    processed twice), or after ``timeout`` seconds with what is missing."""
    deadline = time.monotonic() + timeout
    while True:
        counts = latest_counts(read())
        over = {w: (c, expected[w]) for w, c in counts.items() if c > expected[w]}
        assert not over, f"{what}: counted twice (word: (counted, expected)): {over}"
        if counts == expected:
            return counts
        if time.monotonic() > deadline:
            missing = {w: (counts[w], c) for w, c in expected.items() if counts[w] != c}
            raise AssertionError(f"{what}: after {timeout:.0f} s, counts still short (word: (counted, expected)): {missing}")
        time.sleep(1.0)


def job_details(rest_url: str, job_id: str) -> dict[str, Any]:
    resp = requests.get(f"{rest_url}/jobs/{job_id}", timeout=10)
    resp.raise_for_status()
    return dict(resp.json())


def wait_for_job(rest_url: str, job_id: str, ready: Callable[[dict[str, Any]], bool], timeout: float, what: str) -> dict[str, Any]:
    """The job's details once ``ready(details)`` holds; a JobManager not serving yet (a connection refused, a 503
    while a new ApplicationMaster attempt starts) is waited for too. AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = job_details(rest_url, job_id)
        except requests.RequestException as exc:
            last = exc
        else:
            if ready(last):
                return last
        time.sleep(1.0)
    raise AssertionError(f"job {job_id}: no {what} within {timeout:.0f} s; last seen: {last}")


def wait_for_committed_batch(rest_url: str, job_id: str, at_least: int, timeout: float) -> dict[str, Any]:
    """The job's first streaming query once it has committed micro-batch ``at_least`` (from the job's details)."""

    def committed(details: dict[str, Any]) -> bool:
        queries = (details.get("streaming") or {}).get("queries") or []
        batch = queries[0].get("committedBatchId") if queries else None
        return batch is not None and batch >= at_least  # batch 0 is a committed batch too

    details = wait_for_job(rest_url, job_id, committed, timeout, f"committed micro-batch {at_least}")
    return dict(details["streaming"]["queries"][0])


class Steps:
    """How long each step of a long test chain took, for its printout (which step to shorten, which one hung)."""

    def __init__(self) -> None:
        self.started = self._last = time.monotonic()
        self.taken: list[str] = []

    def __call__(self, what: str) -> None:
        """The step ``what`` ends now."""
        self.taken.append(f"{what} {time.monotonic() - self._last:.0f} s")
        self._last = time.monotonic()

    def summary(self, what: str) -> str:
        return f"{what} took {time.monotonic() - self.started:.0f} s: " + ", ".join(self.taken)
