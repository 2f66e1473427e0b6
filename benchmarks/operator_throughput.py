"""Benchmark: the FlinkJob operator's throughput, and `kubectl apply` → RUNNING next to `jobcluster run`.

    .venv/bin/python benchmarks/operator_throughput.py [--jobs 1000] [--running 1000] [--rest-window 60] [--input CORPUS_DIR]
        [--attach WORK_DIR]

Starts the Kubernetes test cluster (tests/infra/k8s; its tools must be built)
with the project's image built from the working tree (tests/infra/image/build.sh),
or, with ``--attach``, uses the cluster that ``python -m tests.infra.k8s.cluster
--work-dir WORK_DIR`` runs (and imports the working tree's image into its node
first); applies the CRD and, in a namespace of its own, the job clusters' RBAC,
and runs the operator as a process (``python -m jobcluster.controller``) whose
default configuration runs every job cluster on that image (pull policy Never),
then:

1. creates ``--jobs`` (1,000) FlinkJobs at once with ``job.state: suspended``
   (no pods) and measures the time until every status is observed and true
   (``lifecycleState: SUSPENDED`` for the current generation): reconciles per
   minute, the operator's CPU seconds (user + system) over that time and its
   resident memory; then the API requests per minute at rest: the API server's
   own count (``apiserver_request_total``) over ``--rest-window`` seconds with
   the operator running, less the same count over a window with the operator
   paused (SIGSTOP: its watches stay open), which is the cluster's own
   background (controllers, kubelet, leases);
2. ``--running`` (1,000) FlinkJobs whose jobs run, at once, under the operator of
   ``benchmarks/standin_operator.py`` (the real operator; only the platform under
   its clusters is stood in, every cluster's REST API one stand-in JobManager that
   says each job RUNNING): the time until every status says STABLE (deployments
   per minute), the operator's CPU and the API requests and REST calls per minute at
   rest, then the time until a change of every spec (``restartNonce``) has been
   carried out (each an upgrade: removal, deployment, the new job RUNNING);
3. with ``--input``: WordCount once through a FlinkJob (seconds from `kubectl
   apply` until the status says RUNNING, and until Succeeded) and once through
   `jobcluster run -t kubernetes-application` (until it prints that the job is
   RUNNING, and until it returns), on the same cluster. The pods are real
   containers: the corpus and the output directory, directories of this
   machine, are mounted at their own paths by a hostPath pod template
   (tests/integration/k8s/pods.py); the corpus is copied to a temporary
   directory first, as the containers' user may not reach, e.g., /root.

Prints the numbers; docs/development/benchmarks.md keeps them. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import kubernetes  # noqa: E402
import psutil  # noqa: E402
import requests  # noqa: E402
import yaml  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from benchmarks.standin_operator import StandInJobManager  # noqa: E402
from tests.infra.k8s.cluster import KubernetesCluster, free_port, with_project_image  # noqa: E402
from tests.integration.k8s.pods import host_path_template, image_options  # noqa: E402

GROUP, VERSION, PLURAL = "jobcluster.io", "v1alpha1", "flinkjobs"
# As the Kubernetes end-to-end tests run them: small CPU requests (the node is this machine's cores), limits a few
# times higher so that the JVMs start in a reasonable time.
CPU = {
    "kubernetes.jobmanager.cpu.amount": "0.25",
    "kubernetes.jobmanager.cpu.limit-factor": "4",
    "kubernetes.taskmanager.cpu.amount": "0.5",
    "kubernetes.taskmanager.cpu.limit-factor": "2",
}
POD_TEMPLATE = "kubernetes.pod-template-file.default"
TIMEOUT = (5, 30)
JOB_TIMEOUT = 1200.0  # seconds for the FlinkJob's WordCount to end


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
    cluster: KubernetesCluster,
    custom: kubernetes.client.CustomObjectsApi,
    namespace: str,
    operator: psutil.Process,
    jobs: int,
    rest_window: float,
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
    print(f"  operator resident memory {operator.memory_info().rss / (1 << 20):.0f} MiB")
    at_rest(cluster, operator, f"{jobs} settled", rest_window)
    cluster.kubectl("delete", "flinkjobs", "-n", namespace, "--all", timeout=600)


def running_throughput(
    cluster: KubernetesCluster, custom: kubernetes.client.CustomObjectsApi, namespace: str, jobs: int, window: float, interval: str = ""
) -> None:
    """``jobs`` running FlinkJobs under the stand-in operator: to STABLE, at rest, and through a change of every spec."""
    jobmanager = StandInJobManager()
    threading.Thread(target=jobmanager.serve_forever, name="standin-jobmanager", daemon=True).start()
    port = free_port()
    argv = [sys.executable, str(REPO / "benchmarks" / "standin_operator.py"), "--namespace", namespace, "--port", str(port)]
    argv += ["--jobmanager", jobmanager.url] + (["--reconcile-interval", interval] if interval else [])
    operator = subprocess.Popen(argv, env=cluster.env(), cwd=REPO, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(operator, port)
        process = psutil.Process(operator.pid)
        documents = [flinkjob(f"running-{n}", namespace, {"source": "print(1)"}) for n in range(jobs)]
        cpu_before, started = sum(process.cpu_times()[:2]), time.monotonic()
        apply(cluster, documents)
        elapsed = until_stable(custom, namespace, jobs, 1, started)
        cpu = sum(process.cpu_times()[:2]) - cpu_before
        print(f"{jobs} running FlinkJobs (stand-in clusters) applied at once: every status STABLE after {elapsed:.1f} s")
        print(f"  {jobs / elapsed * 60:.0f} deployments per minute; operator CPU {cpu:.1f} s; resident memory {rss(process):.0f} MiB")
        served = jobmanager.requests
        at_rest(cluster, process, f"{jobs} running", window)
        # the stand-in answers only while the operator runs: the first of at_rest's two windows
        print(f"  REST calls to the JobManagers at rest: {(jobmanager.requests - served) / window * 60:.0f} per minute")
        cpu_before, started = sum(process.cpu_times()[:2]), time.monotonic()
        for n in range(jobs):
            body = {"spec": {"restartNonce": 1}}
            custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, f"running-{n}", body, _request_timeout=TIMEOUT)
        patched = time.monotonic() - started
        elapsed = until_stable(custom, namespace, jobs, 2, started)
        cpu = sum(process.cpu_times()[:2]) - cpu_before
        print(f"  a change of every spec (restartNonce; patched in {patched:.1f} s): every upgrade carried out after {elapsed:.1f} s")
        print(f"  {jobs / elapsed * 60:.0f} upgrades per minute; operator CPU {cpu:.1f} s")
        cluster.kubectl("delete", "flinkjobs", "-n", namespace, "--all", timeout=600)
    finally:
        operator.kill()
        operator.wait()
        jobmanager.shutdown()


def until_stable(custom: kubernetes.client.CustomObjectsApi, namespace: str, jobs: int, generation: int, started: float) -> float:
    """Seconds from ``started`` (``time.monotonic()``) until every FlinkJob of ``namespace`` is STABLE for its
    ``generation``."""
    while True:
        items = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, _request_timeout=(5, 60))["items"]
        stable = [
            i
            for i in items
            if (i.get("status") or {}).get("lifecycleState") == "STABLE"
            and (i.get("status") or {}).get("observedGeneration") == generation == i["metadata"]["generation"]
        ]
        if len(stable) == jobs:
            return time.monotonic() - started
        time.sleep(0.5)


def rss(process: psutil.Process) -> float:
    return process.memory_info().rss / (1 << 20)


def api_requests(cluster: KubernetesCluster) -> float:
    """The API server's count of the requests it has served (``apiserver_request_total``, every verb and code)."""
    metrics = cluster.kubectl("get", "--raw", "/metrics", timeout=60).stdout
    return sum(
        sample.value
        for family in text_string_to_metric_families(metrics)
        if family.name == "apiserver_request"
        for sample in family.samples
        if sample.name == "apiserver_request_total"
    )


def at_rest(cluster: KubernetesCluster, operator: psutil.Process, jobs: str, window: float) -> None:
    """API requests per minute with the operator at rest, above the cluster's own background (two windows of
    ``window`` seconds: running, then paused)."""

    def per_minute() -> float:
        before = api_requests(cluster)
        time.sleep(window)
        return (api_requests(cluster) - before) / window * 60  # its own reads are in both windows: they cancel out

    cpu_before = sum(operator.cpu_times()[:2])
    running = per_minute()
    cpu = sum(operator.cpu_times()[:2]) - cpu_before
    operator.suspend()
    try:
        background = per_minute()
    finally:
        operator.resume()
    print(
        f"  at rest with {jobs} FlinkJobs: {max(0.0, running - background):.0f} API requests per minute from the operator "
        f"({running:.0f} in all, {background:.0f} with the operator paused); operator CPU {cpu / window * 100:.1f}% of one core"
    )


def wordcount_side_by_side(
    cluster: KubernetesCluster, custom: kubernetes.client.CustomObjectsApi, namespace: str, corpus: Path, image: str
) -> None:
    source = (REPO / "examples" / "wordcount.py").read_text()
    with tempfile.TemporaryDirectory(prefix="jobcluster-bench-operator-") as tmp:
        # the executors write the output there; Spark replaces the output directory, so one below the mount point
        data = Path(tmp) / "data"
        data.mkdir()
        # a copy in a directory any user may traverse: the containers run as the image's user, to whom a mount point
        # under, e.g., /root is out of reach
        corpus = Path(shutil.copytree(corpus, Path(tmp) / "corpus"))
        template = str(host_path_template(Path(tmp) / "host-paths.yaml", [corpus, data], writable=[data]))
        job = {"source": source, "args": ["--input", str(corpus), "--output", str(data / "operator-out")], "parallelism": 4}
        configuration = {"taskmanager.numberOfTaskSlots": "2", POD_TEMPLATE: template}
        started = time.monotonic()
        apply(cluster, [flinkjob("wordcount", namespace, job, flinkConfiguration=configuration)])
        running, status = None, {}
        deadline = started + JOB_TIMEOUT
        while time.monotonic() < deadline:
            status = (
                custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "wordcount", _request_timeout=TIMEOUT).get("status")
                or {}
            )
            state = (status.get("jobStatus") or {}).get("state")
            if state == "RUNNING" and running is None:
                running = time.monotonic() - started
            if status.get("lifecycleState") in ("FINISHED", "FAILED"):
                break
            time.sleep(0.2)
        done = time.monotonic() - started
        lifecycle = status.get("lifecycleState")
        print(f"FlinkJob WordCount: RUNNING after {running or float('nan'):.1f} s, {lifecycle} after {done:.1f} s")
        if lifecycle != "FINISHED":
            print(f"  error: {status.get('error', '')[-2000:]}")
        cluster.kubectl("delete", "flinkjob", "-n", namespace, "wordcount", timeout=120)

        options = {**image_options(image), "taskmanager.numberOfTaskSlots": "2", "kubernetes.namespace": namespace, POD_TEMPLATE: template}
        options |= {"kubernetes.jobmanager.service-account": "jobcluster", **CPU}
        argv = [sys.executable, "-m", "jobcluster", "run", "-t", "kubernetes-application", "-p", "4"]
        argv += [arg for key, value in options.items() for arg in ("-D", f"{key}={value}")]
        argv += [str(REPO / "examples" / "wordcount.py"), "--input", str(corpus), "--output", str(data / "cli-out")]
        started = time.monotonic()
        proc = subprocess.Popen(argv, env=cluster.env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        running = None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if running is None and " is RUNNING" in line:
                running = time.monotonic() - started
        code = proc.wait()
        print(
            f"jobcluster run WordCount: RUNNING after {running or float('nan'):.1f} s, exit {code} after {time.monotonic() - started:.1f} s"
        )
        if code != 0:
            print("".join(lines[-30:]))


def wait_healthy(operator: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + 120
    while not operator_healthy(operator, port):
        if time.monotonic() > deadline:
            raise SystemExit("the operator did not serve /healthz within 120 s")
        time.sleep(0.5)


def operator_healthy(operator: subprocess.Popen, port: int) -> bool:
    if operator.poll() is not None:
        raise SystemExit(f"the operator exited with {operator.returncode}")
    try:
        return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def clean_up(
    cluster: KubernetesCluster, custom: kubernetes.client.CustomObjectsApi, namespace: str, operator: subprocess.Popen | None
) -> None:
    """What is left in the namespace goes, with the namespace: FlinkJobs through the operator while it runs (their clusters
    with them), then without it (their finalizers stripped, as docs/operations/troubleshooting.md says to do when the operator is gone)."""
    if operator is not None and operator.poll() is None:
        cluster.kubectl("delete", "flinkjobs", "-n", namespace, "--all", "--timeout=120s", timeout=150, check=False)
        operator.kill()
        operator.wait()
    try:
        items = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, _request_timeout=TIMEOUT)["items"]
        for item in items:
            patch = {"metadata": {"finalizers": None}}
            custom.patch_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, item["metadata"]["name"], patch, _request_timeout=TIMEOUT
            )
    except kubernetes.client.ApiException:
        pass
    cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000, help="suspended FlinkJobs created at once")
    parser.add_argument("--running", type=int, default=1000, help="running FlinkJobs (stand-in clusters) created at once; 0: none")
    parser.add_argument(
        "--reconcile-interval", default="", help="the stand-in operator's kubernetes.operator.reconcile.interval (default: its own)"
    )
    parser.add_argument("--rest-window", type=float, default=60.0, help="seconds over which the API requests at rest are counted")
    parser.add_argument("--input", type=Path, help="a corpus directory for the WordCount comparison (skipped without)")
    parser.add_argument("--attach", type=Path, metavar="WORK_DIR", help="use the test cluster running in WORK_DIR instead of starting one")
    args = parser.parse_args()
    corpus = args.input.resolve() if args.input else None
    if corpus is not None and not corpus.is_dir():
        parser.error(f"--input: {corpus} is not a directory")
    cluster = with_project_image(args.attach)
    cluster.start()
    try:
        api = cluster.api_client()
        try:
            run(cluster, api, cluster.images[0][0], args.jobs, args.rest_window, corpus, args.running, args.reconcile_interval)
        finally:
            api.close()
    finally:
        cluster.stop(remove_work_dir=True)


def run(
    cluster: KubernetesCluster,
    api: kubernetes.client.ApiClient,
    image: str,
    jobs: int,
    rest_window: float,
    corpus: Path | None,
    running: int = 0,
    reconcile_interval: str = "",
) -> None:
    """In a namespace of its own, with the operator as a process: the throughput, then (with a corpus) WordCount both ways."""
    core, custom = kubernetes.client.CoreV1Api(api), kubernetes.client.CustomObjectsApi(api)
    namespace = f"bench-{uuid.uuid4().hex[:6]}"
    operator = None
    core.create_namespace({"metadata": {"name": namespace}}, _request_timeout=TIMEOUT)
    try:
        cluster.kubectl("apply", "-f", str(REPO / "manifests" / "crd" / "flinkjobs.jobcluster.io.yaml"))
        cluster.kubectl("apply", "-n", namespace, "-f", str(REPO / "manifests" / "rbac.yaml"))
        with tempfile.TemporaryDirectory(prefix="jobcluster-bench-operator-") as tmp:
            defaults = Path(tmp) / "operator-defaults.yaml"
            defaults.write_text(json.dumps({**image_options(image), **CPU}))
            port = free_port()
            argv = [sys.executable, "-m", "jobcluster.controller", "--namespace", namespace, "--port", str(port)]
            argv += ["--default-configuration", str(defaults), "--log-level", "warning"]
            operator = subprocess.Popen(argv, env=cluster.env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_healthy(operator, port)
            if jobs:
                throughput(cluster, custom, namespace, psutil.Process(operator.pid), jobs, rest_window)
            if corpus is not None:
                wordcount_side_by_side(cluster, custom, namespace, corpus, image)
            if running:
                operator.kill()  # one operator at a time watches the namespace: the stand-in one from here on
                operator.wait()
                running_throughput(cluster, custom, namespace, running, rest_window, reconcile_interval)
    finally:
        clean_up(cluster, custom, namespace, operator)


if __name__ == "__main__":
    main()
