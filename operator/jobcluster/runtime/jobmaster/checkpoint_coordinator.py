"""The JobMaster's part in a streaming job: its program's driver agent, its queries and its savepoints.

Flink's CheckpointCoordinator triggers a job's checkpoints and savepoints and
knows their outcome. Here the checkpoints are the queries' own (a committed
micro-batch), so the coordinator follows them through the driver agent in the
program's process (``spark/driver_agent``), and asks that agent for
savepoints: one attempt of the program, one agent, reached with a secret made
for the agent alone (the program must never hold the cluster's). Its state is
touched only on the JobMaster's loop.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from jobcluster.errors import RpcError
from jobcluster.jobgraph.model import JobGraph
from jobcluster.processes import find_free_port
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.jobmaster.savepoint_operations import SavepointOperations
from jobcluster.spark.checkpoints import SavepointError, StopWithSavepointFailed, job_checkpoint_root
from jobcluster.spark.driver_agent.endpoint import DriverAgentGateway, SavepointTimeout
from jobcluster.spark.driver_agent.settings import AGENT_ENDPOINT, AGENT_HOST, AgentSettings

log = logging.getLogger(__name__)

AGENT_ASK_TIMEOUT = 10.0  # seconds a call of the driver agent may take, but for savepoints (execution.checkpointing.timeout)


class CheckpointCoordinator:
    """The streaming side of one job: ``savepoint_directory`` [execution.checkpointing.savepoint-dir] is the default
    target, ``timeout`` [execution.checkpointing.timeout] in seconds the longest a savepoint may take."""

    def __init__(self, graph: JobGraph, savepoint_directory: str | None, timeout: float) -> None:
        self._graph = graph
        self._savepoint_directory = savepoint_directory
        self._timeout = timeout
        self._secret = secrets.token_hex(32)
        #: This JobMaster's name in the leases on its queries' checkpoints: its program's attempts take them over at once,
        #: another JobMaster of the job (a replaced pod, a new application attempt) only once they expire.
        self._lease_holder = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        self._rpc = RpcService(AGENT_HOST, self._secret, AGENT_ASK_TIMEOUT)
        self._agent: DriverAgentGateway | None = None  # the agent of the running attempt
        #: The program's streaming queries as its agent last reported them (``agent.query_view``); empty: a batch job.
        self.queries: list[dict[str, Any]] = []
        #: The savepoint the job was restored from, as the first attempt's agent read it once its first query started
        #: (``DriverAgent.restore_view``: path, recorded parallelism, when); None before, and without ``-s``.
        self.restore: dict[str, Any] | None = None
        self.savepoints = SavepointOperations()
        #: Whether a stop-with-savepoint ended the queries: the program's end is then not restarted.
        self.stopped_with_savepoint = False
        #: Why the running attempt is to be restarted however it ends: a stop-with-savepoint failed after (or perhaps
        #: after) its queries stopped, and Flink's answer to that is a failover, never a job finished without a savepoint.
        self.failover_cause: str | None = None

    async def start(self) -> None:
        await self._rpc.start(serve=False)

    async def stop(self) -> None:
        await self._rpc.stop()

    def next_attempt(self) -> tuple[AgentSettings, str]:
        """The settings and secret of the agent of the program's next attempt, which the coordinator reaches from now on."""
        graph, checkpointing, restore = self._graph, self._graph.checkpointing, self._graph.savepoint_restore
        settings = AgentSettings(
            port=find_free_port(AGENT_HOST),
            job_id=graph.job_id,
            job_name=graph.job_name,
            checkpoint_root=job_checkpoint_root(checkpointing.directory, graph.job_id) if checkpointing else None,
            restore_path=restore.path if restore else None,
            allow_non_restored_state=restore.allow_non_restored_state if restore else False,
            lease_holder=self._lease_holder,
            parallelism=graph.parallelism,
        )
        self._agent = DriverAgentGateway(self._rpc, settings.address, AGENT_ENDPOINT)
        return settings, self._secret

    async def follow_queries(self) -> None:
        """Take the queries' progress from the agent; an agent not up yet (or gone) leaves the last seen."""
        if self._agent is None:
            return
        try:
            queries = await self._agent.queries()
            if queries and self.restore is None and self._graph.savepoint_restore is not None:
                self.restore = await self._agent.restore()  # read as the first query started: known from now on
        except RpcError:
            return
        if queries:
            self.queries = queries

    def program_ended(self) -> None:
        """The program's process ended: none of its queries runs any more, whatever the agent last reported (it is
        read every web.refresh-interval, and a program may stop its queries and end between two reads)."""
        self.queries = [{**query, "active": False} for query in self.queries]

    def trigger_savepoint(
        self,
        trigger_id: str,
        target_directory: str | None,
        stop: bool,
        drain: bool,
        job_state: Callable[[], str],
        spawn: Callable[[Awaitable[None], str], Any],
    ) -> None:
        """Start savepoint operation ``trigger_id`` (with ``stop``: Flink's stop-with-savepoint) on a task made by ``spawn``.

        ``target_directory`` None: the default. ``job_state()`` is the job's state
        (the savepoint is refused unless RUNNING). The outcome, a location or a
        failure, is read with ``savepoints.result(trigger_id)``; a trigger id
        already known is not started again (Flink's idempotent retry).
        """
        self.savepoints.start(trigger_id, self._savepoint(target_directory, stop, drain, job_state()), spawn, ends_job=stop)

    async def _savepoint(self, target_directory: str | None, stop: bool, drain: bool, state: str) -> str:
        job_id = self._graph.job_id
        if state != "RUNNING" or self._agent is None:
            raise SavepointError(f"Job {job_id} is {state}: a savepoint is taken of a running job.")
        if not self.queries:
            raise SavepointError(f"Job {job_id} is not a streaming job: its program runs no streaming query.")
        directory = target_directory or self._savepoint_directory
        if not directory:
            raise SavepointError(
                "No savepoint directory configured. Give one (jobcluster stop --savepointPath DIR, jobcluster savepoint JOB DIR) "
                "or configure a cluster-wide default with execution.checkpointing.savepoint-dir."
            )
        agent = self._agent
        try:
            result = await agent.savepoint(directory, stop, drain, self._timeout)
        except SavepointError as exc:
            if stop and isinstance(exc, StopWithSavepointFailed | SavepointTimeout):
                self.failover_cause = str(exc)  # set before the program may go on: its end is a failover
                await _resume(agent)
            raise
        if stop:
            self.stopped_with_savepoint = True
            self.failover_cause = None  # an earlier stop that timed out had, after all, not stopped the queries
            await _resume(agent)
        for query_id in result.get("skipped", []):
            log.warning("savepoint %s leaves out query %s, which has no name", result["location"], query_id)
        for name, batch in result.get("replays", {}).items():
            log.warning("the stop interrupted micro-batch %s of query %s: a restore runs it again", batch, name)
        log.info("savepoint of job %s complete: %s", job_id, result["location"])
        return str(result["location"])

    def take_failover_cause(self) -> str | None:
        """Why the attempt that just ended is restarted whatever its exit (see ``failover_cause``); cleared."""
        cause, self.failover_cause = self.failover_cause, None
        return cause

    async def dispose_savepoint(self, path: str, program_running: bool) -> None:
        """Delete the savepoint at ``path`` through the running program's agent (it reaches the savepoint's file system).

        SavepointError when no program runs or ``path`` is not a savepoint (then nothing is deleted).
        """
        if self._agent is None or not program_running:
            raise SavepointError(
                "disposing of a savepoint through a job cluster needs its program running; use `jobcluster savepoint --dispose PATH`"
            )
        await self._agent.dispose_savepoint(path, self._timeout)


async def _resume(agent: DriverAgentGateway) -> None:
    """Let the program go on after a stop-with-savepoint's outcome is known here."""
    try:
        await agent.resume_program()
    except RpcError as exc:  # the agent lets the program go on by itself a little later
        log.warning("could not tell the driver agent to let the program go on: %s", exc)
