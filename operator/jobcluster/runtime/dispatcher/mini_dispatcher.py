"""The MiniDispatcher: the dispatcher of a per-job cluster.

It runs exactly the one job it was started with, answers questions about it,
completes :attr:`workers_done` when the job needs its workers no more (it is
terminal, or the process is stopped; the entrypoint then stops them) and :attr:`termination` with the ApplicationStatus, which
makes the entrypoint shut the rest of the cluster down. In attached mode it
first waits (bounded) until the client has fetched the job result, so that an
attached client always learns how its job ended.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from jobcluster.errors import JobNotFoundError
from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.rpc.endpoint import RpcEndpoint
from jobcluster.runtime.jobmaster.job_master import JobMaster
from jobcluster.runtime.jobmaster.job_result import JobResult
from jobcluster.runtime.jobmaster.rolling_output import OutputChunk
from jobcluster.runtime.jobmaster.savepoint_operations import SavepointOperations
from jobcluster.runtime.jobmaster.spark_application import SparkUi
from jobcluster.spark.checkpoints import job_checkpoint_root

log = logging.getLogger(__name__)

DISPATCHER_ENDPOINT = "dispatcher"


class MiniDispatcher(RpcEndpoint):
    """Dispatcher of one job. ``create_job_master(on_terminal)`` builds the job's JobMaster.

    ``attached``: wait for the result to be fetched before terminating, at most
    ``result_retrieval_timeout`` seconds; so long at most it waits as well for
    the path of a stop-with-savepoint to be read, attached or not.
    """

    def __init__(
        self,
        create_job_master: Callable[[Callable[[JobResult], Awaitable[None]]], JobMaster],
        attached: bool,
        result_retrieval_timeout: float,
    ) -> None:
        super().__init__(DISPATCHER_ENDPOINT)
        self._create_job_master = create_job_master
        self.attached = attached
        self.result_retrieval_timeout = result_retrieval_timeout
        self.job_master: JobMaster | None = None
        self.termination: asyncio.Future[ApplicationStatus] = asyncio.get_running_loop().create_future()
        self.workers_done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._result_fetched = asyncio.Event()
        # Disposals are the cluster's operations, as in Flink (POST /savepoint-disposal names no job): kept apart
        # from the job's savepoints, so a disposed path is never listed as a completed savepoint.
        self.disposals = SavepointOperations()

    async def on_start(self) -> None:
        self.job_master = self._create_job_master(self._job_reached_terminal_state)

    async def _job_reached_terminal_state(self, result: JobResult) -> None:
        log.info("job %s reached terminal state %s", result.job_id, result.status.value)
        if not self.workers_done.done():
            self.workers_done.set_result(None)
        self.spawn(self._terminate_after_retrieval(result), "termination")

    async def _terminate_after_retrieval(self, result: JobResult) -> None:
        if self.attached:
            try:
                await asyncio.wait_for(self._result_fetched.wait(), self.result_retrieval_timeout)
            except TimeoutError:
                log.warning("the attached client did not fetch the job result within %.0f s", self.result_retrieval_timeout)
        if self.job_master is not None:  # whoever stopped the job with a savepoint learns its path before the cluster goes
            try:
                await asyncio.wait_for(self.job_master.checkpoints.savepoints.all_read(), self.result_retrieval_timeout)
            except TimeoutError:
                log.warning("no client read the path of the stop's savepoint within %.0f s", self.result_retrieval_timeout)
        if not self.termination.done():
            self.termination.set_result(ApplicationStatus.of_job(result.status))

    def close_externally(self, cause: str) -> None:
        """The process is stopped from outside: end now with an UNKNOWN application status (the job did not end)."""
        log.warning("shutting down: %s", cause)
        if not self.workers_done.done():
            self.workers_done.set_result(None)
        if not self.termination.done():
            self.termination.set_result(ApplicationStatus.UNKNOWN)

    # ---- queries (served by the REST endpoint on the same loop) ------------------------

    def _job(self, job_id: str) -> JobMaster:
        if self.job_master is None or self.job_master.graph.job_id != job_id:
            raise JobNotFoundError(f"Job {job_id} not found")
        return self.job_master

    def job_ids(self) -> list[str]:
        return [self.job_master.graph.job_id] if self.job_master else []

    def job_details(self, job_id: str) -> dict[str, Any]:
        return self._job(job_id).job_details()

    def job_result(self, job_id: str) -> JobResult | None:
        result = self._job(job_id).result
        if result is not None:
            self._result_fetched.set()
        return result

    def spark_ui(self) -> SparkUi | None:
        """The Spark UI of the job's running program; None while none runs (see JobMaster.spark_ui)."""
        return self.job_master.spark_ui() if self.job_master is not None else None

    async def job_output(self, job_id: str, stream: str, offset: int) -> OutputChunk:
        """The program's ``stream`` (``stdout``/``stderr``) from logical byte ``offset``; see JobMaster.driver_output."""
        return await self._job(job_id).driver_output(stream, offset)

    async def cancel_job(self, job_id: str) -> None:
        """Cancel the job; the cluster then shuts down without waiting for an attached client.

        A cancel counts as the result being fetched: whoever cancels knows how
        the job ends, and the attached client may be gone (killed, Ctrl-C).
        """
        job_master = self._job(job_id)
        self._result_fetched.set()
        await job_master.cancel()

    # ---- savepoints and checkpoints (the JobMaster's; see JobMaster.trigger_savepoint) ----

    def trigger_savepoint(self, job_id: str, trigger_id: str, target_directory: str | None, stop: bool, drain: bool) -> None:
        """Start a savepoint of the job (with ``stop``: stop-with-savepoint, which counts as its result being fetched, as a cancel does)."""
        job_master = self._job(job_id)
        if stop:
            self._result_fetched.set()
        job_master.trigger_savepoint(trigger_id, target_directory, stop, drain)

    def savepoint_operations(self, job_id: str) -> SavepointOperations:
        return self._job(job_id).checkpoints.savepoints

    def trigger_disposal(self, trigger_id: str, path: str) -> SavepointOperations:
        """Start disposing of the savepoint at ``path`` (through the job's running program) as disposal ``trigger_id``.

        JobNotFoundError before the job has started; the disposal's outcome (its
        location is ``path``) is read from the returned :attr:`disposals`.
        """
        job_master = self._only_job()
        self.disposals.start(trigger_id, _disposed(job_master, path), self.spawn)
        return self.disposals

    def disposal_operations(self) -> SavepointOperations:
        return self.disposals

    def checkpoint_statistics(self, job_id: str) -> dict[str, Any]:
        """The job's details and the savepoint it was restored from, for Flink's checkpoint statistics."""
        job_master = self._job(job_id)
        restore = job_master.graph.savepoint_restore
        return {"details": job_master.job_details(), "restored_from": restore.path if restore else None}

    def checkpoint_config(self, job_id: str) -> dict[str, Any]:
        """The job's checkpoint root (None without execution.checkpointing.dir), savepoint directory and timeout (seconds)."""
        job_master = self._job(job_id)
        checkpointing = job_master.graph.checkpointing
        return {
            "checkpoint_root": job_checkpoint_root(checkpointing.directory, job_id) if checkpointing else None,
            "savepoint_directory": job_master.settings.savepoint_directory,
            "timeout": job_master.settings.checkpointing_timeout,
        }

    def _only_job(self) -> JobMaster:
        if self.job_master is None:
            raise JobNotFoundError("the cluster's job has not started yet")
        return self.job_master


async def _disposed(job_master: JobMaster, path: str) -> str:
    await job_master.dispose_savepoint(path)
    return path
