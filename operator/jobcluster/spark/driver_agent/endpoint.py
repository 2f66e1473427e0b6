"""The driver agent's RPC endpoint, served on its own loop in a thread of the program's process.

The JobMaster calls it through :class:`DriverAgentGateway` with the agent's
own secret (fresh for each attempt; never the cluster's, which the program must
not hold). Each call runs the agent's blocking work (py4j) in a worker thread,
so the endpoint's loop only ever waits.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, cast

from jobcluster.errors import RpcError
from jobcluster.rpc.endpoint import RpcEndpoint, rpc
from jobcluster.rpc.gateway import RpcGateway
from jobcluster.rpc.service import RpcService
from jobcluster.spark.checkpoints import SavepointError, StopWithSavepointFailed
from jobcluster.spark.driver_agent.agent import DriverAgent
from jobcluster.spark.driver_agent.settings import AGENT_ENDPOINT, AGENT_HOST

#: Seconds a call of the agent may take when it does not say otherwise.
ASK_TIMEOUT = 10.0


class DriverAgentEndpoint(RpcEndpoint):
    def __init__(self, agent: DriverAgent) -> None:
        super().__init__(AGENT_ENDPOINT)
        self._agent = agent

    @rpc
    async def queries(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self._agent.query_views)

    @rpc
    async def restore(self) -> dict[str, Any] | None:
        return self._agent.restore_view()

    @rpc
    async def savepoint(self, target_directory: str, stop: bool, drain: bool, time_limit: float) -> dict[str, Any]:
        return await asyncio.to_thread(self._agent.savepoint, target_directory, stop, drain, time_limit)

    @rpc
    async def resume_program(self) -> None:
        self._agent.resume_program()

    @rpc
    async def dispose_savepoint(self, path: str) -> None:
        await asyncio.to_thread(self._agent.dispose_savepoint, path)


class SavepointTimeout(SavepointError):
    """The agent did not answer a savepoint call in time: what it did is not known here."""


class DriverAgentGateway(RpcGateway):
    """The JobMaster's handle on the agent of the running attempt (see DriverAgent for what each call does)."""

    async def queries(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], await self.call("queries"))

    async def restore(self) -> dict[str, Any] | None:
        """The savepoint the attempt restored (``DriverAgent.restore_view``); None before its first query started."""
        return cast(dict[str, Any] | None, await self.call("restore"))

    async def savepoint(self, target_directory: str, stop: bool, drain: bool, time_limit: float) -> dict[str, Any]:
        """``{"location", "queries", "skipped", "replays"}`` of a savepoint the agent takes within ``time_limit`` seconds.

        SavepointError when it fails (StopWithSavepointFailed: after the queries stopped) or the agent does not
        answer within ``time_limit`` + ASK_TIMEOUT seconds.
        """
        try:
            result = await self.call_with_timeout(
                "savepoint", time_limit + ASK_TIMEOUT, target_directory=target_directory, stop=stop, drain=drain, time_limit=time_limit
            )
        except RpcError as exc:
            if isinstance(exc.__cause__, TimeoutError):
                raise SavepointTimeout(
                    f"the driver agent did not finish the savepoint within {time_limit + ASK_TIMEOUT:.0f} s "
                    "(execution.checkpointing.timeout)"
                ) from exc
            raise _savepoint_error(exc) from exc
        return cast(dict[str, Any], result)

    async def resume_program(self) -> None:
        await self.call("resume_program")

    async def dispose_savepoint(self, path: str, ask_timeout: float) -> None:
        """SavepointError when ``path`` is not a savepoint or cannot be deleted."""
        try:
            await self.call_with_timeout("dispose_savepoint", ask_timeout, path=path)
        except RpcError as exc:
            raise _savepoint_error(exc) from exc


def _savepoint_error(exc: RpcError) -> SavepointError:
    """The agent's own words for a failed call ("<endpoint>.<method> at <address>: <error type>: <message>"), as that type."""
    error_type, _, message = str(exc).split(": ", 1)[-1].partition(": ")
    if error_type == StopWithSavepointFailed.__name__:
        return StopWithSavepointFailed(message)
    return SavepointError(message if error_type == SavepointError.__name__ else f"{error_type}: {message}")


def serve_in_thread(agent: DriverAgent, secret: str) -> threading.Thread:
    """Serve ``agent`` on ``AGENT_HOST:agent.settings.port`` from a daemon thread (it lives as long as the program)."""
    ready = threading.Event()

    async def serve() -> None:
        service = RpcService(AGENT_HOST, secret, ASK_TIMEOUT, port=agent.settings.port)
        await service.start()
        await service.start_endpoint(DriverAgentEndpoint(agent))
        ready.set()
        await asyncio.Event().wait()  # until the process ends

    thread = threading.Thread(target=asyncio.run, args=(serve(),), name="jobcluster-driver-agent", daemon=True)
    thread.start()
    ready.wait(ASK_TIMEOUT)
    return thread
