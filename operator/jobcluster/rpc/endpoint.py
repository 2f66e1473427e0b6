"""RPC endpoints: the long-lived components of a cluster.

As in Flink, every component (ResourceManager, JobMaster, TaskExecutor,
Dispatcher) is an endpoint whose state is only ever touched on the asyncio
loop it was started on, its "main thread". Remote calls arrive through the
RpcService and are executed on that same loop, so endpoint code needs no locks.

Only methods marked with :func:`rpc` can be called from other processes.
A :class:`FencedRpcEndpoint` additionally refuses calls that do not carry its
current fencing token (Flink's ResourceManagerId / JobMasterId), so messages
meant for an earlier leader, or an earlier attempt, are never acted upon.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeGuard, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_RPC_MARK = "__jobcluster_rpc__"


def rpc(method: F) -> F:
    """Mark an ``async`` endpoint method as callable through a gateway."""
    setattr(method, _RPC_MARK, True)
    return method


def is_rpc_method(method: Any) -> TypeGuard[Callable[..., Awaitable[Any]]]:
    return callable(method) and bool(getattr(method, _RPC_MARK, False))


class RpcEndpoint:
    """Base of every endpoint.

    ``endpoint_id`` names the endpoint within its RpcService (for example
    ``resourcemanager`` or ``taskexecutor``). Background tasks started with
    :meth:`spawn` are owned by the endpoint and cancelled by :meth:`stop`.
    """

    def __init__(self, endpoint_id: str) -> None:
        self.endpoint_id = endpoint_id
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopped = False

    @property
    def fencing_token(self) -> str | None:
        """None: this endpoint accepts calls without a fencing token."""
        return None

    def spawn(self, coro: Any, name: str) -> asyncio.Task[Any]:
        """Run ``coro`` on this endpoint's loop as a task the endpoint owns."""
        task = asyncio.get_running_loop().create_task(coro, name=f"{self.endpoint_id}:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def on_start(self) -> None:
        """Called once on the endpoint's loop before it serves calls."""

    async def on_stop(self) -> None:
        """Called once on the endpoint's loop when it stops; release resources here."""

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            await self.on_stop()
        finally:
            current = asyncio.current_task()
            pending = [t for t in self._tasks if t is not current]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


class FencedRpcEndpoint(RpcEndpoint):
    """An endpoint that only accepts calls carrying its current fencing token."""

    def __init__(self, endpoint_id: str, fencing_token: str | None = None) -> None:
        super().__init__(endpoint_id)
        self._fencing_token = fencing_token or uuid.uuid4().hex

    @property
    def fencing_token(self) -> str:
        return self._fencing_token
