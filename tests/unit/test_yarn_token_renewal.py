"""The JobManager's delegation token renewal on YARN, its pure parts: the options, when new tokens are due (Flink's
rule), the renewed token file, and the driver agent's watcher of it (the real renewal past the tokens' maximum
lifetime: tests/integration/hadoop/test_kerberos_long_job.py)."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import time
from pathlib import Path

import pytest

from jobcluster.backends.yarn.delegation_tokens import (
    RENEWED_TOKEN_FILE,
    DelegationTokenManager,
    TokenRenewal,
    renewal_date,
    renewal_delay,
    renewed_token_file,
    token_renewal_of,
)
from jobcluster.backends.yarn.errors import YarnConfigurationError
from jobcluster.backends.yarn.keytab import KEYTAB_RESOURCE
from jobcluster.config.configuration import Configuration
from jobcluster.spark.driver_agent.delegation_tokens import TokenFileWatcher, watch_token_file

RENEWER = "rm/host@R"


@pytest.fixture
def shipped(tmp_path: Path) -> Path:
    (tmp_path / KEYTAB_RESOURCE).write_bytes(b"\x05\x02")
    return tmp_path


def test_a_shipped_keytab_and_its_principal_mean_renewal_with_flinks_defaults(shipped):
    renewal = token_renewal_of(Configuration({"security.kerberos.login.principal": "alice@R"}), RENEWER, shipped)
    assert renewal == TokenRenewal("alice@R", shipped / KEYTAB_RESOURCE, RENEWER, 0.75, 3600.0)


def test_the_ratio_and_backoff_are_flinks_keys(shipped):
    config = Configuration(
        {
            "security.kerberos.login.principal": "alice@R",
            "security.delegation.tokens.renewal.time-ratio": "0.5",
            "security.delegation.tokens.renewal.retry.backoff": "30 s",
        }
    )
    renewal = token_renewal_of(config, RENEWER, shipped)
    assert renewal is not None and (renewal.ratio, renewal.backoff) == (0.5, 30.0)


@pytest.mark.parametrize(
    "values",
    [
        {},  # the client logged in from a ticket cache: no principal, no keytab shipped
        {"security.kerberos.login.principal": "alice@R", "security.delegation.tokens.enabled": "false"},
        {"security.kerberos.login.principal": "alice@R", "security.kerberos.fetch.delegation-token": "false"},  # Flink's old key
    ],
)
def test_no_renewal_without_a_keytab_login_or_when_disabled(shipped, values):
    assert token_renewal_of(Configuration(values), RENEWER, shipped) is None


def test_no_renewal_when_no_keytab_was_shipped(tmp_path):
    assert token_renewal_of(Configuration({"security.kerberos.login.principal": "alice@R"}), RENEWER, tmp_path) is None


def test_a_ratio_above_one_would_let_the_tokens_expire_first(shipped):
    config = Configuration({"security.kerberos.login.principal": "alice@R", "security.delegation.tokens.renewal.time-ratio": "1.5"})
    with pytest.raises(YarnConfigurationError, match="time-ratio must be above 0 and at most 1"):
        token_renewal_of(config, RENEWER, shipped)


def test_a_token_never_renewed_expires_one_interval_after_its_issue_and_never_past_its_maximum():
    assert renewal_date(issue_date_ms=1_000, max_date_ms=100_000, interval_ms=60_000) == 61_000
    assert renewal_date(issue_date_ms=50_000, max_date_ms=100_000, interval_ms=60_000) == 100_000
    assert renewal_date(issue_date_ms=1_000, max_date_ms=0, interval_ms=60_000) == 61_000


def test_new_tokens_are_due_at_the_ratio_of_the_earliest_tokens_remaining_time():
    assert renewal_delay(now_ms=10_000, renewal_dates_ms=[130_000, 90_000], ratio=0.75) == pytest.approx(60.0)
    assert renewal_delay(now_ms=100_000, renewal_dates_ms=[90_000], ratio=0.75) == 0.0  # overdue: at once
    assert renewal_delay(now_ms=0, renewal_dates_ms=[], ratio=0.75) is None


def test_the_renewed_token_file_starts_as_the_containers_and_every_process_started_later_reads_it(tmp_path):
    container = tmp_path / "container_tokens"
    container.write_bytes(b"HDTS\x00tokens")
    environ = {"HADOOP_TOKEN_FILE_LOCATION": str(container)}

    path = renewed_token_file(tmp_path, environ)

    assert path == tmp_path / RENEWED_TOKEN_FILE and path.read_bytes() == b"HDTS\x00tokens"
    assert environ["HADOOP_TOKEN_FILE_LOCATION"] == str(path)
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_watcher_hands_on_what_changed_since_it_started_and_tries_again_until_taken(tmp_path):
    path = tmp_path / "tokens"
    path.write_bytes(b"first")
    pushed: list[bytes] = []
    taking = [False]

    def push(data: bytes) -> bool:
        if taking[0]:
            pushed.append(data)
        return taking[0]

    watcher = TokenFileWatcher(path, push)
    assert not watcher.look()  # what the driver's JVM reads itself at its start

    path.write_bytes(b"second!")
    assert not watcher.look() and pushed == []  # no SparkContext yet: kept for the next look
    taking[0] = True
    assert watcher.look() and pushed == [b"second!"]
    assert not watcher.look() and pushed == [b"second!"]  # unchanged: not again

    os.utime(path, ns=(0, path.stat().st_mtime_ns + 1_000_000))
    path.write_bytes(b"third!!")
    assert watcher.look() and pushed[-1] == b"third!!"


def test_a_failing_push_is_tried_again(tmp_path):
    path = tmp_path / "tokens"
    path.write_bytes(b"a")
    calls: list[bytes] = []

    def push(data: bytes) -> bool:
        calls.append(data)
        if len(calls) == 1:
            raise RuntimeError("py4j: the driver's JVM is busy")
        return True

    watcher = TokenFileWatcher(path, push)
    path.write_bytes(b"bb")
    assert not watcher.look()
    assert watcher.look() and calls == [b"bb", b"bb"]


def test_no_token_file_no_watcher():
    assert watch_token_file({}) is None


def test_the_manager_obtains_at_once_then_in_time_and_retries_a_failure_after_the_backoff(tmp_path, caplog):
    """The schedule of DelegationTokenManager, its JVM round replaced: the rounds' times follow renewal_delay and the
    backoff, a failed round does not end the renewal, and stop() ends it."""
    renewal = TokenRenewal("alice@R", tmp_path / KEYTAB_RESOURCE, RENEWER, ratio=0.5, backoff=0.05)
    now = [1_000.0]
    rounds: list[float] = []
    four = threading.Event()
    outcomes = iter(["ok", "fail", "ok", "ok"])

    class Scripted(DelegationTokenManager):
        def obtain_and_distribute(self) -> list[int]:
            rounds.append(time.monotonic())
            if len(rounds) == 4:
                four.set()
            if next(outcomes, "ok") == "fail":
                raise OSError("the KDC is down")
            return [int((now[0] + 0.2) * 1000)]  # due in 0.2 s: the next round after 0.1 s

    manager = Scripted(renewal, lambda: (None, None), lambda credentials: None, clock=lambda: now[0])

    async def scenario() -> int:
        manager.start()
        try:
            await asyncio.to_thread(four.wait, 10)
        finally:
            await manager.stop()
        count = len(rounds)
        await asyncio.sleep(0.3)
        return count

    stopped_at = asyncio.run(scenario())
    assert len(rounds) >= 4
    gaps = [b - a for a, b in itertools.pairwise(rounds)]
    assert 0.09 <= gaps[0] < 1.0  # 0.5 of 0.2 s after a success
    assert 0.04 <= gaps[1] < 1.0  # the backoff after the failure
    assert "cannot obtain new delegation tokens as alice@R" in caplog.text and "the KDC is down" in caplog.text
    assert len(rounds) == stopped_at  # none after stop()
