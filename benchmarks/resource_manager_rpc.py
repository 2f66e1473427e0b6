"""Benchmark: N TaskExecutors registering through the ResourceManager's RPC endpoint, with heartbeats.

    .venv/bin/python benchmarks/resource_manager_rpc.py [--task-executors 500 1000 2000] [--slots 4] [--heartbeat-interval 2]

For each size: the real ResourceManager (SlotManager, heartbeat managers) is
served by its own RpcService on loopback. A JobMaster stand-in shares that
service, as in the entrypoint, registers and declares N x S slots; the
ResourceManager asks its driver for N workers (the driver starts nothing, it
queues the resource ids); for each id a simulated TaskExecutor registers with
its SlotReport over HTTP (64 at a time) from a second RpcService, whose one
endpoint answers the ResourceManager's calls for all of them (``request_slot``,
``heartbeat_from_resource_manager``), checking the ResourceManagerId as a
TaskExecutor does. Timed: from the declaration until every slot's
``request_slot`` has arrived, then the first full heartbeat round that starts
after that (first to N-th heartbeat; the heartbeat manager sends one burst per
interval). Both sides share one event loop, so the stand-ins' work is in the
times too. Prints the numbers; nothing is asserted beyond the counts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the tests' recording driver

from jobcluster.config.configuration import Configuration
from jobcluster.errors import JobClusterError
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.rpc.endpoint import FencedRpcEndpoint, RpcEndpoint, rpc
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.jobmaster.gateway import JOB_MASTER_ENDPOINT
from jobcluster.runtime.messages import SlotID, SlotReport, SlotStatus, TaskExecutorRegistration, dump
from jobcluster.runtime.resourcemanager.gateway import RESOURCE_MANAGER_ENDPOINT, ResourceManagerGateway
from jobcluster.runtime.resourcemanager.resource_manager import ResourceManager, ResourceManagerSettings
from jobcluster.runtime.resourcemanager.slot_manager import SlotState
from jobcluster.runtime.taskexecutor.gateway import TASK_EXECUTOR_ENDPOINT
from tests.support.fakes import RecordingDriver, launch_context

HOST = "127.0.0.1"
JOB_ID = "job"
CONCURRENT_REGISTRATIONS = 64
ASK_TIMEOUT = 60.0  # pekko.ask.timeout; generous, so that load shows as time, not as failed calls
HEARTBEAT_TIMEOUT = 600.0  # no TaskExecutor is lost to a slow round
PHASE_TIMEOUT = 600.0


def _raise(error: Exception) -> None:
    raise error


class QueueingDriver(RecordingDriver):
    """The unit tests' recording driver, which also queues each requested worker for a simulated TaskExecutor to register."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: asyncio.Queue[str] = asyncio.Queue()

    async def request_resource(self, spec: TaskExecutorProcessSpec) -> str:
        resource_id = await super().request_resource(spec)
        self.queue.put_nowait(resource_id)
        return resource_id


class JobMasterStandIn(FencedRpcEndpoint):
    """The job's JobMaster: the ResourceManager only sends it heartbeats (slots are offered by the TaskExecutors)."""

    def __init__(self) -> None:
        super().__init__(JOB_MASTER_ENDPOINT)

    @rpc
    async def heartbeat_from_resource_manager(self, resource_manager_id: str) -> None:
        pass


class TaskExecutorsStandIn(RpcEndpoint):
    """Answers the ResourceManager's calls for all N simulated TaskExecutors, which share one RpcService (one address).

    Counts ``request_slot`` per TaskExecutor; groups heartbeat arrivals into rounds (a pause longer than
    ``round_gap`` starts a new one) and sets ``full_round`` when a round that began after ``measure_after``
    has reached all N.
    """

    def __init__(self, resource_manager_id: str, task_executors: int, slots: int, round_gap: float) -> None:
        super().__init__(TASK_EXECUTOR_ENDPOINT)
        self._resource_manager_id = resource_manager_id
        self._task_executors = task_executors
        self._expected_slots = task_executors * slots
        self._round_gap = round_gap
        self._report = dump(SlotReport(slots=[SlotStatus(slot_id=SlotID(resource_id="te", slot_number=i)) for i in range(slots)]))
        self.slots_requested: Counter[str] = Counter()
        self.all_slots_requested = asyncio.Event()
        self.rounds: list[list[float]] = []  # heartbeat arrival times (perf_counter), per round
        self.measure_after = float("inf")
        self.full_round = asyncio.Event()
        self.measured_round: list[float] = []

    def _check(self, resource_manager_id: str) -> None:
        if resource_manager_id != self._resource_manager_id:
            raise JobClusterError(f"call from ResourceManager {resource_manager_id}, not {self._resource_manager_id}")

    @rpc
    async def request_slot(self, slot_id: dict[str, Any], resource_manager_id: str, **allocation: Any) -> str:
        """The TaskExecutor's ``request_slot``; of the allocation (job, JobMaster, allocation id) only the count matters here."""
        self._check(resource_manager_id)
        self.slots_requested[SlotID.model_validate(slot_id).resource_id] += 1
        if self.slots_requested.total() == self._expected_slots:
            self.all_slots_requested.set()
        return "ack"

    @rpc
    async def heartbeat_from_resource_manager(self, resource_manager_id: str) -> dict[str, Any]:
        self._check(resource_manager_id)
        now = time.perf_counter()
        if not self.rounds or now - self.rounds[-1][-1] > self._round_gap:
            self.rounds.append([])
        current = self.rounds[-1]
        current.append(now)
        if current[0] > self.measure_after and len(current) == self._task_executors and not self.full_round.is_set():
            self.measured_round = current
            self.full_round.set()
        return self._report


async def one_size(task_executors: int, slots: int, heartbeat_interval: float) -> dict[str, float]:
    secret = uuid.uuid4().hex
    config = Configuration({"taskmanager.numberOfTaskSlots": str(slots), "taskmanager.memory.process.size": "4096m"})
    spec = task_executor_process_spec_from_config(config)
    settings = ResourceManagerSettings(heartbeat_interval, HEARTBEAT_TIMEOUT, idle_timeout=600.0, max_slots=None, slots_per_worker=slots)
    scratch = Path(tempfile.gettempdir())
    driver = QueueingDriver()
    rm_rpc, te_rpc = RpcService(HOST, secret, ASK_TIMEOUT), RpcService(HOST, secret, ASK_TIMEOUT)
    resource_manager = ResourceManager(
        rm_rpc, driver, launch_context(scratch, "bench"), config, spec.worker_resource_spec(), settings, on_fatal_error=_raise
    )
    stand_in = TaskExecutorsStandIn(resource_manager.fencing_token, task_executors, slots, round_gap=heartbeat_interval / 2)
    job_master = JobMasterStandIn()
    await rm_rpc.start()
    await te_rpc.start()
    try:
        await rm_rpc.start_endpoint(resource_manager)
        await rm_rpc.start_endpoint(job_master)
        await te_rpc.start_endpoint(stand_in)
        times = await _measure(resource_manager, rm_rpc, te_rpc, driver, stand_in, job_master, spec, task_executors, slots)
        _check_counts(resource_manager, driver, stand_in, task_executors, slots)
        return times
    finally:
        await te_rpc.stop()
        await rm_rpc.stop()


async def _measure(
    resource_manager: ResourceManager,
    rm_rpc: RpcService,
    te_rpc: RpcService,
    driver: RecordingDriver,
    stand_in: TaskExecutorsStandIn,
    job_master: JobMasterStandIn,
    spec: TaskExecutorProcessSpec,
    n: int,
    slots: int,
) -> dict[str, float]:
    token = resource_manager.fencing_token
    from_job_master = ResourceManagerGateway(rm_rpc, rm_rpc.address, RESOURCE_MANAGER_ENDPOINT, token)  # local, as in the entrypoint
    from_task_executors = ResourceManagerGateway(te_rpc, rm_rpc.address, RESOURCE_MANAGER_ENDPOINT, token)  # over HTTP
    await from_job_master.register_job_master(JOB_ID, rm_rpc.address, job_master.fencing_token)
    process_spec = {**spec.to_dict(), "total_flink": spec.total_flink, "total_process": spec.total_process}
    unclaimed = n

    async def registrar() -> None:
        """One of the concurrent registrations: registers the workers the driver was asked for, one after another."""
        nonlocal unclaimed
        while unclaimed > 0:
            unclaimed -= 1
            resource_id = await driver.queue.get()
            registration = TaskExecutorRegistration(
                resource_id=resource_id, address=te_rpc.address, num_slots=slots, process_spec=process_spec, pid=os.getpid(), host=HOST
            )
            report = SlotReport(slots=[SlotStatus(slot_id=SlotID(resource_id=resource_id, slot_number=i)) for i in range(slots)])
            await from_task_executors.register_task_executor(registration, report)

    async with asyncio.timeout(PHASE_TIMEOUT):
        started = time.perf_counter()
        await from_job_master.declare_required_resources(JOB_ID, n * slots)
        async with asyncio.TaskGroup() as registrations:
            for _ in range(min(n, CONCURRENT_REGISTRATIONS)):
                registrations.create_task(registrar())
        await stand_in.all_slots_requested.wait()
        allocated = time.perf_counter()
        stand_in.measure_after = allocated
        await stand_in.full_round.wait()
    heartbeats = stand_in.measured_round
    return {"allocate": allocated - started, "heartbeat_round": heartbeats[-1] - heartbeats[0]}


def _check_counts(resource_manager: ResourceManager, driver: RecordingDriver, stand_in: TaskExecutorsStandIn, n: int, slots: int) -> None:
    assert len(driver.started) == n, f"{len(driver.started)} workers requested for {n}"
    assert len(stand_in.slots_requested) == n and set(stand_in.slots_requested.values()) == {slots}
    assert resource_manager.slot_manager.registered_slots() == resource_manager.slot_manager.slots_of_job(JOB_ID) == n * slots
    assert all(s.state is SlotState.ALLOCATED for tm in resource_manager.slot_manager.task_managers.values() for s in tm.slots.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--task-executors", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--heartbeat-interval", type=float, default=2.0, help="seconds (heartbeat.interval; default there 10)")
    args = parser.parse_args()
    print(f"{'TaskExecutors':>13} {'slots':>6} {'register+allocate s':>19} {'heartbeat round s':>17} {'total s':>8} {'µs per TE':>9}")
    for n in args.task_executors:
        times = asyncio.run(one_size(n, args.slots, args.heartbeat_interval))
        total = times["allocate"] + times["heartbeat_round"]
        print(
            f"{n:>13} {n * args.slots:>6} {times['allocate']:>19.2f} {times['heartbeat_round']:>17.2f} "
            f"{total:>8.2f} {total / n * 1e6:>9.0f}"
        )


if __name__ == "__main__":
    main()
