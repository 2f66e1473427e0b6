"""Heartbeats between the components of a cluster.

The side that owns the relationship (ResourceManager for its TaskExecutors
and JobMaster, JobMaster for its TaskExecutors) *sends* a heartbeat request to
each monitored target every ``heartbeat.interval``; a target that has not
answered for ``heartbeat.timeout`` is reported once to ``on_timeout`` and no
longer monitored. The other side runs a :class:`HeartbeatWatch`, which fires
when no request has arrived for the timeout, so a TaskExecutor whose
ResourceManager vanished notices and shuts itself down.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from jobcluster.errors import RpcError

log = logging.getLogger(__name__)

RequestHeartbeat = Callable[[], Awaitable[Any]]
OnTimeout = Callable[[str], Awaitable[None]]


class HeartbeatManager:
    """Sends heartbeat requests to targets and reports the ones that stop answering.

    ``interval`` and ``timeout`` are seconds (Flink's ``heartbeat.interval`` and
    ``heartbeat.timeout``). ``on_timeout(target_id)`` runs on the owner's loop.
    """

    def __init__(self, owner: str, interval: float, timeout: float, on_timeout: OnTimeout) -> None:
        self.owner = owner
        self.interval = interval
        self.timeout = timeout
        self._on_timeout = on_timeout
        self._targets: dict[str, tuple[RequestHeartbeat, float]] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"heartbeat:{self.owner}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._targets.clear()

    def monitor_target(self, target_id: str, request_heartbeat: RequestHeartbeat) -> None:
        self._targets[target_id] = (request_heartbeat, time.monotonic())

    def unmonitor_target(self, target_id: str) -> None:
        self._targets.pop(target_id, None)

    def seconds_since_last_heartbeat(self, target_id: str) -> float | None:
        """Seconds since ``target_id`` last answered (since monitoring began if never); None when not monitored."""
        entry = self._targets.get(target_id)
        return None if entry is None else time.monotonic() - entry[1]

    def is_monitoring(self, target_id: str) -> bool:
        return target_id in self._targets

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await asyncio.gather(*(self._beat(t) for t in list(self._targets)))

    async def _beat(self, target_id: str) -> None:
        entry = self._targets.get(target_id)
        if entry is None:
            return
        request, last_seen = entry
        try:
            await asyncio.wait_for(request(), timeout=self.interval)
        except (TimeoutError, RpcError) as exc:
            if target_id in self._targets and time.monotonic() - last_seen > self.timeout:
                self.unmonitor_target(target_id)
                log.warning("%s: heartbeat of %s timed out after %.0f s (%s)", self.owner, target_id, self.timeout, exc)
                await self._on_timeout(target_id)
            return
        if target_id in self._targets:
            self._targets[target_id] = (request, time.monotonic())


class HeartbeatWatch:
    """Fires ``on_timeout`` once when :meth:`touch` was not called for ``timeout`` seconds."""

    def __init__(self, name: str, timeout: float, on_timeout: Callable[[], Awaitable[None]]) -> None:
        self.name = name
        self.timeout = timeout
        self._on_timeout = on_timeout
        self._last = time.monotonic()
        self._task: asyncio.Task[None] | None = None

    def touch(self) -> None:
        self._last = time.monotonic()

    def start(self) -> None:
        self.touch()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"heartbeat-watch:{self.name}")

    async def stop(self) -> None:
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.timeout / 4))
            if time.monotonic() - self._last > self.timeout:
                log.warning("no heartbeat from %s for %.0f s", self.name, self.timeout)
                await self._on_timeout()
                return
