"""The TaskExecutor against a real ResourceManager (with a recording driver): registration and its retries, the end
of a TaskExecutor whose ResourceManager is gone, calls of a stale ResourceManager refused.

Both endpoints run on RpcServices on loopback; no Spark worker starts (no Spark
master is known and no slot is offered: offering needs a Spark master, which
the end-to-end tests run).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from jobcluster.errors import RpcError
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.resourcemanager.resource_manager import ResourceManager
from jobcluster.runtime.taskexecutor.gateway import TaskExecutorGateway
from jobcluster.runtime.taskexecutor.log_files import TaskExecutorLogs
from jobcluster.runtime.taskexecutor.task_executor import TaskExecutor, TaskExecutorSettings
from tests.support.fakes import CLUSTER_CONFIG, RecordingDriver
from tests.support.fakes import resource_manager as make_resource_manager

SECRET = "s3cr3t"
SPEC = task_executor_process_spec_from_config(CLUSTER_CONFIG)


def no_spark_worker(master):
    raise AssertionError("no Spark worker may start in these tests")


@asynccontextmanager
async def services(count: int) -> AsyncIterator[list[RpcService]]:
    started = [RpcService("127.0.0.1", SECRET, ask_timeout=2.0) for _ in range(count)]
    for service in started:
        await service.start()
    try:
        yield started
    finally:
        for service in started:
            await service.stop()


def resource_manager(service: RpcService, tmp_path: Path) -> ResourceManager:
    return make_resource_manager(service, RecordingDriver(), tmp_path)


def task_executor(
    service: RpcService,
    rm_address: str,
    ended: asyncio.Future[str],
    registration_timeout: float = 10.0,
    heartbeat_timeout: float = 60.0,
    logs: TaskExecutorLogs | None = None,
) -> TaskExecutor:
    async def on_fatal(reason: str) -> None:
        if not ended.done():
            ended.set_result(reason)

    settings = TaskExecutorSettings(
        registration_timeout, heartbeat_timeout, initial_registration_backoff=0.05, max_registration_backoff=0.2
    )
    return TaskExecutor(service, "tm-1", SPEC, rm_address, "rm-1", settings, no_spark_worker, on_fatal, logs=logs)


def test_a_task_executor_started_before_its_resource_manager_registers_once_it_answers(tmp_path):
    async def scenario() -> None:
        async with services(2) as (rm_service, te_service):
            ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            te = task_executor(te_service, rm_service.address, ended)
            await te_service.start_endpoint(te)
            await asyncio.sleep(0.5)  # its first attempts find no ResourceManager endpoint
            assert not te.registered.is_set()
            rm = resource_manager(rm_service, tmp_path)
            await rm_service.start_endpoint(rm)
            await asyncio.wait_for(te.registered.wait(), 5.0)
            overview = await rm.request_resource_overview()
            assert overview["taskmanagers"] == 1 and overview["slots-total"] == 2 and overview["slots-available"] == 2
            (info,) = await rm.request_task_manager_info()
            assert info["id"] == "tm-1" and info["memoryConfiguration"]["totalProcessMemory"] == SPEC.total_process
            assert not ended.done()

    asyncio.run(scenario())


def test_a_task_executor_that_cannot_register_in_time_ends_saying_why(tmp_path):
    async def scenario() -> str:
        async with services(1) as (te_service,):
            ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            await te_service.start_endpoint(task_executor(te_service, "http://127.0.0.1:9", ended, registration_timeout=0.5))
            return await asyncio.wait_for(ended, 5.0)

    reason = asyncio.run(scenario())
    assert reason.startswith("could not register at the ResourceManager within"), reason


def test_a_task_executor_whose_resource_manager_stops_heartbeating_ends(tmp_path):
    async def scenario() -> str:
        async with services(2) as (rm_service, te_service):
            ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            rm = resource_manager(rm_service, tmp_path)
            await rm_service.start_endpoint(rm)
            te = task_executor(te_service, rm_service.address, ended, heartbeat_timeout=0.5)
            await te_service.start_endpoint(te)
            await asyncio.wait_for(te.registered.wait(), 5.0)
            return await asyncio.wait_for(ended, 5.0)  # the ResourceManager's heartbeat interval is 60 s

    assert asyncio.run(scenario()) == "the ResourceManager stopped sending heartbeats"


def test_calls_of_another_resource_manager_are_refused(tmp_path):
    async def scenario() -> None:
        async with services(2) as (rm_service, te_service):
            ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            rm = resource_manager(rm_service, tmp_path)
            await rm_service.start_endpoint(rm)
            te = task_executor(te_service, rm_service.address, ended)
            await te_service.start_endpoint(te)
            await asyncio.wait_for(te.registered.wait(), 5.0)
            gateway = TaskExecutorGateway(rm_service, te_service.address, "tm-1")
            with pytest.raises(RpcError, match="call from ResourceManager rm-0, but registered at rm-1"):
                await gateway.heartbeat_from_resource_manager("rm-0")
            report = await gateway.heartbeat_from_resource_manager("rm-1")
            assert [slot["allocation_id"] for slot in report["slots"]] == [None, None]

    asyncio.run(scenario())
