"""Recording doubles of the ResourceManagerDriver SPI's two sides and of a TaskExecutor, written once for every test.

:class:`RecordingEventHandler` stands in for the ResourceManager when a real
driver is tested (what did the driver report?); :class:`RecordingDriver` stands
in for a backend when the ResourceManager is tested (what did it ask for?);
:class:`TaskExecutorStandIn` is the RPC endpoint of a TaskExecutor process
without its Spark worker.
Neither replaces a real backend in an end-to-end test: they are for the
bookkeeping and the races a real backend cannot produce on demand.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jobcluster.config.configuration import Configuration
from jobcluster.errors import ResourceManagerError
from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.rpc.endpoint import RpcEndpoint, rpc
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.resourcemanager.driver import (
    ResourceEventHandler,
    ResourceManagerDriver,
    TaskExecutorLaunchContext,
)
from jobcluster.runtime.resourcemanager.resource_manager import ResourceManager, ResourceManagerSettings
from jobcluster.runtime.resourcemanager.worker_termination import WorkerTermination, exit_code_meaning
from jobcluster.runtime.taskexecutor.gateway import TASK_EXECUTOR_ENDPOINT
from jobcluster.runtime.taskexecutor.launch import TaskExecutorLaunchSettings, TaskExecutorLocation


def launch_context(directory: Path, cluster_id: str = "cluster", rm_address: str = "127.0.0.1:6123") -> TaskExecutorLaunchContext:
    """The launch context an entrypoint would give its driver, with ``directory`` as the JobManager's cluster and log directory."""
    return TaskExecutorLaunchContext(
        ["true"],
        TaskExecutorLaunchSettings(cluster_id, rm_address, "rm-id"),
        "s3cr3t",
        TaskExecutorLocation(directory, directory, "127.0.0.1"),
    )


KILLED = WorkerTermination("exit code 137", exit_code_meaning(137), "process exited with code 137")
"""A worker killed by SIGKILL, as a driver reports it."""


class RecordingEventHandler:
    """The ResourceManager's side of the SPI: what the driver reported, in order; ``changed`` is set on each report."""

    def __init__(self) -> None:
        self.terminated: list[tuple[str, WorkerTermination]] = []
        self.warnings: list[tuple[str, str]] = []
        self.pending: list[tuple[str, str]] = []
        self.recovered: list[list[str]] = []
        self.errors: list[Exception] = []
        self.changed = asyncio.Event()

    async def on_worker_terminated(self, resource_id: str, termination: WorkerTermination) -> None:
        self.terminated.append((resource_id, termination))
        self.changed.set()

    async def on_worker_warning(self, resource_id: str, message: str) -> None:
        self.warnings.append((resource_id, message))
        self.changed.set()

    async def on_worker_pending(self, resource_id: str, reason: str) -> None:
        self.pending.append((resource_id, reason))
        self.changed.set()

    async def on_previous_attempt_workers_recovered(self, resource_ids: list[str]) -> None:
        self.recovered.append(resource_ids)
        self.changed.set()

    async def on_error(self, error: Exception) -> None:
        self.errors.append(error)
        self.changed.set()


class RecordingDriver(ResourceManagerDriver):
    """A backend that starts nothing: it records every call and hands out ResourceIDs ``worker-1``, ``worker-2``, ...

    ``refuse``: the next so many ``request_resource`` calls raise ResourceManagerError;
    ``recovered``: ResourceIDs reported at ``initialize`` as a previous attempt's workers.
    ``report_terminated(resource_id)`` plays the backend reporting that a worker ended.
    """

    def __init__(self, *, refuse: int = 0, recovered: list[str] | None = None) -> None:
        self.handler: ResourceEventHandler | None = None
        self.launch_context: TaskExecutorLaunchContext | None = None
        self.requested: list[TaskExecutorProcessSpec] = []
        self.started: list[str] = []
        self.released: list[str] = []
        self.released_all = 0
        self.deregistered: list[tuple[ApplicationStatus, str | None]] = []
        self.closed = 0
        self.refuse = refuse
        self._recovered = list(recovered or [])

    async def initialize(self, handler: ResourceEventHandler, launch_context: TaskExecutorLaunchContext) -> None:
        self.handler, self.launch_context = handler, launch_context
        if self._recovered:
            await handler.on_previous_attempt_workers_recovered(list(self._recovered))

    async def request_resource(self, spec: TaskExecutorProcessSpec) -> str:
        self.requested.append(spec)
        if self.refuse > 0:
            self.refuse -= 1
            raise ResourceManagerError("the backend refused the worker")
        resource_id = f"worker-{len(self.started) + 1}"
        self.started.append(resource_id)
        return resource_id

    async def release_resource(self, resource_id: str) -> None:
        self.released.append(resource_id)

    async def release_all_workers(self) -> None:
        self.released_all += 1

    async def deregister_application(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        self.deregistered.append((status, diagnostics))

    async def close(self) -> None:
        self.closed += 1

    async def report_terminated(self, resource_id: str, termination: WorkerTermination = KILLED) -> None:
        """The backend reports that ``resource_id`` ended (by default: exit code 137, SIGKILL)."""
        assert self.handler is not None, "driver not initialized"
        await self.handler.on_worker_terminated(resource_id, termination)

    async def report_warning(self, resource_id: str, message: str) -> None:
        """The backend warns of the live worker ``resource_id``."""
        assert self.handler is not None, "driver not initialized"
        await self.handler.on_worker_warning(resource_id, message)

    async def report_pending(self, resource_id: str, reason: str) -> None:
        """The backend cannot start the requested worker ``resource_id`` yet."""
        assert self.handler is not None, "driver not initialized"
        await self.handler.on_worker_pending(resource_id, reason)


class TaskExecutorStandIn(RpcEndpoint):
    """What the ResourceManager and the JobMaster call on a TaskExecutor, recorded; slot requests succeed."""

    def __init__(self) -> None:
        super().__init__(TASK_EXECUTOR_ENDPOINT)
        self.slot_requests: list[dict[str, Any]] = []
        self.freed: list[str] = []

    @rpc
    async def request_slot(self, **request: Any) -> None:
        self.slot_requests.append(request)

    @rpc
    async def heartbeat_from_resource_manager(self, resource_manager_id: str) -> dict[str, Any]:
        return {}

    @rpc
    async def heartbeat_from_job_manager(self, job_id: str) -> None:
        return None

    @rpc
    async def free_slot(self, allocation_id: str, cause: str) -> None:
        self.freed.append(allocation_id)

    @rpc
    async def request_metrics(self) -> dict[str, int]:
        return {}


#: The configuration of the recorded clusters: 1 GiB TaskExecutors of 2 slots.
CLUSTER_CONFIG = Configuration({"taskmanager.memory.process.size": "1g", "taskmanager.numberOfTaskSlots": "2"})


def resource_manager(
    service: RpcService,
    driver: ResourceManagerDriver,
    directory: Path,
    *,
    idle_timeout: float = 600.0,
    heartbeat_interval: float = 60.0,
    on_fatal_error: Callable[[Exception], None] = lambda error: None,
) -> ResourceManager:
    """A ResourceManager of :data:`CLUSTER_CONFIG` with fencing token ``rm-1`` on ``service``; heartbeats never time out."""
    spec = task_executor_process_spec_from_config(CLUSTER_CONFIG)
    settings = ResourceManagerSettings(heartbeat_interval, 600.0, idle_timeout, max_slots=None, slots_per_worker=spec.num_slots)
    return ResourceManager(
        service,
        driver,
        launch_context(directory),
        CLUSTER_CONFIG,
        spec.worker_resource_spec(),
        settings,
        on_fatal_error=on_fatal_error,
        fencing_token="rm-1",
    )


async def until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    """Wait until ``condition()`` holds; TimeoutError after ``seconds``."""
    async with asyncio.timeout(seconds):
        while not condition():  # noqa: ASYNC110 — a condition over several stand-ins has no one event to wait on
            await asyncio.sleep(0.02)
