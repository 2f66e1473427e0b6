"""Streaming with Flink's guarantees on ``kubernetes-application``, counted against a real Kafka topic.

The chain of tests/e2e/test_local_streaming.py on the real test node: the
checkpoint root, the savepoints, Spark's Kafka connector and the word count's
output live on one volume, a PersistentVolumeClaim (bound to a hostPath
PersistentVolume of this machine's directory) that the pod template mounts at
``/streaming`` in the JobManager and every TaskManager pod, as a user would
mount an NFS or CephFS share; the test reads what the pods wrote in that
directory. The program reads the broker on the node's address
(``pod_bootstrap_servers``). Each step is counted exactly (no record lost,
none counted twice, tests/support/streaming.py): a TaskManager pod killed
mid-stream; the JobManager pod deleted, so that the Deployment's new pod runs
the program again with the same JobID and it resumes after its last committed
micro-batch; Flink's web dashboard (from the image), with the Spark JVMs' metrics, through a port-forward to
the cluster's REST Service, showing the streaming job, its checkpoints and its
TaskManagers with no console error and no path unanswered, and Spark's own UI
of the program proxied under /spark/ (the driver binds to the pod's IP); a
savepoint while running; ``stop`` with a savepoint onto the volume. One job
cluster; nothing of it is left at the end. Restores on Kubernetes (another
parallelism, a running savepoint) are test_operator_streaming.py's, under the
operator.
"""

from __future__ import annotations

import contextlib
import html
import re
import shutil
import subprocess
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import pytest
import requests
import yaml

from tests.infra.kafka.cluster import KafkaCluster
from tests.integration.k8s.pods import MAIN_CONTAINER, open_to_containers
from tests.integration.k8s.test_kubernetes_e2e import TIMEOUT, assert_namespace_empty, cluster_options, job_namespace, jobcluster, list_json
from tests.integration.k8s.waiting import wait_for
from tests.support.browser import headless_chromium
from tests.support.streaming import PROGRAM, Steps, lines, local_batches, wait_for_committed_batch, wait_for_counts, word_counts

pytestmark = [pytest.mark.k8s, pytest.mark.kafka, pytest.mark.browser]

REPO = Path(__file__).resolve().parents[3]
MOUNT = "/streaming"  # where every pod of the job clusters sees the volume
COUNT_TIMEOUT = 300  # seconds for a job to count what was produced (pods and JVMs start on a busy 2-core node)
POD_TIMEOUT = 240  # seconds for a new JobManager pod to serve
PAGE_TIMEOUT = 60  # seconds for a dashboard page to show what it must (it polls every 3 s)


@pytest.fixture
def namespace(k8s_cluster, k8s_api):
    yield from job_namespace(k8s_cluster, k8s_api, "stream")


@pytest.fixture
def cli_env(k8s_cluster) -> dict[str, str]:
    return k8s_cluster.env()


@pytest.fixture
def volume(k8s_api, namespace, tmp_path) -> tuple[Path, str]:
    """A directory of this machine as a PersistentVolume, claimed in ``namespace``: (the directory, the claim's name)."""
    directory = open_to_containers(_mkdir(tmp_path / "volume"), writable=True)
    core = kubernetes.client.CoreV1Api(k8s_api)
    pv_name, claim = f"{namespace}-state", "streaming-state"
    core.create_persistent_volume(
        {
            "metadata": {"name": pv_name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],  # hostPath's only mode; every pod runs on the one node
                "storageClassName": "",
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": str(directory), "type": "Directory"},
                "claimRef": {"namespace": namespace, "name": claim},
            },
        },
        _request_timeout=TIMEOUT,
    )
    try:
        core.create_namespaced_persistent_volume_claim(
            namespace,
            {
                "metadata": {"name": claim},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "",
                    "volumeName": pv_name,
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
            _request_timeout=TIMEOUT,
        )
        wait_for(
            lambda: core.read_namespaced_persistent_volume_claim(claim, namespace, _request_timeout=TIMEOUT).status.phase == "Bound",
            timeout=60,
            what=f"the claim {claim} bound",
        )
        yield directory, claim
    finally:
        core.delete_persistent_volume(pv_name, _request_timeout=TIMEOUT)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def claim_template(path: Path, claim: str) -> Path:
    """A pod template mounting the claim at MOUNT in the main container (the JobManager's and the TaskManagers')."""
    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": {
            "containers": [{"name": MAIN_CONTAINER, "volumeMounts": [{"name": "streaming", "mountPath": MOUNT}]}],
            "volumes": [{"name": "streaming", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }
    path.write_text(yaml.safe_dump(template, sort_keys=False))
    return path


def on_volume(host_dir: Path, uri: str) -> Path:
    """The host's path of a path (or ``file:`` URI) under MOUNT in the pods."""
    path = uri.removeprefix("file:")
    assert path.startswith(f"{MOUNT}/"), uri
    return host_dir / path.removeprefix(f"{MOUNT}/")


def savepoint_path(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}"
    return re.search(r"Savepoint completed\. Path: (\S+)", result.stdout).group(1)


def job_manager_pod(k8s_api, namespace: str, cluster_id: str, other_than: str | None = None) -> dict | None:
    """The cluster's JobManager pod that runs and is not being deleted (and is not ``other_than``), or None."""
    for pod in list_json(k8s_api, namespace, "pods", f"app={cluster_id},component=jobmanager"):
        running = (pod.get("status") or {}).get("phase") == "Running" and pod["status"].get("podIP")
        if running and not pod["metadata"].get("deletionTimestamp") and pod["metadata"]["name"] != other_than:
            return pod
    return None


def rest_of(pod: dict) -> str:
    return f"http://{pod['status']['podIP']}:8081"


def test_a_streaming_word_count_on_kubernetes_is_exactly_once_through_pod_losses_and_savepoints_and_shows_in_the_dashboard(
    k8s_cluster,
    k8s_api,
    k8s_image,
    namespace,
    volume,
    cli_env,
    tmp_path,
    kafka_cluster: KafkaCluster,
    spark_kafka_jars: list[Path],
    browser_artefacts: Path,
):
    host_dir, claim = volume
    core = kubernetes.client.CoreV1Api(k8s_api)
    # Spark's Kafka connector is too large for the ConfigMap the program is staged in: it goes onto the volume
    jars_dir = _mkdir(host_dir / "jars")
    jars = ",".join(f"local://{MOUNT}/jars/{Path(shutil.copy(jar, jars_dir)).name}" for jar in spark_kafka_jars)
    open_to_containers(jars_dir)
    topic = f"words-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, partitions=2)
    parts = [lines(seed, 60) for seed in range(3)]
    produced: list[str] = []

    def produce(part: list[str]) -> Counter[str]:
        kafka_cluster.produce(topic, [(None, line) for line in part])
        produced.extend(part)
        return word_counts(produced)

    template = claim_template(tmp_path / "pod-template.yaml", claim)
    on_k8s = ["-t", "kubernetes-application", "-D", f"kubernetes.namespace={namespace}"]
    run_id = uuid.uuid4().hex[:6]

    def run(cluster: str, *args: str, output: str) -> tuple[str, str]:
        """``run -d`` of the word count as job cluster ``cluster``: (JobID, cluster id)."""
        cluster_id = f"wc-{run_id}-{cluster}"
        options = {
            "kubernetes.pod-template-file.default": str(template),
            "execution.checkpointing.dir": f"{MOUNT}/checkpoints",
            "execution.checkpointing.savepoint-dir": f"{MOUNT}/savepoints",
        }
        result = jobcluster(
            cli_env,
            "run", "-d", "-t", "kubernetes-application", *cluster_options(namespace, k8s_image, cluster_id, options), *args,
            "--jars", jars,
            str(PROGRAM), "--kafka", kafka_cluster.pod_bootstrap_servers, "--topic", topic, "--output", output, "--per-batch", "20",
        )  # fmt: skip
        assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}"
        return re.search(r"JobID ([0-9a-f]{32})", result.stdout).group(1), cluster_id

    def gone(cluster_id: str) -> None:
        wait_for(lambda: not list_json(k8s_api, namespace, "pods", f"app={cluster_id}"), timeout=180, what=f"the pods of {cluster_id} gone")

    step = Steps()

    out = host_dir / "out"
    expected = produce(parts[0])
    job, cluster_a = run("a", "-p", "2", "-D", "taskmanager.numberOfTaskSlots=1", "-D", "restart-strategy.type=fixed-delay",
                         output=f"{MOUNT}/out")  # fmt: skip
    first_jm = job_manager_pod(k8s_api, namespace, cluster_a)
    step("run a")
    rest = rest_of(first_jm)

    # A TaskManager pod killed mid-stream: Spark carries on with the other executor, the ResourceManager replaces the pod.
    wait_for_committed_batch(rest, job, 0, COUNT_TIMEOUT)
    core.delete_namespaced_pod(f"{cluster_a}-taskmanager-1-1", namespace, grace_period_seconds=0, _request_timeout=TIMEOUT)
    committed = wait_for_committed_batch(rest, job, 1, COUNT_TIMEOUT)["committedBatchId"]
    step("batch 0, TaskManager killed, batch 1")

    # The JobManager pod deleted: the Deployment starts a new one, which runs the program again on the same checkpoint root.
    core.delete_namespaced_pod(first_jm["metadata"]["name"], namespace, grace_period_seconds=0, _request_timeout=TIMEOUT)
    second_jm = wait_for(
        lambda: job_manager_pod(k8s_api, namespace, cluster_a, other_than=first_jm["metadata"]["name"]),
        timeout=POD_TIMEOUT,
        interval=1,
        what="a new JobManager pod",
    )
    rest = rest_of(second_jm)
    step("new JobManager pod")
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "after a TaskManager pod and the JobManager pod were deleted")
    expected = produce(parts[1])
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "on the new JobManager pod")
    step("counted on the new JobManager")
    (query,) = requests.get(f"{rest}/jobs/{job}", timeout=10).json()["streaming"]["queries"]
    assert query["checkpoint"] == f"file:{MOUNT}/checkpoints/{job}/wordcount"
    resumed_at = min(entry["batchId"] for entry in query["history"])
    assert resumed_at > committed, f"the new JobManager's program started at micro-batch {resumed_at}, not after {committed}"
    assert {"commits", "offsets", "state"} <= {p.name for p in (host_dir / "checkpoints" / job / "wordcount").iterdir()}
    with port_forward(k8s_cluster, namespace, f"svc/{cluster_a}-rest", 8081) as local_rest:
        _dashboard_shows_the_stream(local_rest, job, f"{cluster_a}-taskmanager-", browser_artefacts)
        _spark_ui_shows_the_stream(local_rest, query["name"])
        _task_manager_logs_are_served(local_rest)
    step("the dashboard and Spark's UI through a port-forward")

    # A savepoint while the job runs; more records; then stop-with-savepoint into the default directory, on the volume.
    running_savepoint = savepoint_path(jobcluster(cli_env, "savepoint", *on_k8s, job, f"{MOUNT}/running-savepoints"))
    assert re.fullmatch(rf"file:{MOUNT}/running-savepoints/savepoint-{job[:6]}-[0-9a-f]{{12}}", running_savepoint)
    assert (on_volume(host_dir, running_savepoint) / "_metadata").is_file()
    expected = produce(parts[2])
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "after a savepoint was taken")
    stopped = savepoint_path(jobcluster(cli_env, "stop", *on_k8s, job))
    assert stopped.startswith(f"file:{MOUNT}/savepoints/savepoint-{job[:6]}-")
    assert (on_volume(host_dir, stopped) / "wordcount" / "commits").is_dir()
    gone(cluster_a)
    step("savepoint, stop, gone")

    print(step.summary("streaming on Kubernetes"))
    assert_namespace_empty(k8s_api, namespace)
    left = k8s_cluster.kubectl("get", "all,configmaps,secrets", "-n", namespace, "-l", "type=jobcluster-native-kubernetes")
    assert left.stdout == "" and "No resources found" in left.stderr, left


@contextlib.contextmanager
def port_forward(k8s_cluster, namespace: str, target: str, port: int) -> Iterator[str]:
    """``kubectl port-forward`` to ``target``'s ``port``, as a user reaches a cluster from outside: the local URL."""
    forward = subprocess.Popen(
        [str(k8s_cluster.bin_dir / "kubectl"), "port-forward", "-n", namespace, target, f":{port}", "--address", "127.0.0.1"],
        env=k8s_cluster.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert forward.stdout is not None
        line = forward.stdout.readline()
        local = re.search(r"127\.0\.0\.1:(\d+) ->", line)
        assert local, f"kubectl port-forward said: {line}"
        yield f"http://127.0.0.1:{local.group(1)}"
    finally:
        forward.terminate()
        forward.wait(10)


def _spark_ui_shows_the_stream(rest: str, query_name: str) -> None:
    """Spark's own UI of the program, through the REST endpoint's proxy: its Jobs page and its running query."""
    (application,) = requests.get(f"{rest}/spark/api/v1/applications", timeout=10).json()
    jobs = requests.get(f"{rest}/spark/", timeout=10)
    assert jobs.status_code == 200 and "Spark Jobs" in jobs.text and html.escape(application["name"]) in jobs.text
    assert "setUIRoot('.')" in jobs.text, "the page's links are relative to it, as the port-forward's URL needs"
    streaming = requests.get(f"{rest}/spark/StreamingQuery/", timeout=10)
    assert streaming.status_code == 200 and "Active Streaming Queries" in streaming.text and query_name in streaming.text


def _dashboard_shows_the_stream(rest: str, job: str, task_manager: str, artefacts: Path) -> None:
    """Flink's web dashboard (2.3.0, from the image), shows the streaming job, its checkpoints, its Rescales tab (Flink
    2.3's, for a streaming job: empty, as the job was not restored at another parallelism), its application, and its
    TaskManager pods."""
    with headless_chromium(artefacts) as browser:
        # each page loaded anew (the query differs), as from a bookmark: a route change while the job graph's
        # zoom transition runs makes Flink's own dashboard log an SVGLength error, which is not this cluster's
        browser.open(f"{rest}/?page=job#/job/running/{job}/overview")
        browser.wait_for_text("PySpark: streaming_wordcount.py", PAGE_TIMEOUT)
        browser.wait_for_text("STREAMING", PAGE_TIMEOUT)
        browser.open(f"{rest}/?page=checkpoints#/job/running/{job}/checkpoints")
        browser.wait_for_text("Latest Completed Checkpoint", PAGE_TIMEOUT)
        browser.screenshot("kubernetes-checkpoints")
        browser.open(f"{rest}/?page=rescales#/job/running/{job}/rescales")
        browser.wait_for_text("Rescale Counts", PAGE_TIMEOUT)
        browser.wait_for_text("Latest Completed Rescale None", PAGE_TIMEOUT)
        browser.open(f"{rest}/?page=application#/application/running/{job}")
        browser.wait_for_text(f"Application ID {job}", PAGE_TIMEOUT)
        browser.wait_for_text("SingleJobApplication(", PAGE_TIMEOUT)
        browser.open(f"{rest}/?page=taskmanagers#/task-manager")
        browser.wait_for_text(task_manager, PAGE_TIMEOUT)
        assert browser.console_errors() == []
        assert [r for r in browser.requests() if r.status is not None and r.status >= 400] == []
    _jvm_metrics_arrive(rest)


def _jvm_metrics_arrive(rest: str) -> None:
    """The Spark driver's JVM in the JobManager pod and each executor's in its TaskManager pod report their metrics."""
    heap = {"get": "Status.JVM.Memory.Heap.Used,Status.JVM.Memory.Heap.Max"}

    def driver() -> dict[str, int]:
        return {m["id"]: int(m["value"]) for m in requests.get(f"{rest}/jobmanager/metrics", params=heap, timeout=10).json()}

    jm = wait_for(driver, PAGE_TIMEOUT, interval=1, what="the driver's JVM metrics")
    assert 0 < jm["Status.JVM.Memory.Heap.Used"] <= jm["Status.JVM.Memory.Heap.Max"]
    for manager in requests.get(f"{rest}/taskmanagers", timeout=10).json()["taskmanagers"]:

        def executor(tm_id: str = manager["id"]) -> dict:
            return requests.get(f"{rest}/taskmanagers/{tm_id}", timeout=10).json()["metrics"]["heapUsed"]

        wait_for(executor, PAGE_TIMEOUT, interval=1, what=f"the JVM metrics of {manager['id']}'s executor")


def _task_manager_logs_are_served(rest: str) -> None:
    """A TaskManager pod's logs, which its TaskExecutor hands out: its own log (a file it writes beside the container's
    log, which is its stderr), its Spark worker's; its own log holds its registration."""
    manager = requests.get(f"{rest}/taskmanagers", timeout=10).json()["taskmanagers"][0]["id"]
    names = [entry["name"] for entry in requests.get(f"{rest}/taskmanagers/{manager}/logs", timeout=10).json()["logs"]]
    assert names[:2] == ["taskmanager.log", f"spark-worker-{manager}.log"], names
    assert any(name.startswith("spark-executor-") and name.endswith(".stderr") for name in names), names
    own = requests.get(f"{rest}/taskmanagers/{manager}/log", timeout=10)
    assert own.status_code == 200 and "registered at the ResourceManager" in own.text, own.text[-2000:]
