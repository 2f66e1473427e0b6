"""Helpers of the end-to-end tests: run the CLI, count words independently, find a cluster's processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
WORDCOUNT = REPO / "examples" / "wordcount.py"
PROGRAMS = Path(__file__).parent / "programs"
CLI_TIMEOUT = 600  # seconds any one CLI call may take


def independent_word_count(corpus: Path) -> Counter:
    """Words counted without Spark: lower-case, then maximal runs of ASCII word characters."""
    counts: Counter = Counter()
    files = [corpus] if corpus.is_file() else sorted(p for p in corpus.rglob("*") if p.is_file())
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        for line in text.splitlines():
            counts.update(re.findall(r"[a-z0-9_]+", line.lower()))
    return counts


def read_word_counts(out_dir: Path) -> Counter:
    counts: Counter = Counter()
    for part in out_dir.glob("part-*"):
        for line in part.read_text().splitlines():
            word, count = line.rsplit("\t", 1)
            assert word not in counts, f"word {word!r} appears twice in the output"
            counts[word] = int(count)
    return counts


def processes_of(home: Path) -> list[psutil.Process]:
    marker = str(home)
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd", "environ"]):
        try:
            info = proc.info
            env = info.get("environ") or {}
            if (
                marker in " ".join(info.get("cmdline") or [])
                or marker in (info.get("cwd") or "")
                or marker in env.get("JOBCLUSTER_CLUSTER_DIR", "")
            ):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return [p for p in found if p.pid != os.getpid()]


def jobcluster(*args: str, timeout: float = CLI_TIMEOUT, check: bool = False) -> subprocess.CompletedProcess:
    """Run the CLI as a user would; returns the finished process (text output)."""
    result = subprocess.run(
        [sys.executable, "-m", "jobcluster", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"jobcluster {' '.join(args)} exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def run_timing_stderr(
    argv: list[str], env: dict[str, str] | None = None, timeout: float = CLI_TIMEOUT
) -> tuple[int, str, list[tuple[float, str]]]:
    """Run ``argv`` to its end (killed after ``timeout`` seconds); its exit code, its stdout and each line of its
    stderr with the time it was read (``time.monotonic()``), to tell how long after one line of the client's progress
    another one came."""
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None and process.stderr is not None
        deadline = threading.Timer(timeout, process.kill)
        deadline.start()
        # stdout is read after stderr: a program that fills the pipe's buffer would block, but the CLI's stdout is
        # the program's, which the tests that use this keep short
        for line in process.stderr:
            lines.append((time.monotonic(), line))
        stdout = process.stdout.read()
        deadline.cancel()
    return process.returncode, stdout, lines


#: What a job's cause says when a Python task ran past its PySpark worker's limit with the shipped sizes (2 slots).
PYSPARK_MEMORY_ERROR = "A PySpark worker ran out of its memory limit: each may use 268 MiB"


def memory_error_cause(code: int, stdout: str, lines: list[tuple[float, str]]) -> tuple[str, str]:
    """Check a run of ``programs/python_memory_hog.py`` (``-p 2``, as :func:`run_timing_stderr` returns it): the job
    failed with a PySpark worker's ``MemoryError`` soon after its tasks started, each attempt failing as its task
    allocates, not when a container is killed; and its cause names the limit and the options that raise it.
    Returns the client's stderr and the cause (from ``Cause:`` on)."""
    stderr = "".join(line for _, line in lines)
    assert code == 1, stderr
    assert "HELD" not in stdout
    # the client polls: a job that fails within one poll of its start is never seen at "0/1 Spark jobs, 0/2 tasks",
    # so its tasks are taken to start no later than the Spark application is first seen
    tasks_started = next(t for t, line in lines if re.search(r"Spark app-\S+: \d+/\d+ Spark jobs", line))
    failed = next(t for t, line in lines if re.search(r"Job [0-9a-f]{32} \(python_memory_hog\) FAILED", line))
    # the first attempt waits for its executor's Python to start, which took 19 s on a loaded 2-core machine (YARN;
    # 4 attempts of each task in all); a container killed for memory would take its TaskExecutor's heartbeat timeout
    assert failed - tasks_started < 60, f"the job failed {failed - tasks_started:.0f} s after its tasks started"
    cause = stderr[stderr.index("Cause: ") :]
    assert "\nMemoryError\n" in cause, cause
    assert PYSPARK_MEMORY_ERROR in cause, cause
    for option in ("taskmanager.memory.managed.consumer-weights", "taskmanager.memory.task.off-heap.size"):
        assert option in cause, cause
    return stderr, cause


def staging_dirs(home: Path) -> list[Path]:
    clusters = home / "clusters"
    return list(clusters.iterdir()) if clusters.exists() else []
