"""The configuration of the single-machine Hadoop test cluster, as data.

Why a module of its own: what the cluster *is* (which ports, which limits,
which checks are off and why) is decided here, in pure functions that return
dicts and strings, and can be read and tested without starting a JVM.
``cluster.py`` only writes these files and runs the daemons.

Every daemon binds 127.0.0.1 only, on ports picked free at start, so several
test sessions (or a debugging cluster next to a test run) never collide and
nothing is reachable from outside the machine.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass, fields
from pathlib import Path
from xml.sax.saxutils import escape

LOOPBACK = "127.0.0.1"

# Whatever YARN or HDFS does not need to be big is small: tests start four
# daemons next to Spark, on a 2-core machine.
MIN_ALLOCATION_MB = 256
"""yarn.scheduler.minimum-allocation-mb: small, so TaskManager-sized requests
are rounded up as little as possible."""

CONTAINER_MONITOR_INTERVAL_MS = 1000
"""yarn.nodemanager.container-monitor.interval-ms: how often the NodeManager
measures each container's process tree against its size (YARN's default: 3000)."""


@dataclass(frozen=True)
class Ports:
    """Every TCP port the four daemons bind, each on 127.0.0.1."""

    namenode_rpc: int
    namenode_http: int
    datanode_data: int
    datanode_http: int
    datanode_ipc: int
    rm_client: int
    rm_scheduler: int
    rm_tracker: int
    rm_admin: int
    rm_webapp: int
    nm_rpc: int
    nm_localizer: int
    nm_webapp: int

    @classmethod
    def allocate(cls) -> Ports:
        """Ask the kernel for distinct free ports (all held open at once, then
        released). A port can be taken by someone else before the daemon binds
        it; the daemon then fails fast with a BindException in its log."""
        socks = []
        try:
            for _ in fields(cls):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.bind((LOOPBACK, 0))
                socks.append(s)
            return cls(*(s.getsockname()[1] for s in socks))
        finally:
            for s in socks:
                s.close()


def free_port() -> int:
    """One free port on 127.0.0.1, for a server started after the cluster
    (HttpFS); the same caveat as ``Ports.allocate``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Layout:
    """Where one cluster keeps its files: ``base/{conf,logs,data}``, and
    ``base/httpfs-conf`` once HttpFS is started.

    ``logs`` holds everything worth keeping after a failed test (daemon logs,
    container logs); ``data`` (HDFS blocks, NodeManager local dirs) never is.
    """

    base: Path

    @property
    def conf_dir(self) -> Path:
        return self.base / "conf"

    @property
    def log_dir(self) -> Path:
        return self.base / "logs"

    @property
    def data_dir(self) -> Path:
        return self.base / "data"

    @property
    def httpfs_conf_dir(self) -> Path:
        """HttpFS's own configuration (httpfs.config.dir), apart from
        HADOOP_CONF_DIR, which clients of the cluster read."""
        return self.base / "httpfs-conf"

    @property
    def httpfs_temp_dir(self) -> Path:
        return self.data_dir / "httpfs-temp"


@dataclass(frozen=True)
class NodeResources:
    """What the one NodeManager offers to YARN.

    Sized for several realistic containers (1-2 GiB) at once rather than for
    the machine: vcores are overcommitted (YARN does not check them against
    the CPUs), and on a small machine memory is too. Test job clusters are
    mostly idle JVMs, and YARN enforces each container's own size (physical
    memory, see ``yarn_site``), not the node's sum, so overcommit costs
    nothing until containers really use the memory.
    """

    memory_mb: int
    vcores: int

    @classmethod
    def for_this_machine(cls) -> NodeResources:
        """Half the RAM, at least 4 GiB and at most 8 GiB; 2 vcores per core,
        at least 4 and at most 16."""
        try:
            total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
        except (ValueError, OSError):
            total_mb = 8192
        memory = max(4096, min(8192, total_mb // 2))
        memory -= memory % MIN_ALLOCATION_MB
        vcores = max(4, min(16, 2 * (os.cpu_count() or 2)))
        return cls(memory_mb=memory, vcores=vcores)


def _addr(port: int, host: str = LOOPBACK) -> str:
    return f"{host}:{port}"


def core_site(ports: Ports, layout: Layout, user: str, host: str = LOOPBACK) -> dict[str, str]:
    """``user``: who runs the daemons (and HttpFS). ``host``: the name every
    address is written with (the Kerberized cluster's is ``localhost``, see
    secureconf.py); it must resolve to 127.0.0.1."""
    return {
        "fs.defaultFS": f"hdfs://{_addr(ports.namenode_rpc, host)}",
        "hadoop.tmp.dir": str(layout.data_dir / "tmp"),
        # Clients (and the daemons talking to each other) give up on a dead
        # peer after ~3 s per attempt instead of the default ~10 s.
        "ipc.client.connect.max.retries": "3",
        "ipc.client.connect.retry.interval": "1000",
        # HttpFS calls the NameNode as the user its process runs as, on behalf
        # of the request's user.name (a proxy user, even when both are the
        # same): the NameNode refuses that unless this user may impersonate.
        f"hadoop.proxyuser.{user}.hosts": "*",
        f"hadoop.proxyuser.{user}.groups": "*",
        # Hadoop's "pseudo" HTTP authentication, as sites without Kerberos run it: a web request acts as its
        # `user.name`. The ResourceManager's REST API submits and kills only for a named user (an anonymous
        # caller is refused), so a client that reaches YARN through its web port alone needs it.
        "hadoop.http.filter.initializers": "org.apache.hadoop.security.AuthenticationFilterInitializer",
        "hadoop.http.authentication.type": "simple",
        "hadoop.http.authentication.signature.secret.file": str(layout.base / "conf" / "http-signature-secret"),
    }


def hdfs_site(ports: Ports, layout: Layout, host: str = LOOPBACK) -> dict[str, str]:
    return {
        "dfs.replication": "1",
        "dfs.namenode.name.dir": str(layout.data_dir / "namenode"),
        "dfs.datanode.data.dir": str(layout.data_dir / "datanode"),
        "dfs.namenode.rpc-address": _addr(ports.namenode_rpc, host),
        "dfs.namenode.http-address": _addr(ports.namenode_http, host),
        "dfs.datanode.address": _addr(ports.datanode_data, host),
        "dfs.datanode.http.address": _addr(ports.datanode_http, host),
        "dfs.datanode.ipc.address": _addr(ports.datanode_ipc, host),
        # The DataNode registers as ``host`` (127.0.0.1 by default), so WebHDFS
        # redirects clients to a loopback address rather than to this
        # machine's hostname.
        "dfs.datanode.hostname": host,
        "dfs.namenode.datanode.registration.ip-hostname-check": "false",
        # Leave safe mode as soon as the (empty) namespace is loaded.
        "dfs.namenode.safemode.extension": "0",
        "dfs.namenode.safemode.min.datanodes": "0",
        # A nearly full disk (CI runners are often 80-99 % full) must not push
        # the NameNode into safe mode or the DataNode off its only volume.
        "dfs.namenode.resource.du.reserved": str(1 << 20),
        "dfs.datanode.du.reserved": "0",
        # Register and report blocks quickly.
        "dfs.heartbeat.interval": "1",
        "dfs.namenode.handler.count": "5",
        "dfs.datanode.handler.count": "3",
    }


#: The test NodeManager's yarn.nodemanager.env-whitelist: Hadoop 3.3's default, and JAVA_TOOL_OPTIONS.
NM_ENV_WHITELIST = (
    "JAVA_HOME,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_CONF_DIR,CLASSPATH_PREPEND_DISTCACHE,HADOOP_YARN_HOME,HADOOP_HOME,"
    "PATH,LANG,TZ,JAVA_TOOL_OPTIONS"
)

#: The test NodeManager's yarn.nodemanager.vmem-pmem-ratio (Hadoop's default: 2.1); see yarn_site.
VMEM_PMEM_RATIO = 4


def yarn_site(ports: Ports, layout: Layout, resources: NodeResources, host: str = LOOPBACK) -> dict[str, str]:
    return {
        # ResourceManager
        "yarn.resourcemanager.hostname": host,
        "yarn.resourcemanager.address": _addr(ports.rm_client, host),
        "yarn.resourcemanager.scheduler.address": _addr(ports.rm_scheduler, host),
        "yarn.resourcemanager.resource-tracker.address": _addr(ports.rm_tracker, host),
        "yarn.resourcemanager.admin.address": _addr(ports.rm_admin, host),
        "yarn.resourcemanager.webapp.address": _addr(ports.rm_webapp, host),
        "yarn.scheduler.minimum-allocation-mb": str(MIN_ALLOCATION_MB),
        "yarn.scheduler.maximum-allocation-mb": str(resources.memory_mb),
        "yarn.scheduler.minimum-allocation-vcores": "1",
        "yarn.scheduler.maximum-allocation-vcores": str(resources.vcores),
        "yarn.resourcemanager.client.thread-count": "5",
        "yarn.resourcemanager.scheduler.client.thread-count": "5",
        "yarn.resourcemanager.resource-tracker.client.thread-count": "5",
        # Clients built on this conf (YarnClient, AMRMClient) fail within a
        # minute when the RM or an NM is gone, not after the default 15/3 min.
        "yarn.resourcemanager.connect.max-wait.ms": "60000",
        "yarn.resourcemanager.connect.retry-interval.ms": "1000",
        "yarn.client.nodemanager-connect.max-wait-ms": "60000",
        "yarn.client.nodemanager-connect.retry-interval-ms": "1000",
        # NodeManager
        "yarn.nodemanager.hostname": host,
        "yarn.nodemanager.address": _addr(ports.nm_rpc, host),
        "yarn.nodemanager.localizer.address": _addr(ports.nm_localizer, host),
        "yarn.nodemanager.webapp.address": _addr(ports.nm_webapp, host),
        "yarn.nodemanager.resource.memory-mb": str(resources.memory_mb),
        "yarn.nodemanager.resource.cpu-vcores": str(resources.vcores),
        # Containers run as processes of the NodeManager's user (no setuid
        # container-executor binary, no cgroups, no Docker).
        "yarn.nodemanager.container-executor.class": ("org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor"),
        # A container's environment is its own plus the NodeManager's variables on this list: Hadoop's default list
        # and JAVA_TOOL_OPTIONS, so that the test session's JVM options (tests/conftest.py) reach the containers' JVMs.
        "yarn.nodemanager.env-whitelist": NM_ENV_WHITELIST,
        # Physical memory is enforced as on a production cluster: the
        # NodeManager's container monitor kills a container whose process tree
        # (resident pages of every process in it) is over its size with exit
        # status -104 (KILLED_EXCEEDED_PMEM). That is what proves the memory
        # model's sizes hold. Virtual memory is checked too, Hadoop's default
        # (exit status -103, KILLED_EXCEEDED_VMEM), at 4 times a container's
        # size instead of Hadoop's 2.1: the shipped JobManager (a 1792 MiB
        # ApplicationMaster) reserves about 3.7 GiB of address space, at the
        # limit of 2.1 (docs/deployment/yarn.md), and at 3 the pmem test's
        # 256 MiB hog would be killed for its virtual memory first.
        "yarn.nodemanager.pmem-check-enabled": "true",
        "yarn.nodemanager.vmem-check-enabled": "true",
        "yarn.nodemanager.vmem-pmem-ratio": str(VMEM_PMEM_RATIO),
        "yarn.nodemanager.container-monitor.enabled": "true",
        # Without cgroups this must be false: when true (the default) the
        # monitor leaves memory to the cgroup OOM killer and never kills a
        # container itself (ContainersMonitorImpl.checkLimit), so the pmem
        # check above would silently do nothing.
        "yarn.nodemanager.resource.memory.enforced": "false",
        # Look every second instead of every 3 s: an oversized container is
        # killed within about 2 s (YARN kills at once above twice the size,
        # else when processes older than one interval are over it).
        "yarn.nodemanager.container-monitor.interval-ms": str(CONTAINER_MONITOR_INTERVAL_MS),
        # A nearly full disk must not mark the node UNHEALTHY.
        "yarn.nodemanager.disk-health-checker.enable": "false",
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "100.0",
        "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb": "0",
        "yarn.nodemanager.disk-health-checker.min-healthy-disks": "0.0",
        "yarn.nodemanager.local-dirs": str(layout.data_dir / "nm-local"),
        # Container logs live with the daemon logs, so a failed test keeps them.
        "yarn.nodemanager.log-dirs": str(layout.log_dir / "userlogs"),
        "yarn.log-aggregation-enable": "false",
        "yarn.nodemanager.log-container-debug-info.enabled": "true",
        "yarn.nodemanager.delete.debug-delay-sec": "0",
        "yarn.nodemanager.recovery.enabled": "false",
        "yarn.nodemanager.container-manager.thread-count": "5",
        "yarn.nodemanager.localizer.client.thread-count": "2",
        "yarn.nodemanager.localizer.fetch.thread-count": "2",
    }


CAPACITY_SCHEDULER: dict[str, str] = {
    # The ResourceManager jar ships no capacity-scheduler.xml: without one the
    # CapacityScheduler (YARN's default) has no queue and refuses to start.
    "yarn.scheduler.capacity.root.queues": "default",
    "yarn.scheduler.capacity.root.default.capacity": "100",
    "yarn.scheduler.capacity.root.default.maximum-capacity": "100",
    "yarn.scheduler.capacity.root.default.state": "RUNNING",
    # The default (0.1) lets ApplicationMasters use only 10 % of the node:
    # with several job clusters per session, JobManagers would queue up.
    "yarn.scheduler.capacity.maximum-am-resource-percent": "1.0",
    "yarn.scheduler.capacity.maximum-applications": "1000",
    # No rack locality to wait for on one node.
    "yarn.scheduler.capacity.node-locality-delay": "-1",
}

LOG4J_PROPERTIES = """\
# Each daemon logs to stderr, which cluster.py redirects to logs/<daemon>.log.
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.apache.hadoop.conf.Configuration.deprecation=WARN
log4j.logger.org.eclipse.jetty=WARN
"""


def httpfs_site(port: int, layout: Layout) -> dict[str, str]:
    """HttpFS's httpfs-site.xml. HttpFSServerWebServer reads it from the
    classpath (its HTTP server: address, authentication), HttpFS's services
    from httpfs.config.dir: both are ``layout.httpfs_conf_dir``."""
    return {
        "httpfs.http.hostname": LOOPBACK,
        "httpfs.http.port": str(port),
        # Where it reads core-site.xml and hdfs-site.xml: the cluster's.
        "httpfs.hadoop.config.dir": str(layout.conf_dir),
        # Requests name their user (user.name=...), as WebHDFS's do here.
        "httpfs.authentication.type": "simple",
        "hadoop.http.temp.dir": str(layout.httpfs_temp_dir),
    }


def to_xml(props: dict[str, str]) -> str:
    """A Hadoop ``*-site.xml`` document for ``props``."""
    body = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n" for k, v in props.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


def conf_files(ports: Ports, layout: Layout, resources: NodeResources, user: str) -> dict[str, str]:
    """Every file of the HADOOP_CONF_DIR, by name; ``user`` runs the daemons."""
    return {
        "core-site.xml": to_xml(core_site(ports, layout, user)),
        "hdfs-site.xml": to_xml(hdfs_site(ports, layout)),
        "yarn-site.xml": to_xml(yarn_site(ports, layout, resources)),
        "capacity-scheduler.xml": to_xml(CAPACITY_SCHEDULER),
        "log4j.properties": LOG4J_PROPERTIES,
        "http-signature-secret": secrets.token_hex(16),  # signs the web servers' authentication cookies
    }


def httpfs_conf_files(port: int, layout: Layout) -> dict[str, str]:
    """Every file of HttpFS's config dir, by name. httpfs-log4j.properties:
    HttpFS replaces its log4j setup with this file's (else with one of its
    own, on stderr too) once it starts its services."""
    return {
        "httpfs-site.xml": to_xml(httpfs_site(port, layout)),
        "httpfs-log4j.properties": LOG4J_PROPERTIES,
    }
