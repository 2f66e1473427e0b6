"""Benchmark: WordCount on a Kubernetes job cluster phase by phase, next to the local target in the same run.

    .venv/bin/python benchmarks/wordcount_kubernetes.py --input CORPUS_DIR [--runs 3]

Starts the Kubernetes test cluster (tests/infra/k8s; its tools must be built),
makes a namespace with manifests/rbac.yaml, then runs, alternately, WordCount on
the `local` target (benchmarks/wordcount_local.py) and on `kubernetes-application`,
measuring the seconds from `jobcluster run` until: the cluster's objects are
created, the JobManager pod runs, REST is up, every TaskManager pod runs, all
slots are offered, the job is FINISHED, the command returns, and the
Deployment is gone from the API server.  Prints one row per run and the
medians.  Numbers go to the README; they are never asserted.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

import kubernetes  # noqa: E402
from wordcount_local import one_run as local_run  # noqa: E402

from tests.infra.k8s.cluster import KubernetesCluster  # noqa: E402

LINES = {
    "objects_created_s": "Created Deployment ",
    "jobmanager_running_s": "JobManager pod ",
    "rest_up_s": "is up; REST API",
    "finished_s": " FINISHED in ",
}


def kubernetes_run(cluster: KubernetesCluster, namespace: str, corpus: str, parallelism: int, slots: int, run: int) -> dict[str, float]:
    api = cluster.api_client()
    core, apps = kubernetes.client.CoreV1Api(api), kubernetes.client.AppsV1Api(api)
    cluster_id = f"bench-{run}-{int(time.time())}"
    pod_path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    with tempfile.TemporaryDirectory() as tmp:
        argv = [
            sys.executable, "-m", "jobcluster", "run", "-t", "kubernetes-application",
            "-p", str(parallelism), "-D", f"taskmanager.numberOfTaskSlots={slots}",
            "-D", f"kubernetes.namespace={namespace}", "-D", f"kubernetes.cluster-id={cluster_id}",
            "-D", "kubernetes.jobmanager.service-account=jobcluster",
            "-D", f"jobcluster.kubernetes.entrypoint.dir={REPO / 'entrypoints'}",
            "-D", "kubernetes.jobmanager.cpu.amount=0.25", "-D", "kubernetes.taskmanager.cpu.amount=0.5",
            "-D", f"containerized.master.env.PATH={pod_path}", "-D", f"containerized.taskmanager.env.PATH={pod_path}",
            str(REPO / "examples" / "wordcount.py"), "--input", corpus, "--output", str(Path(tmp) / "out"),
        ]  # fmt: skip
        env = {**cluster.env(), "PATH": pod_path}
        start = time.monotonic()
        times: dict[str, float] = {}
        stop = threading.Event()
        expected_pods = math.ceil(parallelism / slots)

        def watch_task_managers() -> None:
            selector = f"app={cluster_id},component=taskmanager"
            while not stop.is_set():
                pods = core.list_namespaced_pod(namespace, label_selector=selector, _request_timeout=(5, 30)).items
                if len([p for p in pods if p.status.phase == "Running"]) >= expected_pods:
                    times.setdefault("taskmanagers_running_s", time.monotonic() - start)
                    return
                time.sleep(0.2)

        watcher = threading.Thread(target=watch_task_managers, daemon=True)
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO)
        watcher.start()
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            now = time.monotonic() - start
            for key, marker in LINES.items():
                if marker in line and (key != "jobmanager_running_s" or " is running" in line):
                    times.setdefault(key, now)
            if "Slots offered to the job:" in line:
                held, required = line.rsplit(" ", 1)[1].strip().split("/")
                if held == required:
                    times.setdefault("slots_offered_s", now)
        proc.wait()
        times["returned_s"] = time.monotonic() - start
        stop.set()
        watcher.join()
        while True:
            if not apps.list_namespaced_deployment(namespace, label_selector=f"app={cluster_id}", _request_timeout=(5, 30)).items:
                times["deployment_gone_s"] = time.monotonic() - start
                break
            time.sleep(0.2)
        api.close()
        if proc.returncode != 0:
            raise SystemExit(f"the Kubernetes run failed with exit code {proc.returncode}:\n{''.join(lines[-30:])}")
        return times


def table(title: str, rows: list[dict[str, float]]) -> None:
    keys = list(rows[0])
    print(title)
    print("run  " + "  ".join(f"{k:>22}" for k in keys))
    for i, row in enumerate(rows, 1):
        print(f"{i:<4} " + "  ".join(f"{row.get(k, float('nan')):>22.1f}" for k in keys))
    print("med  " + "  ".join(f"{statistics.median(r.get(k, float('nan')) for r in rows):>22.1f}" for k in keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("-p", "--parallelism", type=int, default=4)
    parser.add_argument("--slots", type=int, default=2)
    args = parser.parse_args()
    corpus = str(Path(args.input).resolve())
    with KubernetesCluster() as cluster:
        namespace = "bench"
        cluster.kubectl("create", "namespace", namespace)
        cluster.kubectl("apply", "-n", namespace, "-f", str(REPO / "manifests" / "rbac.yaml"))
        local_rows, k8s_rows = [], []
        for run in range(args.runs):
            local_rows.append(local_run(corpus, args.parallelism, args.slots))
            k8s_rows.append(kubernetes_run(cluster, namespace, corpus, args.parallelism, args.slots, run))
    table("local", local_rows)
    table("kubernetes-application", k8s_rows)


if __name__ == "__main__":
    main()
