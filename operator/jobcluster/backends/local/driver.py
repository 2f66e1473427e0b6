"""LocalProcessDriver: TaskExecutors as processes on this machine (the ``local-cluster`` target).

Each requested worker is a ``python -m jobcluster.runtime.taskexecutor``
process in a session of its own, given the process spec's dynamic configs, so
the TaskExecutor, its Spark worker and the worker's executors can be stopped
together. A worker that exits is reported to the ResourceManager with its
exit code and what it means, and whatever it left behind is killed then: its
session, and the processes that inherited its ResourceID
(``JOBCLUSTER_RESOURCE_ID``), which its Spark worker and executors did in
sessions of their own, before its scratch files are removed.

Nothing limits a local TaskExecutor's memory, so each one's process tree is
measured every ``jobcluster.local.memory-check-interval`` against its size
(``memory_check.py``), by a task the driver owns; the first time it is over,
the ResourceManager is warned (``on_worker_warning``), and a TaskExecutor
killed by SIGKILL after that is reported as likely killed for its memory.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

from jobcluster.backends.local.memory_check import MemoryCheck, process_tree_rss
from jobcluster.config import options
from jobcluster.errors import ResourceManagerError
from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.processes import ChildProcess, kill_processes, processes_with_environment
from jobcluster.runtime.entrypoint.layout import scratch_dir
from jobcluster.runtime.resourcemanager.driver import (
    ResourceEventHandler,
    ResourceManagerDriver,
    TaskExecutorLaunchContext,
)
from jobcluster.runtime.resourcemanager.worker_termination import MemoryKill, WorkerTermination, exit_code_meaning, exit_code_status
from jobcluster.runtime.taskexecutor.launch import ENV_RESOURCE_ID

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 10.0
TERMINATE_GRACE_SECONDS = 0.5  # at the cluster's end: the TaskExecutor, its Spark worker and executors hold no state


@dataclass
class _Worker:
    process: ChildProcess
    check: MemoryCheck
    watcher: asyncio.Task[None] | None = None
    monitor: asyncio.Task[None] | None = None
    released: bool = False


class LocalProcessDriver(ResourceManagerDriver):
    """Starts TaskExecutors as local processes; ResourceIDs are ``<cluster-id>-taskmanager-<n>``.

    ``memory_check_interval``: seconds between measurements of each TaskExecutor's process tree
    (``jobcluster.local.memory-check-interval``; 0: none).
    """

    def __init__(self, memory_check_interval: float = options.LOCAL_MEMORY_CHECK_INTERVAL.default) -> None:
        self._memory_check_interval = memory_check_interval
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
        worker = _Worker(process, MemoryCheck(resource_id, spec))
        loop = asyncio.get_running_loop()
        worker.watcher = loop.create_task(self._watch(resource_id, worker), name=f"watch-{resource_id}")
        if self._memory_check_interval > 0:
            worker.monitor = loop.create_task(self._measure(resource_id, worker), name=f"memory-{resource_id}")
        self._workers[resource_id] = worker
        log.info("started TaskExecutor process %s (pid %s)", resource_id, process.pid)
        return resource_id

    async def _watch(self, resource_id: str, worker: _Worker) -> None:
        code = await worker.process.wait()
        await _cancel(worker.monitor)
        await worker.process.stop(grace_seconds=2.0)  # whatever the TaskExecutor left in its session
        self._workers.pop(resource_id, None)
        await self._remove_remains(resource_id)
        if not worker.released and self._handler is not None:
            await self._handler.on_worker_terminated(resource_id, process_termination(code, worker.process.log_file, worker.check))

    async def _measure(self, resource_id: str, worker: _Worker) -> None:
        """Measure the TaskExecutor's process tree every interval until it ends; warn once when it is over its size."""
        pid = worker.process.pid
        assert pid is not None and self._handler is not None
        while True:
            await asyncio.sleep(self._memory_check_interval)
            rss = await asyncio.to_thread(process_tree_rss, pid)  # reads /proc of every process of the tree: off the loop
            if rss is None:
                return
            warning = worker.check.observe(rss)
            if warning is not None:
                await self._handler.on_worker_warning(resource_id, warning)

    async def release_resource(self, resource_id: str, grace_seconds: float = STOP_GRACE_SECONDS) -> None:
        worker = self._workers.pop(resource_id, None)
        if worker is None:
            return
        worker.released = True
        await _cancel(worker.monitor)
        await worker.process.stop(grace_seconds)
        if worker.watcher is not None:
            await asyncio.gather(worker.watcher, return_exceptions=True)
        await self._remove_remains(resource_id)

    async def _remove_remains(self, resource_id: str) -> None:
        """What a stopped TaskExecutor left: processes (its Spark worker and executors, when it was killed before it
        could stop them: they run in sessions of their own and would write on into its scratch directory), then its
        Spark scratch files (shuffle, spill, executor dirs), which nobody reads again."""
        assert self._context is not None, "driver not initialized"
        left = await asyncio.to_thread(processes_with_environment, ENV_RESOURCE_ID, resource_id)  # reads /proc: off the loop
        if left:
            log.info("stopping %d process(es) TaskExecutor %s left behind", len(left), resource_id)
            await asyncio.to_thread(kill_processes, left, 2.0)
        await asyncio.to_thread(shutil.rmtree, scratch_dir(self._context.location.cluster_dir, resource_id), ignore_errors=True)

    async def release_all_workers(self) -> None:
        """Stop every TaskExecutor at once; the cluster ends, so none of their processes holds anything to save."""
        await asyncio.gather(*(self.release_resource(r, TERMINATE_GRACE_SECONDS) for r in list(self._workers)))

    async def close(self) -> None:
        """Stop any TaskExecutor still running: they are this process's children, and none may outlive the cluster."""
        await self.release_all_workers()

    async def deregister_application(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        log.info("application finished with %s%s", status.name, f": {diagnostics}" if diagnostics else "")


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def process_termination(code: int, log_file: Path, check: MemoryCheck) -> WorkerTermination:
    """How a TaskExecutor process ended: its exit code (asyncio's negative code for a signal) and its meaning; killed by
    SIGKILL after its process tree was measured over its size, a likely memory kill (the kernel's OOM killer)."""
    killed = code in (-signal.SIGKILL, 128 + signal.SIGKILL)
    over = check.killed_over_size() if killed else None
    memory_kill = MemoryKill(over, check.peak - check.spec.total_process) if over else None
    return WorkerTermination(
        exit_code_status(code), exit_code_meaning(code), f"process exited with code {code}; see {log_file}", memory_kill
    )
