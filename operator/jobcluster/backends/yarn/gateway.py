"""A JVM with Hadoop's Java clients, driven from Python through py4j.

Why: YARN has no supported Python client. Its Java clients (YarnClient,
AMRMClient, NMClient, and HDFS's FileSystem) are the reference
implementation of the protocols and of the security around them (AMRM and NM
tokens, delegation tokens), and pyspark already ships them: the shaded
``hadoop-client-api``/``hadoop-client-runtime`` jars and py4j in
``pyspark/jars``. So jobcluster starts one JVM on those jars and calls the
clients through py4j, the same bridge pyspark itself uses.

Shape::

    with JvmGateway(hadoop_conf_dir="/etc/hadoop/conf") as gw:
        yarn = gw.jvm.org.apache.hadoop.yarn.client.api.YarnClient.createYarnClient()
        yarn.init(gw.jvm.org.apache.hadoop.yarn.conf.YarnConfiguration())
        yarn.start()
        ...

- Classpath: ``hadoop_conf_dir`` first (so ``new YarnConfiguration()`` reads
  its core/yarn/hdfs-site.xml exactly as a Hadoop CLI would with
  HADOOP_CONF_DIR), then ``extra_classpath``, then ``pyspark/jars/*``.
- The JVM inherits this process's environment: ``HADOOP_USER_NAME`` and, in
  a YARN container, ``HADOOP_TOKEN_FILE_LOCATION`` (the AMRM token) reach
  Hadoop's UserGroupInformation as they would in a Java program.
- Python lists and dicts are converted to ``java.util`` collections
  automatically (py4j ``auto_convert``).
- The JVM listens on 127.0.0.1 on an ephemeral port, with a random auth
  token, and dies with this process (py4j's ``--die-on-broken-pipe``).

Timeouts: ``startup_timeout`` bounds the launch (JVM start until py4j
answers); ``call_timeout`` bounds every single py4j call (py4j closes the
connection and raises ``Py4JNetworkError`` after it; the Java side keeps
running). Hadoop's own retry limits (``yarn.resourcemanager.connect.max-wait.ms``,
``ipc.client.connect.max.retries``) come from the Hadoop configuration and
should stay below ``call_timeout``. ``stop_timeout`` bounds ``close()``.

Errors: failing to start or stop the JVM raises :class:`JvmGatewayError`
(with the JVM's last stderr lines, the py4j or OS error as ``__cause__``).
Errors *inside* calls are py4j's (``Py4JJavaError`` carrying the Java
exception); the backend code that makes a call translates them, because only
it knows what the call meant.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import psutil
from py4j.java_gateway import GatewayParameters, JavaGateway, JVMView, launch_gateway

from jobcluster.errors import JvmGatewayError, SparkError
from jobcluster.spark.home import check_java

# What Spark passes to its own JVMs on Java 17 (JavaModuleOptions), which run
# the very same jars; harmless on Java 11.
JAVA17_MODULE_OPTIONS = (
    "-XX:+IgnoreUnrecognizedVMOptions",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
    "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
    "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
)

#: The address space the gateway reserves, bounded: a JVM reserves 1 GiB for compressed class metadata and 240 MiB
#: for compiled code whatever it uses (Hadoop's YARN and HDFS clients need some 20 MiB and a few MiB), and G1 its
#: own structures and threads, which a 256 MiB heap does not need (Spark's daemons run the serial collector too);
#: YARN's virtual memory check (``yarn.nodemanager.vmem-check-enabled``, on by Hadoop's default) counts every
#: reserved byte against the ApplicationMaster's container.
SMALL_JVM_OPTIONS = ("-XX:CompressedClassSpaceSize=128m", "-XX:ReservedCodeCacheSize=64m", "-XX:+UseSerialGC")

DEFAULT_STARTUP_TIMEOUT = 60.0
"""Seconds from launching the JVM until py4j answers: a JVM on ~250 jars
starts in 1-3 s; the margin is for a loaded 2-core CI machine."""

DEFAULT_CALL_TIMEOUT = 300.0
"""Seconds one py4j call may take. Above Hadoop's client retry windows
(about one minute in jobcluster's configurations), so a call that fails in
Java reports Java's error rather than a py4j timeout."""

DEFAULT_STOP_TIMEOUT = 15.0
"""Seconds ``close()`` waits for the JVM to exit (Hadoop shutdown hooks
run) before killing it."""


def pyspark_jars_dir() -> Path:
    """``pyspark/jars`` of the installed pyspark, without importing pyspark."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        raise JvmGatewayError("pyspark is not installed; its jars carry Hadoop's Java clients")
    jars = Path(spec.origin).parent / "jars"
    if not jars.is_dir():
        raise JvmGatewayError(f"pyspark has no jars directory at {jars}")
    return jars


def _java_executable() -> str:
    try:
        return check_java()
    except SparkError as exc:
        raise JvmGatewayError(str(exc)) from exc


class JvmGateway:
    """One py4j JVM on pyspark's jars plus a Hadoop configuration directory.

    Start with ``start()`` or ``with``; ``close()`` is idempotent. Not
    thread-safe to start/close concurrently; py4j calls themselves may come
    from several threads (py4j opens one connection per thread).

    ``heap``: the JVM's -Xmx (the clients need little). ``java_options``:
    appended after jobcluster's own. ``log_file``: where the JVM's stdout and
    stderr (Hadoop's client logging, INFO) go, appended; by default an
    anonymous temp file, read back only for error messages.
    """

    def __init__(
        self,
        hadoop_conf_dir: str | os.PathLike[str] | None = None,
        *,
        extra_classpath: Sequence[str | os.PathLike[str]] = (),
        heap: str = "256m",
        java_options: Sequence[str] = (),
        log_file: str | os.PathLike[str] | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
        stop_timeout: float = DEFAULT_STOP_TIMEOUT,
    ) -> None:
        self.hadoop_conf_dir = Path(hadoop_conf_dir) if hadoop_conf_dir else None
        self.extra_classpath = [str(p) for p in extra_classpath]
        self.heap = heap
        self.java_options = list(java_options)
        self.log_file = Path(log_file) if log_file else None
        self.startup_timeout = startup_timeout
        self.call_timeout = call_timeout
        self.stop_timeout = stop_timeout
        self._gateway: JavaGateway | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[str] | None = None

    # -- public ----------------------------------------------------------------

    @property
    def jvm(self) -> JVMView:
        """The py4j JVM view: ``gw.jvm.org.apache.hadoop...``."""
        return self.gateway.jvm

    @property
    def gateway(self) -> JavaGateway:
        """The py4j JavaGateway (for ``new_array``, ``java_import``, ...)."""
        if self._gateway is None:
            raise JvmGatewayError("the JVM gateway is not started")
        return self._gateway

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def classpath(self) -> str:
        parts = [str(self.hadoop_conf_dir)] if self.hadoop_conf_dir else []
        parts += self.extra_classpath
        parts.append(str(pyspark_jars_dir() / "*"))
        return os.pathsep.join(parts)

    def start(self) -> JvmGateway:
        """Launch the JVM and connect; JvmGatewayError if it fails or takes
        longer than ``startup_timeout``."""
        if self._gateway is not None:
            return self
        if self.hadoop_conf_dir and not self.hadoop_conf_dir.is_dir():
            raise JvmGatewayError(f"HADOOP_CONF_DIR {self.hadoop_conf_dir} is not a directory")
        marker = f"-Djobcluster.gateway.id={uuid.uuid4().hex}"
        self._log = self._open_log()
        port, token, self._proc = self._launch(marker)
        try:
            self._gateway = JavaGateway(
                gateway_parameters=GatewayParameters(
                    address="127.0.0.1",
                    port=port,
                    auth_token=token,
                    auto_convert=True,
                    eager_load=True,
                    read_timeout=self.call_timeout,
                )
            )
        except Exception as e:
            error = JvmGatewayError(f"cannot connect to the py4j JVM on port {port}: {e}{self._output_tail()}")
            self.close()
            raise error from e
        return self

    def _open_log(self) -> IO[str]:
        """Where the JVM writes stdout and stderr: straight into a file, so what it printed before dying at start
        is there to report (py4j reads its pipes only after the JVM announced its port)."""
        if self.log_file:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            return open(self.log_file, "a", buffering=1)
        return tempfile.TemporaryFile("w+", prefix="jobcluster-py4j-")

    def _launch(self, marker: str) -> tuple[int, Any, subprocess.Popen[bytes]]:
        """Start the JVM (tagged with ``marker``) on a thread of its own, bounded by ``startup_timeout``:
        its port, auth token and process. JvmGatewayError, with the end of its output, when it fails or is late."""
        py4j_jars = sorted(pyspark_jars_dir().glob("py4j-*.jar"))
        java = _java_executable()
        javaopts = [
            f"-Xmx{self.heap}",
            *SMALL_JVM_OPTIONS,
            *JAVA17_MODULE_OPTIONS,
            # Spark's log4j2 defaults (INFO to stderr) instead of log4j2's "no configuration found" error.
            "-Dlog4j2.configurationFile=org/apache/spark/log4j2-defaults.properties",
            marker,
            *self.java_options,
        ]
        result: dict[str, Any] = {}

        def launch() -> None:
            try:
                result["value"] = launch_gateway(
                    port=0,
                    jarpath=str(py4j_jars[-1]) if py4j_jars else "",
                    classpath=self.classpath(),
                    javaopts=javaopts,
                    die_on_exit=True,
                    redirect_stdout=self._log,
                    redirect_stderr=self._log,
                    java_path=java,
                    enable_auth=True,
                    return_proc=True,
                )
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                result["error"] = e

        thread = threading.Thread(target=launch, name="py4j-launch", daemon=True)
        thread.start()
        thread.join(self.startup_timeout)
        if thread.is_alive():
            _kill_children_with(marker)
            thread.join(10)
            if "value" in result:  # it came up just too late
                _stop_process(result["value"][2], timeout=5)
            raise JvmGatewayError(f"the py4j JVM did not start within {self.startup_timeout:g} s{self._output_tail()}")
        if "error" in result:
            failed = _popen_in_traceback(result["error"])
            if failed is not None:  # reap it (py4j returns no handle on failure)
                _stop_process(failed, timeout=5)
            raise JvmGatewayError(f"the py4j JVM failed to start ({result['error']!r}){self._output_tail()}") from result["error"]
        launched: tuple[int, Any, subprocess.Popen[bytes]] = result["value"]  # the token as py4j read it
        return launched

    def close(self) -> None:
        """Disconnect and stop the JVM: EOF on its stdin makes py4j call
        System.exit (Hadoop's shutdown hooks run); killed after
        ``stop_timeout``. Idempotent."""
        gateway, self._gateway = self._gateway, None
        proc, self._proc = self._proc, None
        try:
            if gateway is not None:
                # shutdown(), not close(): it also marks the client
                # disconnected, so JavaObjects garbage-collected later do not
                # try (and log errors) to reach the stopped JVM.
                try:
                    gateway.shutdown()
                except Exception:  # noqa: BLE001 - the JVM is stopped below either way
                    pass
            if proc is not None and not _stop_process(proc, self.stop_timeout):
                raise JvmGatewayError(f"the py4j JVM (pid {proc.pid}) does not die")
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None

    def __enter__(self) -> JvmGateway:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------

    def _output_tail(self, lines: int = 20) -> str:
        """The JVM's last output lines for an error message; closes the sink."""
        log, self._log = self._log, None
        if log is None:
            return ""
        try:
            if self.log_file:
                return f"; JVM output in {self.log_file}"
            log.seek(0)
            tail = log.read()[-8192:].splitlines()[-lines:]
            return ("; JVM output:\n" + "\n".join(tail)) if tail else ""
        finally:
            log.close()


def _stop_process(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Close the JVM's stdin (py4j's --die-on-broken-pipe then exits it), wait
    ``timeout`` s, else SIGKILL; reap it. False if it outlives even that."""
    try:
        if proc.stdin:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        proc.kill()
    try:
        proc.wait(timeout=5)
        return True
    except subprocess.TimeoutExpired:
        return False


def _popen_in_traceback(error: BaseException) -> subprocess.Popen[bytes] | None:
    """The JVM process py4j's launch_gateway started before it failed (its
    local ``proc``): py4j returns no handle then, and the exited JVM would
    stay a zombie until garbage collection."""
    tb = error.__traceback__
    while tb is not None:
        proc = tb.tb_frame.f_locals.get("proc")
        if isinstance(proc, subprocess.Popen):
            return proc
        tb = tb.tb_next
    return None


def _kill_children_with(marker: str) -> None:
    """Kill this process's children whose command line carries ``marker``
    (the JVM of a launch that hangs; py4j gives no handle before it returns)."""
    for child in psutil.Process().children():
        try:
            if marker in child.cmdline():
                child.kill()
                child.wait(timeout=5)  # reaps it: no zombie left behind
        except (psutil.Error, psutil.TimeoutExpired):
            pass
