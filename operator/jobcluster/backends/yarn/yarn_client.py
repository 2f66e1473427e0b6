"""The client side of YARN: YarnClient through the py4j gateway, returning plain Python data.

What the descriptor needs from the ResourceManager, and nothing more:
create an application (with the maximum container it may request), read the
cluster's nodes and queues for the ClusterSpecification check, submit the
ApplicationMaster container, follow its ApplicationReport, kill it, and list
applications by type.

Why through Java: YARN's ApplicationClientProtocol is Hadoop RPC, and the
Java YarnClient is its reference implementation (and carries security when
it is added). The JVM is the shared one of ``gateway.py``.

Bounded connection: Hadoop's defaults retry an unreachable ResourceManager
for 15 minutes. The client's configuration is overridden in the JVM (not in
the user's files) so that the first call fails within ``connect_timeout``
seconds with :class:`YarnClientError` naming the address
(``yarn.resourcemanager.connect.max-wait.ms`` plus one IPC connect timeout).

Errors: a Java exception from a call becomes :class:`YarnClientError` with
the Java message and the Py4JJavaError as cause.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from py4j.protocol import Py4JError, Py4JJavaError

from jobcluster.backends.yarn.container_requests import ContainerResource
from jobcluster.backends.yarn.errors import YarnClientError
from jobcluster.backends.yarn.gateway import JvmGateway
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor
from jobcluster.backends.yarn.proxy_users import refused
from jobcluster.backends.yarn.statuses import explained_application_diagnostics, finish_time_of
from jobcluster.backends.yarn.validation import NodeCapacity, YarnClusterResources

DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds until an unreachable ResourceManager is reported (issue 9: "a clear error within 30 s")."""

REPORT_POLL_INTERVAL = 0.25
"""Seconds between two ApplicationReports while following an application (Flink's 250 ms)."""

TERMINAL_STATES = frozenset({"FINISHED", "FAILED", "KILLED"})
"""YarnApplicationStates after which an application never runs again."""

ACTIVE_STATES = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING")


@dataclass(frozen=True)
class ApplicationReport:
    """The parts of YARN's ApplicationReport jobcluster uses.

    ``state``: YarnApplicationState (``ACCEPTED``, ``RUNNING``, ``FINISHED``, ...);
    ``final_status``: FinalApplicationStatus (``UNDEFINED`` until the
    ApplicationMaster unregisters, then ``SUCCEEDED``/``FAILED``/``KILLED``);
    ``host``/``rpc_port``: what the ApplicationMaster registered (jobcluster:
    the REST endpoint); ``tracking_url``: its web URL; ``finish_time``: RFC 3339
    UTC once it ended, else ``""``; ``start_time_ms``: when it was submitted
    (milliseconds since the epoch; 0 when not known); ``user``: the Hadoop user
    (short name) it runs as, ``""`` when not known.
    """

    application_id: str
    name: str
    application_type: str
    queue: str
    state: str
    final_status: str
    diagnostics: str
    host: str
    rpc_port: int
    tracking_url: str
    tags: tuple[str, ...] = ()
    finish_time: str = ""
    start_time_ms: int = 0
    user: str = ""

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass(frozen=True)
class NewApplication:
    """An application id from the ResourceManager, not submitted yet, and the largest container it may ask for."""

    application_id: str
    maximum: ContainerResource
    handle: Any = field(repr=False, compare=False)  # the Java YarnClientApplication


@dataclass(frozen=True)
class ApplicationMasterSpec:
    """Everything the ApplicationSubmissionContext of a job cluster carries, as plain data.

    ``command``: the AM's shell command (the NodeManager runs it with
    ``bash -c``; ``<LOG_DIR>`` expands to the container's log directory);
    ``resource``: the AM container; ``priority``/``node_label``: None for
    YARN's defaults; ``attempts``: maximum ApplicationMaster attempts.
    """

    name: str
    application_type: str
    resource: ContainerResource
    command: str
    environment: dict[str, str] = field(default_factory=dict)
    local_resources: tuple[LocalResourceDescriptor, ...] = ()
    queue: str | None = None
    priority: int | None = None
    node_label: str | None = None
    tags: tuple[str, ...] = ()
    attempts: int = 1
    tokens: Mapping[str, str] = field(default_factory=dict)
    """The container's credentials: Hadoop tokens by alias, each URL-safe encoded (``tokens.Token.url_string``);
    on a Kerberized cluster the client's HDFS delegation tokens (``kerberos.py``), else none."""


def bounded_connect_settings(connect_timeout: float) -> dict[str, str]:
    """Hadoop client settings that make an unreachable ResourceManager fail within about ``connect_timeout`` s:
    RMProxy retries for 2/3 of it, each IPC connect attempt waits at most 1/6 of it and is not retried inside."""
    max_wait_ms = int(connect_timeout * 1000 * 2 / 3)
    attempt_ms = int(connect_timeout * 1000 / 6)
    return {
        "yarn.resourcemanager.connect.max-wait.ms": str(max_wait_ms),
        "yarn.resourcemanager.connect.retry-interval.ms": str(min(1000, max_wait_ms)),
        "ipc.client.connect.timeout": str(attempt_ms),
        "ipc.client.connect.max.retries": "0",
        "ipc.client.connect.max.retries.on.timeouts": "0",
    }


@contextmanager
def java_errors(what: str) -> Iterator[None]:
    """Turn py4j's errors (a Java exception, a broken or timed-out gateway) into YarnClientError."""
    try:
        yield
    except Py4JJavaError as error:
        raise YarnClientError(f"{what}: {_java_message(error)}") from error
    except Py4JError as error:
        raise YarnClientError(f"{what}: the JVM gateway failed ({error})") from error


def _java_message(error: Py4JJavaError) -> str:
    try:
        return str(error.java_exception.toString())
    except Py4JError:
        return str(error)


def act_as(gateway: JvmGateway, user: str, proxy: bool = False) -> None:
    """Make ``user`` the Hadoop login user of ``gateway``'s JVM: what the JVM submits, kills and writes is that
    user's. Called before any YarnClient of the JVM is made.

    Without ``proxy``, as ``HADOOP_USER_NAME`` would for a whole process (a cluster without Kerberos takes the name a
    client gives). With ``proxy`` (a Kerberized cluster), as ``HADOOP_PROXY_USER`` would: the JVM's own login (its
    Kerberos ticket) stays the real user and ``user`` is a proxy user on top of it
    (``UserGroupInformation.createProxyUser``); each server then checks its ``hadoop.proxyuser.*`` rules.

    Raises:
        YarnClientError: Java refuses (with ``proxy``: the JVM has no Kerberos login).
    """
    ugi = gateway.jvm.org.apache.hadoop.security.UserGroupInformation
    with java_errors(f"cannot act as Hadoop user {user}"):
        if not proxy:
            ugi.setLoginUser(ugi.createRemoteUser(user))
            return
        login = ugi.getLoginUser()
        # A JVM that inherited HADOOP_PROXY_USER logged in as a proxy user already: impersonate from its real user.
        real = login.getRealUser() or login
        ugi.setLoginUser(ugi.createProxyUser(user, real))


class YarnClient:
    """A started Java YarnClient on ``gateway``'s JVM. Close it with :meth:`close` (or ``with``)."""

    def __init__(self, gateway: JvmGateway, resourcemanager_address: str = "", connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        self.gateway = gateway
        self.jvm = gateway.jvm
        self.resourcemanager_address = resourcemanager_address
        self.records = self.jvm.org.apache.hadoop.yarn.api.records
        with java_errors("cannot start the YARN client"):
            conf = self.jvm.org.apache.hadoop.yarn.conf.YarnConfiguration()
            for key, value in bounded_connect_settings(connect_timeout).items():
                conf.set(key, value)
            self.conf = conf
            self._client = self.jvm.org.apache.hadoop.yarn.client.api.YarnClient.createYarnClient()
            self._client.init(conf)
            self._client.start()

    def close(self) -> None:
        with java_errors("cannot stop the YARN client"):
            self._client.stop()

    def __enter__(self) -> YarnClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _what(self, action: str) -> str:
        at = f" at {self.resourcemanager_address}" if self.resourcemanager_address else ""
        return f"YARN ResourceManager{at}: cannot {action}"

    # -- the cluster -----------------------------------------------------------

    def create_application(self) -> NewApplication:
        """A new application id and the maximum container (``yarn.scheduler.maximum-allocation-*``)."""
        with java_errors(self._what("create an application")):
            app = self._client.createApplication()
            response = app.getNewApplicationResponse()
            maximum = response.getMaximumResourceCapability()
            return NewApplication(
                application_id=str(response.getApplicationId().toString()),
                maximum=ContainerResource(int(maximum.getMemorySize()), int(maximum.getVirtualCores())),
                handle=app,
            )

    def cluster_resources(self, maximum: ContainerResource) -> YarnClusterResources:
        """The RUNNING nodes (capability and use), the queue names and the client's minimum allocation."""
        with java_errors(self._what("read the nodes and queues")):
            running = self.gateway.gateway.new_array(self.records.NodeState, 1)
            running[0] = self.records.NodeState.RUNNING
            nodes = []
            for report in self._client.getNodeReports(running):
                capability, used = report.getCapability(), report.getUsed()
                nodes.append(
                    NodeCapacity(
                        memory_mib=int(capability.getMemorySize()),
                        vcores=int(capability.getVirtualCores()),
                        used_memory_mib=int(used.getMemorySize()) if used is not None else 0,
                    )
                )
            queues = tuple(str(q.getQueueName()) for q in self._client.getAllQueues())
            minimum = int(self.conf.getInt("yarn.scheduler.minimum-allocation-mb", 1024))
        return YarnClusterResources(maximum=maximum, minimum_allocation_mb=minimum, nodes=tuple(nodes), queues=queues)

    # -- one application ---------------------------------------------------------

    def submit(self, application: NewApplication, spec: ApplicationMasterSpec) -> None:
        """Submit ``application`` with the ApplicationMaster of ``spec``."""
        records = self.records
        with java_errors(self._what(f"submit {application.application_id}")):
            ctx = application.handle.getApplicationSubmissionContext()
            ctx.setApplicationName(spec.name)
            ctx.setApplicationType(spec.application_type)
            ctx.setResource(records.Resource.newInstance(spec.resource.memory_mib, spec.resource.vcores))
            ctx.setMaxAppAttempts(spec.attempts)
            if spec.queue:
                ctx.setQueue(spec.queue)
            if spec.priority is not None:
                ctx.setPriority(records.Priority.newInstance(spec.priority))
            if spec.node_label:
                ctx.setNodeLabelExpression(spec.node_label)
            if spec.tags:
                tags = self.jvm.java.util.HashSet()
                for tag in spec.tags:
                    tags.add(tag)
                ctx.setApplicationTags(tags)
            local = {r.key: self.local_resource(r) for r in spec.local_resources}
            tokens = java_token_buffer(self.jvm, spec.tokens) if spec.tokens else None
            ctx.setAMContainerSpec(
                records.ContainerLaunchContext.newInstance(local, dict(spec.environment), [spec.command], None, tokens, None)
            )
            self._client.submitApplication(ctx)

    def local_resource(self, descriptor: LocalResourceDescriptor) -> Any:
        """The Java ``LocalResource`` of ``descriptor``."""
        return java_local_resource(self.jvm, descriptor)

    def report(self, application_id: str) -> ApplicationReport:
        with java_errors(self._what(f"read the report of {application_id}")):
            return _report(self._client.getApplicationReport(self._application_id(application_id)))

    def follow(
        self,
        application_id: str,
        until: Callable[[ApplicationReport], bool] = lambda r: r.is_terminal,
        on_change: Callable[[ApplicationReport], None] | None = None,
        timeout: float | None = None,
    ) -> ApplicationReport:
        """See :func:`follow_reports`."""
        return follow_reports(lambda: self.report(application_id), until, on_change, timeout)

    def check_access(self) -> None:
        """One cheap call (the cluster's metrics): the ResourceManager authorizes the connection's user (a proxy
        user's impersonation included) when the first call opens it.

        Raises:
            ProxyUserRefusedError: the ResourceManager refuses the impersonation.
            YarnClientError: the ResourceManager cannot be reached or refuses otherwise.
        """
        try:
            with java_errors(self._what("reach")):
                self._client.getYarnClusterMetrics()
        except YarnClientError as error:
            refusal = refused(str(error), f"The ResourceManager at {self.resourcemanager_address}")
            if refusal is not None:
                raise refusal from error
            raise

    def kill(self, application_id: str) -> None:
        """Kill the application (no-op for one that has ended)."""
        with java_errors(self._what(f"kill {application_id}")):
            self._client.killApplication(self._application_id(application_id))

    def applications(self, application_types: Iterable[str], states: Iterable[str] = ACTIVE_STATES) -> list[ApplicationReport]:
        """Reports of the applications of ``application_types`` in ``states`` (default: not finished)."""
        with java_errors(self._what("list applications")):
            types = self.jvm.java.util.HashSet()
            for t in application_types:
                types.add(t)
            state_enum = self.jvm.java.lang.Class.forName("org.apache.hadoop.yarn.api.records.YarnApplicationState")
            wanted = self.jvm.java.util.EnumSet.noneOf(state_enum)
            for s in states:
                wanted.add(self.records.YarnApplicationState.valueOf(s))
            return [_report(r) for r in self._client.getApplications(types, wanted)]

    def _application_id(self, application_id: str) -> Any:
        return self.records.ApplicationId.fromString(application_id)


def follow_reports(
    report: Callable[[], ApplicationReport],
    until: Callable[[ApplicationReport], bool] = lambda r: r.is_terminal,
    on_change: Callable[[ApplicationReport], None] | None = None,
    timeout: float | None = None,
    poll_interval: float = REPORT_POLL_INTERVAL,
) -> ApplicationReport:
    """Poll one application's ``report()`` until ``until(report)`` (default: a terminal state); ``on_change`` sees
    every report whose state or final status differs from the one before, as it happens.

    Raises:
        YarnClientError: the ResourceManager fails, the application ends before ``until``, or ``timeout`` seconds
            pass (the application is left as it is).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    last: tuple[str, str] | None = None
    while True:
        current = report()
        if (current.state, current.final_status) != last:
            last = (current.state, current.final_status)
            if on_change is not None:
                on_change(current)
        if until(current):
            return current
        if current.is_terminal:
            raise YarnClientError(
                f"The YARN application {current.application_id} ended {current.state} ({current.final_status}) before it got "
                f"there. Diagnostics from YARN: {explained_application_diagnostics(current.diagnostics)}"
            )
        if deadline is not None and time.monotonic() > deadline:
            raise YarnClientError(f"The YARN application {current.application_id} is still {current.state} after {timeout:g} s")
        time.sleep(poll_interval)


def java_token_buffer(jvm: Any, tokens: Mapping[str, str]) -> Any:
    """``tokens`` (alias: URL-safe encoded token) as a ContainerLaunchContext's tokens: Hadoop ``Credentials``
    written with ``writeTokenStorageToStream`` into a ``ByteBuffer``, as Flink's ``Utils.setTokensFor`` and Spark's
    ``Client.setupSecurityToken`` do."""
    credentials = jvm.org.apache.hadoop.security.Credentials()
    for alias, encoded in tokens.items():
        token = jvm.org.apache.hadoop.security.token.Token()
        token.decodeFromUrlString(encoded)
        credentials.addToken(jvm.org.apache.hadoop.io.Text(alias), token)
    return credentials_buffer(jvm, credentials)


def credentials_buffer(jvm: Any, credentials: Any) -> Any:
    """The Java ``Credentials`` ``credentials`` as the ``ByteBuffer`` a ContainerLaunchContext carries."""
    out = jvm.org.apache.hadoop.io.DataOutputBuffer()
    credentials.writeTokenStorageToStream(out)
    return jvm.java.nio.ByteBuffer.wrap(out.getData(), 0, out.getLength())


def java_local_resource(jvm: Any, descriptor: LocalResourceDescriptor) -> Any:
    """The Java ``LocalResource`` of ``descriptor`` (for an ApplicationMaster's or a TaskExecutor's container)."""
    records = jvm.org.apache.hadoop.yarn.api.records
    return records.LocalResource.newInstance(
        records.URL.fromURI(jvm.java.net.URI(descriptor.path)),
        records.LocalResourceType.valueOf(str(descriptor.type)),
        records.LocalResourceVisibility.valueOf(str(descriptor.visibility)),
        descriptor.size,
        descriptor.modification_time,
    )


def _report(java: Any) -> ApplicationReport:
    return ApplicationReport(
        application_id=str(java.getApplicationId().toString()),
        name=str(java.getName()),
        application_type=str(java.getApplicationType()),
        queue=str(java.getQueue()),
        state=str(java.getYarnApplicationState().toString()),
        final_status=str(java.getFinalApplicationStatus().toString()),
        diagnostics=str(java.getDiagnostics() or ""),
        host=str(java.getHost() or ""),
        rpc_port=int(java.getRpcPort()),
        tracking_url=str(java.getTrackingUrl() or ""),
        tags=tuple(sorted(str(t) for t in java.getApplicationTags())),
        finish_time=finish_time_of(int(java.getFinishTime())),
        start_time_ms=int(java.getStartTime()),
        user=str(java.getUser() or ""),
    )
