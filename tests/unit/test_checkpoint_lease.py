"""Leases on checkpoint locations (spark/driver_agent/checkpoint_lease.py): at most one driver writes a checkpoint.

Each driver is a CheckpointLeases over the same local directory, with a clock
of its own that its waits advance; a lease file's modification time is real.
The same leases run with Hadoop's FileSystem in tests/e2e/test_local_streaming_fencing.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from jobcluster.spark.driver_agent.agent import DriverAgent
from jobcluster.spark.driver_agent.checkpoint_lease import LEASE_DURATION, RENEW_DEADLINE, CheckpointLeaseError, CheckpointLeases
from jobcluster.spark.driver_agent.settings import AgentSettings
from tests.support.local_files import LocalFiles

JOB = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


class Clock:
    """A driver's monotonic clock; ``sleep`` advances it and lets the world move (``meanwhile``)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.meanwhile = lambda: None

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.meanwhile()


def _driver(holder: str, clock: Clock | None = None, files: LocalFiles | None = None) -> CheckpointLeases:
    clock = clock or Clock()
    return CheckpointLeases(files or LocalFiles(None), holder, JOB, clock=clock, sleep=clock.sleep)


def _epochs(location: Path) -> list[str]:
    return sorted(p.name for p in (location / "_jobcluster_lease").iterdir())


def test_a_second_driver_is_refused_while_the_first_renews_and_nothing_of_the_first_changes(tmp_path):
    location = str(tmp_path / "cp" / "wc")
    first = _driver("jobmaster-a")
    first.acquire(location)
    clock = Clock()
    clock.meanwhile = lambda: first.renew() if clock.now % 5 < 1 else None  # the first renews every 5 s of the wait
    second = _driver("jobmaster-b", clock)
    with pytest.raises(CheckpointLeaseError, match=f"checkpoint {location} is in use: its lease is held by job {JOB}") as refused:
        second.acquire(location)
    assert not refused.value.restartable, "a restart of the refused program would be refused again"
    assert clock.now - 1000.0 < LEASE_DURATION, "refused as soon as it sees a renewal, not after the lease's duration"
    assert _epochs(tmp_path / "cp" / "wc") == ["00000000000000000001"]
    assert first.renew() == {} and first.locations == [location], "the first driver keeps its lease"


def test_a_lease_nobody_renews_is_taken_once_it_expires_and_its_old_holder_is_fenced(tmp_path):
    location = str(tmp_path / "cp" / "wc")
    old = _driver("jobmaster-a")
    old.acquire(location)  # then its pod is cut off: it renews no more
    clock = Clock()
    new = _driver("jobmaster-b", clock)
    new.acquire(location)
    assert clock.now - 1000.0 >= LEASE_DURATION, "not taken before the lease expired by the new driver's own clock"
    assert _epochs(tmp_path / "cp" / "wc") == ["00000000000000000002"], "the fenced epoch is gone"
    lost = old.renew()
    assert list(lost) == [location] and "another driver took the lease" in str(lost[location])
    assert not lost[location].restartable
    assert old.locations == [] and new.renew() == {}


def test_the_next_attempt_of_the_same_jobmaster_takes_its_lease_at_once(tmp_path):
    location = str(tmp_path / "cp" / "wc")
    first_attempt = _driver("jobmaster-a")
    first_attempt.acquire(location)
    clock = Clock()
    _driver("jobmaster-a", clock).acquire(location)
    assert clock.now == 1000.0, "no wait for the lease of its own earlier attempt"
    assert list(first_attempt.renew()) == [location], "the earlier attempt, should it still run, is fenced"


def test_a_released_lease_is_taken_at_once(tmp_path):
    location = str(tmp_path / "cp" / "wc")
    first = _driver("jobmaster-a")
    first.acquire(location)
    first.release()
    clock = Clock()
    _driver("jobmaster-b", clock).acquire(location)
    assert clock.now == 1000.0
    assert _epochs(tmp_path / "cp" / "wc") == ["00000000000000000001"]


class Unreachable(LocalFiles):
    """The file system goes away once ``down`` is set (a partitioned node)."""

    down = False

    def names(self, uri: str) -> list[str]:
        if self.down:
            raise OSError("java.net.ConnectException: Connection refused")
        return super().names(uri)


def test_a_holder_that_cannot_renew_gives_the_lease_up_before_anyone_may_take_it(tmp_path):
    location = str(tmp_path / "cp" / "wc")
    clock, files = Clock(), Unreachable(None)
    holder = _driver("jobmaster-a", clock, files)
    holder.acquire(location)
    files.down = True
    clock.now += RENEW_DEADLINE - 1
    assert holder.renew() == {}, "a renewal that fails inside the deadline is tried again"
    clock.now += 2
    lost = holder.renew()
    assert "could not be renewed for 11 s: java.net.ConnectException" in str(lost[location])
    assert lost[location].restartable, "a new attempt may take the lease again once the file system is back"
    assert RENEW_DEADLINE < LEASE_DURATION, "the holder stops before a contender's clock lets it take over"


class Query:
    def __init__(self) -> None:
        self.id, self.isActive, self.stopped = "q-id", True, False

    def stop(self) -> None:
        self.stopped, self.isActive = True, False


def test_a_driver_that_loses_its_lease_stops_the_queries_that_write_there_and_fails_at_its_next_wait(tmp_path):
    settings = AgentSettings(port=1, job_id=JOB, job_name="wc", checkpoint_root=str(tmp_path / "cp"), lease_holder="jobmaster-a")
    agent = DriverAgent(settings, files=LocalFiles)
    try:
        agent.starting(None, "wc", None)
        agent.starting(None, "other", str(tmp_path / "elsewhere"))
        wc, other = Query(), Query()
        agent.started(wc, "wc", None)
        agent.started(other, "other", str(tmp_path / "elsewhere"))
        _driver("jobmaster-b", Clock()).acquire(f"file:{tmp_path / 'cp' / 'wc'}")  # expired by its clock: taken over

        agent._renew_leases_once()
        assert wc.stopped and not other.stopped, "only the queries that write the lost checkpoint stop"
        with pytest.raises(CheckpointLeaseError, match=r"another driver took the lease on .* queries were stopped"):
            agent.after_await()
    finally:
        agent.release_leases()
    assert _epochs(tmp_path / "elsewhere") == [], "the leases it still held are given up when the program ends"
