"""An ApplicationMaster that drives the YarnResourceManagerDriver against the real ResourceManager.

Staged and run by tests/integration/hadoop/test_yarn_driver.py. It registers
through the driver, requests two TaskExecutor-sized containers for one
TaskExecutorProcessSpec, launches in each a trivial command that needs a
staged LocalResource (``payload.txt``), releases the first one early, waits
for the second one's completion, and unregisters with SUCCEEDED. What it saw
goes, as one JSON line prefixed ``RESULT``, to stdout (the container's
``am.out``); any failure unregisters FAILED with the traceback as diagnostics.

Usage (an ApplicationMaster command)::

    python yarn_driver_am.py --staging-base /user/alice
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import traceback
from pathlib import Path

from jobcluster.backends.yarn.container_env import ContainerEnvironment
from jobcluster.backends.yarn.container_requests import task_executor_resource
from jobcluster.backends.yarn.driver import YarnDriverSettings, YarnResourceManagerDriver, task_executor_environment
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.staging import HdfsPaths, StagingDirectory, webhdfs_client
from jobcluster.config.configuration import Configuration
from jobcluster.errors import ResourceManagerError
from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.runtime.entrypoint.layout import ENV_BIND_HOST, ENV_CLUSTER_DIR, ENV_LOG_DIR
from jobcluster.runtime.resourcemanager.driver import TaskExecutorLaunchContext
from jobcluster.runtime.resourcemanager.worker_termination import WorkerTermination
from jobcluster.runtime.taskexecutor.launch import TaskExecutorLaunchSettings, TaskExecutorLocation

TASK_EXECUTOR_COMMAND = (
    'test -f payload.txt || exit 1; test "$JOBCLUSTER_RESOURCE_ID" = "$CONTAINER_ID" || exit 2; test "$0" = -D || exit 4; '
    'test "$JOBCLUSTER_BIND_HOST" = "$NM_HOST" -a "$JOBCLUSTER_CLUSTER_DIR" = "$PWD" || exit 5; sleep 3; exit 3'
)
"""Exits 3 after 3 s (time enough to release one first) when the staged file was localized, the ResourceID
is the container id, bind host and cluster directory are the TaskExecutor container's own, and the quotes
and ``$`` of this line and the spec's ``-D`` arguments arrived intact through the NodeManager's launch
script; else 1, 2, 4 or 5."""

REST_PORT = 4242


class Recorder:
    """The ResourceEventHandler: records what the driver reports (this script runs in a YARN container, where the
    repository's tests.support.fakes is not importable, hence its own)."""

    def __init__(self) -> None:
        self.terminated: dict[str, str] = {}
        self.recovered: list[str] = []
        self.errors: list[str] = []
        self.changed = asyncio.Event()

    async def on_worker_terminated(self, resource_id: str, termination: WorkerTermination) -> None:
        self.terminated[resource_id] = f"{termination.summary}\n{termination.diagnostics}"
        self.changed.set()

    async def on_worker_warning(self, resource_id: str, message: str) -> None:
        pass

    async def on_previous_attempt_workers_recovered(self, resource_ids: list[str]) -> None:
        self.recovered += resource_ids

    async def on_error(self, error: Exception) -> None:
        self.errors.append(str(error))
        self.changed.set()


def spec_of(process_size: str) -> TaskExecutorProcessSpec:
    return task_executor_process_spec_from_config(
        Configuration({"taskmanager.memory.process.size": process_size, "taskmanager.numberOfTaskSlots": "1"})
    )


async def request_error(
    driver: YarnResourceManagerDriver, spec: TaskExecutorProcessSpec | None, task: asyncio.Task[str] | None = None
) -> str:
    """The ResourceManagerError of a request (``spec``, or the running ``task``), or what happened instead."""
    try:
        got = await (task if task is not None else driver.request_resource(spec))  # type: ignore[arg-type]
    except ResourceManagerError as error:
        return str(error)
    return f"no error: got {got}"


async def exercise(driver: YarnResourceManagerDriver, handler: Recorder, log_dir: Path) -> dict[str, object]:
    # As the entrypoint builds it: this (the AM's) container's host and directories, which the TaskExecutors must not get.
    context = TaskExecutorLaunchContext(
        ["/bin/sh", "-c", TASK_EXECUTOR_COMMAND],
        TaskExecutorLaunchSettings("driver-test", "http://127.0.0.1:1", "rm-id"),
        "s3cr3t",
        TaskExecutorLocation(Path.cwd(), log_dir, "am-host.invalid"),
    )
    await driver.initialize(handler, context)
    spec = spec_of("1g")
    first, second = await asyncio.gather(driver.request_resource(spec), driver.request_resource(spec))
    allocated = {cid: (r.memory_mib, r.vcores) for cid, r in driver.containers.items()}
    await driver.release_resource(first)
    async with asyncio.timeout(90):
        while second not in handler.terminated and not handler.errors:
            handler.changed.clear()
            await handler.changed.wait()
    await asyncio.sleep(3 * driver.settings.heartbeat_interval)  # a report for the released one would come by now
    oversized = await request_error(driver, spec_of(f"{2 * driver.maximum.memory_mib}m"))  # type: ignore[union-attr]
    # As large as the node: YARN cannot allocate it while this AM runs, so it is pending when the driver releases its workers.
    pending = asyncio.create_task(driver.request_resource(spec_of(f"{driver.maximum.memory_mib}m")))  # type: ignore[union-attr]
    await asyncio.sleep(2)
    pending_before_terminate = not pending.done()
    await driver.release_all_workers()
    pending_error = await request_error(driver, None, pending)
    return {
        "requested": list(task_executor_resource(spec).__dict__.values()),
        "allocated": allocated,
        "released": first,
        "completed": second,
        "terminated": handler.terminated,
        "recovered": handler.recovered,
        "errors": handler.errors,
        "held_after": list(driver.containers),
        "oversized_error": oversized,
        "pending_before_terminate": pending_before_terminate,
        "pending_error": pending_error,
    }


def entrypoint_environment(env: ContainerEnvironment) -> dict[str, object]:
    """What the AM command (application_master_command) set for the entrypoint, checked against the container."""
    cluster_dir = os.environ[ENV_CLUSTER_DIR]
    return {
        "bind_host": os.environ[ENV_BIND_HOST],
        "bind_host_is_nm_host": os.environ[ENV_BIND_HOST] == env.node_host,
        "cluster_dir_is_cwd": cluster_dir == os.getcwd(),
        "cluster_dir_under_local_dirs": any(cluster_dir.startswith(d.rstrip("/") + "/") for d in env.local_dirs),
        "log_dir_is_the_containers": os.environ[ENV_LOG_DIR] == env.log_dir,
    }


async def main(staging_base: str) -> int:
    env = ContainerEnvironment.from_environ(os.environ)
    assert env.hadoop_conf_dir, "HADOOP_CONF_DIR is not set"
    entrypoint = entrypoint_environment(env)
    conf = HadoopConfiguration.load(env.hadoop_conf_dir)
    staging = StagingDirectory(HdfsPaths(webhdfs_client(conf, timeout=30), conf.default_fs), staging_base, env.application_id)
    settings = YarnDriverSettings(
        hadoop_conf_dir=env.hadoop_conf_dir,
        host=os.environ[ENV_BIND_HOST],
        rest_port=REST_PORT,
        tracking_url=f"http://{env.node_host}:{REST_PORT}",
        heartbeat_interval=1.0,
        container_request_interval=0.2,
        local_resources=env.local_resources,
        environment=task_executor_environment(Configuration()),
        staging=staging,
        gateway_log=str(Path(env.log_dir) / "gateway.log"),
    )
    driver = YarnResourceManagerDriver(settings)
    handler = Recorder()
    try:
        result = {**await exercise(driver, handler, Path(env.log_dir)), "entrypoint": entrypoint}
        status, diagnostics = ApplicationStatus.SUCCEEDED, "driver harness done"
        print("RESULT " + json.dumps(result), flush=True)
    except BaseException:  # noqa: BLE001 - reported to YARN as the failure's diagnostics
        status, diagnostics = ApplicationStatus.FAILED, traceback.format_exc()[-3000:]
        print(diagnostics, file=sys.stderr, flush=True)
    await driver.release_all_workers()
    await driver.deregister_application(status, diagnostics)
    await driver.close()
    return status.exit_code


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")  # into am.err
    parser = argparse.ArgumentParser()
    parser.add_argument("--staging-base", required=True)
    sys.exit(asyncio.run(main(parser.parse_args().staging_base)))
