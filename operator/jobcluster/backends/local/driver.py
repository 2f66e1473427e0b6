"""LocalProcessDriver: TaskExecutors as processes on this machine (the embedded default).

Each requested worker is a ``python -m jobcluster.runtime.taskexecutor``
process in a session of its own, given the process spec's dynamic configs, so
the TaskExecutor, its Spark worker and the worker's executors can be stopped
together. A worker that exits is reported to the ResourceManager, and whatever
it left behind in its session is killed then.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from dataclasses import dataclass

from jobcluster.errors import ResourceManagerError
from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.processes import ChildProcess
from jobcluster.runtime.entrypoint.layout import scratch_dir
from jobcluster.runtime.resourcemanager.driver import (
    ResourceEventHandler,
    ResourceManagerDriver,
    TaskExecutorLaunchContext,
)

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 10.0
TERMINATE_GRACE_SECONDS = 0.5  # at the cluster's end: the TaskExecutor, its Spark worker and executors hold no state


@dataclass
class _Worker:
    process: ChildProcess
    watcher: asyncio.Task[None] | None = None
    released: bool = False


class LocalProcessDriver(ResourceManagerDriver):
    """Starts TaskExecutors as local processes; ResourceIDs are ``<cluster-id>-taskmanager-<n>``."""

    def __init__(self) -> None:
        self._handler: ResourceEventHandler | None = None
        self._context: TaskExecutorLaunchContext | None = None
        self._workers: dict[str, _Worker] = {}
        self._counter = 0

    async def initialize(self, handler: ResourceEventHandler, launch_context: TaskExecutorLaunchContext) -> None:
        self._handler = handler
        self._context = launch_context

    async def request_resource(self, spec: TaskExecutorProcessSpec) -> str:
        assert self._context is not None, "driver not initialized"
        self._counter += 1
        resource_id = f"{self._context.cluster_id}-taskmanager-{self._counter}"
        argv = list(self._context.command)
        for key, value in spec.dynamic_configs().items():
            argv += ["-D", f"{key}={value}"]
        context = self._context
        env = {**os.environ, **context.settings.environment(resource_id, secret=context.secret, location=context.location)}
        process = ChildProcess(resource_id, argv, env, context.location.log_dir / f"{resource_id}.log")
        try:
            await process.start()
        except OSError as exc:
            raise ResourceManagerError(f"could not start TaskExecutor {resource_id}: {exc}") from exc
        worker = _Worker(process)
        worker.watcher = asyncio.get_running_loop().create_task(self._watch(resource_id, worker), name=f"watch-{resource_id}")
        self._workers[resource_id] = worker
        log.info("started TaskExecutor process %s (pid %s)", resource_id, process.pid)
        return resource_id

    async def _watch(self, resource_id: str, worker: _Worker) -> None:
        code = await worker.process.wait()
        await worker.process.stop(grace_seconds=2.0)  # whatever the TaskExecutor left in its session
        self._workers.pop(resource_id, None)
        await self._remove_scratch(resource_id)
        if not worker.released and self._handler is not None:
            await self._handler.on_worker_terminated(resource_id, f"process exited with code {code}; see {worker.process.log_file}")

    async def release_resource(self, resource_id: str, grace_seconds: float = STOP_GRACE_SECONDS) -> None:
        worker = self._workers.pop(resource_id, None)
        if worker is None:
            return
        worker.released = True
        await worker.process.stop(grace_seconds)
        if worker.watcher is not None:
            await asyncio.gather(worker.watcher, return_exceptions=True)
        await self._remove_scratch(resource_id)

    async def _remove_scratch(self, resource_id: str) -> None:
        """A stopped TaskExecutor's Spark scratch files (shuffle, spill, executor dirs): nobody reads them again."""
        assert self._context is not None, "driver not initialized"
        await asyncio.to_thread(shutil.rmtree, scratch_dir(self._context.location.cluster_dir, resource_id), ignore_errors=True)

    async def release_all_workers(self) -> None:
        """Stop every TaskExecutor at once; the cluster ends, so none of their processes holds anything to save."""
        await asyncio.gather(*(self.release_resource(r, TERMINATE_GRACE_SECONDS) for r in list(self._workers)))

    async def close(self) -> None:
        """Stop any TaskExecutor still running: they are this process's children, and none may outlive the cluster."""
        await self.release_all_workers()

    async def deregister_application(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        log.info("application finished with %s%s", status.name, f": {diagnostics}" if diagnostics else "")
