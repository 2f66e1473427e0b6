"""Leader election of the operator's replicas on a ``coordination.k8s.io/v1`` Lease.

Several operator pods may run; only the holder of the Lease reconciles, the
others stand by and take over when it is released or expires.  This mirrors
the Flink Kubernetes Operator (``kubernetes.operator.leader-election.*``:
lease duration 15 s, renew deadline 10 s, retry period 2 s) and the rules of
Kubernetes' own client-go elector:

- a standby may take the Lease when it has no holder, or when its record has
  not changed for ``lease_duration`` seconds *as this process observed it*
  (its own monotonic clock: the nodes' wall clocks may disagree, so the
  Lease's ``renewTime`` is written for people, never trusted);
- every write is a create, or a replace carrying the read ``resourceVersion``:
  of two candidates racing, the API server lets exactly one through (409 for
  the other);
- the leader renews every ``retry_period``; when no renewal succeeded for
  ``renew_deadline`` (shorter than ``lease_duration``), it gives up before any
  standby may take over: :class:`LeaseKeeper` then calls its ``on_lost``,
  which in the operator ends the process at once;
- a leader that stops cleanly releases the Lease (no holder, 1 s duration):
  a standby takes it at its next try, without waiting for it to expire.

The ``kubernetes`` package's own ``leaderelection`` module is not used: it
sets no request timeouts, uses the default client configuration rather than
the operator's, blocks in loops that cannot be stopped, never releases the
Lease and exits the interpreter on a bad configuration.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import kubernetes
import urllib3

log = logging.getLogger(__name__)

RELEASED_LEASE_SECONDS = 1  # what a released Lease says it lasts (client-go's value): it is free at once anyway


@dataclass(frozen=True)
class LeaseTimings:
    """The election's periods, in seconds; defaults of the Flink Kubernetes Operator.

    ``lease_duration``: how long a standby waits, from the last change of the Lease it saw, before it takes
    the Lease over (``kubernetes.operator.leader-election.lease-duration``, whole seconds: the Lease stores
    an integer). ``renew_deadline``: how long the leader keeps trying to renew before it stops leading
    (``...renew-deadline``). ``retry_period``: the pause between two tries of either (``...retry-period``).

    Raises:
        ValueError: not ``lease_duration > renew_deadline > retry_period > 0``, or a fractional lease duration.
    """

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(
                f"leader election needs lease duration > renew deadline > retry period > 0; got {self.lease_duration:g} s, "
                f"{self.renew_deadline:g} s, {self.retry_period:g} s"
            )
        if self.lease_duration != int(self.lease_duration):
            raise ValueError(f"the lease duration is whole seconds (a Lease stores an integer); got {self.lease_duration:g} s")

    @property
    def request_timeout(self) -> tuple[float, float]:
        """Connect and read timeouts of one API call, in seconds: a try ends well within the renew deadline."""
        return (self.retry_period, self.renew_deadline / 2)


@dataclass(frozen=True)
class LeaseRecord:
    """What a Lease's spec says: its holder (``""``: none), duration (s), times (UTC) and number of hand-overs."""

    holder: str
    duration: int
    acquire_time: dt.datetime | None = None
    renew_time: dt.datetime | None = None
    transitions: int = 0

    @classmethod
    def of(cls, lease: kubernetes.client.V1Lease) -> LeaseRecord:
        spec = lease.spec or kubernetes.client.V1LeaseSpec()
        return cls(
            holder=spec.holder_identity or "",
            duration=spec.lease_duration_seconds or 0,
            acquire_time=spec.acquire_time,
            renew_time=spec.renew_time,
            transitions=spec.lease_transitions or 0,
        )

    def spec(self) -> kubernetes.client.V1LeaseSpec:
        return kubernetes.client.V1LeaseSpec(
            holder_identity=self.holder or None,
            lease_duration_seconds=self.duration,
            acquire_time=_micro_time(self.acquire_time),
            renew_time=_micro_time(self.renew_time),
            lease_transitions=self.transitions,
        )


def _micro_time(moment: dt.datetime | None) -> dt.datetime | None:
    """``moment`` as a MicroTime the API server parses: the client writes isoformat(), which drops the fraction at
    .000000, and the server's layout requires six digits; one microsecond later is as good a time."""
    return moment.replace(microsecond=1) if moment is not None and moment.microsecond == 0 else moment


def may_take(record: LeaseRecord, identity: str, observed_at: float, now: float) -> bool:
    """Whether ``identity`` may write itself into the Lease: it holds it, nobody does, or it has expired.

    ``observed_at`` and ``now`` are this process's monotonic seconds: ``observed_at`` is when it first saw
    ``record`` as it is (client-go's rule, so that clock skew between nodes cannot shorten a lease).
    """
    if record.holder in ("", identity):
        return True
    return now >= observed_at + record.duration


def held_by(record: LeaseRecord | None, identity: str, timings: LeaseTimings, wall_now: dt.datetime) -> LeaseRecord:
    """The record ``identity`` writes to acquire or renew the Lease whose current record is ``record`` (None: no Lease).

    Renewing keeps the acquire time and the transition count; taking the Lease over starts them anew (one more transition).
    """
    duration = int(timings.lease_duration)
    if record is not None and record.holder == identity:
        return replace(record, duration=duration, renew_time=wall_now)
    transitions = record.transitions + 1 if record is not None else 0
    return LeaseRecord(identity, duration, wall_now, wall_now, transitions)


def released(record: LeaseRecord, wall_now: dt.datetime) -> LeaseRecord:
    """The record a leader writes on a clean stop: no holder, so that a standby takes the Lease at its next try."""
    return replace(record, holder="", duration=RELEASED_LEASE_SECONDS, renew_time=wall_now)


def renewal_wait(renewed_at: float, now: float, timings: LeaseTimings) -> float:
    """Seconds until the leader's next renewal try: a retry period, or less when the renew deadline comes first (>= 0)."""
    return max(0.0, min(timings.retry_period, renewed_at + timings.renew_deadline - now))


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class LeaseElector:
    """One candidate for the Lease ``namespace/name``, known as ``identity``; blocking calls, each with a timeout.

    Safe to call from several threads (one call at a time). ``clock`` (monotonic seconds) and ``wall`` (UTC
    datetime) are for tests.
    """

    def __init__(
        self,
        api: kubernetes.client.ApiClient,
        namespace: str,
        name: str,
        identity: str,
        timings: LeaseTimings,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], dt.datetime] = _utcnow,
    ) -> None:
        self.namespace, self.name, self.identity, self.timings = namespace, name, identity, timings
        self._leases = kubernetes.client.CoordinationV1Api(api)
        self._clock, self._wall = clock, wall
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._lock = threading.Lock()

    def try_acquire_or_renew(self) -> bool:
        """One try: True when this candidate holds the Lease now (acquired or renewed), False otherwise.

        Never raises for the API's answers or an unreachable server (they are logged): the caller tries again.
        """
        with self._lock:
            try:
                return self._try()
            except kubernetes.client.ApiException as exc:
                self._log_refusal("acquire or renew", exc)
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                log.warning("lease %s/%s: the API server did not answer: %s", self.namespace, self.name, exc)
            return False

    def release(self) -> bool:
        """Give the Lease up if this candidate holds it; True when it was released. Never raises for API errors."""
        with self._lock:
            try:
                lease = self._read()
                if lease is None or LeaseRecord.of(lease).holder != self.identity:
                    return False
                lease.spec = released(LeaseRecord.of(lease), self._wall()).spec()
                self._replace(lease)
                log.info("lease %s/%s released by %s", self.namespace, self.name, self.identity)
                return True
            except kubernetes.client.ApiException as exc:
                self._log_refusal("release", exc)
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                log.warning("lease %s/%s not released: the API server did not answer: %s", self.namespace, self.name, exc)
            return False

    def holder(self) -> str:
        """The holder of the Lease as last read (``""``: none or not read yet)."""
        return self._observed.holder if self._observed else ""

    def now(self) -> float:
        """This elector's monotonic clock, in seconds."""
        return self._clock()

    def _try(self) -> bool:
        now = self._clock()
        lease = self._read()
        if lease is None:
            return self._create(held_by(None, self.identity, self.timings, self._wall()))
        record = LeaseRecord.of(lease)
        self._observe(record, now)
        if not may_take(record, self.identity, self._observed_at, now):
            return False
        mine = held_by(record, self.identity, self.timings, self._wall())
        lease.spec = mine.spec()
        self._replace(lease)  # with the read resourceVersion: a concurrent writer makes this a 409
        if record.holder != self.identity:
            log.info("lease %s/%s acquired by %s (was held by %r)", self.namespace, self.name, self.identity, record.holder)
        self._observe(mine, self._clock())
        return True

    def _observe(self, record: LeaseRecord, now: float) -> None:
        if record != self._observed:
            self._observed, self._observed_at = record, now

    def _read(self) -> kubernetes.client.V1Lease | None:
        try:
            return self._leases.read_namespaced_lease(self.name, self.namespace, _request_timeout=self.timings.request_timeout)
        except kubernetes.client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def _create(self, record: LeaseRecord) -> bool:
        body = kubernetes.client.V1Lease(metadata=kubernetes.client.V1ObjectMeta(name=self.name), spec=record.spec())
        try:
            self._leases.create_namespaced_lease(self.namespace, body, _request_timeout=self.timings.request_timeout)
        except kubernetes.client.ApiException as exc:
            if exc.status == 409:  # another candidate created it first
                return False
            raise
        log.info("lease %s/%s created and held by %s", self.namespace, self.name, self.identity)
        self._observe(record, self._clock())
        return True

    def _replace(self, lease: kubernetes.client.V1Lease) -> None:
        self._leases.replace_namespaced_lease(self.name, self.namespace, lease, _request_timeout=self.timings.request_timeout)

    def _log_refusal(self, what: str, exc: kubernetes.client.ApiException) -> None:
        if exc.status == 409:
            log.debug("lease %s/%s: another candidate wrote first", self.namespace, self.name)
        elif exc.status in (401, 403):
            log.error(
                "lease %s/%s: not allowed to %s it (%s %s): grant get, create and update on leases.coordination.k8s.io",
                self.namespace,
                self.name,
                what,
                exc.status,
                exc.reason,
            )
        else:
            log.warning("lease %s/%s: %s failed: %s %s", self.namespace, self.name, what, exc.status, exc.reason)


class LeaseKeeper:
    """Renews the Lease its elector holds, every retry period, from a thread of its own, until :meth:`stop`.

    When no renewal succeeded for the renew deadline (counted from ``acquired_at``, monotonic seconds, then
    from the start of the last successful try), it calls ``on_lost`` once from that thread and stops. A try
    that hangs past the deadline counts as failed: the thread waits for it no longer than the deadline.
    """

    def __init__(self, elector: LeaseElector, acquired_at: float, on_lost: Callable[[], Any], clock: Callable[[], float] = time.monotonic):
        self._elector, self._renewed_at, self._on_lost, self._clock = elector, acquired_at, on_lost, clock
        self._stopping = threading.Event()
        self._calls = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="lease-call")
        self._thread = threading.Thread(target=self._run, name="lease-renewal", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing (the Lease stays held until released or expired); returns within the renew deadline."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(self._elector.timings.renew_deadline)
        self._calls.shutdown(wait=False, cancel_futures=True)  # a hung call ends by its own request timeout

    def _run(self) -> None:
        timings = self._elector.timings
        while not self._stopping.wait(renewal_wait(self._renewed_at, self._clock(), timings)):
            started = self._clock()
            remaining = self._renewed_at + timings.renew_deadline - started
            if remaining > 0 and self._renew(remaining):
                self._renewed_at = started
            elif not self._stopping.is_set() and self._lost():
                self._on_lost()
                return

    def _lost(self) -> bool:
        """Whether renewing failed for the renew deadline, or another candidate holds the Lease now."""
        elector, deadline = self._elector, self._elector.timings.renew_deadline
        taken = elector.holder() not in ("", elector.identity)
        if taken or self._clock() >= self._renewed_at + deadline:
            reason = f"the Lease is held by {elector.holder()}" if taken else f"it was not renewed for {deadline:g} s (the renew deadline)"
            log.error("lease %s/%s: %s stops leading: %s", elector.namespace, elector.name, elector.identity, reason)
            return True
        return False

    def _renew(self, within: float) -> bool:
        try:
            return self._calls.submit(self._elector.try_acquire_or_renew).result(timeout=within)
        except (concurrent.futures.TimeoutError, RuntimeError):  # a hung try, or stop() shut the pool
            return False
        except Exception:  # whatever failed, this thread must live on to give up at the deadline
            log.exception("lease %s/%s: renewing failed", self._elector.namespace, self._elector.name)
            return False


async def wait_for_lease(elector: LeaseElector, stopping: asyncio.Event) -> float | None:
    """Try every retry period, off the loop, until ``elector`` holds the Lease; None when ``stopping`` is set first.

    Returns the monotonic time (``elector.now()``) at which the winning try started: a :class:`LeaseKeeper`'s ``acquired_at``.
    """
    holder = None
    while not stopping.is_set():
        started = elector.now()
        if await asyncio.to_thread(elector.try_acquire_or_renew):
            return started
        if elector.holder() != holder:
            holder = elector.holder()
            log.info("standing by: lease %s/%s is held by %r", elector.namespace, elector.name, holder)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), elector.timings.retry_period)
    return None
