"""Benchmark: WordCount on a Kubernetes job cluster phase by phase, next to the local-cluster target in the same run,
and each pod's peak memory against its limit.

    .venv/bin/python benchmarks/wordcount_kubernetes.py --input CORPUS_DIR [--runs 3] [--attach WORK_DIR] [--keep DIR]

Starts the Kubernetes test cluster (tests/infra/k8s; its tools must be built)
with the project's image built from the working tree (tests/infra/image/build.sh),
or, with ``--attach``, uses the cluster that ``python -m tests.infra.k8s.cluster
--work-dir WORK_DIR`` runs (and imports the working tree's image into its node
first). Makes a namespace of its own with manifests/rbac.yaml, then runs,
alternately, WordCount on the `local-cluster` target (benchmarks/wordcount_local.py: a cluster of processes, as
the pods are) and
on `kubernetes-application`, whose pods are real containers of that image (pull
policy Never; the program is staged by the CLI as usual). The corpus and the
output directory are directories of this machine, mounted at their own paths in
the JobManager and TaskManager pods by a hostPath pod template
(tests/integration/k8s/pods.py); the corpus is copied to a temporary directory
first, as the containers' user (uid 9999) may not reach a directory under, e.g.,
/root. Measures the seconds from `jobcluster run` until: the cluster's objects
are created, the JobManager pod runs, REST is up, every TaskManager pod runs,
all slots are offered, the job is FINISHED, the command returns, and the
Deployment is gone from the API server. Prints one row per run and the medians.

Per pod of each Kubernetes run (the JobManager's and every TaskManager's), the
memory cgroup (v1) of its main container, read on this machine (the test
cluster's only node: /sys/fs/cgroup/memory/kubepods/[<qos>/]pod<uid>/<container
id>) every 0.5 s while the pod exists, as the cgroup goes with the container:
the peak usage the kernel recorded (``memory.max_usage_in_bytes``: what the
limit applies to, page cache included), the highest resident memory sampled
(``memory.stat`` rss: the processes' anonymous memory, each page counted once,
where a sum of RSS as YARN's check makes counts shared pages per process), the
limit the kernel enforces (``memory.limit_in_bytes``) next to the pod spec's,
and OOM kills: the cgroup's count (``memory.oom_control`` oom_kill) and
container statuses that ended ``OOMKilled``; and how long the scheduler found no
room for the pod (its PodScheduled condition Unschedulable, e.g. Insufficient
cpu while other pods hold the node's CPU). Numbers go to docs/development/benchmarks.md; they are
never asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

import kubernetes  # noqa: E402
from wordcount_local import one_run as local_run  # noqa: E402

from tests.infra.k8s.cluster import KubernetesCluster, with_project_image  # noqa: E402
from tests.integration.k8s.pods import MAIN_CONTAINER, host_path_template, image_options  # noqa: E402

LINES = {
    "objects_created_s": "Created Deployment ",
    "jobmanager_running_s": "JobManager pod ",
    "rest_up_s": "is up; REST API",
    "finished_s": " FINISHED in ",
}
# As the Kubernetes end-to-end tests run them: small CPU requests (the node is this machine's cores), limits a few
# times higher so that the JVMs start in a reasonable time; memory is the memory model's (request = limit).
CPU_OPTIONS = {
    "kubernetes.jobmanager.cpu.amount": "0.25",
    "kubernetes.jobmanager.cpu.limit-factor": "4",
    "kubernetes.taskmanager.cpu.amount": "0.5",
    "kubernetes.taskmanager.cpu.limit-factor": "2",
}
CGROUP_MEMORY = Path("/sys/fs/cgroup/memory/kubepods")
QOS_DIRS = {"Guaranteed": "", "Burstable": "burstable/", "BestEffort": "besteffort/"}
POLL_INTERVAL = 0.5
TIMEOUT = (5, 30)
GONE_TIMEOUT = 180.0
MIB = 1 << 20


# -- each pod's memory, from its container's cgroup on this machine --------------------------------------


def parse_quantity(value: str) -> int:
    return int(kubernetes.utils.parse_quantity(value))


def read_cgroup(directory: Path) -> dict[str, int] | None:
    """The memory cgroup (v1) of a container: limit, max_usage, rss (bytes), oom_kill (count); None once it is gone."""
    try:
        limit = int((directory / "memory.limit_in_bytes").read_text())
        max_usage = int((directory / "memory.max_usage_in_bytes").read_text())
        control = dict(line.split() for line in (directory / "memory.oom_control").read_text().splitlines() if line.strip())
        stat = dict(line.split() for line in (directory / "memory.stat").read_text().splitlines() if line.strip())
    except (OSError, ValueError):
        return None
    return {"limit": limit, "max_usage": max_usage, "rss": int(stat.get("rss", 0)), "oom_kill": int(control.get("oom_kill", 0))}


def container_cgroup(pod_uid: str, qos: str | None, container_id: str) -> Path | None:
    """The directory of a container's memory cgroup (the kubelet's cgroupfs layout), None if it is not (or no more) there."""
    candidates = [QOS_DIRS[qos]] if qos in QOS_DIRS else list(QOS_DIRS.values())
    for qos_dir in candidates:
        directory = CGROUP_MEMORY / f"{qos_dir}pod{pod_uid}" / container_id
        if directory.is_dir():
            return directory
    return None


@dataclass
class PodMemory:
    name: str
    role: str
    spec_limit: int | None = None  # bytes: the main container's limits.memory
    cgroup_limit: int | None = None  # bytes: memory.limit_in_bytes
    peak: int = 0  # bytes: memory.max_usage_in_bytes, the highest over the pod's containers
    peak_rss: int = 0  # bytes: memory.stat rss, the highest sampled
    oom_kills: dict[str, int] = field(default_factory=dict)  # container id -> memory.oom_control oom_kill
    oom_killed: set[str] = field(default_factory=set)  # container ids whose status ended OOMKilled
    restarts: int = 0
    exit_code: int | None = None
    samples: int = 0
    running_at: float | None = None  # monotonic, the first poll that saw the pod Running
    unschedulable_at: float | None = None  # monotonic, the first poll that saw it Unschedulable (e.g. Insufficient cpu)
    unschedulable_reason: str = ""
    scheduled_at: float | None = None  # monotonic, the first poll that saw it bound to the node

    @property
    def unschedulable_s(self) -> float:
        """Seconds the scheduler found no room for the pod (its CPU or memory requests), as far as the polls saw."""
        if self.unschedulable_at is None:
            return 0.0
        return (self.scheduled_at or self.unschedulable_at) - self.unschedulable_at

    def summary(self) -> dict[str, object]:
        return {
            "pod": self.name,
            "role": self.role,
            "spec_limit_mib": self.spec_limit and self.spec_limit / MIB,
            "cgroup_limit_mib": self.cgroup_limit and self.cgroup_limit / MIB,
            "peak_mib": self.peak / MIB,
            "peak_rss_mib": self.peak_rss / MIB,
            "oom_kill": sum(self.oom_kills.values()),
            "oom_killed_statuses": len(self.oom_killed),
            "restarts": self.restarts,
            "exit_code": self.exit_code,
            "samples": self.samples,
            "unschedulable_s": self.unschedulable_s,
            "unschedulable_reason": self.unschedulable_reason,
        }


class PodWatch:
    """Polls the job cluster's pods (``app=<cluster id>``) and reads their main containers' memory cgroups."""

    def __init__(self, api: kubernetes.client.ApiClient, namespace: str, cluster_id: str) -> None:
        self.core = kubernetes.client.CoreV1Api(api)
        self.namespace, self.cluster_id = namespace, cluster_id
        self.pods: dict[str, PodMemory] = {}
        self.present: set[str] = set()  # pods the last poll listed
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> PodWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self._poll()
            except (kubernetes.client.ApiException, OSError, ValueError):
                pass  # a slow or failed list: the next poll
            self._stop.wait(max(0.0, POLL_INTERVAL - (time.monotonic() - started)))

    def _poll(self) -> None:
        response = self.core.list_namespaced_pod(
            self.namespace, label_selector=f"app={self.cluster_id}", _preload_content=False, _request_timeout=TIMEOUT
        )
        items = json.loads(response.data)["items"]
        now = time.monotonic()
        with self._lock:
            self.present = set()
            for pod in items:
                meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
                role = (meta.get("labels") or {}).get("component", "")
                if role not in ("jobmanager", "taskmanager"):
                    continue
                self.present.add(meta["name"])
                info = self.pods.setdefault(meta["name"], PodMemory(meta["name"], role))
                if status.get("phase") == "Running" and info.running_at is None:
                    info.running_at = now
                for condition in status.get("conditions") or []:
                    if condition["type"] != "PodScheduled":
                        continue
                    if condition["status"] == "True" and info.scheduled_at is None:
                        info.scheduled_at = now
                    elif condition.get("reason") == "Unschedulable" and info.unschedulable_at is None:
                        info.unschedulable_at, info.unschedulable_reason = now, condition.get("message", "")
                for container in spec["containers"]:
                    if container["name"] == MAIN_CONTAINER and "memory" in (container.get("resources") or {}).get("limits", {}):
                        info.spec_limit = parse_quantity(container["resources"]["limits"]["memory"])
                for cs in status.get("containerStatuses") or []:
                    if cs["name"] != MAIN_CONTAINER:
                        continue
                    info.restarts = cs.get("restartCount", 0)
                    for which in ("lastState", "state"):
                        terminated = (cs.get(which) or {}).get("terminated") or {}
                        if terminated.get("reason") == "OOMKilled":
                            info.oom_killed.add(terminated.get("containerID") or f"{which}-{info.restarts}")
                        if which == "state" and "exitCode" in terminated:
                            info.exit_code = terminated["exitCode"]
                    container_id = (cs.get("containerID") or "").split("://", 1)[-1]
                    if not container_id or "running" not in (cs.get("state") or {}):
                        continue
                    directory = container_cgroup(meta["uid"], status.get("qosClass"), container_id)
                    sample = read_cgroup(directory) if directory else None
                    if sample is None:
                        continue
                    info.samples += 1
                    info.cgroup_limit = sample["limit"]
                    info.peak = max(info.peak, sample["max_usage"])
                    info.peak_rss = max(info.peak_rss, sample["rss"])
                    info.oom_kills[container_id] = max(info.oom_kills.get(container_id, 0), sample["oom_kill"])

    def task_managers_running(self) -> list[float]:
        with self._lock:
            return sorted(p.running_at for p in self.pods.values() if p.role == "taskmanager" and p.running_at is not None)

    def gone(self) -> bool:
        with self._lock:
            return not self.present

    def result(self) -> list[PodMemory]:
        with self._lock:
            return sorted(self.pods.values(), key=lambda p: (p.role != "jobmanager", p.name))


# -- one run ----------------------------------------------------------------------------------------------


@dataclass
class KubernetesRun:
    times: dict[str, float]
    pods: list[PodMemory]


def kubernetes_run(
    cluster: KubernetesCluster, namespace: str, image: str, corpus: Path, parallelism: int, slots: int, run: int, logs: Path
) -> KubernetesRun:
    api = cluster.api_client()
    apps = kubernetes.client.AppsV1Api(api)
    cluster_id = f"bench-{run}-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory(prefix="jobcluster-bench-k8s-") as tmp:
        data = Path(tmp) / "data"  # the executors write the output there; Spark replaces the directory, so below the mount point
        data.mkdir()
        template = host_path_template(Path(tmp) / "host-paths.yaml", [corpus, data], writable=[data])
        options = {
            **image_options(image),
            "taskmanager.numberOfTaskSlots": str(slots),
            "kubernetes.namespace": namespace,
            "kubernetes.cluster-id": cluster_id,
            "kubernetes.jobmanager.service-account": "jobcluster",
            "kubernetes.pod-template-file.default": str(template),
            **CPU_OPTIONS,
        }
        argv = [sys.executable, "-m", "jobcluster", "run", "-t", "kubernetes-application", "-p", str(parallelism)]
        argv += [arg for key, value in options.items() for arg in ("-D", f"{key}={value}")]
        argv += [str(REPO / "examples" / "wordcount.py"), "--input", str(corpus), "--output", str(data / "out")]
        expected_pods = math.ceil(parallelism / slots)
        times: dict[str, float] = {}
        watch = PodWatch(api, namespace, cluster_id).start()
        start = time.monotonic()
        proc = subprocess.Popen(argv, env=cluster.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO)
        assert proc.stderr is not None
        lines = []
        with (logs / f"kubernetes-{run + 1}.stderr").open("w") as log:
            for line in proc.stderr:
                now = time.monotonic() - start
                log.write(f"{now:8.2f} {line}")
                lines.append(line)
                for key, marker in LINES.items():
                    if marker in line and (key != "jobmanager_running_s" or " is running" in line):
                        times.setdefault(key, now)
                if "Slots offered to the job:" in line:
                    held, required = line.rsplit(" ", 1)[1].strip().split("/")
                    if held == required:
                        times.setdefault("slots_offered_s", now)
        proc.wait()
        times["returned_s"] = time.monotonic() - start
        deadline = time.monotonic() + GONE_TIMEOUT
        while time.monotonic() < deadline:
            if not apps.list_namespaced_deployment(namespace, label_selector=f"app={cluster_id}", _request_timeout=TIMEOUT).items:
                times["deployment_gone_s"] = time.monotonic() - start
                break
            time.sleep(0.2)
        while time.monotonic() < deadline and not watch.gone():  # the last pods' cgroups, until they are gone
            time.sleep(POLL_INTERVAL)
        watch.stop()
        api.close()
        running = watch.task_managers_running()
        if len(running) >= expected_pods:
            times["taskmanagers_running_s"] = running[expected_pods - 1] - start
        if proc.returncode != 0:
            raise SystemExit(f"the Kubernetes run failed with exit code {proc.returncode}:\n{''.join(lines[-30:])}")
        order = ["objects_created_s", "jobmanager_running_s", "rest_up_s", "taskmanagers_running_s", "slots_offered_s"]
        order += ["finished_s", "returned_s", "deployment_gone_s"]
        return KubernetesRun({k: times[k] for k in order if k in times}, watch.result())


# -- report -----------------------------------------------------------------------------------------------


def table(title: str, rows: list[dict[str, float]]) -> None:
    keys = list(dict.fromkeys(k for row in rows for k in row))
    print(title)
    print("run  " + "  ".join(f"{k:>22}" for k in keys))
    for i, row in enumerate(rows, 1):
        print(f"{i:<4} " + "  ".join(f"{row.get(k, float('nan')):>22.1f}" for k in keys))
    print("med  " + "  ".join(f"{statistics.median(r.get(k, float('nan')) for r in rows):>22.1f}" for k in keys))


def mib(value: int | None) -> str:
    return "?" if value is None else f"{value / MIB:.0f}"


def print_pods(runs: list[KubernetesRun]) -> None:
    print("\nper pod: its main container's memory cgroup (v1), peak usage vs. its limit")
    header = f"{'run':<5}{'pod':<36}{'role':<13}{'limit MiB (spec)':>18}{'limit MiB (cgroup)':>20}"
    header += f"{'peak MiB':>10}{'of limit':>10}{'peak RSS MiB':>14}{'oom_kill':>10}{'OOMKilled':>11}{'restarts':>10}{'exit':>6}"
    print(header + f"{'unschedulable s':>17}")
    killed = 0
    for n, run in enumerate(runs, 1):
        for pod in run.pods:
            limit = pod.cgroup_limit or pod.spec_limit
            share = f"{100 * pod.peak / limit:.0f}%" if limit and pod.samples else "?"
            peak, rss = (mib(pod.peak), mib(pod.peak_rss)) if pod.samples else ("?", "?")
            kills = sum(pod.oom_kills.values())
            killed += bool(kills or pod.oom_killed)
            exit_code = "-" if pod.exit_code is None else str(pod.exit_code)
            print(
                f"{n:<5}{pod.name:<36}{pod.role:<13}{mib(pod.spec_limit):>18}{mib(pod.cgroup_limit):>20}"
                f"{peak:>10}{share:>10}{rss:>14}{kills:>10}{len(pod.oom_killed):>11}{pod.restarts:>10}{exit_code:>6}"
                f"{pod.unschedulable_s:>17.1f}"
            )
    unsampled = [pod.name for run in runs for pod in run.pods if not pod.samples]
    if unsampled:
        print(f"never sampled (no cgroup found on this machine while it ran): {', '.join(unsampled)}")
    print(f"pods with an OOM kill: {killed}")
    for n, run in enumerate(runs, 1):
        for pod in run.pods:
            if pod.unschedulable_reason:
                print(f"run {n}: {pod.name} was unschedulable for {pod.unschedulable_s:.1f} s: {pod.unschedulable_reason}")


# -- main -------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True, help="the corpus directory")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("-p", "--parallelism", type=int, default=4)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--attach", type=Path, metavar="WORK_DIR", help="use the test cluster running in WORK_DIR instead of starting one")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep each run's stderr and the numbers (JSON) here")
    args = parser.parse_args()
    corpus = Path(args.input).resolve()
    if not corpus.is_dir():
        parser.error(f"--input: {corpus} is not a directory")
    cluster = with_project_image(args.attach)
    with tempfile.TemporaryDirectory(prefix="jobcluster-bench-k8s-") as tmp, cluster:
        logs = args.keep or Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        # A copy in a directory any user may traverse: the containers run as the image's user, to whom a mount point
        # under, e.g., /root is out of reach. Both targets read the same copy.
        corpus = Path(shutil.copytree(corpus, Path(tmp) / "corpus"))
        namespace = f"bench-{uuid.uuid4().hex[:6]}"
        cluster.kubectl("create", "namespace", namespace)
        try:
            cluster.kubectl("apply", "-n", namespace, "-f", str(REPO / "manifests" / "rbac.yaml"))
            local_rows: list[dict[str, float]] = []
            k8s_runs: list[KubernetesRun] = []
            for run in range(args.runs):
                local_rows.append(local_run(str(corpus), args.parallelism, args.slots, "local-cluster"))
                k8s_runs.append(kubernetes_run(cluster, namespace, cluster.images[0][0], corpus, args.parallelism, args.slots, run, logs))
        finally:
            cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        print(f"\nimage {cluster.images[0][0]}, corpus {args.input}, -p {args.parallelism}, {args.slots} slots per TaskManager")
        table("local-cluster", local_rows)
        table("kubernetes-application", [r.times for r in k8s_runs])
        print_pods(k8s_runs)
        if args.keep:
            numbers = {"image": cluster.images[0][0], "corpus": args.input, "local": local_rows}
            numbers["kubernetes"] = [{"times": r.times, "pods": [p.summary() for p in r.pods]} for r in k8s_runs]
            (args.keep / "wordcount_kubernetes.json").write_text(json.dumps(numbers, indent=2))
            print(f"each run's stderr and the numbers (wordcount_kubernetes.json) in {args.keep}")


if __name__ == "__main__":
    main()
