"""Process bootstrap of a TaskExecutor (Flink's TaskManagerRunner).

``python -m jobcluster.runtime.taskexecutor [-D key=value ...]``: the
environment is its launch (launch.py); the ``-D`` options are the
dynamic configs of the TaskExecutorProcessSpec the ResourceManager asked for,
which pin every memory component, so the process spec derived here is
exactly the one the container was sized for.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import shutil
import signal
import sys
from collections.abc import Callable

from jobcluster.config import options
from jobcluster.config.loader import load_configuration, parse_dynamic_property
from jobcluster.errors import JobClusterError
from jobcluster.logging_setup import configure_process_logging, set_process_log_level
from jobcluster.memory.managed import ManagedMemoryConsumers
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.processes import PRIVATE_UMASK
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.entrypoint import layout
from jobcluster.runtime.taskexecutor.launch import TaskExecutorLaunch
from jobcluster.runtime.taskexecutor.log_files import TaskExecutorLogs, log_to_own_file, spark_work_dir, spark_worker_name
from jobcluster.runtime.taskexecutor.task_executor import TaskExecutor, TaskExecutorSettings
from jobcluster.security import spark_secret
from jobcluster.spark.jvm_metrics import EXECUTOR_INSTANCE, JvmMetricsReceiver, flink_task_manager_metrics
from jobcluster.spark.processes import SparkMasterAddress, SparkWorker
from jobcluster.spark.security import SparkSecurity
from jobcluster.spark.sizing import spark_sizing_for_task_executor

log = logging.getLogger(__name__)


async def run_task_executor(launch: TaskExecutorLaunch, dynamic_properties: dict[str, str]) -> int:
    """Run the TaskExecutor of ``launch`` until it must end (its ResourceManager is gone, a signal); returns 0."""
    cluster_dir, host, resource_id = launch.location.cluster_dir, launch.location.bind_host, launch.resource_id
    own_log = log_to_own_file(launch.location.log_dir)  # first: where its stderr is no file, the file has every line
    config = load_configuration(cluster_dir, dynamic_properties)
    set_process_log_level(config.get(options.LOG_LEVEL))
    spec = task_executor_process_spec_from_config(config)
    log.info("TaskExecutor %s: %d slots, JVM options for Spark executors %s", resource_id, spec.num_slots, spec.jvm_args())
    spark_conf_dir = cluster_dir / f"spark-conf-{resource_id}"
    security = SparkSecurity(spark_secret(launch.secret), host, config.get(options.SECURITY_ENCRYPT_DATA_PLANE))
    consumers = ManagedMemoryConsumers.from_config(config)
    spark_worker = _spark_worker_factory(launch, spec, consumers, security.install(spark_conf_dir))
    metrics_interval = config.get(options.METRICS_FETCHER_UPDATE_INTERVAL)
    jvm_metrics = JvmMetricsReceiver(stale_after=3 * metrics_interval)
    await jvm_metrics.start()
    jvm_metrics.install(spark_conf_dir, EXECUTOR_INSTANCE, metrics_interval)

    rpc = RpcService(host, launch.secret, config.get(options.RPC_ASK_TIMEOUT))
    await rpc.start()
    done: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def on_fatal(reason: str) -> None:
        if not done.done():
            done.set_result(reason)

    task_executor = TaskExecutor(
        rpc,
        resource_id,
        spec,
        launch.settings.resource_manager_address,
        launch.settings.resource_manager_id,
        TaskExecutorSettings(
            registration_timeout=config.get(options.TASK_MANAGER_REGISTRATION_TIMEOUT),
            heartbeat_timeout=config.get(options.HEARTBEAT_TIMEOUT),
        ),
        spark_worker,
        on_fatal,
        spark_master=launch.settings.spark_master,
        metrics=lambda: flink_task_manager_metrics(jvm_metrics.latest(), spec.managed),
        logs=TaskExecutorLogs(launch.location.log_dir, resource_id, own_log, host),
    )
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, functools.partial(_end, done, f"received {sig.name}"))
    try:
        await rpc.start_endpoint(task_executor)
        reason = await done
        log.info("TaskExecutor %s stops: %s", resource_id, reason)
    finally:
        await rpc.stop()
        jvm_metrics.close()
        shutil.rmtree(spark_conf_dir, ignore_errors=True)
    return 0


def _end(done: asyncio.Future[str], reason: str) -> None:
    if not done.done():
        done.set_result(reason)


def _spark_worker_factory(
    launch: TaskExecutorLaunch, spec: TaskExecutorProcessSpec, consumers: ManagedMemoryConsumers, spark_security_env: dict[str, str]
) -> Callable[[SparkMasterAddress], SparkWorker]:
    """How this TaskExecutor starts its Spark worker once it knows the job's master: cores = slots, memory from
    the process spec; the worker, its executors and their PySpark workers keep their scratch files in the
    cluster's directory."""
    sizing = spark_sizing_for_task_executor(spec, consumers)
    log_dir, resource_id = launch.location.log_dir, launch.resource_id
    scratch = layout.scratch_dir(launch.location.cluster_dir, resource_id)

    def spark_worker(master: SparkMasterAddress) -> SparkWorker:
        scratch.mkdir(parents=True, exist_ok=True)
        return SparkWorker(
            launch.location.bind_host,
            master,
            cores=sizing.worker_cores,
            memory_mib=sizing.worker_memory_mib,
            work_dir=spark_work_dir(log_dir, resource_id),
            log_dir=log_dir,
            daemon_env={**sizing.worker_env(), **layout.scratch_env(scratch), **spark_security_env},
            name=spark_worker_name(resource_id),
        )

    return spark_worker


def main() -> None:
    os.umask(PRIVATE_UMASK)  # on every target, whatever launched us: the cluster's files are the user's only
    configure_process_logging()
    parser = argparse.ArgumentParser(prog="jobcluster-taskexecutor", description="A TaskExecutor of a jobcluster job cluster.")
    parser.add_argument("-D", dest="dynamic", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    try:
        dynamic = dict(parse_dynamic_property(d) for d in args.dynamic)
        code = asyncio.run(run_task_executor(TaskExecutorLaunch.from_environ(os.environ), dynamic))
    except JobClusterError as exc:
        log.exception("TaskExecutor failed: %s", exc)
        code = 1
    sys.exit(code)
