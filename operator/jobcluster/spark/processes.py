"""The Spark standalone daemons of a job cluster.

The JobManager runs a Spark master; each TaskExecutor runs one Spark worker
pointed at it. Both are started through ``spark-class`` in the foreground, as
children that die with their owner, on ports chosen by us so that their
addresses are known without parsing logs. Their state is read from the
master's JSON status page (``/json/``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from jobcluster.errors import SparkError
from jobcluster.processes import ChildProcess, find_free_port, program_umask
from jobcluster.spark.home import spark_env, spark_home

log = logging.getLogger(__name__)

STATUS_TIMEOUT = 5.0  # seconds for one status request
STOP_GRACE = 0.5  # seconds a daemon gets after SIGTERM before SIGKILL: a job cluster's Spark daemons hold no state
POLL_INTERVAL = 0.2  # seconds between two looks at a daemon that starts: what waits for it starts that much sooner


@dataclass(frozen=True)
class SparkMasterAddress:
    """``url``: ``spark://host:port`` for workers and drivers; ``web_url``: the master UI.

    In Spark's local mode (:class:`SparkLocalMode`) ``url`` is ``local[N]`` and there is no master UI (``web_url`` empty).
    """

    url: str
    web_url: str

    @property
    def local_mode(self) -> bool:
        """Whether this is Spark's local mode: the driver's JVM runs the tasks, there are no executors of their own."""
        return self.url.startswith("local")


class SparkLocalMode:
    """Spark's local mode as the job's master: no daemon; the driver's JVM runs the tasks in ``cores`` threads.

    What the MiniCluster (``-t local``) gives its program instead of a standalone master, as
    ``spark-submit --master local[N]`` would (Spark's ``LocalSchedulerBackend``). It has the
    :class:`SparkMaster` methods the JobManager calls, which have nothing to start or stop.
    """

    def __init__(self, cores: int) -> None:
        if cores < 1:
            raise ValueError(f"Spark's local mode needs at least one core, not {cores}")
        self.address = SparkMasterAddress(f"local[{cores}]", "")

    async def start(self) -> None:
        """Nothing to start: the driver brings its own scheduler."""

    async def stop(self) -> None:
        """Nothing to stop: the driver's JVM ends with the program."""


async def fetch_json(url: str, timeout: float = STATUS_TIMEOUT) -> Any:  # noqa: ASYNC109 - every network call has a timeout by default
    """GET ``url`` and decode JSON; raises SparkError on any failure."""
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session, session.get(url) as resp:
            resp.raise_for_status()
            return await resp.json(content_type=None)
    except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
        raise SparkError(f"GET {url} failed: {exc!r}") from exc


# ASYNC109: the deadlines below end in a SparkError that names what was awaited and the log to read,
# which a caller's asyncio.timeout() could not say.
async def _wait_for(condition: Callable[[], Awaitable[Any]], what: str, timeout: float, process: ChildProcess) -> Any:  # noqa: ASYNC109
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.running():
            raise SparkError(f"{process.name} exited while waiting for {what}; see {process.log_file}")
        try:
            result = await condition()
            if result:
                return result
        except SparkError:
            pass
        await asyncio.sleep(POLL_INTERVAL)
    raise SparkError(f"timed out after {timeout:.0f} s waiting for {what}; see {process.log_file}")


class SparkMaster:
    """A Spark standalone master bound to ``host``.

    ``daemon_env``: SPARK_DAEMON_MEMORY / SPARK_DAEMON_JAVA_OPTS from the
    JobManager's memory mapping, and the cluster's Spark security settings.
    """

    def __init__(self, host: str, log_dir: Path, daemon_env: dict[str, str]) -> None:
        self.host = host
        self.port = find_free_port(host)
        self.web_port = find_free_port(host)
        self.address = SparkMasterAddress(f"spark://{host}:{self.port}", f"http://{host}:{self.web_port}")
        argv = [
            str(spark_home() / "bin" / "spark-class"),
            "org.apache.spark.deploy.master.Master",
            "--host",
            host,
            "--port",
            str(self.port),
            "--webui-port",
            str(self.web_port),
        ]
        env = spark_env({"SPARK_LOCAL_IP": host, **daemon_env})  # its web UI binds to SPARK_LOCAL_IP, else to all interfaces
        self.process = ChildProcess("spark-master", argv, env, log_dir / "spark-master.log")

    async def start(self, timeout: float = 60.0) -> None:  # noqa: ASYNC109 - see _wait_for
        """Start the master and wait until its status page says ALIVE."""
        await self.process.start()

        async def alive() -> bool:
            return (await self.status()).get("status") == "ALIVE"

        await _wait_for(alive, "the Spark master", timeout, self.process)
        log.info("Spark master running at %s (UI %s)", self.address.url, self.address.web_url)

    async def status(self) -> dict[str, Any]:
        status: dict[str, Any] = await fetch_json(f"{self.address.web_url}/json/")
        return status

    async def stop(self) -> None:
        await self.process.stop(STOP_GRACE)


async def wait_until_alive(master: SparkMasterAddress, timeout: float, interval: float = POLL_INTERVAL) -> None:  # noqa: ASYNC109 - see _wait_for
    """Return once the master at ``master`` says ALIVE (a worker started earlier would wait out Spark's
    registration back-off of 5-15 s); SparkError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if (await fetch_json(f"{master.web_url}/json/")).get("status") == "ALIVE":
                return
        except SparkError:
            pass
        if time.monotonic() >= deadline:
            raise SparkError(f"the Spark master {master.url} was not ALIVE within {timeout:.0f} s")
        await asyncio.sleep(interval)


async def alive_worker_ids(master_web_url: str) -> set[str]:
    """``host:port`` of every ALIVE worker the master knows."""
    status = await fetch_json(f"{master_web_url}/json/")
    return {f"{w['host']}:{w['port']}" for w in status.get("workers", []) if w.get("state") == "ALIVE"}


class SparkWorker:
    """One Spark standalone worker: ``cores`` and ``memory_mib`` for executors."""

    def __init__(
        self,
        host: str,
        master: SparkMasterAddress,
        cores: int,
        memory_mib: int,
        work_dir: Path,
        log_dir: Path,
        daemon_env: dict[str, str],
        name: str = "spark-worker",
    ) -> None:
        self.host = host
        self.master = master
        self.port = find_free_port(host)
        self.web_port = find_free_port(host)
        self.cores = cores
        self.memory_mib = memory_mib
        argv = [
            str(spark_home() / "bin" / "spark-class"),
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            host,
            "--port",
            str(self.port),
            "--webui-port",
            str(self.web_port),
            "--cores",
            str(cores),
            "--memory",
            f"{memory_mib}m",
            "--work-dir",
            str(work_dir),
            master.url,
        ]
        env = spark_env({"SPARK_LOCAL_IP": host, **daemon_env})
        # its executors write the job's output: they get the program's umask, their logs stay in 0700 directories
        self.process = ChildProcess(name, argv, env, log_dir / f"{name}.log", umask=program_umask())

    @property
    def worker_id(self) -> str:
        return f"{self.host}:{self.port}"

    async def start(self, timeout: float = 90.0) -> None:  # noqa: ASYNC109 - see _wait_for
        """Start the worker and wait until the master lists it ALIVE."""
        await self.process.start()

        async def registered() -> bool:
            return self.worker_id in await alive_worker_ids(self.master.web_url)

        await _wait_for(registered, f"Spark worker {self.worker_id} to register at {self.master.url}", timeout, self.process)
        log.info("Spark worker %s registered at %s: %d cores, %d MiB", self.worker_id, self.master.url, self.cores, self.memory_mib)

    async def stop(self) -> None:
        await self.process.stop(STOP_GRACE)
