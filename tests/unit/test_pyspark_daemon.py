"""The PySpark daemon that gives each PySpark worker its memory limit (RLIMIT_DATA): real processes, real limits."""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jobcluster.spark.pyspark_daemon import LIMIT_ENV, set_worker_memory_limit

MiB = 1 << 20


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env={**os.environ, **env}, capture_output=True, text=True, timeout=60
    )


def test_an_allocation_past_the_limit_raises_memory_error_in_the_process_and_in_a_forked_worker():
    result = run_python(
        """
        import os, resource
        from jobcluster.spark.pyspark_daemon import set_worker_memory_limit
        print(set_worker_memory_limit() >> 20, resource.getrlimit(resource.RLIMIT_DATA)[0] >> 20)
        small = bytearray(32 << 20)  # within the limit
        def fill():
            try:
                bytearray(512 << 20)
                return "filled"
            except MemoryError:
                return "MemoryError"
        print(fill())
        pid = os.fork()
        if pid == 0:  # as PySpark's daemon forks a worker
            os._exit(0 if fill() == "MemoryError" else 1)
        print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        """,
        {LIMIT_ENV: str(128 * MiB)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == ["128 128", "MemoryError", "child 0"]


def test_without_a_limit_to_set_nothing_changes(monkeypatch):
    before = resource.getrlimit(resource.RLIMIT_DATA)
    assert set_worker_memory_limit({}) is None
    assert set_worker_memory_limit({LIMIT_ENV: "0"}) is None
    assert resource.getrlimit(resource.RLIMIT_DATA) == before


def test_a_lower_limit_already_in_force_is_kept():
    result = run_python(
        """
        import resource
        from jobcluster.spark.pyspark_daemon import set_worker_memory_limit
        resource.setrlimit(resource.RLIMIT_DATA, (100 << 20, resource.RLIM_INFINITY))
        print(set_worker_memory_limit() >> 20, resource.getrlimit(resource.RLIMIT_DATA)[0] >> 20)
        """,
        {LIMIT_ENV: str(200 * MiB)},
    )
    assert result.stdout.strip() == "100 100", result.stderr


def test_a_limit_that_is_not_a_number_of_bytes_is_an_error():
    with pytest.raises(ValueError, match="268m"):
        set_worker_memory_limit({LIMIT_ENV: "268m"})


def test_as_sparks_daemon_module_it_starts_pysparks_daemon_under_the_limit():
    # Spark starts `python -m <spark.python.daemon.module>` and reads the port it listens on from its stdout
    daemon = subprocess.Popen(
        [sys.executable, "-m", "jobcluster.spark.pyspark_daemon"],
        env={**os.environ, LIMIT_ENV: str(200 * MiB), "PYTHON_WORKER_FACTORY_SECRET": "s"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert daemon.stdout is not None
        (port,) = struct.unpack("!i", daemon.stdout.read(4))
        assert 0 < port < 65536
        limits = Path(f"/proc/{daemon.pid}/limits").read_text()
        (line,) = [line for line in limits.splitlines() if line.startswith("Max data size")]
        assert line.split()[3:5] == [str(200 * MiB), str(200 * MiB)], line
    finally:
        daemon.terminate()
        _, stderr = daemon.communicate(timeout=30)
    assert b"each PySpark worker's memory limit (RLIMIT_DATA): 200 MiB" in stderr
