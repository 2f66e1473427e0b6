"""Benchmark: WordCount on YARN, jobcluster's per-job cluster next to ``spark-submit --deploy-mode cluster``.

    .venv/bin/python benchmarks/wordcount_yarn.py [--input CORPUS_DIR] [-p 4] [--slots 2] [--keep DIR]

Run it from the repository root: it starts the Hadoop test cluster itself
(``tests/infra/hadoop``, HDFS + YARN on this machine), uploads the corpus to
HDFS, and then, one after the other on that cluster and corpus:

1. ``jobcluster run -t yarn-per-job`` on the fresh cluster with a private
   ``JOBCLUSTER_CACHE``, so every part of the Python environment is really
   packed, uploaded and localized (``jobcluster-1st``: the first job ever);
2. the same command again (``jobcluster-cached``: every part cached on the
   client, on HDFS and on the node);
3. the same command from a copy of the environment (hard links, in the
   benchmark's directory) into which one small package was installed
   (``jobcluster-changed``: the first job after a change of the user's
   packages, which ships the environment part again and nothing else);
4. ``spark-submit --master yarn --deploy-mode cluster`` of the same
   examples/wordcount.py (pyspark's own ``bin/spark-submit``), with as many
   executors as jobcluster has TaskExecutors, as many cores each as slots, and
   the same container sizes (executor and driver memory = jobcluster's
   TaskExecutor and JobManager container sizes minus Spark's 384 MiB
   overhead). Its containers run the client's Python (``spark.pyspark.python``):
   on this one-machine cluster they can.

Phases, in seconds from the command's start: the application id printed,
ACCEPTED, RUNNING (jobcluster: its REST address printed), all containers
running (from the NodeManager's REST API), all slots offered (jobcluster) /
the job done (jobcluster: its result line; spark-submit: the final status
set when the driver ended), the application FINISHED at the ResourceManager,
and the command returned. jobcluster's phases come from its progress lines
on stderr, spark-submit's from the ResourceManager's REST API polled every
0.25 s. For the jobcluster runs also the seconds spent packing and
uploading the Python environment's parts. At the end, each jobcluster run's
time until the command returned as a ratio to spark-submit's (the goals:
``first`` after a change <= 1.3, ``cached`` <= 1.05).

Per container (ApplicationMaster, TaskExecutors, Spark executors): the peak
resident memory of its whole process tree (every process whose environment
has its ``CONTAINER_ID``, plus their descendants, summed as YARN's
physical-memory check sums RSS), sampled every 0.2 s, next to the
container's size from the NodeManager (``totalMemoryNeededMB``) and its exit
code. Numbers go to docs/development/benchmarks.md; they are never asserted.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pyspark
import requests
from hdfs import InsecureClient

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.infra.hadoop.cluster import HadoopCluster  # noqa: E402 - needs the repository root on sys.path

WORDCOUNT = REPO / "examples" / "wordcount.py"
SPARK_HOME = Path(pyspark.__file__).parent
SPARK_SUBMIT = SPARK_HOME / "bin" / "spark-submit"
SPARK_MEMORY_OVERHEAD_MIB = 384
"""Spark's minimum memory overhead of a YARN container (spark.{driver,executor}.memoryOverhead)."""
MEMORY_SAMPLE_INTERVAL = 0.2
YARN_POLL_INTERVAL = 0.25
HTTP_TIMEOUT = 5.0
RUN_TIMEOUT = 1800.0
TERMINAL = frozenset({"FINISHED", "FAILED", "KILLED"})


def default_corpus() -> str | None:
    env = os.environ.get("JOBCLUSTER_CORPUS")
    if env:
        return env
    cached = Path.home() / ".cache" / "jobcluster" / "corpus" / "python3.11-doc" / "sources"
    return str(cached) if cached.is_dir() else None


# -- what YARN says: application states (ResourceManager) and containers (NodeManager) --------------


@dataclass
class ContainerInfo:
    container_id: str
    size_mib: int = 0
    vcores: int = 0
    state: str = ""
    exit_code: int | None = None
    running_at: float | None = None
    peak_rss_mib: float = 0.0

    @property
    def application_id(self) -> str:
        # container_[e<epoch>_]<cluster timestamp>_<application>_<attempt>_<container>
        parts = [p for p in self.container_id.split("_")[1:] if not p.startswith("e")]
        return f"application_{parts[0]}_{parts[1]}"

    @property
    def is_application_master(self) -> bool:
        # The first container of an attempt is its ApplicationMaster.
        return int(self.container_id.rsplit("_", 1)[1]) == 1


@dataclass
class YarnWatch:
    """Polls the ResourceManager's applications and the NodeManager's containers; samples container memory."""

    rm_url: str
    nm_url: str
    states: dict[str, dict[str, float]] = field(default_factory=dict)  # app id -> state or "final:<status>" -> first seen
    containers: dict[str, ContainerInfo] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _owner_cache: dict[tuple[int, float], str | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> YarnWatch:
        for target in (self._poll_yarn, self._sample_memory):
            thread = threading.Thread(target=self._loop, args=(target,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def _loop(self, step: Callable[[], float]) -> None:
        while not self._stop.is_set():
            interval = step()
            self._stop.wait(interval)

    def _poll_yarn(self) -> float:
        now = time.monotonic()
        try:
            apps = requests.get(f"{self.rm_url}/ws/v1/cluster/apps", timeout=HTTP_TIMEOUT).json().get("apps") or {}
            nodes = requests.get(f"{self.nm_url}/ws/v1/node/containers", timeout=HTTP_TIMEOUT).json().get("containers") or {}
        except (requests.RequestException, ValueError):
            return YARN_POLL_INTERVAL
        with self._lock:
            for app in apps.get("app", []):
                seen = self.states.setdefault(app["id"], {})
                seen.setdefault(app["state"], now)
                if app.get("finalStatus", "UNDEFINED") != "UNDEFINED":
                    seen.setdefault(f"final:{app['finalStatus']}", now)
            for c in nodes.get("container", []):
                info = self.containers.setdefault(c["id"], ContainerInfo(c["id"]))
                info.size_mib = int(c.get("totalMemoryNeededMB", 0))
                info.vcores = int(c.get("totalVCoresNeeded", 0))
                info.state = c.get("state", "")
                if info.state == "RUNNING" and info.running_at is None:
                    info.running_at = now
                if c.get("exitCode") is not None and info.state not in ("NEW", "LOCALIZING", "RUNNING"):
                    info.exit_code = int(c["exitCode"])
        return YARN_POLL_INTERVAL

    def _owner(self, proc: psutil.Process, create_time: float) -> str | None:
        key = (proc.pid, create_time)
        if key not in self._owner_cache:
            try:
                self._owner_cache[key] = proc.environ().get("CONTAINER_ID")
            except (psutil.Error, OSError):
                self._owner_cache[key] = None
        return self._owner_cache[key]

    def _sample_memory(self) -> float:
        started = time.monotonic()
        procs: dict[int, tuple[int, str | None, int]] = {}  # pid -> (ppid, CONTAINER_ID of its environment, rss)
        for proc in psutil.process_iter(["ppid", "create_time", "memory_info"]):
            attrs = proc.info
            if attrs["memory_info"] is None or attrs["create_time"] is None:
                continue
            procs[proc.pid] = (attrs["ppid"], self._owner(proc, attrs["create_time"]), attrs["memory_info"].rss)
        resolved: dict[int, str | None] = {}

        def container_of(pid: int) -> str | None:
            chain = []
            found: str | None = None
            while pid in procs and pid not in resolved:
                chain.append(pid)
                ppid, own, _ = procs[pid]
                if own:
                    found = own
                    break
                pid = ppid
            else:
                found = resolved.get(pid)
            for p in chain:
                resolved[p] = found
            return found

        totals: dict[str, int] = {}
        for pid, (_, _, rss) in procs.items():
            owner = container_of(pid)
            if owner:
                totals[owner] = totals.get(owner, 0) + rss
        with self._lock:
            for container_id, rss in totals.items():
                info = self.containers.setdefault(container_id, ContainerInfo(container_id))
                info.peak_rss_mib = max(info.peak_rss_mib, rss / (1 << 20))
        return max(0.0, MEMORY_SAMPLE_INTERVAL - (time.monotonic() - started))

    def of_application(self, application_id: str) -> list[ContainerInfo]:
        with self._lock:
            return sorted((c for c in self.containers.values() if c.application_id == application_id), key=lambda c: c.container_id)

    def wait_until_gone(self, application_id: str, timeout: float = 120.0) -> None:
        """Until no container of the application runs any more (the next run gets the whole node)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                states = self.states.get(application_id, {})
                live = [
                    c
                    for c in self.containers.values()
                    if c.application_id == application_id and c.state in ("NEW", "LOCALIZING", "RUNNING")
                ]
            if TERMINAL.intersection(states) and not live:
                return
            time.sleep(1)


# -- one run ----------------------------------------------------------------------------------------


@dataclass
class Run:
    name: str
    application_id: str = ""
    phases: dict[str, float] = field(default_factory=dict)
    containers: list[ContainerInfo] = field(default_factory=list)
    exit_code: int = 0
    rm_states: dict[str, float] = field(default_factory=dict)
    """What the ResourceManager's REST API showed when (seconds from the start; polled)."""


def follow(argv: list[str], env: dict[str, str], log: Path, on_line: Callable[[str, float], None]) -> tuple[int, float, float]:
    """Run ``argv``, call ``on_line(line, seconds since start)`` for each stderr line, copy stderr to ``log``.
    Returns the exit code, the start (monotonic) and the seconds until it returned."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    with log.open("w") as out:
        for line in proc.stderr:
            now = time.monotonic() - start
            out.write(f"{now:8.2f} {line}")
            on_line(line, now)
    code = proc.wait(timeout=RUN_TIMEOUT)
    return code, start, time.monotonic() - start


def jobcluster_run(
    name: str,
    watch: YarnWatch,
    env: dict[str, str],
    args: argparse.Namespace,
    input_uri: str,
    output_uri: str,
    logs: Path,
    python: str = sys.executable,
) -> Run:
    run = Run(name)
    marks: dict[str, float] = {}
    patterns = {
        "id printed": re.compile(r"^Created YARN application (application_\S+)"),
        "pack start": re.compile(r"^Packing the parts of the Python environment"),
        "pack end": re.compile(r"^Packed \d+ part\(s\) of the Python environment"),
        "upload start": re.compile(r"^Uploading \d+ part\(s\) of the Python environment"),
        "upload end": re.compile(r"^Uploaded the Python environment"),
        "ACCEPTED": re.compile(r"^YARN application \S+ ACCEPTED"),
        "RUNNING": re.compile(r"^YARN application \S+ RUNNING"),
        "job done": re.compile(r"^Job [0-9a-f]+ \(.*\) [A-Z]+ in [\d.]+ s"),
    }

    def on_line(line: str, now: float) -> None:
        for key, pattern in patterns.items():
            match = pattern.search(line)
            if match and key not in marks:
                marks[key] = now
                if key == "id printed":
                    run.application_id = match.group(1)
        slots = re.search(r"^Slots offered to the job: (\d+)/(\d+)", line)
        if slots and slots.group(1) == slots.group(2):
            marks.setdefault("all slots offered", now)

    argv = [
        python,
        "-m",
        "jobcluster",
        "run",
        "-t",
        "yarn-per-job",
        "-p",
        str(args.parallelism),
        "-D",
        f"taskmanager.numberOfTaskSlots={args.slots}",
        str(WORDCOUNT),
        "--input",
        input_uri,
        "--output",
        output_uri,
    ]
    run.exit_code, start, returned = follow(argv, env, logs / f"{name}.stderr", on_line)
    marks["command returned"] = returned
    run.phases = marks
    finish_run(run, watch, start)
    return run


def spark_submit_run(
    name: str,
    watch: YarnWatch,
    env: dict[str, str],
    args: argparse.Namespace,
    sizes: tuple[int, int],
    input_uri: str,
    output_uri: str,
    logs: Path,
) -> Run:
    run = Run(name)
    marks: dict[str, float] = {}
    am_mib, executor_mib = sizes

    def on_line(line: str, now: float) -> None:
        match = re.search(r"Submitted application (application_\d+_\d+)", line)
        if match and "id printed" not in marks:
            marks["id printed"] = now
            run.application_id = match.group(1)

    python = sys.executable
    argv = [
        str(SPARK_SUBMIT),
        "--master",
        "yarn",
        "--deploy-mode",
        "cluster",
        "--name",
        "wordcount-spark-submit",
        "--num-executors",
        str(args.parallelism // args.slots),
        "--executor-cores",
        str(args.slots),
        "--executor-memory",
        f"{executor_mib - SPARK_MEMORY_OVERHEAD_MIB}m",
        "--driver-memory",
        f"{am_mib - SPARK_MEMORY_OVERHEAD_MIB}m",
        "--driver-cores",
        "1",
        "--conf",
        f"spark.pyspark.python={python}",
        "--conf",
        f"spark.pyspark.driver.python={python}",
        "--conf",
        f"spark.yarn.appMasterEnv.PYSPARK_PYTHON={python}",
        "--conf",
        f"spark.executorEnv.PYSPARK_PYTHON={python}",
        str(WORDCOUNT),
        "--input",
        input_uri,
        "--output",
        output_uri,
    ]
    run.exit_code, start, returned = follow(argv, env, logs / f"{name}.stderr", on_line)
    marks["command returned"] = returned
    run.phases = marks
    finish_run(run, watch, start)
    if "job done" not in run.phases:
        final = next((t for k, t in watch.states.get(run.application_id, {}).items() if k.startswith("final:")), None)
        if final is not None:
            run.phases["job done"] = final - start
    for state in ("ACCEPTED", "RUNNING"):
        seen = watch.states.get(run.application_id, {}).get(state)
        if seen is not None:
            run.phases[state] = seen - start
    return run


def finish_run(run: Run, watch: YarnWatch, start: float) -> None:
    """Fill in what YARN saw: the application FINISHED, every container running, each container's numbers."""
    if not run.application_id:
        return
    watch.wait_until_gone(run.application_id)
    states = watch.states.get(run.application_id, {})
    run.rm_states = {state: t - start for state, t in states.items()}
    ended = [t for state, t in states.items() if state in TERMINAL]
    if ended:
        run.phases["app FINISHED (RM)"] = min(ended) - start
    run.containers = watch.of_application(run.application_id)
    running = [c.running_at for c in run.containers]
    if running and all(t is not None for t in running):
        run.phases["all containers running"] = max(t for t in running if t is not None) - start


# -- report --------------------------------------------------------------------------------------------

PHASES = [
    "id printed",
    "ACCEPTED",
    "RUNNING",
    "all containers running",
    "all slots offered",
    "job done",
    "app FINISHED (RM)",
    "command returned",
]


def print_phases(runs: Iterable[Run]) -> None:
    runs = list(runs)
    width = max(len(r.name) for r in runs) + 2
    print("seconds from the command's start")
    print(" " * width + "".join(f"{p:>24}" for p in PHASES))
    for run in runs:
        cells = "".join(f"{run.phases[p]:>24.1f}" if p in run.phases else f"{'-':>24}" for p in PHASES)
        print(f"{run.name:<{width}}{cells}")
    for run in runs:
        extra = []
        for what in ("pack", "upload"):
            if f"{what} start" in run.phases and f"{what} end" in run.phases:
                extra.append(f"{what} {run.phases[f'{what} end'] - run.phases[f'{what} start']:.1f} s")
        if extra:
            print(f"{run.name}: Python environment " + ", ".join(extra))


def print_ratios(runs: Iterable[Run]) -> None:
    """Each jobcluster run's time until its command returned, as a ratio to spark-submit's."""
    by_name = {r.name: r for r in runs}
    reference = by_name.get("spark-submit")
    if reference is None or "command returned" not in reference.phases:
        return
    base = reference.phases["command returned"]
    print(f"\nuntil the command returned, vs. spark-submit's {base:.1f} s")
    for run in by_name.values():
        if run.name != "spark-submit" and "command returned" in run.phases:
            print(f"{run.name:<20}{run.phases['command returned']:>8.1f} s{run.phases['command returned'] / base:>8.2f}x")


def changed_environment(work: Path) -> Path:
    """A copy of this environment (hard links: nothing of the original changes) with one small package installed,
    as a user adding a dependency would: its Python."""
    copy = work / "venv-changed"
    subprocess.run(["cp", "-al", sys.prefix, str(copy)], check=True)
    site = next(copy.glob("lib/python*/site-packages"))
    package = site / "benchmark_added_package"
    package.mkdir()
    (package / "__init__.py").write_text("ADDED = True\n")
    return copy / "bin" / "python"


def print_containers(runs: Iterable[Run]) -> None:
    print("\nper container: peak RSS of its process tree vs. its size")
    print(f"{'run':<20}{'container':<44}{'role':<20}{'size MiB':>10}{'peak MiB':>10}{'of size':>9}{'exit':>6}")
    for run in runs:
        workers = "TaskExecutor" if run.name.startswith("jobcluster") else "executor"
        for c in run.containers:
            role = "ApplicationMaster" if c.is_application_master else workers
            share = f"{100 * c.peak_rss_mib / c.size_mib:.0f}%" if c.size_mib else "?"
            code = "-" if c.exit_code is None else str(c.exit_code)
            print(f"{run.name:<20}{c.container_id:<44}{role:<20}{c.size_mib:>10}{c.peak_rss_mib:>10.0f}{share:>9}{code:>6}")


def memory_kills(cluster: HadoopCluster) -> list[str]:
    log = cluster.log_dir / "nodemanager.log"
    if not log.exists():
        return []
    return [
        line.strip()
        for line in log.read_text(errors="replace").splitlines()
        if "beyond the 'PHYSICAL' memory limit" in line or "beyond physical memory" in line
    ]


# -- main ------------------------------------------------------------------------------------------------


def upload_corpus(cluster: HadoopCluster, corpus: str) -> tuple[str, float]:
    client = InsecureClient(cluster.webhdfs_url, user=getpass.getuser())
    start = time.monotonic()
    client.makedirs("/benchmark")
    client.upload("/benchmark/corpus", corpus, n_threads=2)
    return f"{cluster.fs_default_fs}/benchmark/corpus", time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--input", default=default_corpus(), help="local corpus directory (default: $JOBCLUSTER_CORPUS or the Makefile's corpus)"
    )
    parser.add_argument("-p", "--parallelism", type=int, default=4)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep the runs' stderr, the numbers (JSON) and the cluster's logs here")
    args = parser.parse_args()
    if not args.input or not Path(args.input).is_dir():
        parser.error("--input: no corpus directory (set $JOBCLUSTER_CORPUS or run `make corpus`)")

    with tempfile.TemporaryDirectory(prefix="jobcluster-bench-yarn-") as tmp:
        work = args.keep or Path(tmp)
        logs = work / "runs"
        logs.mkdir(parents=True, exist_ok=True)
        cluster_start = time.monotonic()
        with HadoopCluster(work / "hadoop" if args.keep else None) as cluster:
            print(f"Hadoop test cluster up in {time.monotonic() - cluster_start:.1f} s", flush=True)
            input_uri, upload_s = upload_corpus(cluster, args.input)
            print(f"corpus {args.input} uploaded to {input_uri} in {upload_s:.1f} s", flush=True)
            assert cluster.ports is not None
            watch = YarnWatch(cluster.resourcemanager_web_url, f"http://127.0.0.1:{cluster.ports.nm_webapp}").start()
            base_env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_HOME")}
            base_env["HADOOP_CONF_DIR"] = str(cluster.hadoop_conf_dir)
            jc_env = {**base_env, "JOBCLUSTER_HOME": str(work / "home"), "JOBCLUSTER_CACHE": str(work / "cache")}
            out = f"{cluster.fs_default_fs}/benchmark/out"
            runs: list[Run] = []
            try:
                for name in ("jobcluster-1st", "jobcluster-cached"):
                    print(f"running {name} ...", flush=True)
                    runs.append(jobcluster_run(name, watch, jc_env, args, input_uri, f"{out}/{name}", logs))
                python = str(changed_environment(work))
                print("running jobcluster-changed ...", flush=True)
                runs.append(jobcluster_run("jobcluster-changed", watch, jc_env, args, input_uri, f"{out}/changed", logs, python))
                first = runs[0]
                am = next((c.size_mib for c in first.containers if c.is_application_master), 0)
                te = next((c.size_mib for c in first.containers if not c.is_application_master), 0)
                if am and te:
                    spark_env = dict(base_env)
                    print("running spark-submit ...", flush=True)
                    runs.append(spark_submit_run("spark-submit", watch, spark_env, args, (am, te), input_uri, f"{out}/spark-submit", logs))
            finally:
                watch.stop()
            kills = memory_kills(cluster)
        print()
        print_phases(runs)
        print_containers(runs)
        print_ratios(runs)
        failed = [f"{r.name} (exit {r.exit_code})" for r in runs if r.exit_code != 0]
        if failed:
            print(f"\nfailed: {', '.join(failed)}; stderr in {logs}")
        print(f"\ncontainers killed by YARN for memory: {len(kills)}")
        for line in kills:
            print(f"  {line}")
        summary = {
            "corpus": args.input,
            "corpus_upload_s": upload_s,
            "runs": [
                {
                    "name": r.name,
                    "application_id": r.application_id,
                    "exit_code": r.exit_code,
                    "phases": r.phases,
                    "rm_states": r.rm_states,
                    "containers": [vars(c) for c in r.containers],
                }
                for r in runs
            ],
            "memory_kills": kills,
        }
        (work / "wordcount_yarn.json").write_text(json.dumps(summary, indent=2))
        if args.keep:
            print(f"stderr of each run and the numbers (wordcount_yarn.json) in {work}")


if __name__ == "__main__":
    main()
