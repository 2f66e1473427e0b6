"""End-to-end tests: the real CLI, real local job clusters, real Spark.

Each test gets its own JOBCLUSTER_HOME, and afterwards no process that ran
in it (entrypoint, TaskExecutors, Spark daemons, driver, executors) may be
alive: survivors are killed and fail the test.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support import processes_of

from tests.infra.flink.client import FlinkClient, build_classpath


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The real corpus `make` fetched (JOBCLUSTER_CORPUS), else Python's own library sources as a stand-in."""
    configured = os.environ.get("JOBCLUSTER_CORPUS")
    if configured:
        return Path(configured)
    import json as stdlib_json

    return Path(stdlib_json.__file__).parent


@pytest.fixture(scope="session")
def flink_client() -> Iterator[FlinkClient]:
    """Apache Flink's own CLI and RestClusterClient (tests/infra/flink), resolved and compiled once per session."""
    client = FlinkClient(build_classpath())
    yield client
    client.close()


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A private JOBCLUSTER_HOME; fails the test if any of its processes outlive it."""
    home = tmp_path / "jobcluster-home"
    home.mkdir()
    monkeypatch.setenv("JOBCLUSTER_HOME", str(home))
    yield home
    deadline = time.monotonic() + 30
    survivors = processes_of(home)
    while survivors and time.monotonic() < deadline:
        time.sleep(0.5)
        survivors = processes_of(home)
    if survivors:
        described = [f"{p.pid}: {' '.join(p.cmdline())[:120]}" for p in survivors if p.is_running()]
        for p in survivors:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        pytest.fail(f"processes outlived the test: {described}")
