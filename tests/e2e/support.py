"""Helpers of the end-to-end tests: run the CLI, count words independently, find a cluster's processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
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


def run_timing_stderr(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str, list[tuple[float, str]]]:
    """Run ``argv`` to its end; its exit code, its stdout and each line of its stderr with the time it was read
    (``time.monotonic()``), to tell how long after one line of the client's progress another one came."""
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None and process.stderr is not None
        # stdout is read after stderr: a program that fills the pipe's buffer would block, but the CLI's stdout is
        # the program's, which the tests that use this keep short
        for line in process.stderr:
            lines.append((time.monotonic(), line))
        stdout = process.stdout.read()
    return process.returncode, stdout, lines


def staging_dirs(home: Path) -> list[Path]:
    clusters = home / "clusters"
    return list(clusters.iterdir()) if clusters.exists() else []
