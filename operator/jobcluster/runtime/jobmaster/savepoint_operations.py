"""Asynchronous savepoint operations of a job, by trigger id (Flink's REST triggers and their completed-operation cache).

Why asynchronous: a savepoint takes as long as copying the queries'
checkpoints (and, for stop-with-savepoint, stopping them), longer than a REST
call should wait. As in Flink, a trigger answers at once with an id, and the
operation's status is asked for by that id until it is COMPLETED with a
location or a failure cause.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from jobcluster.errors import JobClusterError

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class SavepointOutcome:
    """A completed operation: the savepoint's location (a URI) or why it failed; ``time`` in ms since the epoch."""

    location: str | None
    failure: str | None
    time: int


class SavepointOperations:
    """The job's savepoint operations: None while in progress, then their outcome; every operation is kept (a job takes few).

    An operation that ends the job (stop-with-savepoint) is *awaited*: the
    cluster, which shuts down with its job, first waits until a client has read
    its outcome (:meth:`all_read`), so that whoever stopped the job learns where
    the savepoint is.
    """

    def __init__(self) -> None:
        self._operations: dict[str, SavepointOutcome | None] = {}
        self._unread: set[str] = set()  # operations that end the job, whose outcome no client has read yet
        self._read = asyncio.Event()
        self._read.set()

    def start(
        self,
        trigger_id: str,
        operation: Coroutine[Any, Any, str],
        spawn: Callable[[Awaitable[None], str], Any],
        ends_job: bool = False,
    ) -> None:
        """Run ``operation`` (returning the location) as ``trigger_id`` with ``spawn``; a known trigger id is not run again.

        ``ends_job``: the operation stops the job, and its outcome is to be read before the cluster goes."""
        if trigger_id in self._operations:
            operation.close()
            return
        self._operations[trigger_id] = None
        if ends_job:
            self._unread.add(trigger_id)
            self._read.clear()
        spawn(self._run(trigger_id, operation), f"savepoint-{trigger_id}")

    async def _run(self, trigger_id: str, operation: Coroutine[Any, Any, str]) -> None:
        try:
            self._operations[trigger_id] = SavepointOutcome(await operation, None, _now_ms())
        except JobClusterError as exc:
            log.warning("savepoint %s failed: %s", trigger_id, exc)
            self._operations[trigger_id] = SavepointOutcome(None, str(exc), _now_ms())

    def known(self, trigger_id: str) -> bool:
        return trigger_id in self._operations

    def result(self, trigger_id: str) -> SavepointOutcome | None:
        """The outcome of ``trigger_id``; None while in progress. KeyError for an unknown trigger id.

        A client's read: an outcome returned counts as read (see :meth:`all_read`)."""
        outcome = self._operations[trigger_id]
        if outcome is not None:
            self._unread.discard(trigger_id)
            if not self._unread:
                self._read.set()
        return outcome

    async def all_read(self) -> None:
        """Until a client has read the outcome of every operation that ends the job."""
        await self._read.wait()

    def completed(self) -> list[dict[str, Any]]:
        """Completed savepoints, oldest first: ``[{"location", "time"}]`` (failed ones are left out)."""
        return [{"location": o.location, "time": o.time} for o in self._operations.values() if o is not None and o.location]
