"""The ResourceManager against a recording driver: worker requests, registrations, failures, idle release, fatal errors.

Its RPC is real (one RpcService on loopback hosts the ResourceManager and the
JobMaster's stand-in; each TaskExecutor's stand-in has a service of its own, as
a TaskExecutor process does); only the backend is replaced, by
tests/support/fakes.py's RecordingDriver, so that each event of a worker's life
can be played in any order. The drivers against real backends are
tests/integration/{k8s,hadoop}/test_*_driver.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.rpc.endpoint import FencedRpcEndpoint, rpc
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.jobmaster.gateway import JOB_MASTER_ENDPOINT
from jobcluster.runtime.messages import SlotID, SlotReport, SlotStatus, TaskExecutorRegistration, dump
from jobcluster.runtime.resourcemanager import resource_manager as rm_module
from jobcluster.runtime.resourcemanager.resource_manager import ResourceManager
from jobcluster.runtime.resourcemanager.worker_termination import MemoryKill, WorkerTermination
from tests.support.fakes import CLUSTER_CONFIG, KILLED, RecordingDriver, TaskExecutorStandIn, until
from tests.support.fakes import resource_manager as make_resource_manager

SECRET = "s3cr3t"
JOB = "a" * 32
SPEC = task_executor_process_spec_from_config(CLUSTER_CONFIG)


class JobMasterStandIn(FencedRpcEndpoint):
    """What the ResourceManager calls on a JobMaster, recorded."""

    def __init__(self, job_master_id: str) -> None:
        super().__init__(JOB_MASTER_ENDPOINT, job_master_id)
        self.lost: list[tuple[str, str]] = []
        self.terminated: list[str] = []  # of them, those whose worker ended
        self.memory_kills: list[str] = []  # of those, the ones killed for memory
        self.pending: list[tuple[str, str]] = []

    @rpc
    async def disconnect_task_manager(self, resource_id: str, cause: str, terminated: bool = False, memory_kill: bool = False) -> None:
        self.lost.append((resource_id, cause))
        if terminated:
            self.terminated.append(resource_id)
        if memory_kill:
            self.memory_kills.append(resource_id)

    @rpc
    async def worker_pending(self, resource_id: str, reason: str) -> None:
        self.pending.append((resource_id, reason))

    @rpc
    async def heartbeat_from_resource_manager(self, resource_manager_id: str) -> None:
        return None


class Cluster:
    """A started ResourceManager with a recording driver, a registered JobMaster stand-in, and its fatal errors."""

    def __init__(self, rpc_service: RpcService, driver: RecordingDriver, resource_manager: ResourceManager) -> None:
        self.rpc = rpc_service
        self.driver = driver
        self.rm = resource_manager
        self.job_master = JobMasterStandIn("jm-1")
        self.fatal: list[Exception] = []
        self.task_executors: dict[str, TaskExecutorStandIn] = {}
        self._services: list[RpcService] = []

    async def declare(self, slots: int) -> None:
        await self.rm.declare_required_resources(JOB, slots)
        await settle()

    async def register(self, resource_id: str, slots: int = 2) -> TaskExecutorStandIn:
        """A TaskExecutor process ``resource_id`` with ``slots`` free slots registers."""
        service = RpcService("127.0.0.1", SECRET, ask_timeout=5.0)
        await service.start()
        self._services.append(service)
        endpoint = TaskExecutorStandIn()
        await service.start_endpoint(endpoint)
        self.task_executors[resource_id] = endpoint
        registration = TaskExecutorRegistration(
            resource_id=resource_id, address=service.address, num_slots=slots, process_spec=SPEC.to_dict(), pid=1, host="127.0.0.1"
        )
        report = SlotReport(slots=[SlotStatus(slot_id=SlotID(resource_id=resource_id, slot_number=i)) for i in range(slots)])
        await self.rm.register_task_executor(dump(registration), dump(report))
        await settle()
        return endpoint

    async def overview(self) -> dict[str, Any]:
        return await self.rm.request_resource_overview()

    async def close(self) -> None:
        for service in self._services:
            await service.stop()


async def settle(rounds: int = 20) -> None:
    """Let the tasks the ResourceManager spawned (requests, allocations, notifications) run."""
    for _ in range(rounds):
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)


@asynccontextmanager
async def started(tmp_path: Path, driver: RecordingDriver | None = None, idle_timeout: float = 60.0) -> AsyncIterator[Cluster]:
    service = RpcService("127.0.0.1", SECRET, ask_timeout=5.0)
    await service.start()
    driver = driver or RecordingDriver()
    fatal: list[Exception] = []
    resource_manager = make_resource_manager(service, driver, tmp_path, idle_timeout=idle_timeout, on_fatal_error=fatal.append)
    cluster = Cluster(service, driver, resource_manager)
    cluster.fatal = fatal
    await service.start_endpoint(resource_manager)
    await service.start_endpoint(cluster.job_master)
    await resource_manager.register_job_master(JOB, service.address, "jm-1")
    try:
        yield cluster
    finally:
        await service.stop()
        await cluster.close()


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(scenario())


def test_requirements_become_worker_requests_of_the_configured_size_and_registrations_get_the_slots(tmp_path):
    async def scenario() -> None:
        async with started(tmp_path) as c:
            await c.declare(3)
            assert c.driver.started == ["worker-1", "worker-2"], "ceil(3 slots / 2 per worker)"
            assert {spec.total_process for spec in c.driver.requested} == {SPEC.total_process}
            assert (await c.overview())["pending-taskmanagers"] == 2

            first = await c.register("worker-1")
            await until(lambda: len(first.slot_requests) == 2)
            assert {r["job_id"] for r in first.slot_requests} == {JOB}
            assert {r["job_master_id"] for r in first.slot_requests} == {"jm-1"}
            assert (await c.overview())["pending-taskmanagers"] == 1
            second = await c.register("worker-2")
            await until(lambda: len(second.slot_requests) == 1)
            overview = await c.overview()
            assert overview["pending-taskmanagers"] == 0 and overview["taskmanagers"] == 2 and overview["slots-total"] == 4
            assert len(c.driver.started) == 2, "nothing more was requested"

    run(scenario)


def test_a_refused_request_is_made_again(tmp_path, monkeypatch):
    monkeypatch.setattr(rm_module, "WORKER_RETRY_DELAY", 0.0)

    async def scenario() -> None:
        async with started(tmp_path, RecordingDriver(refuse=2)) as c:
            await c.declare(2)
            await until(lambda: c.driver.started == ["worker-1"])
            assert len(c.driver.requested) == 3
            await settle()
            assert (await c.overview())["pending-taskmanagers"] == 1

    run(scenario)


def test_a_worker_that_ends_before_it_registers_is_replaced_and_its_replacement_says_why_it_ended(tmp_path):
    async def scenario() -> None:
        async with started(tmp_path) as c:
            await c.declare(2)
            await c.driver.report_terminated("worker-1")
            await until(lambda: c.driver.started == ["worker-1", "worker-2"])
            assert (await c.overview())["pending-taskmanagers"] == 1
            await until(lambda: bool(c.job_master.lost))
            assert c.job_master.lost == [("worker-1", f"worker terminated: {KILLED.summary}")], "told, though it held no slot"
            assert c.job_master.terminated == ["worker-1"] and c.job_master.memory_kills == []
            await c.register("worker-2")
            (info,) = await c.rm.request_task_manager_info()
            assert info["replaces"] == {"id": "worker-1", "cause": "exit code 137: " + KILLED.meaning}
            assert "killed by SIGKILL" in KILLED.meaning

    run(scenario)


def test_a_registered_worker_that_ends_is_reported_to_the_job_master_and_replaced(tmp_path):
    async def scenario() -> None:
        async with started(tmp_path) as c:
            await c.declare(2)
            await c.register("worker-1")
            assert "replaces" not in (await c.rm.request_task_manager_info())[0], "a first worker replaces none"
            await c.driver.report_terminated("worker-1")
            await until(lambda: len(c.driver.started) == 2 and bool(c.job_master.lost))
            ((lost, cause),) = c.job_master.lost
            assert lost == "worker-1" and cause == f"worker terminated: {KILLED.summary}"
            overview = await c.overview()
            assert overview["taskmanagers"] == 0 and overview["pending-taskmanagers"] == 1
            await c.register("worker-2")
            (info,) = await c.rm.request_task_manager_info()
            assert info["replaces"] == {"id": "worker-1", "cause": KILLED.summary}

    run(scenario)


def test_a_memory_kill_reaches_the_job_master_with_the_platforms_numbers_and_the_option_to_change(tmp_path):
    yarn_kill = WorkerTermination(
        "exit status -104 (KILLED_EXCEEDED_PMEM)",
        "killed by YARN for exceeding its physical memory limit",
        "Container container_1_0001_01_000002 was killed by YARN ... Dump of the process-tree ...",
        MemoryKill("Current usage: 1.2 GB of 1 GB physical memory used", excess_bytes=(200 << 20) + 1),
    )

    async def scenario() -> None:
        async with started(tmp_path) as c:
            await c.declare(2)
            await c.register("worker-1")
            await c.driver.report_terminated("worker-1", yarn_kill)
            await until(lambda: bool(c.job_master.lost))
            ((_, cause),) = c.job_master.lost
            assert c.job_master.memory_kills == ["worker-1"]
            assert cause.startswith(
                "worker terminated: exit status -104 (KILLED_EXCEEDED_PMEM): killed by YARN for exceeding its physical memory "
                "limit (Current usage: 1.2 GB of 1 GB physical memory used). The JVM overhead"
            )
            overhead = SPEC.jvm_overhead >> 20
            # the overhead and the container grown by the excess, rounded up to whole MiB
            assert f"raise taskmanager.memory.jvm-overhead.min to at least {overhead + 201}m" in cause
            assert f"raise taskmanager.memory.process.size by as much too (to at least {(SPEC.total_process >> 20) + 201}m)" in cause
            assert "Dump of the process-tree" not in cause, "YARN's whole diagnostics stay in the JobManager's log"

    run(scenario)


def test_a_drivers_warning_is_shown_with_its_task_manager(tmp_path):
    async def scenario() -> None:
        async with started(tmp_path) as c:
            await c.declare(2)
            await c.driver.report_warning("worker-1", "its processes use too much")  # before it registered: kept
            await c.register("worker-1")
            (info,) = await c.rm.request_task_manager_info()
            assert info["warnings"] == ["its processes use too much"]
            await c.driver.report_warning("worker-1", "again")
            (info,) = await c.rm.request_task_manager_info()
            assert info["warnings"] == ["its processes use too much", "again"]

    run(scenario)


def test_why_a_requested_worker_does_not_start_reaches_the_job_master_while_it_is_pending(tmp_path):
    async def scenario() -> None:
        async with started(tmp_path) as c:
            await c.declare(2)
            await c.driver.report_pending("worker-1", "the pod cannot be scheduled: 1 Insufficient cpu.")
            await until(lambda: bool(c.job_master.pending))
            assert c.job_master.pending == [("worker-1", "the pod cannot be scheduled: 1 Insufficient cpu.")]
            await c.register("worker-1")
            await c.driver.report_pending("worker-1", "said late, once it started")
            await c.driver.report_pending("worker-7", "not a worker of this ResourceManager")
            await asyncio.sleep(0.2)
            assert len(c.job_master.pending) == 1, "a started or unknown worker is no news to the JobMaster"

    run(scenario)


def test_workers_of_a_previous_attempt_cover_the_requirements_until_they_register(tmp_path):
    async def scenario() -> None:
        async with started(tmp_path, RecordingDriver(recovered=["old-1"])) as c:
            await c.declare(2)
            assert c.driver.requested == [], "the recovered worker brings the two slots"
            old = await c.register("old-1")
            await until(lambda: len(old.slot_requests) == 2)
            assert (await c.overview())["pending-taskmanagers"] == 0

    run(scenario)


def test_an_idle_worker_is_released_through_the_driver(tmp_path):
    async def scenario() -> None:
        async with started(tmp_path, idle_timeout=0.0) as c:
            await c.declare(2)
            await c.register("worker-1")
            await c.declare(0)  # the job gave its slots back: nothing is required
            for slot_number in range(2):
                request = c.task_executors["worker-1"].slot_requests[slot_number]
                await c.rm.notify_slot_available(request["slot_id"], request["allocation_id"])
            await until(lambda: c.driver.released == ["worker-1"])  # the idle check runs every second
            assert (await c.overview())["taskmanagers"] == 0

    run(scenario)


def test_a_fatal_driver_error_is_handed_on_once_and_no_worker_is_requested_after_it(tmp_path):
    async def scenario() -> None:
        async with started(tmp_path) as c:
            await c.driver.handler.on_error(RuntimeError("the YARN heartbeat failed"))
            await c.driver.handler.on_error(RuntimeError("and again"))
            assert [str(e) for e in c.fatal] == ["the YARN heartbeat failed"]
            await c.declare(2)
            assert c.driver.requested == []

    run(scenario)


def test_after_the_workers_are_released_none_is_requested_and_one_started_meanwhile_is_released(tmp_path):
    async def scenario() -> None:
        async with started(tmp_path) as c:
            gate = asyncio.Event()
            request = c.driver.request_resource

            async def slow_request(spec):
                await gate.wait()
                return await request(spec)

            c.driver.request_resource = slow_request  # type: ignore[method-assign]
            await c.declare(2)
            await c.rm.release_all_workers()
            gate.set()
            await until(lambda: c.driver.released == ["worker-1"])
            assert c.driver.released_all == 1
            await c.rm.declare_required_resources(JOB, 4)
            await settle()
            assert c.driver.started == ["worker-1"]

    run(scenario)


def test_deregistering_releases_the_workers_first_and_stopping_closes_the_driver(tmp_path):
    async def scenario() -> RecordingDriver:
        async with started(tmp_path) as c:
            await c.rm.deregister_application(ApplicationStatus.FAILED, "job FAILED: boom")
            assert c.driver.released_all == 1
            assert c.driver.deregistered == [(ApplicationStatus.FAILED, "job FAILED: boom")]
            assert c.driver.closed == 0
            return c.driver

    driver = asyncio.run(scenario())
    assert driver.closed == 1


@pytest.mark.parametrize("stale", ["other-rm", None])
def test_calls_with_a_stale_fencing_token_are_refused(tmp_path, stale):
    from jobcluster.errors import FencingTokenError
    from jobcluster.runtime.resourcemanager.gateway import RESOURCE_MANAGER_ENDPOINT, ResourceManagerGateway

    async def scenario() -> None:
        async with started(tmp_path) as c:
            gateway = ResourceManagerGateway(c.rpc, c.rpc.address, RESOURCE_MANAGER_ENDPOINT, stale)
            with pytest.raises(FencingTokenError):
                await gateway.declare_required_resources(JOB, 2)
            assert c.driver.requested == []

    run(scenario)
