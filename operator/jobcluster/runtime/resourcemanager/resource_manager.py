"""The active ResourceManager: registers JobMasters and TaskExecutors, owns the SlotManager.

"Active" means it starts and stops workers itself through a
:class:`~jobcluster.runtime.resourcemanager.driver.ResourceManagerDriver`;
which backend that driver talks to is none of its business. It is a fenced
endpoint: TaskExecutors and JobMasters must present its ResourceManagerId.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jobcluster.config.configuration import Configuration
from jobcluster.errors import JobClusterError, RpcError, UnknownTaskExecutorError
from jobcluster.heartbeat.manager import HeartbeatManager
from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.memory.size import format_memory_size
from jobcluster.memory.spec import TaskExecutorProcessSpec, WorkerResourceSpec
from jobcluster.memory.taskexecutor import process_spec_from_worker_spec
from jobcluster.rpc.endpoint import FencedRpcEndpoint, rpc
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.jobmaster.gateway import JOB_MASTER_ENDPOINT, JobMasterGateway
from jobcluster.runtime.messages import SlotID, SlotReport, TaskExecutorRegistration
from jobcluster.runtime.resourcemanager.driver import (
    ResourceManagerDriver,
    TaskExecutorLaunchContext,
)
from jobcluster.runtime.resourcemanager.gateway import RESOURCE_MANAGER_ENDPOINT
from jobcluster.runtime.resourcemanager.slot_manager import SlotManager
from jobcluster.runtime.resourcemanager.worker_termination import WorkerTermination
from jobcluster.runtime.taskexecutor.gateway import TaskExecutorGateway

log = logging.getLogger(__name__)

WORKER_RETRY_DELAY = 1.0  # seconds before a refused worker request is made again

FatalErrorHandler = Callable[[Exception], None]
"""Told once of an error the ResourceManager cannot recover from (Flink's ``FatalErrorHandler``)."""


@dataclass(frozen=True)
class ResourceManagerSettings:
    """Timing and sizing of the ResourceManager (seconds; Flink keys in brackets).

    heartbeat_interval/heartbeat_timeout [heartbeat.interval / heartbeat.timeout],
    idle_timeout [resourcemanager.taskmanager-timeout], max_slots
    [slotmanager.number-of-slots.max], slots_per_worker [taskmanager.numberOfTaskSlots].
    """

    heartbeat_interval: float
    heartbeat_timeout: float
    idle_timeout: float
    max_slots: int | None
    slots_per_worker: int


@dataclass
class _TaskExecutorConnection:
    registration: TaskExecutorRegistration
    gateway: TaskExecutorGateway
    registered_at: float


@dataclass
class _JobMasterConnection:
    job_id: str
    gateway: JobMasterGateway


@dataclass(frozen=True)
class _EndedWorker:
    """A worker that ended (not released), as its replacement names it: its ResourceID and why it ended."""

    resource_id: str
    why: str


class ResourceManager(FencedRpcEndpoint):
    """Flink's ActiveResourceManager with a pluggable driver.

    Workers are requested as ``worker_resource_spec`` (the task heap, task
    off-heap, network and managed memory and slots of one TaskExecutor); each
    request turns it into a TaskExecutorProcessSpec with the configured framework
    memory, metaspace and overhead, and the driver starts a container of exactly
    that size. Which workers are requested, pending or registered is the
    SlotManager's to count; this class turns its decisions into driver calls and
    the driver's events into SlotManager inputs.

    ``on_fatal_error`` is told of the first error the driver reports through
    ``on_error`` (the backend is lost: Flink's ``ActiveResourceManager.onError``);
    the caller ends the cluster.
    """

    def __init__(
        self,
        rpc_service: RpcService,
        driver: ResourceManagerDriver,
        launch_context: TaskExecutorLaunchContext,
        config: Configuration,
        worker_resource_spec: WorkerResourceSpec,
        settings: ResourceManagerSettings,
        on_fatal_error: FatalErrorHandler,
        fencing_token: str | None = None,
    ) -> None:
        super().__init__(RESOURCE_MANAGER_ENDPOINT, fencing_token)
        self._rpc = rpc_service
        self._driver = driver
        self._launch_context = launch_context
        self._config = config
        self.worker_resource_spec = worker_resource_spec
        self.settings = settings
        self.slot_manager = SlotManager(self, settings.slots_per_worker, settings.max_slots, settings.idle_timeout)
        self._task_executors: dict[str, _TaskExecutorConnection] = {}
        self._job_masters: dict[str, _JobMasterConnection] = {}
        self._te_heartbeats = HeartbeatManager(
            "resourcemanager", settings.heartbeat_interval, settings.heartbeat_timeout, self._task_executor_heartbeat_timeout
        )
        self._jm_heartbeats = HeartbeatManager(
            "resourcemanager", settings.heartbeat_interval, settings.heartbeat_timeout, self._job_master_heartbeat_timeout
        )
        self._on_fatal_error = on_fatal_error
        self.fatal_error: Exception | None = None
        self._closing = False  # the job is over: no more workers are requested
        #: Workers that ended and are not replaced yet, oldest first: the next worker started replaces the first.
        self._awaiting_replacement: deque[_EndedWorker] = deque()
        #: Live workers that replace an ended one → that one (shown with the TaskManager: ``replaces``).
        self._replacements: dict[str, _EndedWorker] = {}
        #: What the driver warned of about live workers (``on_worker_warning``), per ResourceID, in order.
        self._warnings: dict[str, list[str]] = {}

    async def on_start(self) -> None:
        await self._driver.initialize(self, self._launch_context)
        self._te_heartbeats.start()
        self._jm_heartbeats.start()
        self.spawn(self._check_idle_loop(), "idle-check")

    async def on_stop(self) -> None:
        await self._te_heartbeats.stop()
        await self._jm_heartbeats.stop()
        await self._driver.close()

    async def release_all_workers(self) -> None:
        """Stop every TaskExecutor and request none again (the job is over; the application stays registered)."""
        self._closing = True
        await self._driver.release_all_workers()

    async def record_job_result(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        """The job has ended: let the backend record its result (see ResourceManagerDriver.record_job_result)."""
        await self._driver.record_job_result(status, diagnostics)

    async def deregister_application(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        """Release every worker and tell the backend how the application ended."""
        await self.release_all_workers()
        await self._driver.deregister_application(status, diagnostics)

    # ---- JobMaster side --------------------------------------------------------------

    @rpc
    async def register_job_master(self, job_id: str, address: str, job_master_id: str) -> dict[str, Any]:
        gateway = JobMasterGateway(self._rpc, address, JOB_MASTER_ENDPOINT, job_master_id)
        self._job_masters[job_id] = _JobMasterConnection(job_id, gateway)
        self._jm_heartbeats.monitor_target(job_id, lambda: gateway.heartbeat_from_resource_manager(self.fencing_token))
        log.info("JobMaster for job %s registered", job_id)
        return {"resource_manager_id": self.fencing_token}

    @rpc
    async def declare_required_resources(self, job_id: str, required_slots: int) -> None:
        if job_id not in self._job_masters:
            raise JobClusterError(f"job {job_id} has no registered JobMaster")
        log.info("job %s requires %d slots", job_id, required_slots)
        self.slot_manager.declare_resource_requirements(job_id, required_slots)

    async def _job_master_heartbeat_timeout(self, job_id: str) -> None:
        self._job_masters.pop(job_id, None)
        self.slot_manager.declare_resource_requirements(job_id, 0)

    # ---- TaskExecutor side -----------------------------------------------------------

    @rpc
    async def register_task_executor(self, registration: dict[str, Any], slot_report: dict[str, Any]) -> dict[str, Any]:
        reg = TaskExecutorRegistration.model_validate(registration)
        report = SlotReport.model_validate(slot_report)
        if reg.resource_id in self._task_executors:
            self._close_task_executor(reg.resource_id, "re-registration")
        gateway = TaskExecutorGateway(self._rpc, reg.address, reg.resource_id)
        self._task_executors[reg.resource_id] = _TaskExecutorConnection(reg, gateway, time.time())
        self._te_heartbeats.monitor_target(reg.resource_id, lambda: self._heartbeat_task_executor(reg.resource_id))
        total = reg.process_spec.get("total_process", 0)
        log.info(
            "TaskExecutor %s registered at %s: %d slots, process memory %s",
            reg.resource_id,
            reg.address,
            reg.num_slots,
            format_memory_size(total),
        )
        self.slot_manager.register_task_executor(reg.resource_id, report)
        return {"resource_manager_id": self.fencing_token}

    async def _heartbeat_task_executor(self, resource_id: str) -> None:
        conn = self._task_executors.get(resource_id)
        if conn is not None:
            await conn.gateway.heartbeat_from_resource_manager(self.fencing_token)

    @rpc
    async def notify_slot_available(self, slot_id: dict[str, Any], allocation_id: str) -> None:
        self.slot_manager.free_slot(SlotID.model_validate(slot_id), allocation_id)

    @rpc
    async def disconnect_task_manager(self, resource_id: str, cause: str) -> None:
        self._close_task_executor(resource_id, cause)

    async def _task_executor_heartbeat_timeout(self, resource_id: str) -> None:
        self._close_task_executor(resource_id, "heartbeat timeout")
        self.spawn(self._driver.release_resource(resource_id), f"release-{resource_id}")

    def _close_task_executor(self, resource_id: str, cause: str, termination: WorkerTermination | None = None) -> None:
        """Forget the registered TaskExecutor ``resource_id`` and tell the JobMasters (``termination``: its worker ended so)."""
        conn = self._task_executors.pop(resource_id, None)
        if conn is None:
            return
        log.warning("TaskExecutor %s disconnected: %s", resource_id, cause)
        self._te_heartbeats.unmonitor_target(resource_id)
        self._replacements.pop(resource_id, None)
        self._warnings.pop(resource_id, None)
        self.slot_manager.unregister_task_executor(resource_id)
        self._notify_job_masters_lost(resource_id, cause, termination)

    def _notify_job_masters_lost(self, resource_id: str, cause: str, termination: WorkerTermination | None) -> None:
        for jm in self._job_masters.values():
            self.spawn(self._notify_job_master_lost(jm, resource_id, cause, termination), f"notify-lost-{resource_id}")

    async def _notify_job_master_lost(
        self, jm: _JobMasterConnection, resource_id: str, cause: str, termination: WorkerTermination | None
    ) -> None:
        memory_kill = termination is not None and termination.memory_kill is not None
        try:
            await jm.gateway.disconnect_task_manager(resource_id, cause, terminated=termination is not None, memory_kill=memory_kill)
        except RpcError as exc:
            log.warning("could not tell JobMaster of job %s that %s is gone: %s", jm.job_id, resource_id, exc)

    # ---- SlotManagerActions ----------------------------------------------------------

    def allocate_slot(self, slot_id: SlotID, job_id: str, allocation_id: str) -> None:
        self.spawn(self._allocate_slot(slot_id, job_id, allocation_id), f"allocate-{slot_id}")

    async def _allocate_slot(self, slot_id: SlotID, job_id: str, allocation_id: str) -> None:
        conn = self._task_executors.get(slot_id.resource_id)
        jm = self._job_masters.get(job_id)
        try:
            if conn is None or jm is None:
                raise JobClusterError("TaskExecutor or JobMaster no longer registered")
            assert jm.gateway.fencing_token is not None  # a JobMaster registers with its JobMasterId
            await conn.gateway.request_slot(
                slot_id, job_id, allocation_id, jm.gateway.address, jm.gateway.fencing_token, self.fencing_token
            )
        except (TimeoutError, JobClusterError) as exc:
            log.warning("allocation of slot %s for job %s failed: %s", slot_id, job_id, exc)
            self.slot_manager.slot_allocation_failed(slot_id, allocation_id)
            return
        log.info("slot %s allocated to job %s (allocation %s)", slot_id, job_id, allocation_id)
        self.slot_manager.slot_allocated(slot_id, allocation_id)

    def request_new_worker(self) -> bool:
        if self._closing or self.fatal_error is not None:
            return False
        self.spawn(self._request_worker(), "request-worker")
        return True

    def _process_spec(self) -> TaskExecutorProcessSpec:
        """The sizes of every TaskExecutor this ResourceManager starts."""
        return process_spec_from_worker_spec(self._config, self.worker_resource_spec)

    async def _request_worker(self) -> None:
        spec = self._process_spec()
        try:
            resource_id = await self._driver.request_resource(spec)
        except JobClusterError as exc:
            log.error("could not start a TaskExecutor: %s", exc)
            await asyncio.sleep(WORKER_RETRY_DELAY)  # do not spin on a backend that keeps refusing
            self.slot_manager.worker_start_failed()
            return
        if self._closing:  # the job ended while the driver started it
            await self._driver.release_resource(resource_id)
            return
        self.slot_manager.worker_started(resource_id)
        log.info(
            "requested TaskExecutor %s: %d slots, process memory %s", resource_id, spec.num_slots, format_memory_size(spec.total_process)
        )
        if self._awaiting_replacement:
            replaced = self._replacements[resource_id] = self._awaiting_replacement.popleft()
            log.info("TaskExecutor %s replaces %s, which ended: %s", resource_id, replaced.resource_id, replaced.why)

    def release_task_executor(self, resource_id: str, reason: str) -> None:
        log.info("releasing TaskExecutor %s (%s)", resource_id, reason)
        self._close_task_executor(resource_id, reason)
        self.spawn(self._driver.release_resource(resource_id), f"release-{resource_id}")

    async def _check_idle_loop(self) -> None:
        while True:
            await asyncio.sleep(max(1.0, self.settings.idle_timeout / 4))
            self.slot_manager.check_idle_task_executors()

    # ---- ResourceEventHandler (driver events) ----------------------------------------

    async def on_worker_terminated(self, resource_id: str, termination: WorkerTermination) -> None:
        """The worker ended: the SlotManager learns it (and asks for a replacement if the job still needs one), the
        JobMasters are told why, with the option to change for a memory kill; its replacement names it."""
        cause = f"worker terminated: {termination.cause(self._process_spec())}"
        log.warning("%s: %s\n%s", resource_id, cause, termination.diagnostics)
        pending = self.slot_manager.is_pending(resource_id)
        if not pending and resource_id not in self._task_executors:
            return  # no longer this ResourceManager's (closed already): nothing to replace or report
        self._awaiting_replacement.append(_EndedWorker(resource_id, termination.summary))
        if pending:
            self._warnings.pop(resource_id, None)
            self._replacements.pop(resource_id, None)
            self._notify_job_masters_lost(resource_id, cause, termination)
            self.slot_manager.worker_start_failed(resource_id)
        else:
            self._close_task_executor(resource_id, cause, termination)

    async def on_worker_warning(self, resource_id: str, message: str) -> None:
        """Log the driver's warning and show it with the TaskManager (``warnings`` of ``/taskmanagers``)."""
        log.warning("TaskExecutor %s: %s", resource_id, message)
        self._warnings.setdefault(resource_id, []).append(message)

    async def on_worker_pending(self, resource_id: str, reason: str) -> None:
        """Log why the requested worker does not start, and tell the JobMasters (their job's ``pending-taskmanagers``,
        and the cause should their slots not arrive)."""
        if not self.slot_manager.is_pending(resource_id):
            return  # started, released or replaced since
        log.warning("TaskExecutor %s cannot start yet: %s", resource_id, reason)
        for jm in self._job_masters.values():
            self.spawn(self._notify_job_master_pending(jm, resource_id, reason), f"notify-pending-{resource_id}")

    async def _notify_job_master_pending(self, jm: _JobMasterConnection, resource_id: str, reason: str) -> None:
        try:
            await jm.gateway.worker_pending(resource_id, reason)
        except RpcError as exc:
            log.warning("could not tell JobMaster of job %s why %s does not start: %s", jm.job_id, resource_id, exc)

    async def on_previous_attempt_workers_recovered(self, resource_ids: list[str]) -> None:
        self.slot_manager.workers_recovered(resource_ids)

    async def on_error(self, error: Exception) -> None:
        if self.fatal_error is not None:
            log.error("another error of the ResourceManager driver: %s", error)
            return
        log.error("fatal error of the ResourceManager driver: %s", error)
        self.fatal_error = error
        self._on_fatal_error(error)

    # ---- views for REST ---------------------------------------------------------------

    @rpc
    async def request_task_manager_info(self) -> list[dict[str, Any]]:
        infos = []
        for resource_id, conn in self._task_executors.items():
            entry = self.slot_manager.task_managers.get(resource_id)
            free = sum(1 for s in entry.slots.values() if s.job_id is None) if entry else 0
            age = self._te_heartbeats.seconds_since_last_heartbeat(resource_id)
            info = task_manager_info(conn.registration, free, int((age or 0.0) * 1000), int(conn.registered_at * 1000))
            infos.append(info | task_manager_news(self._replacements.get(resource_id), self._warnings.get(resource_id, ())))
        return infos

    async def request_task_manager_metrics(self, resource_id: str) -> dict[str, int]:
        """The metrics of TaskExecutor ``resource_id`` (Flink's names; see TaskExecutor.request_metrics).

        Raises:
            UnknownTaskExecutorError: no such TaskExecutor is registered.
            RpcError: it did not answer within the ask timeout, or failed.
        """
        return await self._task_executor_gateway(resource_id).request_metrics()

    @rpc
    async def request_task_manager_log_list(self, resource_id: str) -> list[dict[str, Any]]:
        """The log files the TaskExecutor ``resource_id`` serves, as it lists them (Flink's ``requestTaskManagerLogList``).

        Raises:
            UnknownTaskExecutorError: no such TaskExecutor is registered.
            RpcError: it did not answer within the ask timeout, or failed.
        """
        return await self._task_executor_gateway(resource_id).request_log_list()

    @rpc
    async def request_task_manager_log_file(self, resource_id: str, name: str | None) -> dict[str, Any] | None:
        """The log file ``name`` (None: its own log) of the TaskExecutor ``resource_id`` as it hands it out, None when
        it has no such file (Flink's ``requestTaskManagerFileUploadByName``).

        Raises:
            UnknownTaskExecutorError: no such TaskExecutor is registered.
            RpcError: it did not answer within the ask timeout, or failed.
        """
        return await self._task_executor_gateway(resource_id).request_log_file(name)

    def _task_executor_gateway(self, resource_id: str) -> TaskExecutorGateway:
        conn = self._task_executors.get(resource_id)
        if conn is None:
            raise UnknownTaskExecutorError(f"TaskManager {resource_id} is not registered (it may have ended)")
        return conn.gateway

    @rpc
    async def request_resource_overview(self) -> dict[str, Any]:
        return {
            "taskmanagers": len(self._task_executors),
            "slots-total": self.slot_manager.registered_slots(),
            "slots-available": self.slot_manager.free_slots(),
            "pending-taskmanagers": self.slot_manager.pending_workers(),
        }


#: Flink's ``memoryConfiguration`` key for each TaskExecutorProcessSpec size (bytes).
_MEMORY_CONFIGURATION_KEYS = {
    "frameworkHeap": "framework_heap",
    "taskHeap": "task_heap",
    "frameworkOffHeap": "framework_off_heap",
    "taskOffHeap": "task_off_heap",
    "networkMemory": "network",
    "managedMemory": "managed",
    "jvmMetaspace": "jvm_metaspace",
    "jvmOverhead": "jvm_overhead",
    "totalFlinkMemory": "total_flink",
    "totalProcessMemory": "total_process",
}


def task_manager_news(replaced: _EndedWorker | None, warnings: Sequence[str]) -> dict[str, Any]:
    """jobcluster's additions to a TaskManager's ``/taskmanagers`` entry: ``replaces`` (``{"id", "cause"}``: the
    ended worker it replaces and why that one ended) and ``warnings`` (what its driver warned of), when there are."""
    news: dict[str, Any] = {}
    if replaced is not None:
        news["replaces"] = {"id": replaced.resource_id, "cause": replaced.why}
    if warnings:
        news["warnings"] = list(warnings)
    return news


def task_manager_info(
    registration: TaskExecutorRegistration, free_slots: int, since_heartbeat_ms: int, registered_at_ms: int
) -> dict[str, Any]:
    """One entry of Flink's ``/taskmanagers`` (TaskManagerInfo) for a registered TaskExecutor.

    Sizes in bytes, from the TaskExecutor's process spec; ``hardware`` is its
    machine's (``freeMemory``: Flink gives the JVM's free heap, here the task
    heap the Spark executor gets); ``timeSinceLastHeartbeat`` in ms, from the
    ResourceManager's heartbeat manager. ``host``, ``pid`` and ``registeredAt``
    (ms since the epoch) are jobcluster's additions.
    """
    spec = registration.process_spec
    memory = {key: int(spec.get(name, 0)) for key, name in _MEMORY_CONFIGURATION_KEYS.items()}
    return {
        "id": registration.resource_id,
        "path": registration.address,
        "host": registration.host,
        "pid": registration.pid,
        "timeSinceLastHeartbeat": since_heartbeat_ms,
        "slotsNumber": registration.num_slots,
        "freeSlots": free_slots,
        "hardware": {
            "cpuCores": registration.cpu_cores,
            "physicalMemory": registration.physical_memory,
            "freeMemory": memory["taskHeap"],
            "managedMemory": memory["managedMemory"],
        },
        "memoryConfiguration": memory,
        "registeredAt": registered_at_ms,
    }
