"""A Spark standalone cluster started by hand, step by step, with the sizes jobcluster would give it.

    .venv/bin/python benchmarks/standalone_cluster.py --workers 2 --slots 2 PROGRAM [ARGS...]

What a user does without jobcluster: start the master, then each worker (and wait
until it registered), then ``spark-submit --master spark://... --deploy-mode client``,
then stop the workers and the master.  Every size comes from jobcluster's own
mapping of the shipped memory configuration (``spark/sizing.py``): the workers'
cores and memory, the executors' and the driver's settings, so the two clusters
differ only in how they are started.  Prints one line per phase (master up,
workers registered, first tasks, job done, stopped) with the seconds
since the start (``PHASE <name> <seconds>``), which ``startup_side_by_side.py``
reads; exits with spark-submit's code.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jobcluster.config.loader import load_configuration
from jobcluster.memory.jobmanager import job_manager_process_spec_from_config
from jobcluster.memory.managed import ManagedMemoryConsumers
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.spark.home import spark_home
from jobcluster.spark.sizing import spark_sizing_for_job_manager, spark_sizing_for_task_executor

HOST = "127.0.0.1"
START = time.monotonic()


def phase(name: str) -> None:
    print(f"PHASE {name} {time.monotonic() - START:.2f}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def wait_for_line(log: Path, text: str, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise SystemExit(f"{log.name}: the process ended ({process.returncode}) before {text!r}")
        time.sleep(0.05)
    raise SystemExit(f"{log.name}: no {text!r} within {timeout:.0f} s")


def daemon(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def run_driver(argv: list[str], env: dict[str, str]) -> int:
    """spark-submit in client mode; its phase ``first_tasks`` when the DAGScheduler submits the first stage's tasks.

    The driver's INFO log (spark-submit's default level for a Python program)
    says ``Submitting N missing tasks``, the moment jobcluster's progress first
    shows a Spark job with its tasks.
    """
    driver = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert driver.stderr is not None
    first = False
    for line in driver.stderr:  # read to its end, or the driver blocks on a full pipe
        if not first and "Submitting" in line and "missing tasks" in line:
            first = True
            phase("first_tasks")
    return driver.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slots", type=int, default=2, help="cores per worker (jobcluster's slots per TaskExecutor)")
    parser.add_argument("-D", dest="properties", action="append", default=[], metavar="KEY=VALUE", help="jobcluster options for the sizes")
    parser.add_argument("program")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    config = load_configuration(None, dict(p.split("=", 1) for p in [f"taskmanager.numberOfTaskSlots={args.slots}", *args.properties]))
    # the same sizes as jobcluster's executors, PySpark workers' limits included (the shipped consumer weights)
    tm = spark_sizing_for_task_executor(task_executor_process_spec_from_config(config), ManagedMemoryConsumers.from_config(config))
    jm = spark_sizing_for_job_manager(job_manager_process_spec_from_config(config))
    spark_class = str(spark_home() / "bin" / "spark-class")
    work = Path(tempfile.mkdtemp(prefix="standalone-"))
    env = {**os.environ, "SPARK_LOCAL_IP": HOST, "SPARK_LOCAL_DIRS": str(work)}
    processes: list[subprocess.Popen] = []
    try:
        port = free_port()
        master_log = work / "master.log"
        master_argv = [spark_class, "org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port)]
        processes.append(daemon([*master_argv, "--webui-port", str(free_port())], {**env, **jm.master_env()}, master_log))
        wait_for_line(master_log, "I have been elected leader", processes[0])
        phase("master_up")
        url = f"spark://{HOST}:{port}"
        for n in range(args.workers):
            log = work / f"worker-{n}.log"
            argv = [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", HOST, "--webui-port", str(free_port())]
            argv += [*tm.worker_args(), "--work-dir", str(work / f"worker-{n}"), url]
            processes.append(daemon(argv, {**env, **tm.worker_env()}, log))
            wait_for_line(log, "Successfully registered with master", processes[-1])
        phase("workers_registered")
        conf = {
            **tm.executor_conf(),
            **jm.driver_conf(),
            "spark.cores.max": str(args.workers * args.slots),
            "spark.default.parallelism": str(args.workers * args.slots),
            "spark.sql.shuffle.partitions": str(args.workers * args.slots),
            "spark.pyspark.python": sys.executable,
            "spark.ui.showConsoleProgress": "false",
        }
        submit = [str(spark_home() / "bin" / "spark-submit"), "--master", url, "--deploy-mode", "client"]
        for key, value in conf.items():
            submit += ["--conf", f"{key}={value}"]
        code = run_driver([*submit, args.program, *args.args], env)
        phase("job_done")
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in reversed(processes):
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(work, ignore_errors=True)
    phase("stopped")
    return code


if __name__ == "__main__":
    sys.exit(main())
