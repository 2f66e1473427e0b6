"""The leader election's rules (controller/leader.py) given a clock: when a Lease may be taken, what is written,
when the leader gives up. Against the API server: tests/integration/k8s/test_operator_leader.py."""

from __future__ import annotations

import datetime as dt
import threading
import time

import click
import pytest

from jobcluster.controller.leader import LeaseKeeper, LeaseRecord, LeaseTimings, held_by, may_take, released, renewal_wait
from jobcluster.controller.main import Duration

T0 = dt.datetime(2026, 11, 26, 5, 0, 0, 250000, tzinfo=dt.UTC)
DEFAULT = LeaseTimings()


def test_the_defaults_are_the_flink_kubernetes_operators():
    assert (DEFAULT.lease_duration, DEFAULT.renew_deadline, DEFAULT.retry_period) == (15, 10, 2)
    connect, read = DEFAULT.request_timeout
    assert connect + read < DEFAULT.renew_deadline


@pytest.mark.parametrize(
    ("lease", "renew", "retry"),
    [(10, 10, 2), (15, 10, 10), (15, 10, 0), (15, 20, 2), (15.5, 10, 2)],
)
def test_timings_that_could_let_two_lead_are_refused(lease, renew, retry):
    with pytest.raises(ValueError, match="lease duration"):
        LeaseTimings(lease, renew, retry)


def test_a_lease_held_by_another_is_taken_only_after_it_stayed_unchanged_for_its_duration():
    record = LeaseRecord("b", 15, T0, T0, 3)
    observed_at = 100.0  # monotonic seconds when this candidate first saw the record as it is
    assert not may_take(record, "a", observed_at, 100.0)
    assert not may_take(record, "a", observed_at, 114.9)
    assert may_take(record, "a", observed_at, 115.0)
    # the record's own times play no part: another node's clock may be off
    assert not may_take(LeaseRecord("b", 15, T0 - dt.timedelta(hours=1), T0 - dt.timedelta(hours=1)), "a", observed_at, 101.0)


def test_a_free_or_own_lease_is_taken_at_once():
    assert may_take(LeaseRecord("", 1, T0, T0, 4), "a", 100.0, 100.0)  # released
    assert may_take(LeaseRecord("a", 15, T0, T0, 4), "a", 100.0, 100.0)  # renewal


def test_renewing_keeps_the_acquire_time_and_transitions_and_taking_over_counts_one_more():
    later = T0 + dt.timedelta(seconds=2)
    mine = LeaseRecord("a", 15, T0, T0, 3)
    assert held_by(mine, "a", DEFAULT, later) == LeaseRecord("a", 15, T0, later, 3)
    assert held_by(LeaseRecord("b", 15, T0, T0, 3), "a", DEFAULT, later) == LeaseRecord("a", 15, later, later, 4)
    assert held_by(LeaseRecord("", 1, T0, T0, 4), "a", DEFAULT, later) == LeaseRecord("a", 15, later, later, 5)
    assert held_by(None, "a", DEFAULT, later) == LeaseRecord("a", 15, later, later, 0)


def test_a_released_lease_has_no_holder_and_keeps_its_history():
    gone = released(LeaseRecord("a", 15, T0, T0, 3), T0 + dt.timedelta(seconds=9))
    assert gone == LeaseRecord("", 1, T0, T0 + dt.timedelta(seconds=9), 3)
    assert gone.spec().holder_identity is None


def test_the_spec_times_always_carry_microseconds():
    whole = dt.datetime(2026, 11, 26, 5, 0, 0, tzinfo=dt.UTC)  # isoformat() would drop ".000000"
    spec = LeaseRecord("a", 15, whole, T0).spec()
    assert spec.acquire_time is not None and spec.acquire_time.microsecond == 1
    assert spec.renew_time == T0


def test_the_leader_tries_every_retry_period_and_never_sleeps_past_its_renew_deadline():
    assert renewal_wait(renewed_at=100.0, now=100.0, timings=DEFAULT) == 2.0
    assert renewal_wait(renewed_at=100.0, now=109.0, timings=DEFAULT) == pytest.approx(1.0)
    assert renewal_wait(renewed_at=100.0, now=111.0, timings=DEFAULT) == 0.0


def test_durations_are_flinks():
    assert Duration().convert("15s", None, None) == 15.0
    assert Duration().convert("1 min", None, None) == 60.0
    assert Duration().convert("2000", None, None) == 2.0  # a bare number is milliseconds, as in Flink
    with pytest.raises(click.BadParameter):
        Duration().convert("soon", None, None)


class ScriptedElector:
    """Stands in for LeaseElector in the keeper's tests: each try answers ``answer()``."""

    namespace, name, identity = "ns", "lease", "a"
    timings = LeaseTimings(lease_duration=2, renew_deadline=0.6, retry_period=0.1)

    def __init__(self, answer) -> None:
        self.answer, self.tries, self.other = answer, 0, ""

    def try_acquire_or_renew(self) -> bool:
        self.tries += 1
        return self.answer()

    def holder(self) -> str:
        return self.other or self.identity


def keep(elector: ScriptedElector) -> tuple[LeaseKeeper, threading.Event, float]:
    lost = threading.Event()
    started = time.monotonic()
    keeper = LeaseKeeper(elector, started, on_lost=lost.set)  # type: ignore[arg-type]
    keeper.start()
    return keeper, lost, started


def test_a_leader_that_cannot_renew_gives_up_at_its_renew_deadline():
    elector = ScriptedElector(lambda: False)
    keeper, lost, started = keep(elector)
    try:
        assert lost.wait(2)
        assert 0.6 <= time.monotonic() - started < 0.9
        assert elector.tries >= 4
    finally:
        keeper.stop()


def test_a_renewal_that_hangs_is_given_up_on_at_the_deadline():
    elector = ScriptedElector(lambda: time.sleep(3) or True)
    keeper, lost, started = keep(elector)
    try:
        assert lost.wait(2)
        assert time.monotonic() - started < 0.9
    finally:
        keeper.stop()


def test_a_renewal_that_raises_what_nobody_expected_still_ends_in_giving_up():
    def broken() -> bool:
        raise ValueError("a Lease the client cannot read")

    keeper, lost, started = keep(ScriptedElector(broken))
    try:
        assert lost.wait(2)
        assert 0.6 <= time.monotonic() - started < 0.9
    finally:
        keeper.stop()


def test_a_leader_that_sees_another_holder_gives_up_at_once():
    elector = ScriptedElector(lambda: False)
    elector.other = "b"
    keeper, lost, started = keep(elector)
    try:
        assert lost.wait(2)
        assert time.monotonic() - started < 0.4
    finally:
        keeper.stop()


def test_a_renewing_leader_keeps_leading_until_stopped():
    elector = ScriptedElector(lambda: True)
    keeper, lost, _ = keep(elector)
    time.sleep(1.2)  # twice the renew deadline
    stopping = time.monotonic()
    keeper.stop()
    assert time.monotonic() - stopping < 0.5
    assert not lost.is_set() and elector.tries >= 8
    tries = elector.tries
    time.sleep(0.3)
    assert elector.tries == tries  # stopped means stopped
