"""Benchmark: each local target next to what Spark itself offers for it, in one invocation.

    .venv/bin/python benchmarks/startup_side_by_side.py --input CORPUS_DIR [--runs 3]

Runs, alternating in one invocation, WordCount on the corpus with:

- ``jobcluster run -t local -p 4 -D taskmanager.numberOfTaskSlots=2``: the MiniCluster, 2 TaskExecutors
  x 2 slots in one process, the program's Spark in ``local[4]``;
- ``spark-submit --master local[4]``, its counterpart;
- ``jobcluster run -t local-cluster -p 4 -D taskmanager.numberOfTaskSlots=2``: 2 TaskExecutor processes
  x 2 slots, each with a Spark worker;
- the same standalone cluster started by hand, with the same sizes (``standalone_cluster.py``).

Each command's phases in seconds from its start (jobcluster: REST up, all
slots offered, first Spark tasks, job FINISHED, command returned; by hand:
master up, workers registered, first tasks, job done, stopped), the medians, and the
ratios the issue sets goals for: ``local`` / ``local[4]`` <= 1.1, ``local-cluster`` /
by hand <= 1.0.  Where the time goes: per command, the CPU seconds of its
processes by kind (sampled every 0.25 s, so a process's last quarter second may
be missing) and the CPU seconds the machine spent on other processes meanwhile
(a shared machine's other load).  Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import psutil

from jobcluster.spark.home import spark_home

REPO = Path(__file__).resolve().parents[1]
WORDCOUNT = REPO / "examples" / "wordcount.py"

JOBCLUSTER_PHASES = (
    ("rest_up", re.compile(r"is up; REST API")),
    ("slots_offered", re.compile(r"Slots offered to the job: (\d+)/\1$")),
    ("first_tasks", re.compile(r"Spark \S+: \d+/\d+ Spark jobs, \d+/[1-9]\d* tasks done")),
    ("job_finished", re.compile(r" FINISHED in ")),
)


def jobcluster(corpus: str, out: str, target: str) -> dict[str, float]:
    argv = [sys.executable, "-m", "jobcluster", "run", "-t", target, "-p", "4", "-D", "taskmanager.numberOfTaskSlots=2"]
    argv += [str(WORDCOUNT), "--input", corpus, "--output", out]
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    times: dict[str, float] = {}
    for line in proc.stderr:
        for name, pattern in JOBCLUSTER_PHASES:
            if name not in times and pattern.search(line.rstrip()):
                times[name] = time.monotonic() - start
    if proc.wait() != 0:
        raise SystemExit(f"jobcluster run failed: {argv}")
    times["returned"] = time.monotonic() - start
    return times


def by_hand(corpus: str, out: str) -> dict[str, float]:
    argv = [sys.executable, str(REPO / "benchmarks" / "standalone_cluster.py"), "--workers", "2", "--slots", "2"]
    argv += [str(WORDCOUNT), "--input", corpus, "--output", out]
    start = time.monotonic()
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"the hand-started cluster failed: {result.stdout}{result.stderr}")
    times = {m.group(1): float(m.group(2)) for m in re.finditer(r"^PHASE (\S+) (\S+)$", result.stdout, re.M)}
    times["returned"] = time.monotonic() - start
    return times


def spark_submit(
    master: str, program: Path, args: list[str], conf: dict[str, str] | None = None, jars: list[str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of PySpark's own ``spark-submit`` running ``program args`` on ``master``.

    The driver and its Python workers run this interpreter (the venv's), as jobcluster's do;
    ``conf``: more ``--conf`` settings; ``jars``: for ``--jars``.
    """
    submit = spark_home() / "bin" / "spark-submit"  # the venv's wrapper script needs Spark's env on PATH
    argv = [str(submit), "--master", master, "--conf", f"spark.pyspark.python={sys.executable}"]
    for key, value in (conf or {}).items():
        argv += ["--conf", f"{key}={value}"]
    if jars:
        argv += ["--jars", ",".join(jars)]
    return [*argv, str(program), *args], {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}


def local4(corpus: str, out: str) -> dict[str, float]:
    argv, env = spark_submit("local[4]", WORDCOUNT, ["--input", corpus, "--output", out])
    start = time.monotonic()
    subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return {"returned": time.monotonic() - start}


# (marker in the command line, kind): the first that matches names a process
PROCESS_KINDS = (
    ("jobcluster.backends.local.mini_cluster_entrypoint", "JobManager+TaskExecutors (Python)"),
    ("jobcluster.backends.local.entrypoint", "JobManager (Python)"),
    ("jobcluster.runtime.taskexecutor", "TaskExecutor (Python)"),
    ("deploy.master.Master", "Spark master JVM"),
    ("deploy.worker.Worker", "Spark worker JVM"),
    ("CoarseGrainedExecutorBackend", "executor JVM"),
    ("SparkSubmit", "driver JVM"),  # before the daemon's name, which the driver's --conf carries
    ("jobcluster.spark.pyspark_daemon", "PySpark workers"),
    ("pyspark.daemon", "PySpark workers"),
    ("pyspark/daemon", "PySpark workers"),
    ("jobcluster.spark.driver_agent", "driver (Python)"),
    ("wordcount.py", "driver (Python)"),
    ("-m jobcluster", "client (Python)"),
    ("standalone_cluster.py", "client (Python)"),
)


def process_kind(cmdline: str) -> str:
    return next((kind for marker, kind in PROCESS_KINDS if marker in cmdline), "other")


class CpuSampler:
    """CPU seconds of this process's descendants by kind, and of the machine's other processes, while it runs."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[str, float]] = {}
        self.by_kind: dict[str, float] = defaultdict(float)
        self.others = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> CpuSampler:
        self._machine_start = psutil.cpu_times()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        end = psutil.cpu_times()
        busy = sum(getattr(end, f) - getattr(self._machine_start, f) for f in ("user", "system", "nice", "irq", "softirq"))
        for kind, seconds in self._last.values():
            self.by_kind[kind] += seconds
        self.others = max(0.0, busy - sum(self.by_kind.values()))

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._done.is_set():
            for proc in me.children(recursive=True):
                try:
                    times = proc.cpu_times()
                    # a launcher script may exec its JVM later under the same pid: the last kind seen names it
                    kind = process_kind(" ".join(proc.cmdline()))
                    if kind == "other" and proc.pid in self._last:
                        kind = self._last[proc.pid][0]
                    self._last[proc.pid] = (kind, times.user + times.system)
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            self._done.wait(0.25)


def timed(command: Callable[[str], dict[str, float]], out: str) -> tuple[dict[str, float], CpuSampler]:
    with CpuSampler() as cpu:
        times = command(out)
    return times, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="the corpus directory")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    commands = {
        "local": lambda out: jobcluster(args.input, out, "local"),
        "local[4]": lambda out: local4(args.input, out),
        "local-cluster 2x2": lambda out: jobcluster(args.input, out, "local-cluster"),
        "by hand 2x2": lambda out: by_hand(args.input, out),
    }
    results: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
    cpu: dict[str, list[CpuSampler]] = {name: [] for name in commands}
    for run in range(args.runs):
        for name, command in commands.items():
            with tempfile.TemporaryDirectory() as tmp:
                times, sampled = timed(command, os.path.join(tmp, "out"))
            results[name].append(times)
            cpu[name].append(sampled)
            print(f"run {run + 1} {name:<17} " + "  ".join(f"{k} {v:.1f}" for k, v in times.items()), flush=True)
            kinds = sorted(sampled.by_kind.items(), key=lambda kv: -kv[1])
            print("    CPU s: " + ", ".join(f"{k} {v:.1f}" for k, v in kinds) + f"; other processes {sampled.others:.1f}", flush=True)
    medians = {name: {k: statistics.median(t[k] for t in runs) for k in runs[0]} for name, runs in results.items()}
    print("\nmedians (seconds from the command's start):")
    for name, times in medians.items():
        print(f"  {name:<17} " + "  ".join(f"{k} {v:.1f}" for k, v in times.items()))
    wall = {name: times["returned"] for name, times in medians.items()}
    print(f"\nlocal / local[4]:                 {wall['local'] / wall['local[4]']:.2f}x (goal <= 1.1)")
    print(f"local-cluster 2x2 / by hand 2x2:  {wall['local-cluster 2x2'] / wall['by hand 2x2']:.2f}x (goal <= 1.0)")
    first, by_hand_first = medians["local-cluster 2x2"].get("first_tasks"), medians["by hand 2x2"].get("first_tasks")
    if first is not None and by_hand_first is not None:
        print(f"first Spark tasks: local-cluster 2x2 at {first:.1f} s, by hand at {by_hand_first:.1f} s")
    for name in ("local", "local-cluster 2x2"):
        after = wall[name] - medians[name]["job_finished"]
        print(f"after the job: {name} returns {after:.1f} s after FINISHED")
    print("\nmedian CPU seconds by kind of process (and of the machine's other processes):")
    for name, samples in cpu.items():
        all_kinds = sorted({k for s in samples for k in s.by_kind})
        medians_cpu = {k: statistics.median(s.by_kind.get(k, 0.0) for s in samples) for k in all_kinds}
        total = statistics.median(sum(s.by_kind.values()) for s in samples)
        others = statistics.median(s.others for s in samples)
        print(f"  {name:<17} total {total:.1f}: " + ", ".join(f"{k} {v:.1f}" for k, v in medians_cpu.items()) + f"; others {others:.1f}")


if __name__ == "__main__":
    main()
