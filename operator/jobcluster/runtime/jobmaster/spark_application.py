"""One run of the job's PySpark program against the job's Spark master.

How the driver is started, and why. The JobMaster runs the program the way
the ``pyspark`` shell and ``python program.py`` with a pip-installed PySpark
do: ``python PROGRAM ARGS`` (through the driver agent, which runs it just so) with ``PYSPARK_SUBMIT_ARGS="--conf ... pyspark-shell"``.
The Python process is the parent; when the program creates its SparkContext,
PySpark launches the driver JVM (Spark's py4j gateway, through
``bin/spark-submit`` in client mode, so ``spark.driver.*`` sizes apply) with
these settings. ``spark-submit PROGRAM`` would make the JVM the parent, and
its PythonRunner merges the program's stderr into its stdout and gives it a
stdin pipe that is never closed. Started directly, the program has

- its own stdout and stderr, kept apart: pipes copied into rolling files
  (``driver.out``, ``driver.err``, see :mod:`driver_output`) by threads of
  the JobMaster, while the JVM's log4j output goes to ``driver.log``
  (configured through ``SPARK_SUBMIT_OPTS``, as the shell has no other hook);
- its own exit code as the process's exit code;
- ``/dev/null`` as stdin, so a program that reads stdin sees its end.

The ``--jars`` go to ``PYSPARK_SUBMIT_ARGS`` as they would go to spark-submit:
on the driver JVM's classpath, and as ``spark.jars`` to the executors, which
fetch them from the driver.

What spark-submit's PythonRunner does for a Python program is repeated here:
``PYTHONUNBUFFERED`` (output is seen as it is written), and the ``--py-files``
on ``PYTHONPATH`` before the program starts (a ``.py`` through its directory,
an archive itself), so they can be imported at the top of the program; PySpark
puts ``spark.submit.pyFiles`` on ``sys.path`` again and ships them to the
executors when the SparkContext starts.

Where it runs: with the JobGraph's ClientPaths (the ``local`` target) the
program runs where it is, in the client's working directory, as
``spark-submit`` in client mode runs it from the user's shell; without them
the staged copy runs in the container's working directory, as in Spark's
cluster mode. Progress comes from Spark's monitoring REST API on the driver UI.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobcluster.errors import SparkError
from jobcluster.jobgraph.model import JobGraph
from jobcluster.processes import ChildProcess, find_free_port, program_umask, session_members
from jobcluster.runtime.jobmaster.driver_output import (
    DRIVER_LOG_FILE,
    DRIVER_STDERR_FILE,
    DriverOutputFiles,
    exit_description,
    program_error,
    stderr_tail,
    with_memory_error_hint,
)
from jobcluster.security import write_private_file
from jobcluster.spark.checkpoints import job_checkpoint_root
from jobcluster.spark.driver_agent.settings import AgentSettings
from jobcluster.spark.home import python_command, spark_env
from jobcluster.spark.processes import SparkMasterAddress, fetch_json
from jobcluster.spark.security import SPARK_DEFAULTS_FILE, properties_text

log = logging.getLogger(__name__)

DRIVER_LOG4J_CONFIG_FILE = "driver-log4j2.properties"
#: Runs the program as ``python PROGRAM ARGS`` does, with jobcluster's agent for its streaming queries in the process.
DRIVER_AGENT_MODULE = "jobcluster.spark.driver_agent"
GATEWAY_EXIT_TIMEOUT = 15.0  # seconds the driver JVM gets to shut down after the program exited
# Inherited from a PySpark session that started jobcluster, these would attach the program to that session's JVM.
_GATEWAY_VARIABLES = ("PYSPARK_GATEWAY_PORT", "PYSPARK_GATEWAY_SECRET", "PYSPARK_SUBMIT_ARGS")
# YARN gives its ApplicationMaster (the JobManager) the path of its web proxy; Spark's UI would take it as its root for every
# page, while the REST endpoint proxies the UI under a path of its own and gives it its root with each request (rest/spark_ui.py).
_UI_ROOT_VARIABLES = ("APPLICATION_WEB_PROXY_BASE",)


@dataclass(frozen=True)
class SparkUi:
    """Where the running program's Spark UI answers: ``url`` is the driver's UI (``http://HOST:PORT``, the cluster's bind
    host), ``app_id`` Spark's application id, None until the JobMaster has read it from the UI."""

    url: str
    app_id: str | None


@dataclass(frozen=True)
class SparkProgress:
    """What Spark reports of the running application; counts of Spark jobs and tasks."""

    app_id: str | None
    jobs_total: int
    jobs_completed: int
    tasks_total: int
    tasks_completed: int
    tasks_failed: int
    executors: int
    tasks_active: int = 0
    input_bytes: int = 0
    input_records: int = 0
    output_bytes: int = 0
    output_records: int = 0

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def submit_conf(
    graph: JobGraph, master: SparkMasterAddress, host: str, ui_port: int, sizing_conf: dict[str, str], resources_wait: float = 300.0
) -> dict[str, str]:
    """Spark settings for the job: parallelism from the JobGraph, sizes from the memory model.

    With a checkpoint directory, the job's checkpoint root is Spark's
    ``spark.sql.streaming.checkpointLocation`` (see ``spark/checkpoints.py``).
    ``spark.cores.max`` = the job's parallelism (one core per slot; executors
    take the cores Spark grants them, see ``spark/parallelism.py``), and Spark's
    default partition counts follow it, so ``-p`` means the same thing to Spark
    that it means to the cluster. The driver may start before the slots have
    arrived: its SparkContext waits until all those cores have registered
    (``spark.scheduler.minRegisteredResourcesRatio`` 1.0), at most
    ``resources_wait`` seconds (``spark.scheduler.maxRegisteredResourcesWaitingTime``),
    so no task runs on part of the job's slots. In Spark's local mode (the
    MiniCluster's ``local[N]``) there are no executors to wait for or cores to
    cap: those three settings are left out. ``sizing_conf`` (the memory
    model's settings and the user's ``spark.*`` keys) is applied last.
    """
    p = str(graph.parallelism)
    conf = {
        "spark.master": master.url,
        "spark.submit.deployMode": "client",
        "spark.app.name": graph.job_name,
        "spark.default.parallelism": p,
        "spark.sql.shuffle.partitions": p,
        "spark.driver.host": host,
        "spark.driver.bindAddress": host,
        "spark.ui.port": str(ui_port),
        "spark.pyspark.python": python_command(),
        "spark.pyspark.driver.python": sys.executable,
        "spark.ui.showConsoleProgress": "false",
    }
    if not master.local_mode:
        conf |= {
            "spark.cores.max": p,
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": f"{max(1, round(resources_wait))}s",
        }
    if graph.checkpointing is not None:
        conf["spark.sql.streaming.checkpointLocation"] = job_checkpoint_root(graph.checkpointing.directory, graph.job_id)
    conf.update(sizing_conf)
    return conf


def program_location(graph: JobGraph, staging_dir: Path) -> tuple[Path, Path]:
    """(program file, working directory): the client's (ClientPaths), else the staged copy in this process's directory."""
    if graph.client_paths is not None:
        return Path(graph.client_paths.program), Path(graph.client_paths.working_directory)
    return staging_dir / graph.vertices[0].program, Path.cwd()


def artifact_paths(graph: JobGraph, staging_dir: Path) -> tuple[list[Path], list[Path]]:
    """(py-files, jars) of the JobGraph as paths on this machine: staged ones under ``staging_dir``, provided ones as they are.

    Only ``.py``, ``.zip`` and ``.egg`` py-files go to ``--py-files``, as spark-submit puts nothing else on ``sys.path``.
    """
    py_files = [staging_dir / a.path for a in graph.user_artifacts if a.kind == "py-file" and a.path.endswith((".py", ".zip", ".egg"))]
    jars = [staging_dir / a.path for a in graph.user_artifacts if a.kind == "jar"]
    return py_files, jars


def driver_properties(conf: Mapping[str, str], spark_conf_dir: str | None) -> str:
    """The driver's ``--properties-file``: the cluster's ``spark-defaults.conf`` in ``spark_conf_dir`` (the Spark
    secret, which spark-submit would no longer read with a properties file of its own), then ``conf``, which wins."""
    defaults = Path(spark_conf_dir) / SPARK_DEFAULTS_FILE if spark_conf_dir else None
    cluster = defaults.read_text() if defaults is not None and defaults.exists() else ""
    return cluster + properties_text(conf)


def driver_submit_args(properties_file: Path, py_files: list[Path], jars: Sequence[Path] = ()) -> str:
    """``PYSPARK_SUBMIT_ARGS``: ``--properties-file``, ``--py-files``, ``--jars``, then ``pyspark-shell`` (PySpark splits
    it with shlex).

    The settings go in a private file, never ``--conf`` on the driver JVM's command line, where every user of the
    machine would read them (``ps``): a user's ``spark.*`` settings may hold credentials. ``--jars`` rather than
    ``spark.jars``: spark-submit in client mode puts the jars of ``--jars`` on the driver JVM's own classpath as well,
    while the executors fetch them from the driver's file server through ``spark.jars``.
    """
    args = ["--properties-file", str(properties_file)]
    if py_files:
        args += ["--py-files", ",".join(str(p) for p in py_files)]
    if jars:
        args += ["--jars", ",".join(str(p) for p in jars)]
    return shlex.join([*args, "pyspark-shell"])


def driver_python_path(py_files: list[Path], inherited: str | None) -> str:
    """``PYTHONPATH`` as spark-submit's PythonRunner builds it: a .py file's directory, an archive itself, then ``inherited``."""
    entries: list[str] = []
    for path in py_files:
        entry = str(path.parent if path.suffix == ".py" else path)
        if entry not in entries:
            entries.append(entry)
    if inherited:
        entries.append(inherited)
    return os.pathsep.join(entries)


def driver_env(
    properties_file: Path,
    py_files: list[Path],
    log4j_config: Path,
    extra: Mapping[str, str] | None = None,
    jars: Sequence[Path] = (),
) -> dict[str, str]:
    """Environment of the program's process: Spark's with ``extra``, plus how PySpark starts the driver JVM."""
    env = spark_env(dict(extra or {}))
    for name in (*_GATEWAY_VARIABLES, *_UI_ROOT_VARIABLES):
        env.pop(name, None)
    env["PYSPARK_SUBMIT_ARGS"] = driver_submit_args(properties_file, py_files, jars)
    env["PYTHONPATH"] = driver_python_path(py_files, env.get("PYTHONPATH"))
    env["PYTHONUNBUFFERED"] = "1"
    log4j = f"-Dlog4j2.configurationFile={log4j_config.resolve().as_uri()}"
    env["SPARK_SUBMIT_OPTS"] = f"{env['SPARK_SUBMIT_OPTS']} {log4j}" if env.get("SPARK_SUBMIT_OPTS") else log4j
    if not env["PYTHONPATH"]:
        del env["PYTHONPATH"]
    return env


def driver_log4j_config(log_file: Path) -> str:
    """Log4j 2 properties for the driver JVM: Spark's default INFO logging, into ``log_file`` instead of stderr.

    The gateway's logger is set to the root level, else Spark would treat the
    program as an interactive shell and print a log-level banner to its stderr.
    """
    return "\n".join(
        [
            "rootLogger.level = info",
            "rootLogger.appenderRef.file.ref = file",
            "appender.file.type = File",
            "appender.file.name = file",
            f"appender.file.fileName = {log_file.resolve()}",
            "appender.file.layout.type = PatternLayout",
            "appender.file.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex",
            "logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer",
            "logger.gateway.level = info",
            "logger.repl.name = org.apache.spark.repl.Main",
            "logger.repl.level = info",
            "logger.jetty.name = org.sparkproject.jetty",
            "logger.jetty.level = warn",
            "",
        ]
    )


def _write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _wait_for_session_exit(session_id: int, timeout: float) -> None:
    """Return once no process of the session is left, or after ``timeout`` seconds (blocking)."""
    deadline = time.monotonic() + timeout
    while session_members(session_id) and time.monotonic() < deadline:
        time.sleep(0.2)


class SparkApplication:
    """One attempt of the JobGraph's program: ``python PROGRAM ARGS`` as a PySpark driver in client mode.

    The program's stdout and stderr go to ``output`` (the job's rolling files in
    ``log_dir``, shared by its attempts); the driver JVM's Spark log to
    ``driver.log``, its log4j configuration written next to it.
    The program runs under the driver agent (``spark/driver_agent``), configured by ``agent`` and reached with
    ``agent_secret``; ``env``: added to the driver's environment (the cluster's Spark security: SPARK_CONF_DIR, SPARK_LOCAL_IP);
    ``resources_wait``: seconds the SparkContext waits for the job's executors (see :func:`submit_conf`).
    """

    def __init__(
        self,
        graph: JobGraph,
        staging_dir: Path,
        master: SparkMasterAddress,
        host: str,
        log_dir: Path,
        output: DriverOutputFiles,
        sizing_conf: dict[str, str],
        attempt: int,
        agent: AgentSettings,
        agent_secret: str,
        env: Mapping[str, str] | None = None,
        resources_wait: float = 300.0,
    ) -> None:
        vertex = graph.vertices[0]
        self.ui_port = find_free_port(host)
        self.ui_url = f"http://{host}:{self.ui_port}"
        conf = submit_conf(graph, master, host, self.ui_port, sizing_conf, resources_wait)
        py_files, jars = artifact_paths(graph, staging_dir)
        program, cwd = program_location(graph, staging_dir)
        self.output = output
        self.spark_log_file = log_dir / DRIVER_LOG_FILE
        self._log4j_config = log_dir / DRIVER_LOG4J_CONFIG_FILE
        self._stderr_start = output.stderr.end()  # the logical offset where this attempt's stderr begins
        spark_conf_dir = (env or {}).get("SPARK_CONF_DIR")
        # next to the Spark secret (a 0700 directory of the cluster's), removed with it
        self._properties = (Path(spark_conf_dir) if spark_conf_dir else staging_dir) / f"driver-{attempt}.properties"
        self._properties_text = driver_properties(conf, spark_conf_dir)
        self.process = ChildProcess(
            f"spark-driver-{attempt}",
            [sys.executable, "-m", DRIVER_AGENT_MODULE, str(program), *vertex.program_args],
            driver_env(self._properties, py_files, self._log4j_config, {**(env or {}), **agent.environment(agent_secret)}, jars),
            log_dir / DRIVER_STDERR_FILE,  # not opened: both streams go to their sinks
            cwd=cwd,
            umask=program_umask(),  # the program's files get the modes they would get under spark-submit
            stdout_sink=output.sink("stdout"),
            stderr_sink=output.sink("stderr"),
        )
        self.app_id: str | None = None
        self._local_mode = master.local_mode

    async def start(self) -> None:
        """Start the program; OSError when it cannot be started (e.g. its working directory is gone)."""
        await asyncio.to_thread(_write_file, self._log4j_config, driver_log4j_config(self.spark_log_file))
        await asyncio.to_thread(write_private_file, self._properties, self._properties_text)
        # created here, with this process's private modes: the driver JVM (the program's umask) only appends to it
        await asyncio.to_thread(self.spark_log_file.touch)
        await self.process.start()
        log.info("PySpark driver started (pid %s) in %s, driver UI %s", self.process.pid, self.process.cwd, self.ui_url)

    async def wait(self) -> int:
        """The program's exit code (negative: killed by that signal), as soon as the program has exited
        and what it wrote has been copied to ``output`` (see :meth:`ChildProcess.wait`).

        Its driver JVM may still be running its shutdown hooks then (see
        :meth:`wait_for_driver_jvm`); :meth:`stop` ends it in any case.
        """
        return await self.process.wait()

    async def wait_for_driver_jvm(self) -> None:
        """Until the driver JVM is gone too, at most ``GATEWAY_EXIT_TIMEOUT`` seconds after the program exited.

        The JVM is the program's child and exits when the program does (its
        stdin closes), which on a busy machine takes a second or two; a
        restarted attempt waits for it so that the old attempt's application
        has unregistered from the Spark master.
        """
        assert self.process.pid is not None
        await asyncio.to_thread(_wait_for_session_exit, self.process.pid, GATEWAY_EXIT_TIMEOUT)

    async def stop(self) -> None:
        await self.process.stop()

    def failure_cause(self, exit_code: int, memory_error_hint: str | None = None) -> str:
        """How the program ended, with its error from this attempt's stderr (see :func:`program_error`), and
        ``memory_error_hint`` after it when that error is a PySpark worker's MemoryError (see :func:`with_memory_error_hint`)."""
        stderr = stderr_tail(self.output.stderr, self._stderr_start)
        error = program_error(stderr)
        how = exit_description(exit_code)
        if error:
            return with_memory_error_hint(f"{how}:\n{error}", stderr, memory_error_hint)
        return f"{how} and wrote nothing to stderr (Spark's driver log: {self.spark_log_file})"

    async def progress(self) -> SparkProgress | None:
        """Progress from the driver's monitoring API; None while the driver UI is not up."""
        try:
            if self.app_id is None:
                apps = await fetch_json(f"{self.ui_url}/api/v1/applications")
                if not apps:
                    return None
                self.app_id = apps[0]["id"]
            base = f"{self.ui_url}/api/v1/applications/{self.app_id}"
            jobs = await fetch_json(f"{base}/jobs")
            executors = await fetch_json(f"{base}/executors")
            stages = await fetch_json(f"{base}/stages")
        except SparkError:
            return None
        return SparkProgress(
            app_id=self.app_id,
            jobs_total=len(jobs),
            jobs_completed=sum(1 for j in jobs if j.get("status") == "SUCCEEDED"),
            tasks_total=sum(j.get("numTasks", 0) for j in jobs),
            tasks_completed=sum(completed_tasks(j) for j in jobs),
            tasks_failed=sum(j.get("numFailedTasks", 0) for j in jobs),
            tasks_active=sum(j.get("numActiveTasks", 0) for j in jobs),
            executors=active_executors(executors, self._local_mode),
            **stage_io(stages),
        )


def stage_io(stages: list[dict[str, Any]]) -> dict[str, int]:
    """Bytes and records the application read from its inputs and wrote to its outputs, over all stage attempts.

    From Spark's ``/api/v1/applications/{id}/stages`` (``inputBytes``,
    ``inputRecords``, ``outputBytes``, ``outputRecords``: data sources and
    sinks, not shuffles). A re-run stage attempt counts again, as Spark counts it.
    """
    keys = {"input_bytes": "inputBytes", "input_records": "inputRecords", "output_bytes": "outputBytes", "output_records": "outputRecords"}
    return {ours: sum(int(stage.get(spark, 0)) for stage in stages) for ours, spark in keys.items()}


def active_executors(executors: list[dict[str, Any]], local_mode: bool) -> int:
    """The active executors of Spark's ``/api/v1/.../executors``: not the driver, except in local mode, where the
    driver's JVM is the one executor that runs tasks (Spark's ``LocalSchedulerBackend``)."""
    return sum(1 for e in executors if (local_mode or e.get("id") != "driver") and e.get("isActive", True))


def completed_tasks(job: dict[str, Any]) -> int:
    """Tasks of one Spark job (``/api/v1/.../jobs`` entry) that are done, never more than it has.

    Distinct task indices (``numCompletedIndices``), not task completions
    (``numCompletedTasks``), which count a task again when Spark re-runs it
    after losing an executor's output; plus the tasks of skipped stages.
    """
    total = int(job.get("numTasks", 0))
    done = int(job.get("numCompletedIndices", job.get("numCompletedTasks", 0))) + int(job.get("numSkippedTasks", 0))
    return min(total, done)
