"""Benchmark: the FlinkJob operator's throughput, and `kubectl apply` → RUNNING next to `jobcluster run`.

    .venv/bin/python benchmarks/operator_throughput.py [--jobs 100] [--input CORPUS_DIR]

Starts the Kubernetes test cluster (tests/infra/k8s; its tools must be built),
applies the CRD and the job clusters' RBAC, and runs the operator as a process
(``python -m jobcluster.controller``), then:

1. creates ``--jobs`` FlinkJobs at once with ``job.state: suspended`` (no pods)
   and measures the time until every status is observed and true
   (``lifecycleState: SUSPENDED`` for the current generation): reconciles per
   minute, and the operator's CPU seconds (user + system) over that time;
2. with ``--input``: WordCount once through a FlinkJob (seconds from `kubectl
   apply` until the status says RUNNING, and until Succeeded) and once through
   `jobcluster run -t kubernetes-application` (until it prints that the job is
   RUNNING, and until it returns), on the same cluster.

Prints the numbers; the README keeps them. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import kubernetes  # noqa: E402
import psutil  # noqa: E402
import yaml  # noqa: E402

from tests.infra.k8s.cluster import KubernetesCluster, free_port  # noqa: E402

GROUP, VERSION, PLURAL = "jobcluster.io", "v1alpha1", "flinkjobs"
CPU = {"kubernetes.jobmanager.cpu.amount": "0.25", "kubernetes.taskmanager.cpu.amount": "0.5"}


def apply(cluster: KubernetesCluster, documents: list[dict]) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as manifest:
        manifest.write(yaml.safe_dump_all(documents))
        manifest.flush()
        cluster.kubectl("apply", "-f", manifest.name, timeout=300)


def flinkjob(name: str, namespace: str, job: dict, **spec: object) -> dict:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "FlinkJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"job": job, **spec},
    }


def throughput(
    cluster: KubernetesCluster, custom: kubernetes.client.CustomObjectsApi, namespace: str, operator: psutil.Process, jobs: int
) -> None:
    documents = [flinkjob(f"suspended-{n}", namespace, {"source": "print(1)", "state": "suspended"}) for n in range(jobs)]
    cpu_before = sum(operator.cpu_times()[:2])
    started = time.monotonic()
    apply(cluster, documents)
    applied = time.monotonic() - started
    while True:
        items = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, _request_timeout=(5, 60))["items"]
        settled = [
            i
            for i in items
            if (i.get("status") or {}).get("lifecycleState") == "SUSPENDED"
            and (i.get("status") or {}).get("observedGeneration") == i["metadata"]["generation"]
        ]
        if len(settled) == jobs:
            break
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    cpu = sum(operator.cpu_times()[:2]) - cpu_before
    print(f"{jobs} suspended FlinkJobs: applied in {applied:.1f} s, every status true after {elapsed:.1f} s")
    print(f"  {jobs / elapsed * 60:.0f} reconciles per minute; operator CPU {cpu:.1f} s ({cpu / elapsed * 100:.0f}% of one core)")
    cluster.kubectl("delete", "flinkjobs", "-n", namespace, "--all", timeout=300)


def wordcount_side_by_side(cluster: KubernetesCluster, custom: kubernetes.client.CustomObjectsApi, namespace: str, corpus: str) -> None:
    source = (REPO / "examples" / "wordcount.py").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        job = {"source": source, "args": ["--input", corpus, "--output", f"{tmp}/operator-out"], "parallelism": 4}
        started = time.monotonic()
        apply(cluster, [flinkjob("wordcount", namespace, job, flinkConfiguration={"taskmanager.numberOfTaskSlots": "2"})])
        running = None
        while True:
            status = (
                custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "wordcount", _request_timeout=(5, 30)).get("status")
                or {}
            )
            state = (status.get("jobStatus") or {}).get("state")
            if state == "RUNNING" and running is None:
                running = time.monotonic() - started
            if status.get("lifecycleState") in ("FINISHED", "FAILED"):
                break
            time.sleep(0.2)
        done = time.monotonic() - started
        print(f"FlinkJob WordCount: RUNNING after {running or float('nan'):.1f} s, {status['lifecycleState']} after {done:.1f} s")
        cluster.kubectl("delete", "flinkjob", "-n", namespace, "wordcount", timeout=120)

        pod_path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        argv = [sys.executable, "-m", "jobcluster", "run", "-t", "kubernetes-application", "-p", "4"]
        argv += [
            "-D",
            "taskmanager.numberOfTaskSlots=2",
            "-D",
            f"kubernetes.namespace={namespace}",
            "-D",
            "kubernetes.jobmanager.service-account=jobcluster",
        ]
        for key, value in CPU.items():
            argv += ["-D", f"{key}={value}"]
        argv += [str(REPO / "examples" / "wordcount.py"), "--input", corpus, "--output", f"{tmp}/cli-out"]
        started = time.monotonic()
        proc = subprocess.Popen(
            argv, env={**cluster.env(), "PATH": pod_path}, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        assert proc.stderr is not None
        running = None
        for line in proc.stderr:
            if running is None and " is RUNNING" in line:
                running = time.monotonic() - started
        code = proc.wait()
        print(
            f"jobcluster run WordCount: RUNNING after {running or float('nan'):.1f} s, exit {code} after {time.monotonic() - started:.1f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100, help="suspended FlinkJobs created at once")
    parser.add_argument("--input", help="a corpus directory for the WordCount comparison (skipped without)")
    args = parser.parse_args()
    cluster = KubernetesCluster()
    cluster.start()
    operator = None
    try:
        api = cluster.api_client()
        core, custom = kubernetes.client.CoreV1Api(api), kubernetes.client.CustomObjectsApi(api)
        namespace = f"bench-{uuid.uuid4().hex[:6]}"
        core.create_namespace({"metadata": {"name": namespace}}, _request_timeout=(5, 30))
        cluster.kubectl("apply", "-f", str(REPO / "manifests" / "crd" / "flinkjobs.jobcluster.io.yaml"))
        cluster.kubectl("apply", "-n", namespace, "-f", str(REPO / "manifests" / "rbac.yaml"))
        defaults = Path(cluster.work_dir) / "operator-defaults.yaml"
        defaults.write_text(json.dumps(CPU))
        argv = [sys.executable, "-m", "jobcluster.controller", "--namespace", namespace, "--port", str(free_port())]
        argv += ["--default-configuration", str(defaults), "--log-level", "warning"]
        operator = subprocess.Popen(argv, env=cluster.env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(3)
        throughput(cluster, custom, namespace, psutil.Process(operator.pid), args.jobs)
        if args.input:
            wordcount_side_by_side(cluster, custom, namespace, args.input)
    finally:
        if operator is not None:
            operator.kill()
            operator.wait()
        cluster.stop(remove_work_dir=True)


if __name__ == "__main__":
    main()
