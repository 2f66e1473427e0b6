"""YarnResourceManagerDriver: TaskExecutors in YARN containers, from inside the ApplicationMaster.

Flink's YarnResourceManagerDriver (backends.md §2) with YARN's Java clients
through the py4j gateway:

- ``initialize`` starts the JVM, an ``AMRMClient`` and an ``NMClient``,
  registers the ApplicationMaster (its host, REST port and tracking URL) and
  reports the containers of a previous attempt as recovered workers.
- ``request_resource(spec)`` adds a container request of exactly the spec's
  Total Process Memory in MiB and its vcores, at the spec's priority
  (``PendingContainerRequests``), and completes once a container of that
  priority was allocated and the TaskExecutor launched in it through the
  NMClient with the client's staged LocalResources; the container id is the
  ResourceID. Surplus containers go back to YARN.
- A heartbeat (``AMRMClient.allocate``) runs every
  ``yarn.heartbeat.container-request-interval`` while requests are pending,
  else every ``yarn.heartbeat.interval``; it is the only way allocations and
  completed containers arrive. Completed containers that were not released
  are reported with YARN's exit status, its meaning and diagnostics, and for a
  container killed for its memory YARN's numbers (``statuses.py``).
- ``deregister_application`` unregisters with the final status and
  diagnostics, then deletes the staging directory and stops the JVM.
- With a keytab shipped by a client that logged in from it, a
  DelegationTokenManager (``delegation_tokens.py``) obtains new HDFS delegation
  tokens in this JVM in time; ``_distribute_tokens`` puts them where the job
  reads tokens (this JVM's user, later launch contexts, the token file of the
  processes this ApplicationMaster starts).

Threads: every py4j call runs on one of two single-thread executors (AMRM
calls on one, NodeManager calls on the other), never on the ResourceManager's
loop; the driver's own state is touched only on that loop.

Why one module of this size: the SPI methods and the py4j calls they make share
the driver's state (pending requests, held containers) and its two threads;
the pure rules are beside it (``container_requests.py``: requests and matching,
``statuses.py``: exit statuses, ``container_env.py``: the launch command).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from jobcluster.backends.yarn.container_env import ContainerEnvironment, launch_command, task_executor_argv
from jobcluster.backends.yarn.container_requests import (
    AllocatedContainer,
    ContainerRequest,
    ContainerResource,
    PendingContainerRequests,
    task_executor_resource,
)
from jobcluster.backends.yarn.delegation_tokens import (
    DelegationTokenManager,
    TokenRenewal,
    renewed_token_file,
    token_renewal_of,
    token_storage,
    write_token_file,
)
from jobcluster.backends.yarn.errors import StagingError, YarnClientError, YarnDeploymentError
from jobcluster.backends.yarn.gateway import JvmGateway
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.kerberos import client_java_options, is_kerberized, token_renewer
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor
from jobcluster.backends.yarn.options import yarn_options
from jobcluster.backends.yarn.staging import HdfsPaths, StagingDirectory, webhdfs_client
from jobcluster.backends.yarn.statuses import container_termination, final_application_status
from jobcluster.backends.yarn.tokens import AMRM_TOKEN
from jobcluster.backends.yarn.yarn_client import credentials_buffer, java_errors, java_local_resource
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.errors import JvmGatewayError, ResourceManagerError
from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.runtime.entrypoint.layout import SECRET_FILE
from jobcluster.runtime.resourcemanager.driver import (
    ResourceEventHandler,
    ResourceManagerDriver,
    TaskExecutorLaunchContext,
)

log = logging.getLogger(__name__)

_T = TypeVar("_T")

TASK_EXECUTOR_LOG_NAME = "taskmanager"
"""``<LOG_DIR>/taskmanager.out`` / ``.err`` in each TaskExecutor container (Flink's names)."""


@dataclass(frozen=True)
class YarnDriverSettings:
    """What the ApplicationMaster knows when it starts its driver.

    ``hadoop_conf_dir``: the Hadoop configuration (the container's ``HADOOP_CONF_DIR``);
    ``host``/``rest_port``/``tracking_url``: what the ApplicationMaster registers (the REST endpoint);
    ``heartbeat_interval``/``container_request_interval``: seconds (``yarn.heartbeat.interval``,
    ``yarn.heartbeat.container-request-interval``); ``local_resources``: the client's staged files,
    localized into every TaskExecutor container; ``environment``: added to each TaskExecutor's
    environment (below the launch context's: jobcluster's own variables win); ``staging``: the directory to delete after unregistering;
    ``gateway_log``: the JVM's log file; ``python``: the TaskExecutors' interpreter in their containers
    (``./environment/bin/python`` when the environment is shipped, else ``python.executable``), None
    to keep the launch context's; ``archived_python``: the interpreter of ``python.archives`` that ``python``
    (the skeleton's) links to, made in each container (``container_env.python_skeleton``). Bind host, cluster
    and log directory are each container's own (``container_env.launch_command``). ``token_renewal``: new HDFS
    delegation tokens from the shipped keytab (``delegation_tokens.py``), written to ``token_file`` too; None: the
    client's tokens only.
    """

    hadoop_conf_dir: str
    host: str
    rest_port: int
    tracking_url: str = ""
    heartbeat_interval: float = 5.0
    container_request_interval: float = 0.5
    local_resources: tuple[LocalResourceDescriptor, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    staging: StagingDirectory | None = None
    gateway_log: str | None = None
    python: str | None = None
    archived_python: str | None = None
    token_renewal: TokenRenewal | None = None
    token_file: Path | None = None


@dataclass
class _Worker:
    container_id: str
    node_id: str
    resource: ContainerResource
    released: bool = False


@dataclass(frozen=True)
class _Heartbeat:
    """One AMRM heartbeat's news, as plain data plus the Java containers to launch in."""

    allocated: list[tuple[AllocatedContainer, Any]]
    completed: list[tuple[str, int, str]]


class YarnResourceManagerDriver(ResourceManagerDriver):
    """Starts TaskExecutors in YARN containers (see the module docstring). ResourceIDs are container ids."""

    def __init__(self, settings: YarnDriverSettings, gateway_factory: Callable[[], JvmGateway] | None = None) -> None:
        self.settings = settings
        # the realm configuration KRB5_CONFIG names (else the node's /etc/krb5.conf): the keytab login of token renewal
        self._gateway_factory = gateway_factory or (
            lambda: JvmGateway(settings.hadoop_conf_dir, log_file=settings.gateway_log, java_options=client_java_options())
        )
        self._handler: ResourceEventHandler | None = None
        self._context: TaskExecutorLaunchContext | None = None
        self._gateway: JvmGateway | None = None
        self._amrm: Any = None
        self._nm: Any = None
        self._amrm_thread = ThreadPoolExecutor(1, thread_name_prefix="yarn-amrm")
        self._nm_thread = ThreadPoolExecutor(1, thread_name_prefix="yarn-nm")
        self._pending: PendingContainerRequests[asyncio.Future[tuple[AllocatedContainer, Any]]] | None = None
        self._workers: dict[str, _Worker] = {}
        self._wake = asyncio.Event()
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._closed = False
        self._workers_released = False
        self._callbacks: set[asyncio.Task[None]] = set()
        self._container_tokens: Any = None  # the ByteBuffer every TaskExecutor container gets; None: no tokens
        self._token_manager: DelegationTokenManager | None = None
        self.maximum: ContainerResource | None = None
        """The largest container YARN allocates (the registration's maximum capability)."""

    @property
    def containers(self) -> dict[str, ContainerResource]:
        """The containers this driver holds (not released, not completed), by id, as YARN allocated them."""
        return {w.container_id: w.resource for w in self._workers.values() if not w.released}

    # -- lifecycle ----------------------------------------------------------------

    async def initialize(self, handler: ResourceEventHandler, launch_context: TaskExecutorLaunchContext) -> None:
        """Start the JVM and the clients, register the ApplicationMaster, start heartbeating.

        Raises:
            ResourceManagerError: the JVM does not start or the ResourceManager refuses the registration.
        """
        self._handler = handler
        self._context = launch_context
        try:
            recovered = await self._on_amrm(self._start_and_register)
        except (JvmGatewayError, YarnClientError) as error:
            await self._close_gateway()
            raise ResourceManagerError(f"cannot register the YARN ApplicationMaster: {error}") from error
        assert self.maximum is not None
        self._pending = PendingContainerRequests(self.maximum)
        for worker in recovered:
            self._workers[worker.container_id] = worker
        if recovered:
            log.info("recovered %d containers of the previous attempt", len(recovered))
            await handler.on_previous_attempt_workers_recovered([w.container_id for w in recovered])
        self._heartbeat_task = asyncio.get_running_loop().create_task(self._heartbeat_loop(), name="yarn-amrm-heartbeat")
        if self.settings.token_renewal is not None:
            self._token_manager = DelegationTokenManager(self.settings.token_renewal, self._jvm_and_gateway, self._distribute_tokens)
            self._token_manager.start()

    def _start_and_register(self) -> list[_Worker]:
        self._gateway = self._gateway_factory()
        self._gateway.start()
        jvm = self._gateway.jvm
        s = self.settings
        with java_errors("cannot start YARN's AMRMClient and NMClient"):
            conf = jvm.org.apache.hadoop.yarn.conf.YarnConfiguration()
            self._amrm = jvm.org.apache.hadoop.yarn.client.api.AMRMClient.createAMRMClient()
            self._amrm.init(conf)
            self._amrm.start()
            self._nm = jvm.org.apache.hadoop.yarn.client.api.NMClient.createNMClient()
            self._nm.init(conf)
            self._nm.start()
        with java_errors("cannot read the ApplicationMaster's tokens"):
            self._container_tokens = task_executor_tokens(jvm)
        with java_errors(f"cannot register the ApplicationMaster ({s.host}:{s.rest_port})"):
            response = self._amrm.registerApplicationMaster(s.host, s.rest_port, s.tracking_url)
            maximum = response.getMaximumResourceCapability()
            self.maximum = ContainerResource(int(maximum.getMemorySize()), int(maximum.getVirtualCores()))
            return [_worker_of(c) for c in response.getContainersFromPreviousAttempts()]

    async def release_all_workers(self) -> None:
        """Release every container this driver holds and fail pending requests (and later ones);
        the ApplicationMaster stays registered."""
        self._workers_released = True
        await asyncio.gather(*(self.release_resource(r) for r in list(self._workers)))
        if self._pending is not None:
            for request in self._pending.cancel_all():
                if not request.done():
                    request.set_exception(ResourceManagerError("the workers were released before YARN allocated the container"))

    async def deregister_application(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        """Unregister with the FinalApplicationStatus of ``status`` (CANCELED → KILLED) and ``diagnostics``,
        then delete the staging directory. Failures are logged (the application has ended)."""
        await self._stop_heartbeat()
        final = final_application_status(status.name)
        if self._amrm is not None:
            try:
                await self._on_amrm(self._unregister, final, diagnostics or "")
                log.info("unregistered the ApplicationMaster with %s", final)
            except YarnClientError as error:
                log.warning("%s", error)
        if self.settings.staging is not None:
            try:
                await asyncio.to_thread(self.settings.staging.remove)
            except StagingError as error:
                log.warning("%s", error)

    async def close(self) -> None:
        """Stop the heartbeat, the token renewal, the AMRM and NM clients and the JVM."""
        await self._stop_heartbeat()
        if self._token_manager is not None:
            await self._token_manager.stop()
        await self._close_gateway()

    def _jvm_and_gateway(self) -> tuple[Any, Any]:
        gateway = self._gateway
        if gateway is None:
            raise JvmGatewayError("the ApplicationMaster's JVM is stopped")
        return gateway.jvm, gateway.gateway

    def _distribute_tokens(self, credentials: Any) -> None:
        """New tokens (Java ``Credentials``, on the token manager's thread) to wherever the job reads tokens: this JVM's
        user, the TaskExecutor containers launched from now on, and the token file of the processes this
        ApplicationMaster starts, which the driver agent hands to the running Spark driver and its executors."""
        jvm, _ = self._jvm_and_gateway()
        user = jvm.org.apache.hadoop.security.UserGroupInformation.getCurrentUser()
        user.addCredentials(credentials)
        self._container_tokens = task_executor_tokens(jvm)
        if self.settings.token_file is not None:
            write_token_file(self.settings.token_file, token_storage(jvm, without_amrm_token(jvm, user.getCredentials())))

    def _unregister(self, final: str, diagnostics: str) -> None:
        assert self._gateway is not None
        status = self._gateway.jvm.org.apache.hadoop.yarn.api.records.FinalApplicationStatus.valueOf(final)
        with java_errors("cannot unregister the ApplicationMaster"):
            self._amrm.unregisterApplicationMaster(status, diagnostics, self.settings.tracking_url)

    async def _close_gateway(self) -> None:
        if self._closed:
            return
        self._closed = True

        def close() -> None:
            for client in (self._nm, self._amrm):
                if client is not None:
                    with contextlib.suppress(Exception):
                        client.stop()
            if self._gateway is not None:
                self._gateway.close()

        await self._on_amrm(close)
        self._amrm = self._nm = self._gateway = None
        self._amrm_thread.shutdown(wait=False)
        self._nm_thread.shutdown(wait=False)

    # -- workers ------------------------------------------------------------------

    async def request_resource(self, spec: TaskExecutorProcessSpec) -> str:
        """Ask YARN for one container of ``spec``, launch the TaskExecutor in it, return the container id.

        Raises:
            ResourceManagerError: the container exceeds YARN's maximum, or the request or the launch failed.
        """
        assert self._pending is not None and self._context is not None, "driver not initialized"
        if self._workers_released:
            raise ResourceManagerError("the workers were released: no more containers are requested")
        allocated: asyncio.Future[tuple[AllocatedContainer, Any]] = asyncio.get_running_loop().create_future()
        try:
            request = self._pending.request(spec, allocated)
            await self._on_amrm(self._add_request, request)
        except (YarnDeploymentError, YarnClientError) as error:
            self._pending.cancel(allocated)
            raise ResourceManagerError(str(error)) from error
        log.info("requesting a container %s at priority %d", request.resource, request.priority)
        self._wake.set()
        try:
            container, java_container = await allocated
        except asyncio.CancelledError:
            if self._pending.cancel(allocated) is not None:
                with contextlib.suppress(YarnClientError, RuntimeError):
                    await self._on_amrm(self._remove_request, request)
            raise
        worker = _Worker(container.container_id, container.node_id, container.resource)
        self._workers[worker.container_id] = worker
        try:
            await self._on_nm(self._launch, java_container, self._launch_context_of(worker.container_id, spec))
        except YarnClientError as error:
            await self.release_resource(worker.container_id)
            raise ResourceManagerError(f"cannot launch a TaskExecutor in {worker.container_id}: {error}") from error
        log.info("launched a TaskExecutor in %s on %s %s", worker.container_id, worker.node_id, worker.resource)
        return worker.container_id

    def _launch_context_of(self, container_id: str, spec: TaskExecutorProcessSpec) -> tuple[str, dict[str, str]]:
        assert self._context is not None
        argv = task_executor_argv(self._context.command, self.settings.python)
        command = launch_command(argv, spec.dynamic_configs(), TASK_EXECUTOR_LOG_NAME, self.settings.archived_python)
        # a secret localized privately into the container stays out of the launch script the NodeManager writes;
        # the container's directories and host are set by that script (container_env.launch_command)
        shipped = any(r.key == SECRET_FILE for r in self.settings.local_resources)
        secret = None if shipped else self._context.secret
        return command, {**self.settings.environment, **self._context.settings.environment(container_id, secret=secret)}

    async def release_resource(self, resource_id: str) -> None:
        """Stop the container and give it back to YARN (idempotent); its completion is not reported."""
        worker = self._workers.get(resource_id)
        if worker is None or worker.released:
            return
        worker.released = True
        try:
            await self._on_nm(self._stop_container, worker)
        except YarnClientError as error:
            log.info("%s (it has ended already)", error)
        try:
            await self._on_amrm(self._release_container, worker.container_id)
        except YarnClientError as error:
            log.warning("%s", error)

    # -- the heartbeat ------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        assert self._pending is not None and self._handler is not None
        while True:
            self._wake.clear()
            try:
                news = await self._on_amrm(self._allocate)
            except YarnClientError as error:
                await self._handler.on_error(ResourceManagerError(f"the YARN heartbeat failed: {error}"))
                return
            await self._on_heartbeat(news)
            interval = self._pending.heartbeat_interval(self.settings.heartbeat_interval, self.settings.container_request_interval)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), interval)

    async def _on_heartbeat(self, news: _Heartbeat) -> None:
        assert self._pending is not None and self._handler is not None
        java_of = {c.container_id: java for c, java in news.allocated}
        matching = self._pending.match(c for c, _ in news.allocated)
        for container, spec, allocated in matching.accepted:
            # The synchronous AMRMClient asks again for every request not withdrawn (YARN-1902).
            await self._on_amrm(self._remove_request, ContainerRequest(container.priority, task_executor_resource(spec)))
            if allocated.done():  # the request was withdrawn (cancelled) meanwhile
                await self._on_amrm(self._release_container, container.container_id)
            else:
                allocated.set_result((container, java_of[container.container_id]))
        for container in matching.excess:
            log.info("returning the surplus container %s to YARN", container.container_id)
            await self._on_amrm(self._release_container, container.container_id)
        for container_id, exit_status, diagnostics in news.completed:
            worker = self._workers.pop(container_id, None)
            if worker is None or worker.released:
                continue
            termination = container_termination(container_id, exit_status, diagnostics)
            log.info("%s", termination.diagnostics)
            # Its own task: a handler that asks for a replacement must not wait on this very heartbeat.
            self._spawn(self._handler.on_worker_terminated(container_id, termination), f"terminated-{container_id}")

    def _spawn(self, callback: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(callback, name=name)
        self._callbacks.add(task)
        task.add_done_callback(self._callbacks.discard)

    async def _stop_heartbeat(self) -> None:
        """Stop the heartbeat, and wait for the handler callbacks it started."""
        task, self._heartbeat_task = self._heartbeat_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await asyncio.gather(*self._callbacks, return_exceptions=True)

    # -- py4j calls (on the executors) ---------------------------------------------

    async def _on_amrm(self, call: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._amrm_thread, call, *args)

    async def _on_nm(self, call: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._nm_thread, call, *args)

    def _java_request(self, request: ContainerRequest) -> Any:
        assert self._gateway is not None
        jvm = self._gateway.jvm
        records = jvm.org.apache.hadoop.yarn.api.records
        resource = records.Resource.newInstance(request.resource.memory_mib, request.resource.vcores)
        priority = records.Priority.newInstance(request.priority)
        return jvm.org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest(resource, None, None, priority)

    def _add_request(self, request: ContainerRequest) -> None:
        with java_errors(f"cannot request a container {request.resource}"):
            self._amrm.addContainerRequest(self._java_request(request))

    def _remove_request(self, request: ContainerRequest) -> None:
        with java_errors(f"cannot withdraw a container request {request.resource}"):
            self._amrm.removeContainerRequest(self._java_request(request))

    def _allocate(self) -> _Heartbeat:
        with java_errors("cannot heartbeat to the ResourceManager"):
            response = self._amrm.allocate(0.0)
            allocated = []
            for c in response.getAllocatedContainers():
                resource = c.getResource()
                container = AllocatedContainer(
                    container_id=str(c.getId().toString()),
                    node_id=str(c.getNodeId().toString()),
                    priority=int(c.getPriority().getPriority()),
                    resource=ContainerResource(int(resource.getMemorySize()), int(resource.getVirtualCores())),
                )
                allocated.append((container, c))
            completed = [
                (str(s.getContainerId().toString()), int(s.getExitStatus()), str(s.getDiagnostics() or ""))
                for s in response.getCompletedContainersStatuses()
            ]
        return _Heartbeat(allocated, completed)

    def _launch(self, java_container: Any, command_and_env: tuple[str, dict[str, str]]) -> None:
        assert self._gateway is not None
        jvm = self._gateway.jvm
        command, env = command_and_env
        container_id = str(java_container.getId().toString())
        with java_errors(f"cannot start {container_id}"):
            local = {r.key: java_local_resource(jvm, r) for r in self.settings.local_resources}
            ctx = jvm.org.apache.hadoop.yarn.api.records.ContainerLaunchContext.newInstance(
                local, env, [command], None, self._fresh_tokens(), None
            )
            self._nm.startContainer(java_container, ctx)

    def _fresh_tokens(self) -> Any:
        # Each launch reads the buffer from its start: a ByteBuffer's position is shared state.
        return None if self._container_tokens is None else self._container_tokens.duplicate()

    def _stop_container(self, worker: _Worker) -> None:
        assert self._gateway is not None
        records = self._gateway.jvm.org.apache.hadoop.yarn.api.records
        with java_errors(f"cannot stop {worker.container_id}"):
            self._nm.stopContainer(records.ContainerId.fromString(worker.container_id), records.NodeId.fromString(worker.node_id))

    def _release_container(self, container_id: str) -> None:
        assert self._gateway is not None
        records = self._gateway.jvm.org.apache.hadoop.yarn.api.records
        with java_errors(f"cannot release {container_id}"):
            self._amrm.releaseAssignedContainer(records.ContainerId.fromString(container_id))


def task_executor_tokens(jvm: Any) -> Any:
    """The tokens of this ApplicationMaster's user that its TaskExecutor containers get (Flink's
    ``YarnResourceManagerDriver``, Spark's ``ExecutorRunnable``): :func:`without_amrm_token` of the current user's
    credentials (on a Kerberized cluster, the client's HDFS delegation tokens), as a launch context's ``ByteBuffer``;
    None when that leaves none (a cluster without Kerberos)."""
    credentials = jvm.org.apache.hadoop.security.UserGroupInformation.getCurrentUser().getCredentials()
    passed = without_amrm_token(jvm, credentials)
    if passed.numberOfTokens() == 0 and passed.numberOfSecretKeys() == 0:
        return None
    return credentials_buffer(jvm, passed)


def without_amrm_token(jvm: Any, credentials: Any) -> Any:
    """A copy of the Java ``Credentials`` ``credentials`` (tokens and secret keys) without the ApplicationMaster's
    own AMRMToken, which no other container may hold."""
    # Copied one by one: Credentials.removeToken is Hadoop 3.4's, and PySpark 3.5 ships Hadoop 3.3's client.
    passed = jvm.org.apache.hadoop.security.Credentials()
    token_map = credentials.getTokenMap()
    for alias in list(token_map.keySet()):
        token = token_map.get(alias)
        if str(token.getKind().toString()) != AMRM_TOKEN:
            passed.addToken(alias, token)
    secret_keys = credentials.getSecretKeyMap()
    for alias in list(secret_keys.keySet()):
        passed.addSecretKey(alias, secret_keys.get(alias))
    return passed


def _worker_of(java_container: Any) -> _Worker:
    resource = java_container.getResource()
    return _Worker(
        container_id=str(java_container.getId().toString()),
        node_id=str(java_container.getNodeId().toString()),
        resource=ContainerResource(int(resource.getMemorySize()), int(resource.getVirtualCores())),
    )


def task_executor_environment(config: Configuration, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a TaskExecutor container gets besides its launch context: the user's ``containerized.taskmanager.env.*``
    (Flink's prefix), then the ApplicationMaster's Hadoop configuration directory."""
    environ = os.environ if environ is None else environ
    inherited = {k: environ[k] for k in ("HADOOP_CONF_DIR",) if environ.get(k)}
    return {**config.prefixed(options.CONTAINERIZED_TASK_MANAGER_ENV), **inherited}


def create_driver(config: Configuration, rest_url: str) -> YarnResourceManagerDriver:
    """The driver of the ApplicationMaster this process runs in, registering ``rest_url`` with YARN.

    Reads the container's environment (``container_env.py``: node, directories, the staged files, the
    staging base, the containers' Python) and the ``yarn.*`` heartbeat intervals of ``config``.

    Raises:
        YarnDeploymentError: not in a YARN container, or the client did not give the container what it needs.
        YarnConfigurationError: a ``yarn.*`` option is out of range.
    """
    env = ContainerEnvironment.from_environ(os.environ)
    if not env.hadoop_conf_dir or env.staging_base is None:
        raise YarnDeploymentError(
            "the ApplicationMaster's container lacks HADOOP_CONF_DIR or the staging base: "
            "it must be started by jobcluster's YARN client, on a NodeManager that passes HADOOP_CONF_DIR on"
        )
    yarn = yarn_options(config, job_name="")
    url = urlsplit(rest_url)
    hadoop_conf = HadoopConfiguration.load(env.hadoop_conf_dir)
    renewal = token_renewal_of(config, token_renewer(hadoop_conf), Path.cwd()) if is_kerberized(hadoop_conf) else None
    # before anything reads the container's tokens, and before the program starts: all of them read the renewed file
    token_file = renewed_token_file(Path.cwd(), os.environ) if renewal is not None else None
    paths = HdfsPaths(webhdfs_client(hadoop_conf), hadoop_conf.default_fs)
    return YarnResourceManagerDriver(
        YarnDriverSettings(
            hadoop_conf_dir=env.hadoop_conf_dir,
            host=url.hostname or env.node_host,
            rest_port=url.port or 0,
            tracking_url=rest_url,
            heartbeat_interval=yarn.heartbeat_interval,
            container_request_interval=yarn.container_request_interval,
            local_resources=env.local_resources,
            environment=task_executor_environment(config),
            staging=StagingDirectory(paths, env.staging_base, env.application_id),
            gateway_log=str(Path(env.log_dir) / "gateway.log"),
            python=env.python,
            archived_python=env.archived_python,
            token_renewal=renewal,
            token_file=token_file,
        )
    )
