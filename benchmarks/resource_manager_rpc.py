"""Benchmark: N TaskExecutors registering through the ResourceManager's RPC endpoint, with heartbeats.

    .venv/bin/python benchmarks/resource_manager_rpc.py [--task-executors 500 1000 2000] [--slots 4]

For each size: the real ResourceManager (with its SlotManager and heartbeat
managers) served by a real RpcService on loopback; a JobMaster registers and
declares N x S slots; the ResourceManager asks its driver for N workers (the
driver only records them); N TaskExecutors register through the RPC
endpoint (64 at a time), each with its SlotReport; the ResourceManager sends
``request_slot`` for every slot; then the length of one full round of
heartbeats (every TaskExecutor asked for its SlotReport, which the
ResourceManager does every ``heartbeat.interval``).  The TaskExecutors and
the JobMaster are stand-ins: one aiohttp server answers for all of them, each under its own address path, so
every call on both sides is a real HTTP request with the cluster secret and
fencing tokens.  Both sides share this process's one event loop, so the
times include the stand-ins' work too.  Prints the numbers; nothing is asserted
beyond the counts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))

from jobcluster.config.configuration import Configuration
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.rpc.service import SECRET_HEADER, RpcService
from jobcluster.runtime.messages import SlotID, SlotReport, SlotStatus, TaskExecutorRegistration
from jobcluster.runtime.resourcemanager.driver import (
    ApplicationStatus,
    ResourceEventHandler,
    ResourceManagerDriver,
    TaskExecutorLaunchContext,
)
from jobcluster.runtime.resourcemanager.gateway import RESOURCE_MANAGER_ENDPOINT, ResourceManagerGateway
from jobcluster.runtime.resourcemanager.resource_manager import ResourceManager, ResourceManagerSettings

HOST = "127.0.0.1"
HEARTBEAT_INTERVAL = 3.0  # seconds between heartbeat rounds (Flink's heartbeat.interval, default 10 s)
CONCURRENT_REGISTRATIONS = 64


class RecordingDriver(ResourceManagerDriver):
    """Starts nothing: hands out resource ids that the benchmark's TaskExecutors then register with."""

    def __init__(self) -> None:
        self.requested: asyncio.Queue[str] = asyncio.Queue()

    async def initialize(self, handler: ResourceEventHandler, launch_context: TaskExecutorLaunchContext) -> None:
        pass

    async def request_resource(self, spec: TaskExecutorProcessSpec) -> str:
        resource_id = f"te-{uuid.uuid4().hex[:12]}"
        self.requested.put_nowait(resource_id)
        return resource_id

    async def release_resource(self, resource_id: str) -> None:
        pass

    async def terminate(self) -> None:
        pass

    async def deregister_application(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        pass


class StandIns:
    """One aiohttp server answering for every TaskExecutor (``/te/<resource id>``) and the JobMaster (``/jm``)."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.reports: dict[str, dict[str, Any]] = {}
        self.slot_requests = 0
        self.all_slots_requested = asyncio.Event()
        self.expected_slots = 0
        self.heartbeats: list[float] = []  # when each heartbeat arrived (perf_counter)
        self.runner: web.AppRunner | None = None
        self.base = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/te/{resource_id}/rpc/{endpoint}/{method}", self._task_executor)
        app.router.add_post("/jm/rpc/{endpoint}/{method}", self._job_master)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, HOST, 0).start()
        self.base = f"http://{HOST}:{self.runner.addresses[0][1]}"

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get(SECRET_HEADER) == self.secret

    async def _task_executor(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"error": {"type": "fencing", "message": "wrong secret"}}, status=403)
        await request.json()
        resource_id, method = request.match_info["resource_id"], request.match_info["method"]
        if method == "request_slot":
            self.slot_requests += 1
            if self.slot_requests == self.expected_slots:
                self.all_slots_requested.set()
            return web.json_response({"result": "ok"})
        if method == "heartbeat_from_resource_manager":
            self.heartbeats.append(time.perf_counter())
            return web.json_response({"result": self.reports[resource_id]})
        return web.json_response({"result": None})

    async def _job_master(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"error": {"type": "fencing", "message": "wrong secret"}}, status=403)
        await request.json()
        return web.json_response({"result": None})


def registration(resource_id: str, address: str, slots: int, spec: TaskExecutorProcessSpec) -> TaskExecutorRegistration:
    return TaskExecutorRegistration(
        resource_id=resource_id, address=address, num_slots=slots, process_spec=spec.to_dict(), pid=os.getpid(), host=HOST
    )


async def one_size(task_executors: int, slots: int) -> dict[str, float]:
    secret = uuid.uuid4().hex
    config = Configuration({"taskmanager.numberOfTaskSlots": str(slots), "taskmanager.memory.process.size": "4096m"})
    spec = task_executor_process_spec_from_config(config)
    rm_rpc, client_rpc = RpcService(HOST, secret, 60.0), RpcService(HOST, secret, 60.0)
    stand_ins = StandIns(secret)
    stand_ins.expected_slots = task_executors * slots
    driver = RecordingDriver()
    with tempfile.TemporaryDirectory() as scratch:
        context = TaskExecutorLaunchContext("bench", [], {}, Path(scratch), Path(scratch))
        settings = ResourceManagerSettings(
            heartbeat_interval=HEARTBEAT_INTERVAL, heartbeat_timeout=300.0, idle_timeout=600.0, max_slots=None, slots_per_worker=slots
        )
        resource_manager = ResourceManager(rm_rpc, driver, context, config, spec.worker_resource_spec(), settings)
        await asyncio.gather(rm_rpc.start(), client_rpc.start(), stand_ins.start())
        try:
            await rm_rpc.start_endpoint(resource_manager)
            gateway = ResourceManagerGateway(client_rpc, rm_rpc.address, RESOURCE_MANAGER_ENDPOINT, resource_manager.fencing_token)
            return await _measure(gateway, driver, stand_ins, spec, task_executors, slots)
        finally:
            await asyncio.gather(rm_rpc.stop(), client_rpc.stop(), stand_ins.stop())


async def _measure(
    gateway: ResourceManagerGateway, driver: RecordingDriver, stand_ins: StandIns, spec: TaskExecutorProcessSpec, n: int, slots: int
) -> dict[str, float]:
    times: dict[str, float] = {}
    started = time.perf_counter()
    await gateway.register_job_master("job", f"{stand_ins.base}/jm", uuid.uuid4().hex)
    await gateway.declare_required_resources("job", n * slots)
    limit = asyncio.Semaphore(CONCURRENT_REGISTRATIONS)

    async def register(resource_id: str) -> None:
        report = SlotReport(slots=[SlotStatus(slot_id=SlotID(resource_id=resource_id, slot_number=i)) for i in range(slots)])
        stand_ins.reports[resource_id] = report.model_dump(mode="json")
        async with limit:
            await gateway.register_task_executor(registration(resource_id, f"{stand_ins.base}/te/{resource_id}", slots, spec), report)

    resource_ids = [await asyncio.wait_for(driver.requested.get(), 60.0) for _ in range(n)]
    await asyncio.gather(*(register(r) for r in resource_ids))
    times["registered"] = time.perf_counter() - started
    await asyncio.wait_for(stand_ins.all_slots_requested.wait(), 600.0)
    times["allocated"] = time.perf_counter() - started
    # heartbeats come in bursts, one per round: a round is the heartbeats between two gaps of a third of the interval
    # (polled: the rounds are read from the arrival times, no event marks them)
    while len(rounds := _rounds(stand_ins.heartbeats, after=times["allocated"] + started)) < 2 or len(rounds[1]) < n:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    times["heartbeat_round"] = rounds[1][-1] - rounds[1][0]
    return times


def _rounds(arrivals: list[float], after: float) -> list[list[float]]:
    """The heartbeat arrival times after ``after``, split into rounds; the first may be partial."""
    rounds: list[list[float]] = []
    for t in sorted(a for a in arrivals if a > after):
        if not rounds or t - rounds[-1][-1] > HEARTBEAT_INTERVAL / 3:
            rounds.append([])
        rounds[-1].append(t)
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--task-executors", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--slots", type=int, default=4)
    args = parser.parse_args()
    print(f"{'TaskExecutors':>13} {'slots':>6} {'registered s':>12} {'slots requested s':>17} {'heartbeat round s':>17} {'ms per TE':>9}")
    for n in args.task_executors:
        times = asyncio.run(one_size(n, args.slots))
        print(
            f"{n:>13} {n * args.slots:>6} {times['registered']:>12.2f} {times['allocated']:>17.2f} "
            f"{times['heartbeat_round']:>17.2f} {times['allocated'] / n * 1e3:>9.2f}"
        )


if __name__ == "__main__":
    main()
