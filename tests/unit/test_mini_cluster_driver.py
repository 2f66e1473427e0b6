"""The MiniCluster's driver (``-t local``): TaskExecutors started as endpoints in this process, registered at a real
ResourceManager with their memory specs over in-process RPC, and stopped without a trace."""

from __future__ import annotations

import asyncio

from jobcluster.backends.local.mini_cluster import MiniClusterDriver, create_driver
from jobcluster.config.configuration import Configuration
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.rpc import service as rpc_service
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.resourcemanager.driver import TaskExecutorLaunchContext
from jobcluster.runtime.taskexecutor.launch import TaskExecutorLaunchSettings, TaskExecutorLocation
from jobcluster.runtime.taskexecutor.task_executor import TaskExecutorSettings
from tests.support.fakes import CLUSTER_CONFIG, RecordingDriver, resource_manager, until

SECRET = "s3cr3t"
SPEC = task_executor_process_spec_from_config(CLUSTER_CONFIG)


def test_task_executors_register_in_this_process_with_their_memory_specs_and_go_when_released(tmp_path):
    async def scenario() -> None:
        rm_service = RpcService("127.0.0.1", SECRET, ask_timeout=2.0, in_process=True)
        await rm_service.start()
        driver = MiniClusterDriver(TaskExecutorSettings(registration_timeout=10.0, heartbeat_timeout=60.0), ask_timeout=2.0)
        rm = resource_manager(rm_service, RecordingDriver(), tmp_path)
        await rm_service.start_endpoint(rm)
        context = TaskExecutorLaunchContext(
            [], TaskExecutorLaunchSettings("c1", rm_service.address, "rm-1"), SECRET, TaskExecutorLocation(tmp_path, tmp_path, "127.0.0.1")
        )
        try:
            await driver.initialize(rm, context)
            ids = [await driver.request_resource(SPEC) for _ in range(2)]
            assert ids == ["c1-taskmanager-1", "c1-taskmanager-2"]

            infos: list[dict] = []

            async def poll() -> None:
                nonlocal infos
                while len(infos) < 2:
                    infos = await rm.request_task_manager_info()
                    await asyncio.sleep(0.02)

            await asyncio.wait_for(poll(), 5.0)
            assert sorted(info["id"] for info in infos) == ids
            assert all(info["memoryConfiguration"]["totalProcessMemory"] == SPEC.total_process for info in infos)
            assert all(info["slotsNumber"] == SPEC.num_slots for info in infos)
            in_process = set(rpc_service._IN_PROCESS)
            assert rm_service.address in in_process and len(in_process) == 3, "two TaskExecutors' services and the RM's"

            await driver.release_all_workers()
            await until(lambda: set(rpc_service._IN_PROCESS) == {rm_service.address})
        finally:
            await driver.close()
            await rm_service.stop()
        assert rpc_service._IN_PROCESS == {}

    asyncio.run(scenario())


def test_the_driver_takes_its_task_executors_timeouts_from_the_configuration():
    driver = create_driver(
        Configuration({"taskmanager.registration.timeout": "7s", "heartbeat.timeout": "9s", "pekko.ask.timeout": "3s"}), "http://x"
    )
    assert driver._settings.registration_timeout == 7.0 and driver._settings.heartbeat_timeout == 9.0
    assert driver._ask_timeout == 3.0
