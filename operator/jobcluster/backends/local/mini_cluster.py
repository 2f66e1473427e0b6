"""MiniClusterDriver: TaskExecutors as RPC endpoints in the JobManager's own process (``-t local``).

Flink's MiniCluster starts its TaskManagers in the process that runs the
JobManager's components, each with an RpcService of its own, and its
ResourceManager's TaskExecutors are those (``MiniCluster.startTaskManagers``).
This driver does the same: each requested worker is a
:class:`~jobcluster.runtime.taskexecutor.task_executor.TaskExecutor` endpoint
on an RpcService of its own, on this process's loop. It registers at the
ResourceManager with its memory spec and offers its slots as a TaskExecutor
process does; calls between the services of this process skip the network
but pass the same checks (cluster secret, fencing tokens; ``rpc/service.py``).

It starts no Spark worker: the MiniCluster's program runs in Spark's local
mode, whose driver JVM runs the tasks. The TaskExecutor's memory spec is
therefore the size of no process (as in Flink's MiniCluster, where the
TaskManagers' memory settings are mostly not enforced); only its slots count.
A TaskExecutor that must end (it lost its ResourceManager) is stopped and
reported as terminated, unless it was released.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.resourcemanager.driver import ResourceEventHandler, ResourceManagerDriver, TaskExecutorLaunchContext
from jobcluster.runtime.resourcemanager.worker_termination import WorkerTermination
from jobcluster.runtime.taskexecutor.log_files import TaskExecutorLogs
from jobcluster.runtime.taskexecutor.task_executor import TaskExecutor, TaskExecutorSettings

log = logging.getLogger(__name__)

JOB_MANAGER_LOG = "jobmanager.log"  # the process's log, which its TaskExecutors share


@dataclass
class _Worker:
    rpc: RpcService
    task_executor: TaskExecutor
    released: bool = False


class MiniClusterDriver(ResourceManagerDriver):
    """Starts TaskExecutors in this process; ResourceIDs are ``<cluster-id>-taskmanager-<n>``.

    ``settings``: each TaskExecutor's registration and heartbeat timeouts; ``ask_timeout``: seconds an RPC
    call of its RpcService may take (``pekko.ask.timeout``).
    """

    def __init__(self, settings: TaskExecutorSettings, ask_timeout: float) -> None:
        self._settings = settings
        self._ask_timeout = ask_timeout
        self._handler: ResourceEventHandler | None = None
        self._context: TaskExecutorLaunchContext | None = None
        self._workers: dict[str, _Worker] = {}
        self._counter = 0

    async def initialize(self, handler: ResourceEventHandler, launch_context: TaskExecutorLaunchContext) -> None:
        self._handler = handler
        self._context = launch_context

    async def request_resource(self, spec: TaskExecutorProcessSpec) -> str:
        assert self._context is not None, "driver not initialized"
        context = self._context
        self._counter += 1
        resource_id = f"{context.cluster_id}-taskmanager-{self._counter}"
        rpc = RpcService(context.location.bind_host, context.secret, self._ask_timeout, in_process=True)
        await rpc.start()

        async def on_fatal(reason: str) -> None:
            asyncio.get_running_loop().create_task(self._end(resource_id, reason), name=f"end-{resource_id}")

        log_dir = context.location.log_dir
        task_executor = TaskExecutor(
            rpc,
            resource_id,
            spec,
            context.settings.resource_manager_address,
            context.settings.resource_manager_id,
            self._settings,
            None,  # no Spark worker: the program's Spark runs in local mode
            on_fatal,
            logs=TaskExecutorLogs(log_dir, resource_id, log_dir / JOB_MANAGER_LOG, context.location.bind_host),
        )
        self._workers[resource_id] = _Worker(rpc, task_executor)
        await rpc.start_endpoint(task_executor)
        log.info("started TaskExecutor %s in this process (RPC %s)", resource_id, rpc.address)
        return resource_id

    async def _end(self, resource_id: str, reason: str) -> None:
        """The TaskExecutor must end (``on_fatal``): stop it and report it, as a process that exited would be."""
        worker = self._workers.pop(resource_id, None)
        if worker is None:
            return
        await worker.rpc.stop()
        if not worker.released and self._handler is not None:
            termination = WorkerTermination("stopped", reason, f"the TaskExecutor in the JobManager's process stopped: {reason}")
            await self._handler.on_worker_terminated(resource_id, termination)

    async def release_resource(self, resource_id: str) -> None:
        worker = self._workers.pop(resource_id, None)
        if worker is None:
            return
        worker.released = True
        await worker.rpc.stop()

    async def release_all_workers(self) -> None:
        await asyncio.gather(*(self.release_resource(r) for r in list(self._workers)))

    async def close(self) -> None:
        """Stop any TaskExecutor still running: its RpcService's port must not outlive the cluster."""
        await self.release_all_workers()

    async def deregister_application(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        log.info("application finished with %s%s", status.name, f": {diagnostics}" if diagnostics else "")


def create_driver(config: Configuration, rest_url: str) -> MiniClusterDriver:
    """The MiniCluster's driver; its TaskExecutors' timeouts from ``config`` (``taskmanager.registration.timeout``,
    ``heartbeat.timeout``, ``pekko.ask.timeout``); it needs no address: its TaskExecutors share this process."""
    settings = TaskExecutorSettings(
        registration_timeout=config.get(options.TASK_MANAGER_REGISTRATION_TIMEOUT),
        heartbeat_timeout=config.get(options.HEARTBEAT_TIMEOUT),
    )
    return MiniClusterDriver(settings, config.get(options.RPC_ASK_TIMEOUT))
