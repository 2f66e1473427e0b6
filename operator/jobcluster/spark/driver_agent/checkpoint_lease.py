"""Leases on checkpoint locations: at most one driver writes a query's checkpoint.

Two drivers on one checkpoint (a Kubernetes JobManager pod replaced while the
old one still runs on a partitioned node, a YARN application attempt started
while the last one lives on, two jobs given one checkpointLocation) would both
run the query's micro-batches: Spark's own guard does not see a driver in
another JVM, and its create-if-absent is not atomic on ``file:`` volumes.
Flink fences such a JobManager with leader election; here the JobMaster holds
a lease on each checkpoint location its program's queries write, which the
driver agent takes before a query starts and renews while it runs.

A lease is a file ``<location>/_jobcluster_lease/<epoch>`` created exclusively
(the NameNode's create on HDFS, ``O_EXCL`` on local and NFS volumes) and
naming its holder; the newest epoch is the lease. Its holder renews it by
setting the file's modification time every RENEW_INTERVAL seconds. A driver
that wants the location takes the next epoch:

- at once when there is none, or when the holder is its own JobMaster (an
  earlier attempt of the same program, which the new epoch fences);
- when the newest epoch has not changed for LEASE_DURATION seconds as its own
  clock measures (so clocks that disagree across machines do not matter);
- never when it sees the lease renewed while it waits: a live driver holds it,
  and :class:`CheckpointLeaseError` says which.

A holder that finds a newer epoch, or its own file gone, or cannot renew for
RENEW_DEADLINE seconds (less than LEASE_DURATION, so it stops before anyone may
take over), has lost the lease: the agent stops the queries that write there.
The durations mirror Flink's Kubernetes leader election
(``high-availability.kubernetes.leader-election.lease-duration`` 15 s,
``retry-period`` 5 s).
"""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from jobcluster.spark.checkpoints import LEASE_DIRECTORY
from jobcluster.spark.driver_agent.hadoop_files import is_file_gone

log = logging.getLogger(__name__)

#: Seconds a lease stays its holder's without a renewal, as a contender's clock measures them.
LEASE_DURATION = 15.0
#: Seconds between a holder's renewals.
RENEW_INTERVAL = 5.0
#: Seconds a holder may fail to renew before it gives the lease up (< LEASE_DURATION).
RENEW_DEADLINE = 10.0
#: Seconds between a contender's looks at a lease held by another driver.
WATCH_INTERVAL = 1.0
_EPOCH_DIGITS = 20


class LeaseFiles(Protocol):
    """What a lease needs of a file system (HadoopFiles in the driver; a local stand-in in the unit tests)."""

    def mkdirs(self, uri: str) -> None: ...
    def names(self, uri: str) -> list[str]: ...
    def read_text(self, uri: str) -> str: ...
    def create_exclusively(self, uri: str, text: str) -> bool: ...
    def modification_time(self, uri: str) -> int | None: ...
    def set_modification_time(self, uri: str, millis: int) -> None: ...
    def delete(self, uri: str) -> bool: ...


class CheckpointLeaseError(Exception):
    """A checkpoint location is another driver's (refused before the query starts), or its lease was lost.

    ``restartable``: whether a new attempt of the program may get it (False when another driver holds it).
    """

    def __init__(self, message: str, restartable: bool = False) -> None:
        super().__init__(message)
        self.restartable = restartable


@dataclass
class _Held:
    """A lease this agent holds: its epoch, the modification time it last set (ms) and when (its monotonic clock)."""

    epoch: int
    stamped: int
    renewed: float


@dataclass(frozen=True)
class _Newest:
    epoch: int
    holder: dict[str, Any]
    modified: int | None


class CheckpointLeases:
    """The leases of one driver, held for ``holder`` (its JobMaster's identity) in job ``job_id``.

    Blocking (file system calls, and :meth:`acquire` waits): called from the program's
    threads and the agent's renewal thread, never concurrently for one location.
    """

    def __init__(
        self,
        files: LeaseFiles,
        holder: str,
        job_id: str,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        now_millis: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._files = files
        self._holder = holder
        self._job_id = job_id
        self._clock = clock
        self._sleep = sleep
        self._now_millis = now_millis
        self._held: dict[str, _Held] = {}

    @property
    def locations(self) -> list[str]:
        """The locations whose leases this driver holds."""
        return list(self._held)

    def acquire(self, location: str) -> None:
        """Hold ``location``'s lease, waiting at most about LEASE_DURATION seconds for one nobody renews.

        Raises CheckpointLeaseError when another driver renews it meanwhile; the file system's errors as they come.
        """
        if location in self._held:
            return
        directory = _directory(location)
        self._files.mkdirs(directory)
        watched: _Newest | None = None
        since = self._clock()
        while True:
            newest = self._newest(directory)
            if newest is None or newest.holder.get("holder") == self._holder or self._expired(watched, newest, since):
                if self._take(location, (newest.epoch if newest else 0) + 1):
                    return
                continue  # another driver took that epoch first: look again
            if watched is None:
                watched, since = newest, self._clock()
                log.info("checkpoint %s is leased to %s: waiting up to %.0f s for it to expire", location, _who(newest), LEASE_DURATION)
            elif (newest.epoch, newest.modified) != (watched.epoch, watched.modified):
                raise CheckpointLeaseError(
                    f"checkpoint {location} is in use: its lease is held by {_who(newest)}, which renewed it while this driver "
                    "waited. Two drivers must never write one checkpoint: give this job's query another checkpointLocation "
                    "(or another execution.checkpointing.dir), or stop the other job first."
                )
            self._sleep(WATCH_INTERVAL)

    def renew(self) -> dict[str, CheckpointLeaseError]:
        """Renew every lease held; ``{location: why}`` of those lost (no longer held)."""
        lost: dict[str, CheckpointLeaseError] = {}
        for location, held in list(self._held.items()):
            reason = self._renew(location, held)
            if reason is not None:
                self._held.pop(location, None)
                lost[location] = reason
        return lost

    def release(self) -> None:
        """Give every lease up (the program ended): the next driver takes them at once."""
        for location, held in list(self._held.items()):
            self._held.pop(location, None)
            try:
                if self._newest_epoch(_directory(location)) == held.epoch:
                    self._files.delete(_epoch_file(location, held.epoch))
            except Exception as exc:  # noqa: BLE001 - the lease then expires by itself
                log.warning("could not release the lease on checkpoint %s (it expires in %.0f s): %s", location, LEASE_DURATION, exc)

    # ---- internals ----

    def _take(self, location: str, epoch: int) -> bool:
        record = {
            "holder": self._holder,
            "job": self._job_id,
            "host": socket.gethostname(),
            "acquired": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        if not self._files.create_exclusively(_epoch_file(location, epoch), json.dumps(record)):
            return False
        stamped = self._files.modification_time(_epoch_file(location, epoch)) or self._now_millis()
        self._held[location] = _Held(epoch, stamped, self._clock())
        for name in self._files.names(_directory(location)):  # the epochs it fences: only the newest one counts
            if _epoch_of(name) is not None and _epoch_of(name) < epoch:  # type: ignore[operator]
                self._files.delete(f"{_directory(location)}/{name}")
        log.info("checkpoint %s leased to this driver (epoch %d)", location, epoch)
        return True

    def _renew(self, location: str, held: _Held) -> CheckpointLeaseError | None:
        try:
            newest = self._newest_epoch(_directory(location))
            if newest is not None and newest > held.epoch:
                who = _who(self._newest(_directory(location)))
                return CheckpointLeaseError(f"another driver took the lease on checkpoint {location}: {who}")
            if newest != held.epoch:
                return CheckpointLeaseError(f"the lease on checkpoint {location} was removed", restartable=True)
            held.stamped = max(self._now_millis(), held.stamped + 1)
            self._files.set_modification_time(_epoch_file(location, held.epoch), held.stamped)
            held.renewed = self._clock()
            return None
        except Exception as exc:  # noqa: BLE001 - the file system is away for now: lost only past the deadline
            late = self._clock() - held.renewed
            if late < RENEW_DEADLINE:
                log.warning("could not renew the lease on checkpoint %s (%.0f s since the last renewal): %s", location, late, exc)
                return None
            why = f"the lease on checkpoint {location} could not be renewed for {late:.0f} s: {exc}"
            return CheckpointLeaseError(why, restartable=True)

    def _expired(self, watched: _Newest | None, newest: _Newest, since: float) -> bool:
        unchanged = watched is not None and (newest.epoch, newest.modified) == (watched.epoch, watched.modified)
        return unchanged and self._clock() - since >= LEASE_DURATION

    def _newest(self, directory: str) -> _Newest | None:
        while (epoch := self._newest_epoch(directory)) is not None:
            path = f"{directory}/{epoch:0{_EPOCH_DIGITS}d}"
            try:
                text = self._files.read_text(path)
            except Exception as exc:
                if is_file_gone(exc):  # released or fenced meanwhile: look again
                    continue
                raise
            try:
                holder = json.loads(text)
            except ValueError:
                holder = {}  # written by no lease of ours: anyone's, once it expires
            return _Newest(epoch, holder if isinstance(holder, dict) else {}, self._files.modification_time(path))
        return None

    def _newest_epoch(self, directory: str) -> int | None:
        epochs = [e for e in map(_epoch_of, self._files.names(directory)) if e is not None]
        return max(epochs) if epochs else None


def _directory(location: str) -> str:
    return f"{location.rstrip('/')}/{LEASE_DIRECTORY}"


def _epoch_file(location: str, epoch: int) -> str:
    return f"{_directory(location)}/{epoch:0{_EPOCH_DIGITS}d}"


def _epoch_of(name: str) -> int | None:
    return int(name) if name.isdigit() else None


def _who(newest: _Newest | None) -> str:
    if newest is None:
        return "nobody"
    holder = newest.holder
    return f"job {holder.get('job', '?')} on {holder.get('host', '?')} (JobMaster {holder.get('holder', '?')}, epoch {newest.epoch})"
