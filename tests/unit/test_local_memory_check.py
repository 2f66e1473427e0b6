"""A local TaskExecutor's process tree measured against its size: the decision (pure), the measurement (real processes)."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import psutil

from jobcluster.backends.local.driver import process_termination
from jobcluster.backends.local.memory_check import MemoryCheck, process_tree_rss
from jobcluster.memory.spec import TaskExecutorProcessSpec

MiB = 1 << 20


def spec(total_mib: int) -> TaskExecutorProcessSpec:
    """A spec of ``total_mib`` MiB in all (all of it task heap but the 8 MiB of the other parts)."""
    return TaskExecutorProcessSpec(Decimal(1), MiB, MiB, (total_mib - 7) * MiB, 0, MiB, MiB, MiB, 2 * MiB, 1)


def test_the_first_measurement_over_the_size_warns_once_with_the_numbers_and_the_option():
    check = MemoryCheck("tm-1", spec(100))
    assert check.observe(99 * MiB) is None and check.observe(100 * MiB) is None, "at its size is within it"
    warning = check.observe(130 * MiB + 5)
    assert warning is not None and check.over and check.peak == 130 * MiB + 5
    assert warning.startswith(
        "its processes (the TaskExecutor, its Spark worker and executor JVMs, the PySpark workers) use 130 MiB resident, "
        "more than its 100 MiB process size (taskmanager.memory.process.size)"
    )
    assert "on local-cluster nothing limits it, it runs on" in warning
    assert "raise taskmanager.memory.jvm-overhead.min to at least 33m" in warning, "the 2 MiB overhead + the 30 MiB (and 5 bytes) over"
    assert check.observe(140 * MiB) is None and check.observe(50 * MiB) is None, "said once"
    assert check.peak == 140 * MiB


def test_a_sigkill_after_being_over_its_size_is_reported_as_a_likely_memory_kill(tmp_path: Path):
    quiet = MemoryCheck("tm-1", spec(100))
    quiet.observe(90 * MiB)
    assert process_termination(-9, tmp_path / "tm-1.log", quiet).memory_kill is None, "within its size: a SIGKILL is just that"

    over = MemoryCheck("tm-1", spec(100))
    over.observe(150 * MiB)
    ended = process_termination(-9, tmp_path / "tm-1.log", over)
    assert ended.summary.startswith("signal SIGKILL: killed by SIGKILL")
    assert ended.memory_kill is not None and ended.memory_kill.excess_bytes == 50 * MiB
    assert ended.memory_kill.words == (
        "its processes had used up to 150 MiB resident, more than its 100 MiB process size: likely the kernel's out-of-memory killer"
    )
    assert process_termination(3, tmp_path / "tm-1.log", over).memory_kill is None, "an exit of its own is no memory kill"
    assert process_termination(3, tmp_path / "tm-1.log", over).diagnostics == f"process exited with code 3; see {tmp_path / 'tm-1.log'}"


def test_the_measurement_sums_the_resident_memory_of_the_process_and_its_descendants():
    # a parent holding 40 MiB, with a child holding 60 MiB (every page written, so resident)
    child = "import time; hog = bytes([1]) * (60 << 20); print('ready', flush=True); time.sleep(60)"
    parent = (
        "import subprocess, sys, time; hog = bytes([1]) * (40 << 20); "
        f"c = subprocess.Popen([sys.executable, '-c', {child!r}], stdout=sys.stdout); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert len(psutil.Process(proc.pid).children(recursive=True)) == 1
        rss = process_tree_rss(proc.pid)
        # both hogs, plus two interpreters (about 10 MiB each), and not more
        assert rss is not None and 100 * MiB <= rss < 160 * MiB, rss
    finally:
        for p in psutil.Process(proc.pid).children(recursive=True):
            p.kill()
        proc.kill()
        proc.wait()
    assert process_tree_rss(proc.pid) is None, "a process gone has nothing to measure"
