"""The JobMaster: runs one job on the slots it collects.

It registers at the ResourceManager and declares the slots the JobGraph
needs; TaskExecutors that were given those slots connect and offer them.
The PySpark program starts as soon as the job's Spark master is ALIVE, while
the slots are still arriving (the job is CREATED): Spark holds it until every
executor core of the job has registered (``spark.scheduler.minRegisteredResourcesRatio``
1.0, for at most ``slot.request.timeout``), so the driver's start-up overlaps
the TaskExecutors' instead of following it. In Spark's local mode (the
MiniCluster) nothing in Spark would hold it, so the program starts once the
SlotPool holds all slots (its TaskExecutors share the JobManager's process
and offer them at once). Once the SlotPool holds all slots, the job is RUNNING. A failed run is retried as the
restart strategy allows. Slots lost while running are declared again, so the
ResourceManager replaces the lost TaskExecutor while Spark carries on with
the executors it still has. A streaming program's queries, checkpoints and
savepoints are its CheckpointCoordinator's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobcluster.errors import JobClusterError, RpcError
from jobcluster.heartbeat.manager import HeartbeatManager
from jobcluster.jobgraph.job_status import JobStatus
from jobcluster.jobgraph.model import JobGraph
from jobcluster.rpc.endpoint import FencedRpcEndpoint, rpc
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.jobmaster.checkpoint_coordinator import CheckpointCoordinator
from jobcluster.runtime.jobmaster.driver_output import MAX_OUTPUT_CHUNK, DriverOutputFiles, last_executor_output
from jobcluster.runtime.jobmaster.gateway import JOB_MASTER_ENDPOINT
from jobcluster.runtime.jobmaster.job_result import JobResult
from jobcluster.runtime.jobmaster.memory_kills import with_memory_kills
from jobcluster.runtime.jobmaster.rolling_output import OutputChunk
from jobcluster.runtime.jobmaster.slot_pool import PooledSlot, SlotPool
from jobcluster.runtime.jobmaster.spark_application import SparkApplication, SparkProgress, SparkUi
from jobcluster.runtime.messages import SlotOffer
from jobcluster.runtime.resourcemanager.gateway import ResourceManagerGateway
from jobcluster.runtime.taskexecutor.gateway import TaskExecutorGateway
from jobcluster.spark.driver_agent.settings import EXIT_NOT_RESTARTABLE
from jobcluster.spark.processes import SparkMasterAddress

log = logging.getLogger(__name__)

#: Seconds a failed program's cause waits for the ResourceManager's report of a TaskExecutor found gone (its platform's
#: reason, e.g. a memory kill): YARN reports a completed container at the ApplicationMaster's next heartbeat
#: (yarn.heartbeat.interval, 5 s) after the NodeManager's (1 s by default); local and Kubernetes report at once.
LOST_REPORT_GRACE = 10.0
#: Seconds a TaskExecutor has to answer the probe of whether it is still there.
REACHABLE_TIMEOUT = 2.0


@dataclass(frozen=True)
class JobMasterSettings:
    """Seconds: heartbeats [heartbeat.interval / heartbeat.timeout]; slot_request_timeout [slot.request.timeout];
    executor_registration_timeout [jobcluster.executor.registration.timeout]; progress_interval between reads of
    Spark's monitoring API and of the driver agent [web.refresh-interval]. The program's output, per stream:
    output_max_file_size in bytes [jobcluster.driver.output.max-file-size], output_max_files, the live file
    included [jobcluster.driver.output.max-files], also to this process's own streams [jobcluster.driver.output.console];
    savepoints' default directory and timeout; what a task's
    MemoryError in a PySpark worker means, added to the job's cause (None: the workers have no limit; see
    ``PySparkMemory.memory_error_hint`` in spark/sizing.py)."""

    heartbeat_interval: float
    heartbeat_timeout: float
    slot_request_timeout: float
    executor_registration_timeout: float = 120.0
    progress_interval: float = 3.0
    savepoint_directory: str | None = None  # [execution.checkpointing.savepoint-dir]
    checkpointing_timeout: float = 600.0  # [execution.checkpointing.timeout], the longest a savepoint may take
    output_max_file_size: int = 10 << 20
    output_max_files: int = 10
    output_console: bool = False
    pyspark_memory_error_hint: str | None = None


def _now_ms() -> int:
    return int(time.time() * 1000)


class JobMaster(FencedRpcEndpoint):
    """JobMaster of ``graph``; its fencing token is the JobMasterId. ``on_terminal`` receives the JobResult.

    ``spark_master_ready()`` returns once the job's Spark master is ALIVE (raises SparkError if it cannot start).

    ``spark_env``: environment the driver gets on top of Spark's (SPARK_CONF_DIR with the Spark secret).
    """

    def __init__(
        self,
        rpc_service: RpcService,
        graph: JobGraph,
        staging_dir: Path,
        log_dir: Path,
        resource_manager: ResourceManagerGateway,
        spark_master: SparkMasterAddress,
        spark_master_ready: Callable[[], Awaitable[None]],
        host: str,
        sizing_conf: dict[str, str],
        settings: JobMasterSettings,
        on_terminal: Callable[[JobResult], Awaitable[None]],
        spark_env: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(JOB_MASTER_ENDPOINT)
        self._rpc = rpc_service
        self.graph = graph
        self._staging_dir = staging_dir
        self._log_dir = log_dir
        self._rm = resource_manager
        self.spark_master = spark_master
        self._spark_master_ready = spark_master_ready
        self._host = host
        self._sizing_conf = sizing_conf
        self.settings = settings
        self._on_terminal = on_terminal
        self._spark_env = dict(spark_env or {})  # the driver's Spark security environment (spark/security.py)
        self.slot_pool = SlotPool(graph.required_slots())
        self.status = JobStatus.INITIALIZING
        self.status_timestamps: dict[str, int] = {JobStatus.INITIALIZING.value: _now_ms()}
        self.start_time = _now_ms()
        self.restarts = 0
        self.progress: SparkProgress | None = None
        self._application: SparkApplication | None = None
        self._output = DriverOutputFiles(log_dir, settings.output_max_file_size, settings.output_max_files, settings.output_console)
        self._application_task: asyncio.Task[None] | None = None
        self._task_executors: dict[str, TaskExecutorGateway] = {}
        self._task_executor_released = asyncio.Event()  # set whenever one of them is released
        self._slots_or_result = asyncio.Event()  # set once the SlotPool held all slots, or the job ended
        self._heartbeats = HeartbeatManager(
            "jobmaster", settings.heartbeat_interval, settings.heartbeat_timeout, self._task_executor_timeout
        )
        self._cancel_requested = False
        self._no_executors_cause: str | None = None  # set when the application is stopped for having no executors
        #: TaskExecutors lost while they held slots of the job, and workers that ended (registered or not), in order:
        #: {"id", "cause", "memory-kill"} (the cause in the platform's words, e.g. a pod's OOMKilled, with the exit code or
        #: status and its meaning; "memory-kill": the platform killed it for its memory), shown in the job's details so
        #: that an attached client can tell its user.
        self.lost_task_executors: list[dict[str, Any]] = []
        #: Workers requested for the job that cannot start yet → the platform's reason (a pod no node fits), until they
        #: register or end: the job's ``pending-taskmanagers``, and the cause when its slots do not arrive.
        self.pending_task_executors: dict[str, str] = {}
        #: The job's failures, oldest first: {"timestamp" (ms), "cause"}: each one a restart recovered from, and the last
        #: one of a FAILED job (Flink's exception history).
        self.failures: list[dict[str, Any]] = []
        self.result: JobResult | None = None
        self.checkpoints = CheckpointCoordinator(graph, settings.savepoint_directory, settings.checkpointing_timeout)

    # ---- lifecycle --------------------------------------------------------------------

    async def on_start(self) -> None:
        await self.checkpoints.start()
        self._heartbeats.start()
        await self._rm.register_job_master(self.graph.job_id, self._rpc.address, self.fencing_token)
        self._set_status(JobStatus.CREATED)
        await self._rm.declare_required_resources(self.graph.job_id, self.slot_pool.required_slots)
        log.info("job %s (%s) waits for %d slots", self.graph.job_id, self.graph.job_name, self.slot_pool.required_slots)
        self.spawn(self._slot_request_timeout(), "slot-request-timeout")
        self._application_task = self.spawn(self._run_application(), "application")

    async def on_stop(self) -> None:
        await self._heartbeats.stop()
        if self._application is not None:
            await self._application.stop()
        await self.checkpoints.stop()
        self._output.close()

    def _set_status(self, status: JobStatus) -> None:
        if self.status is not status:
            log.info("job %s switched from %s to %s", self.graph.job_id, self.status.value, status.value)
            self.status = status
            self.status_timestamps[status.value] = _now_ms()

    async def _slot_request_timeout(self) -> None:
        await asyncio.sleep(self.settings.slot_request_timeout)
        if self.status is JobStatus.CREATED and not self.slot_pool.has_required_slots():
            await self._finish(
                JobStatus.FAILED,
                f"NoResourceAvailableException: could not acquire the {self.slot_pool.required_slots} required slots within "
                f"slot.request.timeout ({self.settings.slot_request_timeout:.0f} s); {self.slot_pool.size} arrived. "
                + _why_no_slots(self.pending_task_executors),
            )
            if self._application is not None:
                await self._application.stop()

    # ---- TaskExecutors and their slots --------------------------------------------------

    @rpc
    async def register_task_executor(self, resource_id: str, address: str, job_id: str) -> dict[str, Any]:
        if job_id != self.graph.job_id:
            raise JobClusterError(f"this JobMaster runs job {self.graph.job_id}, not {job_id}")
        gateway = TaskExecutorGateway(self._rpc, address, resource_id)
        self._task_executors[resource_id] = gateway
        self.pending_task_executors.pop(resource_id, None)
        if not self._heartbeats.is_monitoring(resource_id):
            self._heartbeats.monitor_target(resource_id, lambda: gateway.heartbeat_from_job_manager(job_id))
        return {"spark_master_url": self.spark_master.url, "spark_master_web_url": self.spark_master.web_url}

    @rpc
    async def offer_slots(self, resource_id: str, offers: list[dict[str, Any]]) -> list[str]:
        if resource_id not in self._task_executors or self.status.is_terminal:
            return []
        accepted = []
        for offer in (SlotOffer.model_validate(o) for o in offers):
            if self.slot_pool.offer(PooledSlot(offer.allocation_id, resource_id, offer.slot_index)):
                accepted.append(offer.allocation_id)
        log.info("SlotPool holds %d of %d slots", self.slot_pool.size, self.slot_pool.required_slots)
        if self.slot_pool.has_required_slots():
            self._slots_or_result.set()
            if self.status is JobStatus.CREATED:
                self._set_status(JobStatus.RUNNING)
        return accepted

    @rpc
    async def disconnect_task_manager(self, resource_id: str, cause: str, terminated: bool = False, memory_kill: bool = False) -> None:
        """The TaskExecutor is gone (see JobMasterGateway.disconnect_task_manager)."""
        self._release_task_executor(resource_id, cause, terminated=terminated, memory_kill=memory_kill)

    @rpc
    async def worker_pending(self, resource_id: str, reason: str) -> None:
        """The worker ``resource_id`` cannot start yet (see JobMasterGateway.worker_pending)."""
        if resource_id not in self._task_executors:
            self.pending_task_executors[resource_id] = reason

    @rpc
    async def heartbeat_from_resource_manager(self, resource_manager_id: str) -> None:
        if resource_manager_id != self._rm.fencing_token:
            raise JobClusterError("heartbeat from an unknown ResourceManager")

    async def _task_executor_timeout(self, resource_id: str) -> None:
        self._release_task_executor(resource_id, "heartbeat timeout")
        try:
            await self._rm.disconnect_task_manager(resource_id, "JobMaster lost its heartbeat")
        except RpcError as exc:
            log.warning("could not tell the ResourceManager about %s: %s", resource_id, exc)

    def _release_task_executor(self, resource_id: str, cause: str, *, terminated: bool = False, memory_kill: bool = False) -> None:
        """Give up the slots of ``resource_id``; record it as lost when it held some or its worker ended (``terminated``)."""
        self._task_executors.pop(resource_id, None)
        self.pending_task_executors.pop(resource_id, None)
        self._task_executor_released.set()
        self._heartbeats.unmonitor_target(resource_id)
        lost = self.slot_pool.release_task_executor(resource_id)
        if lost:
            log.warning("lost %d slot(s) of TaskExecutor %s (%s); the ResourceManager will replace them", len(lost), resource_id, cause)
        if lost or terminated:
            self.lost_task_executors.append({"id": resource_id, "cause": cause, "memory-kill": memory_kill})

    # ---- the program -------------------------------------------------------------------

    async def _run_application(self) -> None:
        strategy = self.graph.execution_config.restart_strategy
        try:
            await self._spark_master_ready()
        except JobClusterError as exc:
            await self._finish(JobStatus.FAILED, f"the job's Spark master did not start: {exc}")
            return
        if self.spark_master.local_mode:  # nothing in Spark waits for the slots: the program starts once they are held
            await self._slots_or_result.wait()
        while not self._cancel_requested and self.result is None:
            lost_before = len(self.lost_task_executors)  # the TaskExecutors lost while this attempt runs follow
            agent_settings, agent_secret = self.checkpoints.next_attempt()
            self._application = SparkApplication(
                self.graph,
                self._staging_dir,
                self.spark_master,
                self._host,
                self._log_dir,
                self._output,
                self._sizing_conf,
                self.restarts + 1,
                agent_settings,
                agent_secret,
                env=self._spark_env,
                resources_wait=self.settings.slot_request_timeout,
            )
            self._set_status(JobStatus.RUNNING if self.slot_pool.has_required_slots() else JobStatus.CREATED)
            try:
                await self._application.start()
            except OSError as exc:
                await self._finish(JobStatus.FAILED, f"the PySpark program could not be started: {exc}")
                return
            poller = self.spawn(self._follow_progress(self._application), "progress")
            code = await self._application.wait()
            poller.cancel()
            await asyncio.gather(poller, return_exceptions=True)
            self.checkpoints.program_ended()
            if self.result is not None:  # ended meanwhile (no slots in time, cancelled): the program was stopped
                return
            failover = self.checkpoints.take_failover_cause()
            if code == 0 and not self._cancel_requested and failover is None:
                # the result is in: the driver JVM's own exit (shutdown hooks) overlaps the cluster's shutdown (on_stop)
                await self._finish(JobStatus.FINISHED, None, program_exit_code=0)
                return
            await self._application.wait_for_driver_jvm()
            if self._cancel_requested:
                break
            stopped_by_us = self._no_executors_cause is not None
            await self._await_lost_reports()
            cause = self._no_executors_cause or self._application.failure_cause(code, self.settings.pyspark_memory_error_hint)
            cause = with_memory_kills(cause, self.lost_task_executors[lost_before:])
            self._no_executors_cause = None
            if failover is not None:  # Flink's failover after a failed stop-with-savepoint: the job runs on, not counted
                self.failures.append({"timestamp": _now_ms(), "cause": failover})
                log.warning("restarting the program from its queries' checkpoints: %s", failover)
                self._set_status(JobStatus.RESTARTING)
                continue
            self.failures.append({"timestamp": _now_ms(), "cause": cause})
            # a job stopped with a savepoint is over: what it does after its queries stopped is not restarted; nor is a
            # program that failed in a way a restart cannot change
            if (
                strategy.type != "fixed-delay"
                or self.restarts >= strategy.attempts
                or self.checkpoints.stopped_with_savepoint
                or code == EXIT_NOT_RESTARTABLE
            ):
                # a program the JobMaster stopped did not choose its exit code: the failure is the cluster's
                await self._finish(JobStatus.FAILED, cause, program_exit_code=None if stopped_by_us else code)
                return
            self.restarts += 1
            log.warning(
                "job failed (%s); restart %d of %d in %.1f s",
                cause.splitlines()[0],
                self.restarts,
                strategy.attempts,
                strategy.delay_seconds,
            )
            self._set_status(JobStatus.RESTARTING)
            await asyncio.sleep(strategy.delay_seconds)
        await self._finish(JobStatus.CANCELED, None)

    async def _await_lost_reports(self) -> None:
        """Wait until the ResourceManager has reported each of the job's TaskExecutors that no longer answers, at most
        LOST_REPORT_GRACE seconds: a program that failed because its executors' containers were killed usually exits
        before the platform's reason arrives, and the failure cause names it (``memory_kills.py``)."""
        gateways = dict(self._task_executors)
        answers = await asyncio.gather(*(self._answers(gateway) for gateway in gateways.values()))
        gone = [resource_id for resource_id, answered in zip(gateways, answers, strict=True) if not answered]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LOST_REPORT_GRACE
        while any(resource_id in self._task_executors for resource_id in gone) and loop.time() < deadline:
            self._task_executor_released.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._task_executor_released.wait(), deadline - loop.time())

    async def _answers(self, gateway: TaskExecutorGateway) -> bool:
        """Whether the TaskExecutor answers a call that asks nothing of its state (its metrics)."""
        try:
            await asyncio.wait_for(gateway.request_metrics(), REACHABLE_TIMEOUT)
        except (TimeoutError, RpcError):
            return False
        return True

    async def _follow_progress(self, application: SparkApplication) -> None:
        loop = asyncio.get_running_loop()
        without_executors_since = loop.time()
        while True:
            await self.checkpoints.follow_queries()
            progress = await application.progress()
            if progress is None or progress.executors > 0 or not self.slot_pool.has_required_slots():
                # no SparkContext (not yet, or no longer), executors registered, or slots still to come (their
                # own timeout applies): nothing is waiting for executors that could have come
                without_executors_since = loop.time()
            elif loop.time() - without_executors_since > self.settings.executor_registration_timeout:
                await self._stop_without_executors(application, progress)
                return
            if progress is not None and progress != self.progress:
                self.progress = progress
                log.info(
                    "Spark %s: %d/%d jobs, %d/%d tasks done, %d executors",
                    progress.app_id,
                    progress.jobs_completed,
                    progress.jobs_total,
                    progress.tasks_completed,
                    progress.tasks_total,
                    progress.executors,
                )
            await asyncio.sleep(self.settings.progress_interval)

    async def _stop_without_executors(self, application: SparkApplication, progress: SparkProgress) -> None:
        """The application holds its slots but Spark started no executor within the bound: stop it with the cause."""
        executor_log = await asyncio.to_thread(last_executor_output, self._log_dir, progress.app_id)
        self._no_executors_cause = (
            f"NoResourceAvailableException: the Spark application {progress.app_id} got no executor within "
            f"jobcluster.executor.registration.timeout ({self.settings.executor_registration_timeout:.0f} s), although the job "
            f"holds its {self.slot_pool.size} slot(s): Spark's workers could not start an executor that registers with the driver "
            "(e.g. executor JVM options that keep it from starting, or executor resources no worker offers)."
            + (
                f"\nThe last executor's output ({executor_log[0]}):\n{executor_log[1]}"
                if executor_log
                else f"\nSee the worker logs in {self._log_dir}."
            )
        )
        log.error("%s", self._no_executors_cause)
        await application.stop()

    def _max_parallelism(self) -> int:
        """Flink's max parallelism (the key groups state is split into): a streaming job's state partitions, which its
        checkpoints fix (``statePartitions`` of its queries), else ``pipeline.max-parallelism``."""
        partitions = [q["statePartitions"] for q in self.checkpoints.queries if q.get("statePartitions")]
        return max(partitions) if partitions else self.graph.vertices[0].max_parallelism

    # ---- savepoints (the CheckpointCoordinator's) ---------------------------------------

    def trigger_savepoint(self, trigger_id: str, target_directory: str | None, stop: bool, drain: bool) -> None:
        """Start savepoint operation ``trigger_id`` (``stop``: stop-with-savepoint); see CheckpointCoordinator.trigger_savepoint."""
        self.checkpoints.trigger_savepoint(trigger_id, target_directory, stop, drain, lambda: self.status.value, self.spawn)

    async def dispose_savepoint(self, path: str) -> None:
        """Delete the savepoint at ``path`` through the running program; SavepointError when none runs or it is not one."""
        running = self._application is not None and self._application.process.running()
        await self.checkpoints.dispose_savepoint(path, running)

    async def cancel(self) -> None:
        """Cancel the job: stop the program (if it runs) and end as CANCELED."""
        if self.status.is_terminal or self._cancel_requested:
            return
        self._cancel_requested = True
        self._set_status(JobStatus.CANCELLING)
        if self._application is not None and self._application.process.running():
            await self._application.stop()  # _run_application then finishes as CANCELED
        else:  # no program runs (the master is still starting): _run_application sees the result and ends
            await self._finish(JobStatus.CANCELED, None)

    async def fail(self, cause: str) -> None:
        """End the job FAILED with ``cause`` whatever its program does (the cluster cannot go on; Flink's ``failJob``).

        The result is set first, so the program's exit (it is stopped) is not taken
        for a failure to restart from."""
        if self.status.is_terminal or self.result is not None:
            return
        log.error("job %s fails: %s", self.graph.job_id, cause)
        await self._finish(JobStatus.FAILED, cause)
        if self._application is not None and self._application.process.running():
            await self._application.stop()

    async def _finish(self, status: JobStatus, failure_cause: str | None, program_exit_code: int | None = None) -> None:
        if self.result is not None:
            return
        self._set_status(status)
        self._slots_or_result.set()
        self.result = JobResult(
            job_id=self.graph.job_id,
            job_name=self.graph.job_name,
            status=status,
            start_time=self.start_time,
            end_time=_now_ms(),
            failure_cause=failure_cause,
            program_exit_code=program_exit_code,
            restarts=self.restarts,
        )
        await self._release_slots()
        await self._on_terminal(self.result)

    async def _release_slots(self) -> None:
        try:
            await self._rm.declare_required_resources(self.graph.job_id, 0)
        except RpcError as exc:
            log.warning("could not withdraw the resource requirements: %s", exc)
        for slot in self.slot_pool.release_all():
            gateway = self._task_executors.get(slot.resource_id)
            if gateway is None:
                continue
            try:
                await gateway.free_slot(slot.allocation_id, f"job {self.status.value}")
            except RpcError as exc:
                log.warning("could not free slot %s: %s", slot.allocation_id, exc)

    # ---- views -------------------------------------------------------------------------

    async def driver_output(self, stream: str, offset: int) -> OutputChunk:
        """What the program wrote to ``stream`` (``stdout`` or ``stderr``) from logical byte ``offset``, over all attempts.

        At most MAX_OUTPUT_CHUNK bytes; empty when there is nothing more yet.
        When ``offset`` was rotated away, the chunk starts at the oldest byte
        kept: ``chunk.offset`` is where its data begins (see rolling_output).
        ValueError for an unknown stream or a negative offset.
        """
        return await asyncio.to_thread(self._output.stream(stream).read, offset, MAX_OUTPUT_CHUNK)

    def spark_ui(self) -> SparkUi | None:
        """The Spark UI of the program's running attempt; None while no program runs (not started yet, between restarts, ended)."""
        application = self._application
        if application is None or not application.process.running():
            return None
        return SparkUi(application.ui_url, application.app_id)

    def job_details(self) -> dict[str, Any]:
        """The job as jobcluster sees it: state, times, the one vertex, Spark's progress, the program's exit code.

        The REST endpoint shapes it into Flink's ``/jobs/{id}`` (rest/flink_bodies.py).
        """
        now = _now_ms()
        end = self.result.end_time if self.result else -1
        vertex = self.graph.vertices[0]
        progress = self.progress.to_dict() if self.progress else None
        return {
            "jid": self.graph.job_id,
            "name": self.graph.job_name,
            "state": self.status.value,
            "start-time": self.start_time,
            "end-time": end,
            "duration": (end if end > 0 else now) - self.start_time,
            "now": now,
            "timestamps": dict(self.status_timestamps),
            "restarts": self.restarts,
            "slots": {"required": self.slot_pool.required_slots, "held": self.slot_pool.size},
            "vertices": [
                {
                    "id": vertex.id,
                    "name": vertex.name,
                    "parallelism": vertex.parallelism,
                    "maxParallelism": self._max_parallelism(),
                    "slotSharingGroup": vertex.slot_sharing_group,
                    "status": self.status.value,
                    "spark": progress,
                }
            ],
            "spark": progress,
            "program-exit-code": self.result.program_exit_code if self.result else None,
            "lost-taskmanagers": list(self.lost_task_executors),
            "pending-taskmanagers": [{"id": rid, "reason": reason} for rid, reason in self.pending_task_executors.items()],
            "failures": list(self.failures),
            "restart-strategy": self.graph.execution_config.restart_strategy.model_dump(),
            "job-type": "STREAMING" if self.checkpoints.queries else "BATCH",
            "streaming": {"queries": list(self.checkpoints.queries)} if self.checkpoints.queries else None,
            "savepoints": self.checkpoints.savepoints.completed(),
            "restore": self.checkpoints.restore,
        }


def _why_no_slots(pending: dict[str, str]) -> str:
    """The end of the slot timeout's cause: what the platform said of the workers that did not start, else where to look."""
    if not pending:
        return "See the TaskManager logs for why workers did not start or register."
    return "Workers that could not start: " + "; ".join(f"{rid}: {reason}" for rid, reason in pending.items())
