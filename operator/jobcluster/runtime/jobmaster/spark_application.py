"""One run of the job's PySpark program against the job's Spark master.

The JobMaster starts it with ``spark-submit`` in client mode, so the driver
runs inside the JobManager's process tree, and follows it two ways: the
driver process's exit code decides the outcome, and Spark's monitoring REST
API (``/api/v1/applications/...`` on the driver UI) gives progress.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobcluster.errors import SparkError
from jobcluster.jobgraph.model import JobGraph
from jobcluster.processes import ChildProcess, find_free_port
from jobcluster.spark.home import spark_env, spark_home
from jobcluster.spark.processes import SparkMasterAddress, fetch_json

log = logging.getLogger(__name__)

OUTPUT_TAIL_BYTES = 64 * 1024


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

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def submit_conf(graph: JobGraph, master: SparkMasterAddress, host: str, ui_port: int, sizing_conf: dict[str, str]) -> dict[str, str]:
    """Spark settings for the job: parallelism from the JobGraph, sizes from the memory model.

    ``spark.cores.max`` = the job's parallelism (one core per slot; executors
    take the cores Spark grants them, see ``spark/parallelism.py``), and Spark's
    default partition counts follow it, so ``-p`` means the same thing to Spark
    that it means to the cluster. ``sizing_conf`` (the memory model's settings
    and the user's ``spark.*`` keys) is applied last.
    """
    p = str(graph.parallelism)
    conf = {
        "spark.master": master.url,
        "spark.submit.deployMode": "client",
        "spark.app.name": graph.job_name,
        "spark.cores.max": p,
        "spark.default.parallelism": p,
        "spark.sql.shuffle.partitions": p,
        "spark.driver.host": host,
        "spark.driver.bindAddress": host,
        "spark.ui.port": str(ui_port),
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.ui.showConsoleProgress": "false",
    }
    conf.update(sizing_conf)
    return conf


class SparkApplication:
    """``spark-submit`` of the JobGraph's program, with stdout and stderr to files in ``log_dir``.

    ``env``: added to the driver's environment (the cluster's Spark security: SPARK_CONF_DIR, SPARK_LOCAL_IP).
    """

    def __init__(
        self,
        graph: JobGraph,
        staging_dir: Path,
        master: SparkMasterAddress,
        host: str,
        log_dir: Path,
        sizing_conf: dict[str, str],
        attempt: int,
        env: Mapping[str, str] | None = None,
    ) -> None:
        vertex = graph.vertices[0]
        self.ui_port = find_free_port(host)
        self.ui_url = f"http://{host}:{self.ui_port}"
        conf = submit_conf(graph, master, host, self.ui_port, sizing_conf)
        argv = [str(spark_home() / "bin" / "spark-submit")]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        py_files = [str(staging_dir / a.path) for a in graph.user_artifacts if a.path.endswith((".py", ".zip", ".egg"))]
        if py_files:
            argv += ["--py-files", ",".join(py_files)]
        argv += [str(staging_dir / vertex.program), *vertex.program_args]
        self.stdout_file = log_dir / f"driver-{attempt}.out"
        self.process = ChildProcess(
            f"spark-driver-{attempt}",
            argv,
            spark_env(dict(env or {})),
            log_dir / f"driver-{attempt}.log",
            cwd=Path.cwd(),
            stdout_file=self.stdout_file,
        )
        self.app_id: str | None = None

    async def start(self) -> None:
        await self.process.start()
        log.info("spark-submit started (pid %s), driver UI %s", self.process.pid, self.ui_url)

    async def wait(self) -> int:
        return await self.process.wait()

    async def stop(self) -> None:
        await self.process.stop()

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
        except SparkError:
            return None
        return SparkProgress(
            app_id=self.app_id,
            jobs_total=len(jobs),
            jobs_completed=sum(1 for j in jobs if j.get("status") == "SUCCEEDED"),
            tasks_total=sum(j.get("numTasks", 0) for j in jobs),
            tasks_completed=sum(completed_tasks(j) for j in jobs),
            tasks_failed=sum(j.get("numFailedTasks", 0) for j in jobs),
            executors=sum(1 for e in executors if e.get("id") != "driver" and e.get("isActive", True)),
        )

    def output(self) -> str:
        return _tail(self.stdout_file)

    def error_tail(self) -> str:
        """Why the driver failed: its last Python traceback, else the end of its log.

        spark-submit merges the Python driver's stderr into its stdout, so a
        PySpark program's traceback is in the stdout file; Spark's own errors
        are in the log.
        """
        for text in (_tail(self.stdout_file, 32 * 1024), _tail(self.process.log_file, 32 * 1024)):
            traceback = last_python_traceback(text)
            if traceback:
                return traceback
        return "\n".join(_tail(self.process.log_file, 16 * 1024).splitlines()[-30:])


def completed_tasks(job: dict[str, Any]) -> int:
    """Tasks of one Spark job (``/api/v1/.../jobs`` entry) that are done, never more than it has.

    Distinct task indices (``numCompletedIndices``), not task completions
    (``numCompletedTasks``), which count a task again when Spark re-runs it
    after losing an executor's output; plus the tasks of skipped stages.
    """
    total = int(job.get("numTasks", 0))
    done = int(job.get("numCompletedIndices", job.get("numCompletedTasks", 0))) + int(job.get("numSkippedTasks", 0))
    return min(total, done)


def last_python_traceback(text: str) -> str | None:
    """The last ``Traceback (most recent call last):`` block of ``text``, up to its exception line."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    if not starts:
        return None
    block = [lines[starts[-1]]]
    for line in lines[starts[-1] + 1 :]:
        block.append(line)
        if line and not line[0].isspace():  # the exception line ends the block
            break
    return "\n".join(block)


def _tail(path: Path, limit: int = OUTPUT_TAIL_BYTES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""
