"""The JobClusterEntrypoint: the JobManager process of a per-job cluster.

It reads the staged configuration and JobGraph, starts the services (RPC,
REST), the Spark master, the active ResourceManager with the target's driver,
and the MiniDispatcher that runs the job. When the job is terminal it shuts
everything down in reverse order, removes the staged files, stops the REST
endpoint last, and exits with the ApplicationStatus code: 0 succeeded,
1 failed, 2 canceled.

Start-up order: nothing waits for what it does not need.  The Spark master's
JVM starts in the background (its ports are chosen up front, so its address
is known at once) while the ResourceManager, dispatcher and JobMaster start;
the JobMaster declares its slots right away, so the TaskExecutors are
requested while the master comes up.  Each TaskExecutor starts its Spark
worker as soon as the master is ALIVE, and the JobMaster starts the PySpark
driver at the same time, which Spark holds until every executor core of the
job has registered (``spark.scheduler.minRegisteredResourcesRatio``).

In Spark's local mode (``spark_local_mode``: the MiniCluster of ``-t local``,
whose TaskExecutors run in this process and start no Spark worker) there is
no Spark master: the program's driver runs the tasks itself, with as many
threads as the job has slots (``local[N]``), and its JVM is sized as the
JobManager's driver; the executors' sizes have no process to apply to.

Shutdown: as soon as the job is terminal, the TaskExecutors and the Spark
master are stopped, at the same time and while the client fetches the result
(Spark's daemons get a short grace: they hold no state); once the result is
handed over, the application is deregistered, then the RPC service, the
staged files, and the REST endpoint go, last, whose disappearance tells the
client the cluster is gone.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import shutil
import signal
import sys
import uuid
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import jobcluster
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.config.loader import load_configuration
from jobcluster.config.values import parse_port_ranges
from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.jobgraph.model import JobGraph, read_job_graph
from jobcluster.logging_setup import set_process_log_level
from jobcluster.memory.jobmanager import job_manager_process_spec_from_config
from jobcluster.memory.managed import ManagedMemoryConsumers
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.dispatcher.mini_dispatcher import MiniDispatcher
from jobcluster.runtime.entrypoint import layout
from jobcluster.runtime.jobmaster.job_master import JobMaster, JobMasterSettings
from jobcluster.runtime.jobmaster.job_result import JobResult
from jobcluster.runtime.resourcemanager.driver import ResourceManagerDriver, TaskExecutorLaunchContext
from jobcluster.runtime.resourcemanager.gateway import RESOURCE_MANAGER_ENDPOINT, ResourceManagerGateway
from jobcluster.runtime.resourcemanager.resource_manager import ResourceManager, ResourceManagerSettings
from jobcluster.runtime.rest.dashboard import default_dashboard_dir
from jobcluster.runtime.rest.endpoint import RestEndpoint
from jobcluster.runtime.taskexecutor.launch import TaskExecutorLaunchSettings, TaskExecutorLocation
from jobcluster.security import rest_token, spark_secret
from jobcluster.spark.conf import merge_spark_conf, user_spark_conf
from jobcluster.spark.jvm_metrics import DRIVER_INSTANCE, JvmMetricsReceiver, flink_jvm_metrics
from jobcluster.spark.processes import SparkLocalMode, SparkMaster, SparkMasterAddress
from jobcluster.spark.security import SparkSecurity
from jobcluster.spark.sizing import PySparkMemory, spark_sizing_for_job_manager, spark_sizing_for_task_executor

log = logging.getLogger(__name__)

RESULT_RETRIEVAL_TIMEOUT = 60.0  # seconds an attached cluster waits for its client to fetch the result
SPARK_CONF_DIR_NAME = "spark-conf-jobmanager"  # in the cluster directory: the Spark master's and driver's SPARK_CONF_DIR


@dataclass(frozen=True)
class EntrypointContext:
    """Where the entrypoint finds its cluster: ids, directories, bind host, the cluster secret.

    ``config_overrides``: options the launching platform decides, applied over the staged
    configuration (e.g. YARN's ApplicationMaster binds REST to its node, Flink's ``YarnEntrypointUtils``).
    """

    cluster_id: str
    cluster_dir: Path
    log_dir: Path
    bind_host: str
    secret: str
    config_overrides: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, config_overrides: Mapping[str, str] | None = None) -> EntrypointContext:
        """The context the launcher put into this process's environment (``layout.py``); KeyError when incomplete."""
        env = os.environ
        cluster_dir = Path(env[layout.ENV_CLUSTER_DIR])
        return cls(
            cluster_id=env[layout.ENV_CLUSTER_ID],
            cluster_dir=cluster_dir,
            log_dir=Path(env[layout.ENV_LOG_DIR]),
            bind_host=env.get(layout.ENV_BIND_HOST, "127.0.0.1"),
            secret=layout.take_cluster_secret(env, cluster_dir),
            config_overrides=dict(config_overrides or {}),
        )


def _with_tmpdir(driver_conf: dict[str, str], scratch: Path) -> dict[str, str]:
    """The driver's Spark settings with its JVM's java.io.tmpdir in the cluster's scratch directory."""
    options_key = "spark.driver.extraJavaOptions"
    return {**driver_conf, options_key: f"{driver_conf.get(options_key, '')} -Djava.io.tmpdir={scratch}".strip()}


DriverFactory = Callable[[Configuration, str], ResourceManagerDriver]
"""``create_driver(config, rest_url)``: the target's ResourceManagerDriver, given the effective
configuration and the URL the REST endpoint serves at (a driver may register it, as YARN's does)."""


class JobClusterEntrypoint:
    """Runs one job cluster; ``create_driver`` supplies the target's ResourceManagerDriver; ``spark_local_mode``:
    the program runs in Spark's local mode instead of against a Spark master of the cluster (see the module docstring)."""

    def __init__(self, context: EntrypointContext, create_driver: DriverFactory, spark_local_mode: bool = False) -> None:
        self.context = context
        self._create_driver = create_driver
        self._spark_local_mode = spark_local_mode
        self.status = ApplicationStatus.UNKNOWN  # what the ResourceManager reports when it deregisters
        self.diagnostics: str | None = None  # and why, when the job did not finish (e.g. YARN's diagnostics)
        self.closed_externally = False  # stopped by a signal: release the workers, but do not deregister

    async def run(self) -> ApplicationStatus:
        ctx = self.context
        config = load_configuration(ctx.cluster_dir, ctx.config_overrides)
        set_process_log_level(config.get(options.LOG_LEVEL))
        graph = read_job_graph(layout.job_graph_file(ctx.cluster_dir))
        async with AsyncExitStack() as stack:
            status = await self._run_cluster(stack, config, graph)
        log.info("cluster %s shut down: application %s", ctx.cluster_id, status.name)
        return status

    async def _run_cluster(self, stack: AsyncExitStack, config: Configuration, graph: JobGraph) -> ApplicationStatus:
        ctx = self.context
        jm_sizing = spark_sizing_for_job_manager(job_manager_process_spec_from_config(config))
        tm_sizing = spark_sizing_for_task_executor(
            task_executor_process_spec_from_config(config), ManagedMemoryConsumers.from_config(config)
        )

        rest = await self._start_rest(stack, config)
        if not config.get(options.CLUSTER_STAGING_KEEP):
            stack.callback(shutil.rmtree, ctx.cluster_dir, ignore_errors=True)
        scratch = self._prepare_scratch(stack)
        # a MiniCluster's TaskExecutors share this process: their calls and this service's skip the network
        rpc = RpcService(ctx.bind_host, ctx.secret, config.get(options.RPC_ASK_TIMEOUT), in_process=self._spark_local_mode)
        await rpc.start()
        stack.push_async_callback(rpc.stop)

        spark_env = self._install_spark_security(stack, config)
        jvm_metrics = await _start_jvm_metrics(stack, config, ctx.cluster_dir / SPARK_CONF_DIR_NAME)
        spark_master: SparkMaster | SparkLocalMode
        if self._spark_local_mode:
            spark_master = SparkLocalMode(graph.required_slots())
        else:
            spark_master = SparkMaster(ctx.bind_host, ctx.log_dir, {**jm_sizing.master_env(), **layout.scratch_env(scratch), **spark_env})
        stack.push_async_callback(spark_master.stop)
        master_started = asyncio.create_task(spark_master.start(), name="spark-master-start")
        stack.push_async_callback(_cancel, master_started)

        fatal_error: asyncio.Future[Exception] = asyncio.get_running_loop().create_future()
        resource_manager = await self._start_resource_manager(stack, rpc, config, rest.url, spark_master, fatal_error)

        # in local mode no executor runs: the TaskExecutors' Spark sizes and PySpark workers' limits have no process to apply to
        executor_conf = {} if self._spark_local_mode else tm_sizing.executor_conf()
        sizing_conf = merge_spark_conf(
            user_spark_conf(config),
            {**_with_tmpdir(jm_sizing.driver_conf(), scratch), **executor_conf, "spark.local.dir": str(scratch)},
        )

        def create_job_master(on_terminal: Callable[[JobResult], Awaitable[None]]) -> JobMaster:
            rm_gateway = ResourceManagerGateway(rpc, rpc.address, RESOURCE_MANAGER_ENDPOINT, resource_manager.fencing_token)
            master_ready = functools.partial(asyncio.shield, master_started)
            return JobMaster(
                rpc,
                graph,
                ctx.cluster_dir / layout.ARTIFACTS_DIR,
                ctx.log_dir,
                rm_gateway,
                spark_master.address,
                master_ready,
                ctx.bind_host,
                sizing_conf,
                job_master_settings(config, None if self._spark_local_mode else tm_sizing.pyspark),
                on_terminal,
                spark_env=spark_env,
            )

        dispatcher = MiniDispatcher(create_job_master, config.get(options.EXECUTION_ATTACHED), RESULT_RETRIEVAL_TIMEOUT)
        job_master = await self._start_job(stack, rpc, dispatcher, rest, resource_manager, jvm_metrics, fatal_error)
        log.info("job cluster %s is up: REST %s, job %s", ctx.cluster_id, rest.url, graph.job_id)
        await dispatcher.workers_done
        if job_master.result is not None:  # the job ended (not the process stopped): its owner learns it now
            await resource_manager.record_job_result(ApplicationStatus.of_job(job_master.result.status), _diagnostics(job_master.result))
        # the workers and the Spark master go while the client fetches the result: it returns sooner
        releasing = asyncio.create_task(_stop_workers(resource_manager, spark_master), name="stop-workers")
        stack.push_async_callback(_cancel, releasing)
        self.status = await dispatcher.termination
        await asyncio.gather(releasing, return_exceptions=True)
        self.diagnostics = _diagnostics(job_master.result)
        return self.status

    async def _start_rest(self, stack: AsyncExitStack, config: Configuration) -> RestEndpoint:
        """The REST endpoint, first up and last down: its disappearance tells the client the cluster is gone."""
        bind_hosts = tuple(host.strip() for host in config.get(options.REST_BIND_ADDRESS).split(",") if host.strip())
        bind_port = config.get(options.REST_BIND_PORT)
        rest = RestEndpoint(
            config.get(options.REST_ADDRESS),
            config.get(options.REST_PORT),
            jobcluster.__version__,
            rest_token(self.context.secret),
            bind_hosts,
            Path(config.get(options.WEB_DASHBOARD_DIR) or default_dashboard_dir(version=config.get(options.WEB_DASHBOARD_VERSION))),
            # as Flink's JobManager: its memory pinned to the process spec (the dashboard's JobManager memory model)
            config.to_dict() | job_manager_process_spec_from_config(config).dynamic_configs(),
            self.context.log_dir,
            parse_port_ranges(bind_port) if bind_port is not None else (),
        )
        await rest.start()
        stack.push_async_callback(rest.stop)
        return rest

    async def _start_resource_manager(
        self,
        stack: AsyncExitStack,
        rpc: RpcService,
        config: Configuration,
        rest_url: str,
        spark_master: SparkMaster | SparkLocalMode,
        fatal_error: asyncio.Future[Exception],
    ) -> ResourceManager:
        """The ResourceManager with the target's driver; on the way down it deregisters (``_stop_processes``)."""
        tm_spec = task_executor_process_spec_from_config(config)
        resource_manager_id = uuid.uuid4().hex
        resource_manager = ResourceManager(
            rpc,
            self._create_driver(config, rest_url),
            self._launch_context(rpc.address, resource_manager_id, None if self._spark_local_mode else spark_master.address),
            config,
            tm_spec.worker_resource_spec(),
            resource_manager_settings(config, tm_spec.num_slots),
            on_fatal_error=functools.partial(_set_once, fatal_error),
            fencing_token=resource_manager_id,
        )
        stack.push_async_callback(rpc.stop_endpoint, resource_manager)
        await rpc.start_endpoint(resource_manager)
        stack.push_async_callback(self._stop_processes, resource_manager, spark_master)
        return resource_manager

    async def _start_job(
        self,
        stack: AsyncExitStack,
        rpc: RpcService,
        dispatcher: MiniDispatcher,
        rest: RestEndpoint,
        resource_manager: ResourceManager,
        jvm_metrics: JvmMetricsReceiver,
        fatal_error: asyncio.Future[Exception],
    ) -> JobMaster:
        """The dispatcher and its job's JobMaster, served over REST with the metrics of the Spark driver (``jvm_metrics``)
        and of the TaskManagers; a fatal error of the ResourceManager fails the job."""
        stack.push_async_callback(rpc.stop_endpoint, dispatcher)
        await rpc.start_endpoint(dispatcher)
        rest.serve_task_manager_logs(resource_manager)
        rest.serve(
            dispatcher,
            resource_manager.request_task_manager_info,
            resource_manager.request_resource_overview,
            resource_manager.request_task_manager_metrics,
            lambda: flink_jvm_metrics(jvm_metrics.latest()),
        )
        job_master = dispatcher.job_master
        assert job_master is not None
        stack.push_async_callback(rpc.stop_endpoint, job_master)
        await rpc.start_endpoint(job_master)
        failing = asyncio.create_task(_fail_on_fatal_error(fatal_error, job_master), name="fatal-error")
        stack.push_async_callback(_cancel, failing)
        self._write_rest_info(rest.url)
        self._install_signal_handlers(dispatcher)
        return job_master

    async def _stop_processes(self, resource_manager: ResourceManager, spark_master: SparkMaster | SparkLocalMode) -> None:
        """The TaskExecutors (through the platform) and the Spark master at once: after the job neither holds
        anything anyone needs, and each waits only a short grace before it is killed."""
        await asyncio.gather(self._deregister(resource_manager), spark_master.stop())

    async def _deregister(self, resource_manager: ResourceManager) -> None:
        """Tell the platform how the application ended, unless this process was stopped from outside.

        Flink's ShutdownBehaviour.PROCESS_FAILURE: a JobManager stopped by a signal
        (its pod deleted, its container preempted or killed) leaves the application
        registered, so that the platform's next attempt (the Deployment's new pod, a
        new ApplicationMaster attempt) runs the job again; deregistering would end
        the application for good (delete the Deployment, unregister from YARN).
        """
        if self.closed_externally:
            log.warning("stopped from outside: the application stays registered for the platform's next attempt")
            return
        await resource_manager.deregister_application(self.status, self.diagnostics)

    def _prepare_scratch(self, stack: AsyncExitStack) -> Path:
        """The JobManager's scratch directory; every scratch directory of the cluster goes when it ends.

        Set as the entrypoint's own SPARK_LOCAL_DIRS and TMPDIR, so that the Spark
        driver and master it starts (and the PySpark driver) write nowhere else;
        removed even when ``jobcluster.staging.keep`` keeps the staged files.
        """
        root = self.context.cluster_dir / layout.SCRATCH_DIR
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        scratch = layout.scratch_dir(self.context.cluster_dir, "jobmanager")
        scratch.mkdir(parents=True, exist_ok=True)
        os.environ.update({"SPARK_LOCAL_DIRS": str(scratch), "TMPDIR": str(scratch)})
        return scratch

    def _install_spark_security(self, stack: AsyncExitStack, config: Configuration) -> dict[str, str]:
        """Spark's settings and secret for the master and the driver (spark/security.py); returns their extra environment."""
        ctx = self.context
        security = SparkSecurity(spark_secret(ctx.secret), ctx.bind_host, config.get(options.SECURITY_ENCRYPT_DATA_PLANE))
        conf_dir = ctx.cluster_dir / SPARK_CONF_DIR_NAME
        stack.callback(shutil.rmtree, conf_dir, ignore_errors=True)  # even when the staging directory is kept
        return security.install(conf_dir)

    def _launch_context(
        self, rpc_address: str, resource_manager_id: str, spark_master: SparkMasterAddress | None
    ) -> TaskExecutorLaunchContext:
        ctx = self.context
        return TaskExecutorLaunchContext(
            command=[sys.executable, "-m", "jobcluster.runtime.taskexecutor"],
            settings=TaskExecutorLaunchSettings(ctx.cluster_id, rpc_address, resource_manager_id, spark_master),
            secret=ctx.secret,
            location=TaskExecutorLocation(ctx.cluster_dir, ctx.log_dir, ctx.bind_host),
        )

    def _write_rest_info(self, rest_url: str) -> None:
        path = self.context.cluster_dir / layout.REST_INFO_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"rest_url": rest_url, "pid": os.getpid()}))
        tmp.replace(path)

    def _install_signal_handlers(self, dispatcher: MiniDispatcher) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._close_externally, dispatcher, sig)

    def _close_externally(self, dispatcher: MiniDispatcher, sig: signal.Signals) -> None:
        """Shut down after a signal: workers released, staged files removed, application left registered (``_deregister``)."""
        self.closed_externally = True
        dispatcher.close_externally(f"received signal {sig.name}")


def resource_manager_settings(config: Configuration, slots_per_worker: int) -> ResourceManagerSettings:
    """The ResourceManager's timing and sizing from ``config`` (each field names its Flink key)."""
    return ResourceManagerSettings(
        heartbeat_interval=config.get(options.HEARTBEAT_INTERVAL),
        heartbeat_timeout=config.get(options.HEARTBEAT_TIMEOUT),
        idle_timeout=config.get(options.RESOURCE_MANAGER_TASK_MANAGER_TIMEOUT),
        max_slots=config.get(options.SLOT_MANAGER_MAX_SLOTS),
        slots_per_worker=slots_per_worker,
    )


def job_master_settings(config: Configuration, pyspark: PySparkMemory | None = None) -> JobMasterSettings:
    """The JobMaster's timeouts and output bounds from ``config`` (each field names its Flink or jobcluster key);
    with ``pyspark``, the TaskExecutors' PySpark worker memory, what a MemoryError of theirs means."""
    return JobMasterSettings(
        heartbeat_interval=config.get(options.HEARTBEAT_INTERVAL),
        heartbeat_timeout=config.get(options.HEARTBEAT_TIMEOUT),
        slot_request_timeout=config.get(options.SLOT_REQUEST_TIMEOUT),
        executor_registration_timeout=config.get(options.EXECUTOR_REGISTRATION_TIMEOUT),
        progress_interval=config.get(options.WEB_REFRESH_INTERVAL),
        savepoint_directory=config.get(options.SAVEPOINT_DIRECTORY),
        checkpointing_timeout=config.get(options.CHECKPOINTING_TIMEOUT),
        output_max_file_size=config.get(options.DRIVER_OUTPUT_MAX_FILE_SIZE),
        output_max_files=config.get(options.DRIVER_OUTPUT_MAX_FILES),
        output_console=config.get(options.DRIVER_OUTPUT_CONSOLE),
        pyspark_memory_error_hint=pyspark.memory_error_hint() if pyspark is not None else None,
    )


async def _stop_workers(resource_manager: ResourceManager, spark_master: SparkMaster | SparkLocalMode) -> None:
    await asyncio.gather(resource_manager.release_all_workers(), spark_master.stop())


def _set_once(future: asyncio.Future[Exception], error: Exception) -> None:
    if not future.done():
        future.set_result(error)


async def _fail_on_fatal_error(fatal_error: asyncio.Future[Exception], job_master: JobMaster) -> None:
    """The ResourceManager lost its backend: the job fails with that cause, and the cluster ends as for any failure.

    Flink's ``onFatalError`` ends the JobManager's process and leaves a new attempt
    to the platform; a job cluster without a job store would run the job again from
    its start, so the job fails here and the user reads why.
    """
    error = await fatal_error
    await job_master.fail(f"ResourceManagerException: the ResourceManager lost its backend: {error}")


async def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` (if it still runs) and wait for it; its outcome was reported by whoever awaited it."""
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


DIAGNOSTICS_LIMIT = 4000  # characters of a failure cause handed to the platform (YARN keeps a few KB per attempt)


def _diagnostics(result: JobResult | None) -> str | None:
    """How the job ended, for the platform's own view of the application: its state and, if any, the
    end of its failure cause (the program's error is at the end)."""
    if result is None:
        return None
    text = f"job {result.job_id} {result.status.value}"
    if result.failure_cause:
        text += f": {result.failure_cause[-DIAGNOSTICS_LIMIT:]}"
    return text


async def _start_jvm_metrics(stack: AsyncExitStack, config: Configuration, spark_conf_dir: Path) -> JvmMetricsReceiver:
    """Where the Spark driver reports its JVM metrics (installed in its SPARK_CONF_DIR), until the cluster ends."""
    interval = config.get(options.METRICS_FETCHER_UPDATE_INTERVAL)
    receiver = JvmMetricsReceiver(stale_after=3 * interval)
    await receiver.start()
    stack.callback(receiver.close)
    receiver.install(spark_conf_dir, DRIVER_INSTANCE, interval)
    return receiver
