"""The TaskExecutor: a worker process of the job cluster.

It registers at the ResourceManager (retrying until
``taskmanager.registration.timeout``), reports its slots, and answers the
ResourceManager's heartbeats. Meanwhile it starts its Spark worker (cores =
slots, memory from its process spec) as soon as the job's Spark master is
ALIVE (a per-job cluster knows its master from the start), so the worker's JVM
starts while the slots are being assigned. When the SlotManager assigns one of
its slots to a job, it connects to that job's JobMaster, makes sure the worker
runs and is registered at the job's Spark master, and only then offers the
slot: an offered slot is capacity Spark can use. If the ResourceManager stops sending heartbeats, the
TaskExecutor shuts down, so no worker outlives its cluster. It lists and hands out its log files
(log_files.py) when the ResourceManager asks for them, for the dashboard's TaskManager pages.

In a MiniCluster (``-t local``) the TaskExecutors are endpoints in the JobManager's process and start no
Spark worker (no ``spark_worker_factory``): the program runs in Spark's local mode, its driver's JVM runs
the tasks, so a slot is offered as soon as the TaskExecutor has connected to the JobMaster.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from jobcluster.errors import JobClusterError, RpcError
from jobcluster.heartbeat.manager import HeartbeatWatch
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.rpc.endpoint import RpcEndpoint, rpc
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.jobmaster.gateway import JOB_MASTER_ENDPOINT, JobMasterGateway
from jobcluster.runtime.messages import SlotID, SlotOffer, TaskExecutorRegistration
from jobcluster.runtime.resourcemanager.gateway import RESOURCE_MANAGER_ENDPOINT, ResourceManagerGateway
from jobcluster.runtime.taskexecutor.gateway import TASK_EXECUTOR_ENDPOINT
from jobcluster.runtime.taskexecutor.log_files import TaskExecutorLogs
from jobcluster.runtime.taskexecutor.task_slot_table import TaskSlotTable
from jobcluster.spark.processes import SparkMasterAddress, SparkWorker, wait_until_alive

log = logging.getLogger(__name__)

SparkWorkerFactory = Callable[[SparkMasterAddress], SparkWorker]


@dataclass(frozen=True)
class TaskExecutorSettings:
    """Seconds: registration_timeout [taskmanager.registration.timeout], heartbeat_timeout [heartbeat.timeout]."""

    registration_timeout: float
    heartbeat_timeout: float
    initial_registration_backoff: float = 0.1
    max_registration_backoff: float = 5.0


class TaskExecutor(RpcEndpoint):
    """One TaskExecutor; ``on_fatal`` is awaited when it must end (lost ResourceManager, failed registration);
    ``spark_worker_factory``: how it starts its Spark worker, None for none (a MiniCluster's);
    ``spark_master``: the job's Spark master, when known at start (its worker then starts right away);
    ``metrics``: its Spark executor's latest metrics, Flink's names (``spark/jvm_metrics.py``);
    ``logs``: its log files, None when it has none to show."""

    def __init__(
        self,
        rpc_service: RpcService,
        resource_id: str,
        process_spec: TaskExecutorProcessSpec,
        resource_manager_address: str,
        resource_manager_id: str,
        settings: TaskExecutorSettings,
        spark_worker_factory: SparkWorkerFactory | None,
        on_fatal: Callable[[str], Awaitable[None]],
        spark_master: SparkMasterAddress | None = None,
        metrics: Callable[[], dict[str, int]] = dict,
        logs: TaskExecutorLogs | None = None,
    ) -> None:
        super().__init__(TASK_EXECUTOR_ENDPOINT)
        self._metrics = metrics
        self._logs = logs
        self._spark_master = spark_master
        self._rpc = rpc_service
        self.resource_id = resource_id
        self.process_spec = process_spec
        self.settings = settings
        self.slot_table = TaskSlotTable(resource_id, process_spec.num_slots)
        self._rm = ResourceManagerGateway(rpc_service, resource_manager_address, RESOURCE_MANAGER_ENDPOINT, resource_manager_id)
        self._rm_watch = HeartbeatWatch("resourcemanager", settings.heartbeat_timeout, self._resource_manager_lost)
        self._spark_worker_factory = spark_worker_factory
        self._spark_worker: SparkWorker | None = None
        self._spark_worker_lock = asyncio.Lock()
        self._job_masters: dict[str, JobMasterGateway] = {}
        # one offer per job at a time: each allocated slot spawns an offer, and the first offers all slots allocated
        # by then; the others find theirs offered (Flink's TaskExecutor offers a job's allocated slots together)
        self._offer_locks: dict[str, asyncio.Lock] = {}
        self._on_fatal = on_fatal
        self.registered = asyncio.Event()

    async def on_start(self) -> None:
        self.spawn(self._register_at_resource_manager(), "registration")
        if self._spark_master is not None and self._spark_worker_factory is not None:
            self.spawn(self._start_spark_worker_early(self._spark_master), "spark-worker-start")

    async def on_stop(self) -> None:
        await self._rm_watch.stop()
        if self._spark_worker is not None:
            await self._spark_worker.stop()

    # ---- registration ------------------------------------------------------------------

    async def _register_at_resource_manager(self) -> None:
        registration = TaskExecutorRegistration(
            resource_id=self.resource_id,
            address=self._rpc.address,
            num_slots=self.process_spec.num_slots,
            process_spec={
                **self.process_spec.to_dict(),
                "total_flink": self.process_spec.total_flink,
                "total_process": self.process_spec.total_process,
            },
            pid=os.getpid(),
            host=socket.gethostname(),
            cpu_cores=os.cpu_count() or 0,
            physical_memory=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.registration_timeout
        backoff = self.settings.initial_registration_backoff
        while True:
            try:
                await self._rm.register_task_executor(registration, self.slot_table.slot_report())
                break
            except RpcError as exc:
                if loop.time() + backoff > deadline:
                    await self._on_fatal(
                        f"could not register at the ResourceManager within {self.settings.registration_timeout:.0f} s: {exc}"
                    )
                    return
                log.info("registration at the ResourceManager failed (%s); retrying in %.1f s", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.settings.max_registration_backoff)
        log.info("registered at the ResourceManager %s", self._rm.address)
        self._rm_watch.start()
        self.registered.set()

    async def _resource_manager_lost(self) -> None:
        await self._on_fatal("the ResourceManager stopped sending heartbeats")

    # ---- calls from the ResourceManager ----------------------------------------------

    @rpc
    async def heartbeat_from_resource_manager(self, resource_manager_id: str) -> dict[str, Any]:
        self._check_resource_manager(resource_manager_id)
        self._rm_watch.touch()
        return self.slot_table.slot_report().model_dump(mode="json")

    @rpc
    async def request_slot(
        self,
        slot_id: dict[str, Any],
        job_id: str,
        allocation_id: str,
        job_master_address: str,
        job_master_id: str,
        resource_manager_id: str,
    ) -> str:
        self._check_resource_manager(resource_manager_id)
        sid = SlotID.model_validate(slot_id)
        self.slot_table.allocate(sid.slot_number, job_id, allocation_id)
        log.info("slot %s allocated to job %s", sid, job_id)
        gateway = JobMasterGateway(self._rpc, job_master_address, JOB_MASTER_ENDPOINT, job_master_id)
        self.spawn(self._offer_slots(job_id, gateway), f"offer-{allocation_id}")
        return "ack"

    @rpc
    async def free_slot(self, allocation_id: str, cause: str) -> None:
        slot = self.slot_table.free(allocation_id)
        if slot is not None:
            log.info("slot %d freed: %s", slot.index, cause)
            await self._rm.notify_slot_available(SlotID(resource_id=self.resource_id, slot_number=slot.index), allocation_id)

    @rpc
    async def heartbeat_from_job_manager(self, job_id: str) -> None:
        if not self.slot_table.slots_of_job(job_id):
            raise JobClusterError(f"no slots of job {job_id} here")

    @rpc
    async def request_metrics(self) -> dict[str, int]:
        """Its Spark executor's JVM and managed memory metrics (Flink's ``Status.*`` names; bytes, counts, ms);
        empty while no executor reports."""
        return self._metrics()

    @rpc
    async def shutdown(self, cause: str) -> None:
        log.info("shutting down: %s", cause)
        self.spawn(self._on_fatal(cause), "shutdown")

    @rpc
    async def request_log_list(self) -> list[dict[str, Any]]:
        """Flink's LogInfo (``name``, ``size`` bytes, ``mtime`` ms) of each log file it serves (log_files.py)."""
        if self._logs is None:
            return []
        return await asyncio.to_thread(self._logs.log_list)

    @rpc
    async def request_log_file(self, name: str | None) -> dict[str, Any] | None:
        """The log file ``name`` of :meth:`request_log_list` (None: its own log) as ``{"text", "size", "truncated"}``
        (log_files.LogText), its end when large; None when it has no such file. An unreadable file fails the call."""
        if self._logs is None:
            return None
        text = await asyncio.to_thread(self._logs.read, name)
        return text.to_dict() if text is not None else None

    def _check_resource_manager(self, resource_manager_id: str) -> None:
        if resource_manager_id != self._rm.fencing_token:
            raise JobClusterError(f"call from ResourceManager {resource_manager_id}, but registered at {self._rm.fencing_token}")

    # ---- offering slots to the JobMaster -----------------------------------------------

    async def _offer_slots(self, job_id: str, job_master: JobMasterGateway) -> None:
        async with self._offer_locks.setdefault(job_id, asyncio.Lock()):
            await self._offer_allocated_slots(job_id, job_master)

    async def _offer_allocated_slots(self, job_id: str, job_master: JobMasterGateway) -> None:
        try:
            connection = await job_master.register_task_executor(self.resource_id, self._rpc.address, job_id)
            self._job_masters[job_id] = job_master
            if self._spark_worker_factory is not None:
                await self._ensure_spark_worker(SparkMasterAddress(connection["spark_master_url"], connection["spark_master_web_url"]))
            offers = [
                SlotOffer(allocation_id=s.allocation_id, slot_index=s.index)
                for s in self.slot_table.slots_of_job(job_id)
                if not s.offered and s.allocation_id is not None
            ]
            if not offers:
                return
            accepted = set(await job_master.offer_slots(self.resource_id, offers))
        except JobClusterError as exc:
            log.error("could not offer slots to the JobMaster of job %s: %s", job_id, exc)
            for slot in self.slot_table.slots_of_job(job_id):
                if not slot.offered and slot.allocation_id:
                    await self.free_slot(slot.allocation_id, f"offer failed: {exc}")
            return
        for slot in self.slot_table.slots_of_job(job_id):
            if slot.allocation_id in accepted:
                slot.offered = True
            elif slot.allocation_id and not slot.offered:
                await self.free_slot(slot.allocation_id, "offer rejected by the JobMaster")
        log.info("offered %d slot(s) to the JobMaster of job %s; %d accepted", len(offers), job_id, len(accepted))

    async def _ensure_spark_worker(self, master: SparkMasterAddress) -> None:
        assert self._spark_worker_factory is not None, "a TaskExecutor without a Spark worker starts none"
        async with self._spark_worker_lock:
            if self._spark_worker is not None and self._spark_worker.process.running():
                return
            if self._spark_worker is not None:
                raise JobClusterError(f"the Spark worker exited; see {self._spark_worker.process.log_file}")
            await wait_until_alive(master, self.settings.registration_timeout)
            self._spark_worker = self._spark_worker_factory(master)
            self.spawn(self._watch_spark_worker(self._spark_worker), "spark-worker-watch")
            await self._spark_worker.start()

    async def _start_spark_worker_early(self, master: SparkMasterAddress) -> None:
        """Start the worker before any slot is assigned; a failure here is retried (and reported) when a slot is offered."""
        try:
            await self._ensure_spark_worker(master)
        except JobClusterError as exc:
            log.warning("could not start the Spark worker ahead of the slot offers: %s", exc)

    async def _watch_spark_worker(self, worker: SparkWorker) -> None:
        # wait until the process exists before awaiting its exit
        await worker.process.started.wait()
        code = await worker.process.wait()
        if not self._stopped:
            await self._on_fatal(f"the Spark worker exited with code {code}; see {worker.process.log_file}")
