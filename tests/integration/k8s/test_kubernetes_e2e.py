"""`jobcluster run -t kubernetes-application` end to end on the real test cluster, through the CLI.

One namespace for the module (RBAC of manifests/rbac.yaml applied, the JobManager
runs as its service account); the pods run the repository's entry points
(``entrypoints/``) with this virtualenv's Python first on their PATH, as the
image would.  CPU requests are small (the node has this machine's 2 cores);
memory is the memory model's.  After every test the namespace holds no object
of any job cluster.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections import Counter
from decimal import Decimal
from pathlib import Path

import kubernetes
import pytest
import requests
import yaml
from kubernetes.utils import parse_quantity

from tests.infra.k8s.cluster import free_port
from tests.integration.k8s.test_kubernetes_cluster_objects import objects_of
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

REPO = Path(__file__).resolve().parents[3]
WORDCOUNT = REPO / "examples" / "wordcount.py"
PROGRAMS = REPO / "tests" / "e2e" / "programs"
WAITS = PROGRAMS / "waits.py"
SLOW_WORDCOUNT = PROGRAMS / "slow_wordcount.py"
TIMEOUT = (5, 30)
CLI_TIMEOUT = 600
GONE_TIMEOUT = 120  # seconds for the garbage collector to remove a deleted cluster's objects
TM_MEMORY_MIB = 2560  # the shipped taskmanager.memory.process.size
JM_MEMORY_MIB = 1600  # the shipped jobmanager.memory.process.size


@pytest.fixture(scope="module")
def namespace(k8s_cluster, k8s_api):
    core = kubernetes.client.CoreV1Api(k8s_api)
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}}, _request_timeout=TIMEOUT)
    k8s_cluster.kubectl("apply", "-n", name, "-f", str(REPO / "manifests" / "rbac.yaml"))
    yield name
    try:
        core.delete_namespace(name, _request_timeout=TIMEOUT)
    except kubernetes.client.ApiException:
        pass


@pytest.fixture(scope="module")
def cli_env(k8s_cluster) -> dict[str, str]:
    return {**k8s_cluster.env(), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{k8s_cluster.env()['PATH']}"}


def pod_path() -> str:
    """The pods' PATH: this virtualenv first (the image's Python), then the usual."""
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"


def cluster_options(namespace: str, cluster_id: str | None = None) -> list[str]:
    options = {
        "kubernetes.namespace": namespace,
        "jobcluster.kubernetes.entrypoint.dir": str(REPO / "entrypoints"),
        "kubernetes.jobmanager.service-account": "jobcluster",
        "kubernetes.jobmanager.cpu.amount": "0.25",
        "kubernetes.taskmanager.cpu.amount": "0.5",
        "containerized.master.env.PATH": pod_path(),
        "containerized.taskmanager.env.PATH": pod_path(),
    }
    if cluster_id:
        options["kubernetes.cluster-id"] = cluster_id
    return [arg for key, value in options.items() for arg in ("-D", f"{key}={value}")]


def jobcluster(env: dict[str, str], *args: str, timeout: float = CLI_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jobcluster", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env, check=False
    )


def corpus(directory: Path) -> Path:
    """16 small files: 16 partitions of the slow WordCount, so that tasks are still to run when a TaskManager goes."""
    directory.mkdir()
    for n in range(16):
        (directory / f"part{n:02d}.txt").write_text(f"the quick brown fox {n}\njumps over the lazy dog\nThe END fox_trot 42\n" * (n + 1))
    return directory


def expected_counts(directory: Path) -> Counter:
    counts: Counter = Counter()
    for path in sorted(directory.iterdir()):
        for line in path.read_text().splitlines():
            counts.update(re.findall(r"[a-z0-9_]+", line.lower()))
    return counts


def read_counts(out: Path) -> Counter:
    counts: Counter = Counter()
    for part in out.glob("part-*"):
        for line in part.read_text().splitlines():
            word, count = line.rsplit("\t", 1)
            assert word not in counts
            counts[word] = int(count)
    return counts


def list_json(k8s_api, namespace: str, kind: str, selector: str) -> list[dict]:
    core, apps = kubernetes.client.CoreV1Api(k8s_api), kubernetes.client.AppsV1Api(k8s_api)
    lister = {"pods": core.list_namespaced_pod, "deployments": apps.list_namespaced_deployment}[kind]
    response = lister(namespace, label_selector=selector, _preload_content=False, _request_timeout=TIMEOUT)
    return json.loads(response.data)["items"]


def tasks_running(rest: str) -> bool:
    """Whether the job is RUNNING with some Spark tasks done and more to come (the moment to take a TaskManager away)."""
    try:
        (job,) = requests.get(f"{rest}/jobs/overview", timeout=5).json()["jobs"]
        spark = requests.get(f"{rest}/jobs/{job['jid']}", timeout=5).json().get("spark") or {}
    except (requests.RequestException, ValueError):
        return False
    return job["state"] == "RUNNING" and 1 <= spark.get("tasks_completed", 0) < spark.get("tasks_total", 0) - 4


def quantities(resources: dict) -> dict:
    return {kind: {name: parse_quantity(value) for name, value in amounts.items()} for kind, amounts in resources.items()}


def assert_namespace_empty(k8s_api, namespace: str) -> None:
    wait_for(lambda: not objects_of(k8s_api, namespace), timeout=GONE_TIMEOUT, what=f"no job cluster object in {namespace}")


def test_wordcount_on_two_task_manager_pods_one_deleted_mid_job_then_the_job_manager(k8s_api, namespace, cli_env, tmp_path):
    """Exact counts; the TaskManager pods as the memory model and the options say, read back from the API server;
    a TaskManager pod deleted while tasks run is replaced; then the JobManager pod is deleted: the Deployment's
    new pod runs the job again as attempt 2 (the old attempt's TaskManagers go), the attached client follows it
    to its new address, and the counts stay exact."""
    source, out = corpus(tmp_path / "corpus"), tmp_path / "out"
    cluster_id = f"wc-{uuid.uuid4().hex[:6]}"
    args = [
        "run", "-t", "kubernetes-application", "-p", "4",
        "-D", "taskmanager.numberOfTaskSlots=2",
        "-D", "kubernetes.taskmanager.labels=team:data",
        "-D", "kubernetes.taskmanager.memory.limit-factor=1.5",
        "-D", "kubernetes.taskmanager.cpu.limit-factor=2",
        *cluster_options(namespace, cluster_id),
        "--py-files", str(WORDCOUNT),
        str(SLOW_WORDCOUNT), "--input", str(source), "--output", str(out), "--delay", "3",
    ]  # fmt: skip
    core = kubernetes.client.CoreV1Api(k8s_api)
    started = time.monotonic()
    with open(tmp_path / "stdout", "w+") as stdout, open(tmp_path / "stderr", "w+") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "jobcluster", *args], stdout=stdout, stderr=stderr, cwd=REPO, env=cli_env, text=True
        )
        try:
            tm_selector = f"app={cluster_id},component=taskmanager"

            def two_pods() -> list[dict] | bool:
                assert process.poll() is None, f"jobcluster run ended early:\n{Path(stderr.name).read_text()}"
                return len(found := list_json(k8s_api, namespace, "pods", tm_selector)) == 2 and found

            pods = wait_for(
                two_pods,
                timeout=300,
                interval=0.5,
                what="two TaskManager pods",
            )
            (deployment,) = list_json(k8s_api, namespace, "deployments", f"app={cluster_id}")
            rest = wait_for(lambda: re.search(r"REST API at (\S+)", Path(stderr.name).read_text()), what="the REST URL").group(1)
            wait_for(lambda: tasks_running(rest), timeout=300, interval=0.5, what="Spark tasks completed and more to run")
            victim = f"{cluster_id}-taskmanager-1-1"
            core.delete_namespaced_pod(victim, namespace, _request_timeout=TIMEOUT)
            wait_for(
                lambda: f"TaskExecutor {cluster_id}-taskmanager-1-3 registered" in Path(stderr.name).read_text(),
                timeout=300,
                what="the replacement TaskManager registered",
            )
            wait_for(lambda: tasks_running(rest), timeout=300, interval=0.5, what="Spark tasks running again")
            (jm_pod,) = list_json(k8s_api, namespace, "pods", f"app={cluster_id},component=jobmanager")
            core.delete_namespaced_pod(jm_pod["metadata"]["name"], namespace, _request_timeout=TIMEOUT)
            code = process.wait(CLI_TIMEOUT)
        finally:
            if process.poll() is None:
                process.kill()
        stdout.seek(0)
        stderr.seek(0)
        out_text, err_text = stdout.read(), stderr.read()
    print(f"attached slow WordCount on Kubernetes, one TaskManager pod replaced, took {time.monotonic() - started:.1f} s")
    assert code == 0, f"stdout:\n{out_text}\nstderr:\n{err_text}"
    assert read_counts(out) == expected_counts(source)
    registered = set(re.findall(r"TaskExecutor (\S+) registered: 2 slots", err_text))
    first = {f"{cluster_id}-taskmanager-1-{n}" for n in (1, 2, 3)}  # the deleted one replaced by a third
    assert first < registered and {name.rsplit("-", 2)[1] for name in registered - first} == {"2"}, err_text
    assert len(registered - first) == 2, err_text  # attempt 2's own two TaskManagers
    assert "The JobManager was restarted; following its new attempt at http://" in err_text
    assert err_text.count("Created Deployment") == 1

    # what the user saw: the objects, the JobManager pod, the TaskExecutors and slots, the result
    assert f"Created Deployment {cluster_id}" in err_text
    assert re.search(rf"JobManager pod {cluster_id}-\S+ is running", err_text)
    assert "Slots offered to the job: 4/4" in err_text
    assert re.search(r"FINISHED in \d+\.\d s", err_text)

    # the JobManager Deployment: labels with the JobID, the pod sized by the JobManager's memory model
    labels = deployment["metadata"]["labels"]
    assert (labels["app"], labels["component"], labels["type"]) == (cluster_id, "jobmanager", "jobcluster-native-kubernetes")
    assert re.fullmatch(r"[0-9a-f]{32}", labels["jobcluster.io/job-id"])
    (jm_container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert quantities(jm_container["resources"]) == {
        "requests": {"cpu": Decimal("0.25"), "memory": JM_MEMORY_MIB << 20},
        "limits": {"cpu": Decimal("0.25"), "memory": JM_MEMORY_MIB << 20},
    }

    # the TaskManager pods: named by attempt and number, sized by the TaskExecutor's process memory, owned by the Deployment
    assert sorted(p["metadata"]["name"] for p in pods) == [f"{cluster_id}-taskmanager-1-1", f"{cluster_id}-taskmanager-1-2"]
    for pod in pods:
        (container,) = pod["spec"]["containers"]
        assert quantities(container["resources"]) == {
            "requests": {"cpu": Decimal("0.5"), "memory": TM_MEMORY_MIB << 20},
            "limits": {"cpu": Decimal("1"), "memory": int(TM_MEMORY_MIB * 1.5) << 20},
        }
        assert pod["metadata"]["labels"] == {
            "team": "data",
            "type": "jobcluster-native-kubernetes",
            "app": cluster_id,
            "component": "taskmanager",
        }
        (owner,) = pod["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Deployment",
            cluster_id,
            deployment["metadata"]["uid"],
            True,
        )
        assert pod["spec"]["restartPolicy"] == "Never"
    assert_namespace_empty(k8s_api, namespace)


def test_detached_then_list_cluster_id_in_use_and_cancel(k8s_api, namespace, cli_env, tmp_path):
    """A detached job is listed, its cluster id is refused to a second run, and cancel removes the cluster;
    its pods carry what the pod templates add (the TaskManager's staged in the ConfigMap, read by the JobManager)."""
    cluster_id = f"detached-{uuid.uuid4().hex[:6]}"
    jm_template, tm_template = tmp_path / "jobmanager.yaml", tmp_path / "taskmanager.yaml"
    for path, label in ((jm_template, "jm"), (tm_template, "tm")):
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"labels": {"from-template": label}},
                    "spec": {"containers": [{"name": "jobcluster-main-container", "env": [{"name": "FROM_TEMPLATE", "value": label}]}]},
                }
            )
        )
    target = ["-t", "kubernetes-application", *cluster_options(namespace)]
    common = [*target, "-p", "1", "-D", "taskmanager.numberOfTaskSlots=1", "-D", f"kubernetes.cluster-id={cluster_id}"]
    templates = [
        "-D",
        f"kubernetes.pod-template-file.jobmanager={jm_template}",
        "-D",
        f"kubernetes.pod-template-file.taskmanager={tm_template}",
    ]
    try:
        # the program is in the image (local://): the JobManager runs it where it is, nothing of it is staged
        result = jobcluster(cli_env, "run", "-d", *common, *templates, f"local://{WAITS}", "600")
        assert result.returncode == 0, result.stderr
        job_id = re.search(r"JobID ([0-9a-f]{32})", result.stdout).group(1)
        before = objects_of(k8s_api, namespace)
        assert f"deployment/{cluster_id}" in before
        staged = kubernetes.client.CoreV1Api(k8s_api).read_namespaced_config_map(
            f"jobcluster-config-{cluster_id}", namespace, _request_timeout=TIMEOUT
        )
        assert "jobgraph.json" in staged.data
        assert not [key for key in staged.data if key.startswith("artifacts.")]
        tm_pod = wait_for(
            lambda: list_json(k8s_api, namespace, "pods", f"app={cluster_id},component=taskmanager"), timeout=180, what="a TaskManager pod"
        )[0]
        (jm_pod,) = list_json(k8s_api, namespace, "pods", f"app={cluster_id},component=jobmanager")
        for pod, label in ((jm_pod, "jm"), (tm_pod, "tm")):
            assert pod["metadata"]["labels"]["from-template"] == label
            assert {"name": "FROM_TEMPLATE", "value": label} in pod["spec"]["containers"][0]["env"]

        # the same cluster id again: refused before anything is created, the running cluster left alone
        again = jobcluster(cli_env, "run", *common, str(WORDCOUNT), "--input", str(WORDCOUNT), "--output", "/nonexistent")
        assert again.returncode == 1
        assert f"Error: the job cluster {cluster_id} already exists in namespace {namespace}" in again.stderr
        assert [o for o in objects_of(k8s_api, namespace) if not o.startswith("pod/")] == [o for o in before if not o.startswith("pod/")]

        listed = wait_for(
            lambda: (r := jobcluster(cli_env, "list", *target)).returncode == 0 and "RUNNING" in r.stdout and r,
            timeout=180,
            interval=1,
            what="the job listed as RUNNING",
        )
        (row,) = [line for line in listed.stdout.splitlines() if job_id in line]
        assert cluster_id in row
        assert "Waits" in row or "waits" in row

        cancelled = jobcluster(cli_env, "cancel", job_id, *target)
        assert cancelled.returncode == 0, cancelled.stderr
        assert f"Cancelled job {job_id}" in cancelled.stdout
        assert_namespace_empty(k8s_api, namespace)
        assert "No running jobs." in jobcluster(cli_env, "list", *target).stdout
    finally:
        kubernetes.client.AppsV1Api(k8s_api).delete_collection_namespaced_deployment(
            namespace, label_selector=f"app={cluster_id}", _request_timeout=TIMEOUT
        )


BAD_INPUT = {
    "invalid cluster id": r"Error: kubernetes.cluster-id 'Bad_Id' is not a valid cluster id",
    "cluster id too long": r"Error: kubernetes.cluster-id 'a{46}' is 46 characters long; it must be no more than 45",
    "missing namespace": r"Error: namespace no-such-namespace does not exist; create it or set kubernetes.namespace",
    "program too big for a ConfigMap": r"Error: the files staged for job cluster fine take \d+ bytes, more than a ConfigMap can hold.*local://",
    "API server not reachable": r"Error: the Kubernetes API server at https://127\.0\.0\.1:\d+ is not reachable",
    "JobManager without RBAC": r"Error: the JobManager pod fine-\S+ of job cluster fine did not start: its container exited with code 1",
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_and_faults_leave_nothing(k8s_cluster, k8s_api, namespace, cli_env, tmp_path, case):
    """Each is refused with a clear error and exit 1, and nothing of the cluster is left in the namespace."""
    cluster_id, target_namespace, program, extra = "fine", namespace, WORDCOUNT, []
    if case == "invalid cluster id":
        cluster_id = "Bad_Id"
    elif case == "cluster id too long":
        cluster_id = "a" * 46
    elif case == "missing namespace":
        target_namespace = "no-such-namespace"
    elif case == "program too big for a ConfigMap":
        program = tmp_path / "big.py"
        program.write_text("# padding\n" * 120_000)
    elif case == "API server not reachable":
        config = yaml.safe_load(k8s_cluster.kubeconfig.read_text())
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(config))
        extra = ["-D", f"kubernetes.config.file={kubeconfig}"]
    elif case == "JobManager without RBAC":
        extra = ["-D", "kubernetes.jobmanager.service-account=default"]  # may not create pods
    started = time.monotonic()
    result = jobcluster(
        cli_env,
        "run",
        "-t",
        "kubernetes-application",
        *cluster_options(target_namespace, cluster_id),
        *extra,
        str(program),
        "--input",
        str(WORDCOUNT),
        "--output",
        "/nonexistent",
        timeout=180,
    )
    assert result.returncode == 1, result.stderr
    assert re.search(BAD_INPUT[case], result.stderr), result.stderr
    assert result.stderr.count("Error:") == 1, result.stderr
    if case == "API server not reachable":
        assert time.monotonic() - started < 30
    assert_namespace_empty(k8s_api, namespace)


def test_task_manager_that_fits_no_node_fails_the_job_and_the_cluster_goes(k8s_cluster, k8s_api, namespace, cli_env):
    """The job FAILS after slot.request.timeout; the JobManager's log has the scheduler's reason; nothing is left."""
    cluster_id = f"nofit-{uuid.uuid4().hex[:6]}"
    result = jobcluster(
        cli_env,
        "run",
        "-t",
        "kubernetes-application",
        "-p",
        "1",
        "-D",
        "taskmanager.numberOfTaskSlots=1",
        "-D",
        "slot.request.timeout=15 s",
        *cluster_options(namespace, cluster_id),
        "-D",
        "kubernetes.taskmanager.cpu.amount=64",
        str(WORDCOUNT),
        "--input",
        str(WORDCOUNT),
        "--output",
        "/nonexistent",
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
    assert re.search(r"Job [0-9a-f]{32} \(wordcount\) FAILED", result.stderr), result.stderr
    assert "NoResourceAvailableException" in result.stderr
    jm_pod = re.search(rf"JobManager pod ({cluster_id}-\S+) is running", result.stderr).group(1)
    log = k8s_cluster.pod_log(namespace, jm_pod)
    assert re.search(rf"TaskManager pod {cluster_id}-taskmanager-1-1 cannot be scheduled: .*Insufficient cpu", log), log[-3000:]
    assert_namespace_empty(k8s_api, namespace)
