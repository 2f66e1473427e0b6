"""A real HDFS + YARN cluster on this machine: NameNode, DataNode,
ResourceManager and one NodeManager, each its own JVM.

Why: jobcluster's YARN backend must be tested against the daemons it will meet
in production, not a mock (see docs/development/test-clusters.md). The daemons
are Hadoop's own classes, run straight from the jars that ``build.sh`` resolves
from Maven Central; no Hadoop distribution, no ``start-*.sh`` scripts, no ssh.

Shape of a cluster (all under one base directory)::

    base/conf/   HADOOP_CONF_DIR: core/hdfs/yarn-site.xml, capacity-scheduler.xml, log4j
    base/logs/   <daemon>.log for each JVM, userlogs/ for YARN containers
    base/data/   HDFS name and data dirs, NodeManager local dirs
    base/httpfs-conf/  HttpFS's httpfs-site.xml, once a test starts it (start_httpfs)

Use it as a context manager, or ``start()`` / ``stop()``. By hand, for
debugging (stops on Ctrl-C)::

    .venv/bin/python -m tests.infra.hadoop.cluster             # --kerberos: the secure one

The Kerberized cluster (``secure_cluster.KerberizedHadoopCluster``) is this one
in secure mode: it overrides ``_conf_files``, ``_jvm_props``, ``_env``, and
``_get`` and ``_user_query`` (how the readiness probes authenticate), and adds
its KDC.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import requests

from tests.infra.hadoop import processes
from tests.infra.hadoop.siteconf import LOOPBACK, Layout, NodeResources, Ports, conf_files, free_port, httpfs_conf_files

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build.sh"

NAMENODE = "org.apache.hadoop.hdfs.server.namenode.NameNode"
DATANODE = "org.apache.hadoop.hdfs.server.datanode.DataNode"
RESOURCEMANAGER = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
NODEMANAGER = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
HTTPFS = "org.apache.hadoop.fs.http.server.HttpFSServerWebServer"
FS_SHELL = "org.apache.hadoop.fs.FsShell"
"""``hdfs dfs``'s class, for ``HadoopCluster.run_tool``."""

# Hadoop 3.3 supports Java 8 and 11 only. On Java 17 the ResourceManager and
# NodeManager die at start without java.lang opened: their web apps run on
# Guice 4, whose cglib defines classes through ClassLoader.defineClass
# reflectively (InaccessibleObjectException; seen with 3.3.6 on 17.0.15).
# The HDFS daemons showed no such error. The other packages are those Spark
# opens on 17 for the same Netty/Jersey/Hadoop IPC code, kept for paths the
# smoke tests do not reach (web UI pages, REST serialization); harmless on 11.
JAVA17_OPENS = [
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
]

HTTP_TIMEOUT = 3.0
"""Seconds for one readiness probe (NameNode JMX, ResourceManager REST, HttpFS)."""


class HadoopClusterError(RuntimeError):
    """The test cluster could not be built, started or probed."""


class Unanswered(Exception):
    """A readiness probe got no HTTP answer (connection refused, timeout, ...); the message says which."""


def build_classpath(timeout: float = 1800.0) -> str:
    """Run build.sh (a no-op once the cache is complete) and return the
    daemons' classpath. ``timeout`` covers a cold Maven download."""
    try:
        out = subprocess.run(
            ["bash", str(BUILD_SCRIPT)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise HadoopClusterError(f"{BUILD_SCRIPT} did not finish in {timeout:.0f} s") from e
    if out.returncode != 0:
        raise HadoopClusterError(f"{BUILD_SCRIPT} failed (exit {out.returncode}):\n{out.stderr[-4000:]}")
    classpath_file = Path(out.stdout.strip().splitlines()[-1])
    return classpath_file.read_text().strip()


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        raise HadoopClusterError("no 'java' on PATH (or in $JAVA_HOME); install JDK 17 (openjdk-17-jdk-headless), as make requires")
    return java


class HadoopCluster:
    """One NameNode, one DataNode, one ResourceManager, one NodeManager.

    ``base_dir``: where conf, logs and data go; a new temp dir by default
    (removed by ``stop(keep_logs=False)``). ``heap``: -Xmx of each daemon.
    ``startup_timeout``: seconds, from the first JVM started until HDFS is out
    of safe mode with a live DataNode, WebHDFS answers and the NodeManager is
    RUNNING in the ResourceManager (~25-40 s on 2 cores).
    """

    host = LOOPBACK
    """The host name in every address the daemons bind and clients are given."""

    web_scheme = "http"
    """The scheme of the NameNode's and DataNode's web servers (WebHDFS)."""

    def __init__(
        self,
        base_dir: Path | None = None,
        *,
        resources: NodeResources | None = None,
        heap: str = "256m",
        startup_timeout: float = 180.0,
    ) -> None:
        self._owns_base = base_dir is None
        base = Path(base_dir or tempfile.mkdtemp(prefix="jobcluster-hadoop-")).resolve()
        self.layout = Layout(base)
        self.resources = resources or NodeResources.for_this_machine()
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.ports: Ports | None = None
        self._procs: dict[str, subprocess.Popen] = {}
        self._classpath: str | None = None
        self._httpfs_url: str | None = None
        self._marker = f"-Djobcluster.hadoop.cluster={base}"

    # -- addresses -----------------------------------------------------------

    def _p(self) -> Ports:
        if self.ports is None:
            raise HadoopClusterError("the cluster is not started")
        return self.ports

    @property
    def hadoop_conf_dir(self) -> Path:
        """Directory to use as HADOOP_CONF_DIR (and to put on a JVM classpath)."""
        return self.layout.conf_dir

    @property
    def log_dir(self) -> Path:
        """Daemon logs (``<daemon>.log``) and YARN container logs (``userlogs/``)."""
        return self.layout.log_dir

    @property
    def fs_default_fs(self) -> str:
        """``hdfs://127.0.0.1:<port>``, the NameNode's RPC address as fs.defaultFS."""
        return f"hdfs://{self.host}:{self._p().namenode_rpc}"

    @property
    def namenode_address(self) -> str:
        """``127.0.0.1:<port>``, the NameNode RPC address."""
        return f"{self.host}:{self._p().namenode_rpc}"

    @property
    def webhdfs_url(self) -> str:
        """``http://127.0.0.1:<port>``, for the ``hdfs`` package's clients."""
        return f"{self.web_scheme}://{self.host}:{self._p().namenode_http}"

    @property
    def resourcemanager_address(self) -> str:
        """``127.0.0.1:<port>``, yarn.resourcemanager.address (YarnClient)."""
        return f"{self.host}:{self._p().rm_client}"

    @property
    def resourcemanager_scheduler_address(self) -> str:
        """``127.0.0.1:<port>``, where ApplicationMasters register (AMRMClient)."""
        return f"{self.host}:{self._p().rm_scheduler}"

    @property
    def resourcemanager_web_url(self) -> str:
        """``http://127.0.0.1:<port>``, the RM web UI and REST API (/ws/v1/cluster)."""
        return f"http://{self.host}:{self._p().rm_webapp}"

    def client_env(self) -> dict[str, str]:
        """Environment entries a client process needs to reach this cluster."""
        return {"HADOOP_CONF_DIR": str(self.hadoop_conf_dir)}

    def client_java_options(self) -> list[str]:
        """JVM flags a client JVM needs for this cluster (``JvmGateway(java_options=...)``): none here."""
        return []

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> HadoopCluster:
        """Write the configuration, format HDFS, start the four daemons and
        wait until they serve. On any failure everything started is stopped
        (logs kept) and HadoopClusterError says which daemon and shows the end
        of its log. A port taken between choosing and binding it (another
        process on this machine) costs one retry with fresh ports."""
        if self._procs:
            raise HadoopClusterError("the cluster is already started")
        classpath = self._classpath = build_classpath()
        for attempt in (1, 2):
            try:
                self._start_once(classpath)
                return self
            except HadoopClusterError:
                self.stop(keep_logs=True)
                if attempt == 2 or not self._lost_a_port():
                    raise
            except BaseException:
                self.stop(keep_logs=True)
                raise
        raise AssertionError("unreachable")

    def _start_once(self, classpath: str) -> None:
        self.ports = Ports.allocate()
        for d in (self.layout.conf_dir, self.layout.log_dir, self.layout.data_dir):
            d.mkdir(parents=True, exist_ok=True)
        for name, text in self._conf_files(self.ports).items():
            (self.layout.conf_dir / name).write_text(text)
        self._format_namenode(classpath)
        for name, main in (
            ("namenode", NAMENODE),
            ("datanode", DATANODE),
            ("resourcemanager", RESOURCEMANAGER),
            ("nodemanager", NODEMANAGER),
        ):
            self._procs[name] = processes.spawn(
                self._argv(classpath, name, main),
                env=self._env(),
                log_path=self.log_dir / f"{name}.log",
                cwd=self.layout.base,
            )
        self._wait_ready()

    def _lost_a_port(self, logs: str = "*.log") -> bool:
        """Whether a daemon of the last attempt (whose log matches ``logs``)
        failed to bind its port; its log is renamed so the retry starts a
        fresh one."""
        lost = False
        for log in self.log_dir.glob(logs):
            if "java.net.BindException" in log.read_text(errors="replace"):
                log.rename(log.with_suffix(".bindfailure.log"))
                lost = True
        return lost

    def start_httpfs(self, timeout: float = 120.0) -> str:
        """Start HttpFS, HDFS's REST gateway, and return its base URL
        ``http://127.0.0.1:<port>`` (WebHDFS's API under ``/webhdfs/v1``;
        simple authentication: requests say ``user.name``). Idempotent; it
        runs until ``stop()``; its log is ``httpfs.log`` in ``log_dir``.

        Why on demand: it is one more JVM (about 10 s to start on 2 cores)
        that only the tests of the HttpFS path need. ``timeout``: seconds until it
        answers a request on HDFS's root; a port taken meanwhile costs one
        retry on another."""
        if self._httpfs_url is not None:
            return self._httpfs_url
        if not self._procs:
            raise HadoopClusterError("start the cluster before HttpFS")
        for attempt in (1, 2):
            try:
                self._httpfs_url = self._start_httpfs_once(timeout)
                return self._httpfs_url
            except HadoopClusterError:
                processes.terminate([self._procs.pop("httpfs")], timeout=15)
                if attempt == 2 or not self._lost_a_port("httpfs.log"):
                    raise
        raise AssertionError("unreachable")

    def _start_httpfs_once(self, timeout: float) -> str:
        assert self._classpath is not None
        port = free_port()
        conf_dir, temp_dir = self.layout.httpfs_conf_dir, self.layout.httpfs_temp_dir
        for d in (conf_dir, temp_dir):
            d.mkdir(parents=True, exist_ok=True)
        for name, text in httpfs_conf_files(port, self.layout).items():
            (conf_dir / name).write_text(text)
        # The directories httpfs.sh passes; HttpFS refuses to start without
        # its home dir, and checks that each exists.
        dirs = {"home": self.layout.base, "config": conf_dir, "log": self.log_dir, "temp": temp_dir}
        props = [f"-Dhttpfs.{kind}.dir={path}" for kind, path in dirs.items()]
        # httpfs-site.xml on the classpath as well: the HTTP server reads its
        # port and authentication there, the services in httpfs.config.dir.
        argv = self._argv(f"{conf_dir}:{self._classpath}", "httpfs", HTTPFS, jvm_props=props)
        self._procs["httpfs"] = processes.spawn(argv, env=self._env(), log_path=self.log_dir / "httpfs.log", cwd=self.layout.base)
        url = f"http://{LOOPBACK}:{port}"
        self._wait_until(lambda: self._httpfs_ready(url), timeout, "HttpFS")
        return url

    def stop(self, *, keep_logs: bool = False) -> None:
        """Stop every daemon and container, HttpFS too (bounded: ~35 s at
        worst). With ``keep_logs`` only ``data/`` is removed; otherwise a
        base dir this object created is removed entirely."""
        procs, self._procs = self._procs, {}
        self._httpfs_url = None
        # The NodeManager first, while the ResourceManager can still take its
        # unregistration (else it retries for a minute); then the rest. The
        # NodeManager gets 5 s: it unregisters and kills its containers at
        # once, then idles ~17 s (waiting for finished applications, and for
        # its log-deletion scheduler), which a throwaway cluster can skip.
        first = [procs.pop("nodemanager")] if "nodemanager" in procs else []
        processes.terminate(first, timeout=5)
        processes.terminate(procs.values(), timeout=15)
        processes.sweep(self._marker, self.layout.base)
        if keep_logs or not self._owns_base:
            shutil.rmtree(self.layout.data_dir, ignore_errors=True)
        else:
            shutil.rmtree(self.layout.base, ignore_errors=True)

    def run_tool(self, main: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120.0) -> subprocess.CompletedProcess:
        """Run a Hadoop command-line tool's class (``FS_SHELL``: ``hdfs dfs``) on the
        daemons' classpath and configuration, as the ``hadoop`` script would;
        ``env`` is laid over the daemons' environment (e.g. a ticket cache).
        Returns the finished process, its output as text; it does not check
        the exit code. ``timeout``: seconds (a JVM starts in about 2 s)."""
        if self._classpath is None:
            raise HadoopClusterError("the cluster is not started")
        argv = [
            _java(),
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-Djava.net.preferIPv4Stack=true",
            *JAVA17_OPENS,
            *self._jvm_props(),
            "-cp",
            f"{self.hadoop_conf_dir}:{self._classpath}",
            main,
            *args,
        ]
        return subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, env={**self._env(), **(env or {})}, timeout=timeout, check=False
        )

    def __enter__(self) -> HadoopCluster:
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop(keep_logs=exc_type is not None)

    # -- internals -------------------------------------------------------------

    def _argv(self, classpath: str, name: str, main: str, *args: str, jvm_props: Sequence[str] = ()) -> list[str]:
        log_dir = str(self.log_dir)
        return [
            _java(),
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.net.preferIPv4Stack=true",
            *JAVA17_OPENS,
            f"-Dproc_{name}",
            self._marker,
            f"-Dhadoop.log.dir={log_dir}",
            f"-Dyarn.log.dir={log_dir}",
            f"-Dhadoop.log.file={name}.log",
            f"-Dhadoop.home.dir={self.layout.base}",
            f"-Dhadoop.id.str={getpass.getuser()}",
            "-Dhadoop.root.logger=INFO,console",
            *self._jvm_props(),
            *jvm_props,
            "-cp",
            f"{self.hadoop_conf_dir}:{classpath}",
            main,
            *args,
        ]

    @property
    def java_home(self) -> str:
        """The JDK the daemons run on, which the NodeManager passes on to the containers."""
        return self._env()["JAVA_HOME"]

    def _env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            # Never let the caller's Hadoop or Java setup leak into the daemons
            # (HttpFS still reads HTTPFS_HTTP_PORT and the like, deprecated).
            if k not in ("CLASSPATH", "HADOOP_TOKEN_FILE_LOCATION", "HADOOP_USER_NAME", "HADOOP_HOME") and not k.startswith("HTTPFS_")
        }
        env["HADOOP_CONF_DIR"] = str(self.hadoop_conf_dir)
        env["HADOOP_LOG_DIR"] = str(self.log_dir)
        # The NodeManager passes JAVA_HOME on to containers (env-whitelist).
        env.setdefault("JAVA_HOME", str(Path(os.path.realpath(_java())).parent.parent))
        return env

    def _format_namenode(self, classpath: str) -> None:
        log = self.log_dir / "namenode-format.log"
        with open(log, "ab") as out:
            try:
                rc = subprocess.run(
                    self._argv(classpath, "namenode-format", NAMENODE, "-format", "-nonInteractive", "-force"),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=self._env(),
                    cwd=self.layout.base,
                    timeout=120,
                ).returncode
            except subprocess.TimeoutExpired as e:
                raise HadoopClusterError(f"formatting HDFS took over 120 s; see {log}") from e
        if rc != 0:
            raise HadoopClusterError(f"formatting HDFS failed (exit {rc}):\n{processes.tail(log)}")

    def _check_alive(self) -> None:
        for name, proc in self._procs.items():
            if proc.poll() is not None:
                log = self.log_dir / f"{name}.log"
                raise HadoopClusterError(
                    f"the {name} exited with code {proc.returncode} during startup; end of {log}:\n{processes.tail(log)}"
                )

    def _hdfs_ready(self) -> str | None:
        """None when the NameNode is out of safe mode with a live DataNode
        and WebHDFS answers, else what it is still waiting for."""
        url = f"{self.webhdfs_url}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo"
        try:
            beans = json.loads(self._get(url, HTTP_TIMEOUT)[1]).get("beans", [])
        except (Unanswered, ValueError) as e:
            return f"NameNode JMX not answering ({e})"
        if not beans:
            return "NameNode JMX has no NameNodeInfo yet"
        if beans[0].get("Safemode"):
            return f"HDFS in safe mode: {beans[0]['Safemode']}"
        if not json.loads(beans[0].get("LiveNodes") or "{}"):
            return "no live DataNode"
        # WebHDFS is what tests use; its first request also warms it up (~5 s).
        url = f"{self.webhdfs_url}/webhdfs/v1/?op=GETFILESTATUS{self._user_query()}"
        try:
            if self._get(url, HTTP_TIMEOUT * 5)[0] != 200:
                return "WebHDFS not answering 200 yet"
        except Unanswered as e:
            return f"WebHDFS not answering ({e})"
        return None

    def _yarn_ready(self) -> str | None:
        """None when the ResourceManager lists a RUNNING NodeManager."""
        url = f"{self.resourcemanager_web_url}/ws/v1/cluster/nodes"
        try:
            body = json.loads(self._get(url, HTTP_TIMEOUT)[1])
        except (Unanswered, ValueError) as e:
            return f"ResourceManager REST not answering ({e})"
        nodes = (body.get("nodes") or {}).get("node") or []
        if not any(n.get("state") == "RUNNING" for n in nodes):
            states = [n.get("state") for n in nodes]
            return f"no RUNNING NodeManager (nodes: {states})"
        return None

    def _get(self, url: str, timeout: float) -> tuple[int, str]:
        """GET ``url`` (JSON asked for) as the cluster's readiness probes do: ``(status, body)``.
        Unanswered (its reason: the error's class name) when no HTTP answer came."""
        try:
            r = requests.get(url, timeout=timeout, headers={"Accept": "application/json"})
        except requests.RequestException as e:
            raise Unanswered(e.__class__.__name__) from e
        return r.status_code, r.text

    def _user_query(self) -> str:
        """What a probe's WebHDFS query adds to say who it is: simple authentication's ``user.name``."""
        return f"&user.name={getpass.getuser()}"

    def _conf_files(self, ports: Ports) -> dict[str, str]:
        """Every file of the HADOOP_CONF_DIR, by name."""
        return conf_files(ports, self.layout, self.resources, getpass.getuser())

    def _jvm_props(self) -> list[str]:
        """JVM flags every daemon and tool gets beyond the common ones: none here."""
        return []

    def _httpfs_ready(self, url: str) -> str | None:
        """None when HttpFS answers a request on HDFS's root, which it makes
        to the NameNode as a proxy user (see siteconf.core_site)."""
        try:
            r = requests.get(f"{url}/webhdfs/v1/?op=GETFILESTATUS&user.name={getpass.getuser()}", timeout=HTTP_TIMEOUT * 5)
        except requests.RequestException as e:
            return f"HttpFS not answering ({e.__class__.__name__})"
        return None if r.status_code == 200 else f"HttpFS answers {r.status_code}: {r.text[:300]}"

    def _wait_ready(self) -> None:
        self._wait_until(lambda: self._hdfs_ready() or self._yarn_ready(), self.startup_timeout, "the Hadoop test cluster")

    def _wait_until(self, probe: Callable[[], str | None], timeout: float, what: str) -> None:
        """Until ``probe`` says nothing is missing, while every JVM is alive."""
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive()
            waiting_for = probe()
            if waiting_for is None:
                return
            if time.monotonic() > deadline:
                raise HadoopClusterError(f"{what} was not ready after {timeout:.0f} s: {waiting_for}; logs in {self.log_dir}")
            time.sleep(0.5)

    def describe(self) -> str:
        """Human-readable addresses, for the debugging CLI and test output."""
        return "\n".join(
            [
                f"HADOOP_CONF_DIR={self.hadoop_conf_dir}",
                f"fs.defaultFS     {self.fs_default_fs}",
                f"WebHDFS          {self.webhdfs_url}/webhdfs/v1/",
                f"ResourceManager  {self.resourcemanager_address} (web {self.resourcemanager_web_url})",
                f"RM scheduler     {self.resourcemanager_scheduler_address}",
                f"NodeManager      {self.resources.memory_mb} MiB, {self.resources.vcores} vcores",
                *([f"HttpFS           {self._httpfs_url}/webhdfs/v1/"] if self._httpfs_url else []),
                f"logs             {self.log_dir}",
            ]
        )


def main(argv: list[str] | None = None) -> int:
    """Start a cluster, print its addresses, run until Ctrl-C (or SIGTERM)."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.infra.hadoop.cluster",
        description="Run the jobcluster Hadoop test cluster (HDFS + YARN) until Ctrl-C.",
    )
    parser.add_argument("--base-dir", type=Path, help="keep conf/logs/data here (default: a new temp dir)")
    parser.add_argument("--nm-memory-mb", type=int, help="NodeManager memory (default: sized for this machine)")
    parser.add_argument("--nm-vcores", type=int, help="NodeManager vcores (default: sized for this machine)")
    parser.add_argument("--httpfs", action="store_true", help="start HttpFS too")
    parser.add_argument("--kerberos", action="store_true", help="the Kerberized cluster, with its KDC (secure_cluster.py)")
    args = parser.parse_args(argv)

    resources = NodeResources.for_this_machine()
    resources = NodeResources(args.nm_memory_mb or resources.memory_mb, args.nm_vcores or resources.vcores)
    cluster: HadoopCluster
    if args.kerberos:
        # Imported here: secure_cluster builds on this module.
        from tests.infra.hadoop.secure_cluster import KerberizedHadoopCluster

        cluster = KerberizedHadoopCluster(args.base_dir, resources=resources)
    else:
        cluster = HadoopCluster(args.base_dir, resources=resources)
    # Ctrl-C even when started from a script that ignores SIGINT (e.g. `... &`).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("starting the Hadoop test cluster ...", flush=True)
    try:
        cluster.start()
        if args.httpfs:
            cluster.start_httpfs()
        print(cluster.describe(), flush=True)
        exports = "".join(f"export {k}={v}\n" for k, v in cluster.client_env().items())
        print(f"\n{exports}Ctrl-C stops it.", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    except HadoopClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        print("stopping ...", flush=True)
        cluster.stop(keep_logs=True)
        print(f"stopped; logs kept in {cluster.log_dir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
