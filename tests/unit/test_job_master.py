"""The JobMaster's state machine before and around its program: slots, timeouts, cancel, fail, lost TaskExecutors.

A real ResourceManager (with tests/support/fakes.py's RecordingDriver) and
the JobMaster share one RpcService on loopback; TaskExecutors are RPC stand-ins.
The job's Spark master never becomes ready here (``spark_master_ready`` is held
or fails), so no PySpark program runs: what a program's run does to the job
is covered end to end (tests/e2e).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from jobcluster.config.loader import load_configuration
from jobcluster.errors import SparkError
from jobcluster.jobgraph.job_status import JobStatus
from jobcluster.jobgraph.model import ExecutionConfig, JobGraph, JobVertex, ResourceProfileSpec, RestartStrategy, new_job_id
from jobcluster.memory.managed import ManagedMemoryConsumers
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.entrypoint.job_cluster_entrypoint import _fail_on_fatal_error, job_master_settings
from jobcluster.runtime.jobmaster import job_master as job_master_module
from jobcluster.runtime.jobmaster.job_master import JobMaster, JobMasterSettings
from jobcluster.runtime.jobmaster.job_result import JobResult
from jobcluster.runtime.messages import SlotOffer, dump
from jobcluster.runtime.resourcemanager.gateway import RESOURCE_MANAGER_ENDPOINT, ResourceManagerGateway
from jobcluster.spark.driver_agent.settings import EXIT_NOT_RESTARTABLE
from jobcluster.spark.processes import SparkLocalMode, SparkMasterAddress
from jobcluster.spark.sizing import spark_sizing_for_task_executor
from tests.support.fakes import RecordingDriver, TaskExecutorStandIn, until
from tests.support.fakes import resource_manager as resource_manager_with_recording

SECRET = "s3cr3t"
STANDALONE = SparkMasterAddress("spark://127.0.0.1:7077", "http://127.0.0.1:8080")


def job_graph(parallelism: int) -> JobGraph:
    vertex = JobVertex(id=new_job_id(), name="PySpark", program="wc.py", program_args=[], parallelism=parallelism, max_parallelism=128)
    profile = ResourceProfileSpec(cpu_cores=1.0, task_heap=1 << 20, task_off_heap=0, managed=0, network=0)
    return JobGraph(job_id=new_job_id(), job_name="wc", vertices=[vertex], slot_profile=profile)


@dataclass
class Job:
    job_master: JobMaster
    driver: RecordingDriver
    rpc: RpcService
    master_ready: asyncio.Future[None]
    results: list[JobResult] = field(default_factory=list)
    services: list[RpcService] = field(default_factory=list)

    async def task_executor_offers(self, resource_id: str, slots: int) -> list[str]:
        """A TaskExecutor ``resource_id`` connects to the JobMaster and offers ``slots`` slots; the accepted allocations."""
        service = RpcService("127.0.0.1", SECRET, ask_timeout=5.0)
        await service.start()
        await service.start_endpoint(TaskExecutorStandIn())
        self.services.append(service)
        await self.job_master.register_task_executor(resource_id, service.address, self.job_master.graph.job_id)
        offers = [dump(SlotOffer(allocation_id=f"{resource_id}-a{i}", slot_index=i)) for i in range(slots)]
        return await self.job_master.offer_slots(resource_id, offers)


@asynccontextmanager
async def running_job(
    tmp_path: Path,
    parallelism: int = 2,
    slot_request_timeout: float = 60.0,
    master: SparkMasterAddress = STANDALONE,
) -> AsyncIterator[Job]:
    service = RpcService("127.0.0.1", SECRET, ask_timeout=5.0)
    await service.start()
    driver = RecordingDriver()
    resource_manager = resource_manager_with_recording(service, driver, tmp_path)
    await service.start_endpoint(resource_manager)
    master_ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    results: list[JobResult] = []

    async def on_terminal(result: JobResult) -> None:
        results.append(result)

    job_master = JobMaster(
        service,
        job_graph(parallelism),
        tmp_path,
        tmp_path,
        ResourceManagerGateway(service, service.address, RESOURCE_MANAGER_ENDPOINT, "rm-1"),
        master,
        lambda: asyncio.shield(master_ready),
        "127.0.0.1",
        {},
        JobMasterSettings(heartbeat_interval=60.0, heartbeat_timeout=600.0, slot_request_timeout=slot_request_timeout),
        on_terminal,
    )
    await service.start_endpoint(job_master)
    job = Job(job_master, driver, service, master_ready, results)
    try:
        yield job
    finally:
        master_ready.cancel()
        await service.stop()
        for other in job.services:
            await other.stop()


def test_the_job_declares_its_slots_at_start_and_runs_once_the_pool_holds_them(tmp_path):
    async def scenario() -> None:
        async with running_job(tmp_path, parallelism=3) as job:
            assert job.job_master.status is JobStatus.CREATED
            await until(lambda: len(job.driver.started) == 2)  # 3 slots of 2 per TaskExecutor
            assert await job.task_executor_offers("tm-1", 2) == ["tm-1-a0", "tm-1-a1"]
            assert job.job_master.status is JobStatus.CREATED
            assert await job.task_executor_offers("tm-2", 2) == ["tm-2-a0"], "the pool takes no slot beyond the 3 required"
            assert job.job_master.status is JobStatus.RUNNING
            assert list(job.job_master.status_timestamps) == ["INITIALIZING", "CREATED", "RUNNING"]

    asyncio.run(scenario())


def test_slots_that_do_not_arrive_name_what_the_platform_said_of_the_workers_that_could_not_start(tmp_path):
    async def scenario() -> None:
        async with running_job(tmp_path, parallelism=4, slot_request_timeout=1.0) as job:
            await until(lambda: len(job.driver.started) == 2)
            reason = "the pod cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."
            await job.driver.report_pending("worker-2", reason)
            await until(lambda: bool(job.job_master.pending_task_executors))
            assert job.job_master.job_details()["pending-taskmanagers"] == [{"id": "worker-2", "reason": reason}]
            await until(lambda: bool(job.results))
            (result,) = job.results
            assert result.failure_cause and result.failure_cause.endswith(f"Workers that could not start: worker-2: {reason}")
            assert "See the TaskManager logs" not in result.failure_cause

    asyncio.run(scenario())


def test_slots_that_do_not_arrive_in_time_fail_the_job_and_withdraw_its_requirements(tmp_path):
    async def scenario() -> None:
        async with running_job(tmp_path, parallelism=4, slot_request_timeout=0.3) as job:
            await job.task_executor_offers("tm-1", 2)
            await until(lambda: bool(job.results))
            (result,) = job.results
            assert result.status is JobStatus.FAILED and result.program_exit_code is None
            assert "NoResourceAvailableException" in (result.failure_cause or "")
            assert "4 required slots" in (result.failure_cause or "") and "2 arrived" in (result.failure_cause or "")
            requested = len(job.driver.started)
            await job.task_executor_offers("tm-9", 2)  # a late TaskExecutor's slots are not taken
            assert job.job_master.slot_pool.size == 0
            assert len(job.driver.started) == requested

    asyncio.run(scenario())


class HeldProgram:
    """Stands in for the PySpark program (SparkApplication): records its start, runs until stopped."""

    started: ClassVar[list[HeldProgram]] = []

    def __init__(self, *args, **kwargs) -> None:
        self._done = asyncio.Event()
        self.process = self

    def running(self) -> bool:
        return not self._done.is_set()

    async def start(self) -> None:
        HeldProgram.started.append(self)

    async def wait(self) -> int:
        await self._done.wait()
        return -15

    async def stop(self) -> None:
        self._done.set()

    async def progress(self) -> None:
        return None

    async def wait_for_driver_jvm(self) -> None:
        pass


def test_in_spark_local_mode_the_program_starts_only_once_the_pool_holds_the_slots(tmp_path, monkeypatch):
    # nothing in Spark's local mode holds the driver until the job's slots are there: the JobMaster does
    monkeypatch.setattr(job_master_module, "SparkApplication", HeldProgram)
    HeldProgram.started.clear()

    async def scenario() -> None:
        async with running_job(tmp_path, parallelism=2, master=SparkLocalMode(2).address) as job:
            job.master_ready.set_result(None)
            await asyncio.sleep(0.3)
            assert HeldProgram.started == [] and job.job_master.status is JobStatus.CREATED
            await job.task_executor_offers("tm-1", 2)
            await until(lambda: len(HeldProgram.started) == 1)
            assert job.job_master.status is JobStatus.RUNNING
            await job.job_master.cancel()
            await until(lambda: bool(job.results))
            assert job.results[0].status is JobStatus.CANCELED

    asyncio.run(scenario())


def test_a_spark_master_that_cannot_start_fails_the_job(tmp_path):
    async def scenario() -> None:
        async with running_job(tmp_path) as job:
            job.master_ready.set_exception(SparkError("the Spark master exited with code 1"))
            await until(lambda: bool(job.results))
            (result,) = job.results
            assert result.status is JobStatus.FAILED
            assert result.failure_cause == "the job's Spark master did not start: the Spark master exited with code 1"

    asyncio.run(scenario())


def test_a_job_cancelled_before_its_program_runs_ends_canceled_once(tmp_path):
    async def scenario() -> None:
        async with running_job(tmp_path) as job:
            await job.task_executor_offers("tm-1", 2)
            await job.job_master.cancel()
            await job.job_master.cancel()
            await job.job_master.fail("too late")
            assert [r.status for r in job.results] == [JobStatus.CANCELED]
            assert job.job_master.slot_pool.size == 0, "the slots went back"

    asyncio.run(scenario())


def test_a_fatal_error_of_the_resource_manager_fails_the_job_with_its_cause(tmp_path):
    async def scenario() -> None:
        async with running_job(tmp_path) as job:
            fatal: asyncio.Future[Exception] = asyncio.get_running_loop().create_future()
            failing = asyncio.create_task(_fail_on_fatal_error(fatal, job.job_master))
            fatal.set_result(RuntimeError("the YARN heartbeat failed: connection refused"))
            await asyncio.wait_for(failing, 5.0)
            (result,) = job.results
            assert result.status is JobStatus.FAILED
            assert "the ResourceManager lost its backend: the YARN heartbeat failed" in (result.failure_cause or "")
            await job.job_master.cancel()
            assert len(job.results) == 1, "a terminal job stays as it ended"

    asyncio.run(scenario())


def test_a_lost_task_executor_gives_up_its_slots_and_is_named_in_the_details(tmp_path):
    async def scenario() -> None:
        async with running_job(tmp_path) as job:
            await job.task_executor_offers("tm-1", 2)
            assert job.job_master.status is JobStatus.RUNNING
            await job.job_master.disconnect_task_manager("tm-1", "OOMKilled (exit code 137)")
            assert job.job_master.slot_pool.size == 0
            assert job.job_master.lost_task_executors == [{"id": "tm-1", "cause": "OOMKilled (exit code 137)", "memory-kill": False}]
            assert await job.task_executor_offers("tm-2", 2) == ["tm-2-a0", "tm-2-a1"], "the replacement's slots are taken"

    asyncio.run(scenario())


def test_the_job_masters_settings_carry_what_a_pyspark_workers_memory_error_means(monkeypatch):
    monkeypatch.delenv("JOBCLUSTER_CONF_DIR", raising=False)
    config = load_configuration()
    sizing = spark_sizing_for_task_executor(task_executor_process_spec_from_config(config), ManagedMemoryConsumers.from_config(config))
    hint = job_master_settings(config, sizing.pyspark).pyspark_memory_error_hint
    assert hint is not None and hint == sizing.pyspark.memory_error_hint()
    assert "each may use 268 MiB" in hint and "taskmanager.memory.managed.consumer-weights" in hint
    assert job_master_settings(config).pyspark_memory_error_hint is None


def test_an_ended_worker_is_named_in_the_details_even_without_slots_and_a_memory_kill_is_marked(tmp_path):
    async def scenario() -> None:
        async with running_job(tmp_path) as job:
            await job.job_master.disconnect_task_manager("tm-0", "idle")  # neither slots nor ended: not a loss
            await job.job_master.disconnect_task_manager("tm-1", "worker terminated: exit code 1: ...", terminated=True)
            await job.task_executor_offers("tm-2", 2)
            oom = "worker terminated: OOMKilled, exit code 137: killed by the kernel ..."
            await job.job_master.disconnect_task_manager("tm-2", oom, terminated=True, memory_kill=True)
            assert job.job_master.job_details()["lost-taskmanagers"] == [
                {"id": "tm-1", "cause": "worker terminated: exit code 1: ...", "memory-kill": False},
                {"id": "tm-2", "cause": oom, "memory-kill": True},
            ]

    asyncio.run(scenario())


def test_a_failed_programs_cause_waits_for_the_report_of_a_task_executor_that_no_longer_answers(tmp_path, monkeypatch):
    monkeypatch.setattr(job_master_module, "LOST_REPORT_GRACE", 1.0)

    async def scenario() -> None:
        async with running_job(tmp_path, parallelism=4) as job:
            await job.task_executor_offers("tm-1", 2)
            await job.task_executor_offers("tm-2", 2)
            loop = asyncio.get_running_loop()
            started = loop.time()
            await job.job_master._await_lost_reports()
            assert loop.time() - started < 0.5, "both answer: nothing to wait for"

            await job.services[1].stop()  # tm-2's process is gone; the ResourceManager has not said so yet
            started = loop.time()
            await job.job_master._await_lost_reports()
            assert loop.time() - started >= 1.0, "it waited out the grace for tm-2's report"

            report = loop.call_later(
                0.3, lambda: asyncio.ensure_future(job.job_master.disconnect_task_manager("tm-2", "gone", terminated=True))
            )
            started = loop.time()
            await job.job_master._await_lost_reports()
            report.cancel()
            assert 0.25 <= loop.time() - started < 0.9, "it returned as soon as the report came"

    asyncio.run(scenario())


class EndingProgram(HeldProgram):
    """A program attempt that ends by itself with the next of ``exit_codes``."""

    exit_codes: ClassVar[list[int]] = []

    async def wait(self) -> int:
        return EndingProgram.exit_codes.pop(0) if EndingProgram.exit_codes else await super().wait()

    def failure_cause(self, exit_code: int, memory_error_hint: str | None = None) -> str:
        return f"the program exited with code {exit_code}"


def _ending_programs(monkeypatch, *codes: int) -> None:
    monkeypatch.setattr(job_master_module, "SparkApplication", EndingProgram)
    monkeypatch.setattr(job_master_module, "LOST_REPORT_GRACE", 0.0)
    HeldProgram.started.clear()
    EndingProgram.exit_codes = list(codes)


def test_a_program_that_ends_after_a_failed_stop_with_savepoint_is_restarted_whatever_the_strategy(tmp_path, monkeypatch):
    """Flink: a stop-with-savepoint that fails leaves the job running; it never ends FINISHED without a savepoint."""
    _ending_programs(monkeypatch, 0)

    async def scenario() -> None:
        async with running_job(tmp_path, parallelism=2, master=SparkLocalMode(2).address) as job:
            cause = "the stop-with-savepoint of job x failed after its streaming queries stopped: quota exceeded"
            job.job_master.checkpoints.failover_cause = cause  # as the coordinator sets it before the program goes on
            job.master_ready.set_result(None)
            await job.task_executor_offers("tm-1", 2)
            await until(lambda: len(HeldProgram.started) == 2)
            assert job.results == [] and job.job_master.status is JobStatus.RUNNING
            assert job.job_master.restarts == 0, "not counted against the restart strategy (none here)"
            assert job.job_master.failures[-1]["cause"] == cause
            await job.job_master.cancel()
            await until(lambda: bool(job.results))

    asyncio.run(scenario())


def test_a_program_refused_in_a_way_a_restart_cannot_change_is_not_restarted(tmp_path, monkeypatch):
    _ending_programs(monkeypatch, EXIT_NOT_RESTARTABLE)
    restarts = ExecutionConfig(restart_strategy=RestartStrategy(type="fixed-delay", attempts=3, delay_seconds=0.0))
    graph = job_graph(2).model_copy(update={"execution_config": restarts})
    monkeypatch.setattr(sys.modules[__name__], "job_graph", lambda parallelism: graph)

    async def scenario() -> None:
        async with running_job(tmp_path, parallelism=2, master=SparkLocalMode(2).address) as job:
            job.master_ready.set_result(None)
            await job.task_executor_offers("tm-1", 2)
            await until(lambda: bool(job.results))
            (result,) = job.results
            assert result.status is JobStatus.FAILED and result.program_exit_code == EXIT_NOT_RESTARTABLE
            assert len(HeldProgram.started) == 1 and job.job_master.restarts == 0

    asyncio.run(scenario())


def test_the_queries_of_a_program_that_ended_are_no_longer_shown_running(tmp_path, monkeypatch):
    """The agent is read every web.refresh-interval; a program that stops its queries and ends between two reads
    must not leave them RUNNING in the job's details (an attached run says each query stopped from them)."""
    _ending_programs(monkeypatch, 0)

    async def scenario() -> None:
        async with running_job(tmp_path, parallelism=2, master=SparkLocalMode(2).address) as job:
            job.job_master.checkpoints.queries = [{"name": "wc", "runId": "r1", "active": True}]  # as last read
            job.master_ready.set_result(None)
            await job.task_executor_offers("tm-1", 2)
            await until(lambda: bool(job.results))
            assert [q["active"] for q in job.job_master.checkpoints.queries] == [False]

    asyncio.run(scenario())
