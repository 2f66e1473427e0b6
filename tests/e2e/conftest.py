"""End-to-end tests: the real CLI, real local job clusters, real Spark.

Each test gets its own JOBCLUSTER_HOME, and afterwards no process that ran
in it (entrypoint, TaskExecutors, Spark daemons, driver, executors) may be
alive: survivors are killed and fail the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
WORDCOUNT = REPO / "examples" / "wordcount.py"
PROGRAMS = Path(__file__).parent / "programs"
CLI_TIMEOUT = 600  # seconds any one CLI call may take

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The real corpus `make` fetched (JOBCLUSTER_CORPUS), else Python's own library sources as a stand-in."""
    configured = os.environ.get("JOBCLUSTER_CORPUS")
    if configured:
        return Path(configured)
    import json as stdlib_json

    return Path(stdlib_json.__file__).parent


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


def _processes_of(home: Path) -> list[psutil.Process]:
    marker = str(home)
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd", "environ"]):
        try:
            info = proc.info
            env = info.get("environ") or {}
            if (marker in " ".join(info.get("cmdline") or []) or marker in (info.get("cwd") or "")
                    or marker in env.get("JOBCLUSTER_CLUSTER_DIR", "")):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return [p for p in found if p.pid != os.getpid()]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A private JOBCLUSTER_HOME; fails the test if any of its processes outlive it."""
    home = tmp_path / "jobcluster-home"
    home.mkdir()
    monkeypatch.setenv("JOBCLUSTER_HOME", str(home))
    yield home
    deadline = time.monotonic() + 30
    survivors = _processes_of(home)
    while survivors and time.monotonic() < deadline:
        time.sleep(0.5)
        survivors = _processes_of(home)
    if survivors:
        described = [f"{p.pid}: {' '.join(p.cmdline())[:120]}" for p in survivors if p.is_running()]
        for p in survivors:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        pytest.fail(f"processes outlived the test: {described}")


def jobcluster(*args: str, timeout: float = CLI_TIMEOUT, check: bool = False) -> subprocess.CompletedProcess:
    """Run the CLI as a user would; returns the finished process (text output)."""
    result = subprocess.run(
        [sys.executable, "-m", "jobcluster", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"jobcluster {' '.join(args)} exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def staging_dirs(home: Path) -> list[Path]:
    clusters = home / "clusters"
    return list(clusters.iterdir()) if clusters.exists() else []
