"""`jobcluster run -t kubernetes-application` end to end on the real test cluster, through the CLI.

One namespace for the module (RBAC of manifests/rbac.yaml applied, the JobManager
runs as its service account); the pods run in real containers of the project's
image (``k8s_image``: present on the node, never pulled) with its entry points.
A path of the test (a corpus, an output directory, a program run ``local://``)
exists in a pod only where a pod template mounts it (``pods.host_path_template``).
CPU requests are small (the node has this machine's 2 cores), their limits a few
times higher so that the JVMs start in a reasonable time; memory is the memory
model's, and the node's cgroups (v1) enforce it.  What a test checks of a pod's
log it reads while the pod exists (the kubelet deletes a deleted pod's logs), or
it checks what the CLI printed.  After every test the namespace holds no object
of any job cluster.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import kubernetes
import pytest
import requests
import yaml
from kubernetes.utils import parse_quantity

from tests.e2e.support import memory_error_cause, run_timing_stderr
from tests.infra.k8s.cluster import free_port
from tests.integration.k8s.pods import MAIN_CONTAINER, RESTRICTED, TEST_NODE_CPU, host_path_template, image_options
from tests.integration.k8s.test_kubernetes_cluster_objects import objects_of
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

REPO = Path(__file__).resolve().parents[3]
WORDCOUNT = REPO / "examples" / "wordcount.py"
PROGRAMS = REPO / "tests" / "e2e" / "programs"
WAITS = PROGRAMS / "waits.py"
SLOW_WORDCOUNT = PROGRAMS / "slow_wordcount.py"
MEMORY_HEAVY = PROGRAMS / "memory_heavy.py"
PYTHON_MEMORY_HOG = PROGRAMS / "python_memory_hog.py"
TIMEOUT = (5, 30)
CLI_TIMEOUT = 600
GONE_TIMEOUT = 120  # seconds for the garbage collector to remove a deleted cluster's objects
TM_MEMORY_MIB = 2560  # the shipped taskmanager.memory.process.size
JM_MEMORY_MIB = 1600  # the shipped jobmanager.memory.process.size
CGROUP_MEMORY = "/sys/fs/cgroup/memory"  # the container's own memory cgroup (v1), as runc mounts it


def job_namespace(k8s_cluster, k8s_api, prefix: str, labels: dict[str, str] | None = None) -> Iterator[str]:
    """A fresh namespace ``<prefix>-<random>`` (with ``labels``) with the JobManager's RBAC (manifests/rbac.yaml),
    deleted afterwards."""
    core = kubernetes.client.CoreV1Api(k8s_api)
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name, "labels": labels or {}}}, _request_timeout=TIMEOUT)
    k8s_cluster.kubectl("apply", "-n", name, "-f", str(REPO / "manifests" / "rbac.yaml"))
    yield name
    try:
        core.delete_namespace(name, _request_timeout=TIMEOUT)
    except kubernetes.client.ApiException:
        pass


@pytest.fixture(scope="module")
def namespace(k8s_cluster, k8s_api):
    yield from job_namespace(k8s_cluster, k8s_api, "e2e")


#: The Pod Security Standards' "restricted" profile, enforced by the API server's PodSecurity admission.


@pytest.fixture(scope="module")
def restricted_namespace(k8s_cluster, k8s_api):
    """A namespace that enforces Pod Security "restricted": a pod that does not comply is refused (checked first)."""
    for name in job_namespace(k8s_cluster, k8s_api, "restricted", RESTRICTED):
        plain = {"metadata": {"name": "plain"}, "spec": {"containers": [{"name": "c", "image": "any"}]}}
        with pytest.raises(kubernetes.client.ApiException, match="violates PodSecurity"):
            kubernetes.client.CoreV1Api(k8s_api).create_namespaced_pod(name, plain, dry_run="All", _request_timeout=TIMEOUT)
        yield name


@pytest.fixture(scope="module")
def cli_env(k8s_cluster) -> dict[str, str]:
    return k8s_cluster.env()


def cluster_options(namespace: str, image: str, cluster_id: str | None = None, more: dict[str, str] | None = None) -> list[str]:
    """``-D`` options of a job cluster in ``namespace`` on ``image``; ``more``: further options, or overrides of these."""
    options = {
        **image_options(image),
        "kubernetes.namespace": namespace,
        "kubernetes.jobmanager.service-account": "jobcluster",
        **TEST_NODE_CPU,
    }
    if cluster_id:
        options["kubernetes.cluster-id"] = cluster_id
    options.update(more or {})
    return [arg for key, value in options.items() for arg in ("-D", f"{key}={value}")]


def mounting(tmp_path: Path, directories: list[Path], writable: list[Path] = ()) -> dict[str, str]:  # type: ignore[assignment]
    """The option naming a pod template (of the JobManager and the TaskManager pods) that mounts ``directories`` at their paths."""
    template = host_path_template(tmp_path / "host-paths.yaml", directories, writable=writable)
    return {"kubernetes.pod-template-file.default": str(template)}


def jobcluster(env: dict[str, str], *args: str, timeout: float = CLI_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jobcluster", *args], capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env, check=False
    )


class Attached:
    """``jobcluster run`` (attached) in the background, its stdout and stderr in files of ``directory``."""

    def __init__(self, env: dict[str, str], args: list[str], directory: Path) -> None:
        self.stdout_path, self.stderr_path = directory / "cli.stdout", directory / "cli.stderr"
        with open(self.stdout_path, "w") as stdout, open(self.stderr_path, "w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jobcluster", *args], stdout=stdout, stderr=stderr, cwd=REPO, env=env, text=True
            )

    def __enter__(self) -> Attached:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text()

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def running(self) -> None:
        """AssertionError if the command has ended (a wait for what it should still be doing is pointless)."""
        assert self.process.poll() is None, f"jobcluster run ended early (exit {self.process.returncode}):\n{self.stderr[-4000:]}"

    def wait_for_output(self, pattern: str, timeout: float = 300, what: str | None = None) -> re.Match:
        def found() -> re.Match | None:
            if match := re.search(pattern, self.stderr):
                return match
            self.running()
            return None

        return wait_for(found, timeout=timeout, interval=0.5, what=what or f"{pattern!r} in the CLI's output")

    def wait(self, timeout: float = CLI_TIMEOUT) -> int:
        return self.process.wait(timeout)


def corpus(directory: Path) -> Path:
    """16 small files: 16 partitions of the slow WordCount, so that tasks are still to run when a TaskManager goes."""
    directory.mkdir(parents=True)
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
    lister = {
        "pods": core.list_namespaced_pod,
        "deployments": apps.list_namespaced_deployment,
        "configmaps": core.list_namespaced_config_map,
    }[kind]
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


def memory_limit(pod: dict) -> int:
    """Bytes: the memory limit of the pod's main container, as its spec says."""
    (container,) = [c for c in pod["spec"]["containers"] if c["name"] == MAIN_CONTAINER]
    return int(parse_quantity(container["resources"]["limits"]["memory"]))


def container_cgroup(k8s_cluster, namespace: str, pod: str) -> dict[str, int]:
    """The main container's memory cgroup, read in the container: ``limit`` and ``max_usage`` (bytes), ``oom_kill`` (count)."""
    result = k8s_cluster.kubectl(
        "exec", "-n", namespace, pod, "-c", MAIN_CONTAINER, "--",
        "cat", *(f"{CGROUP_MEMORY}/memory.{name}" for name in ("limit_in_bytes", "max_usage_in_bytes", "oom_control")),
    )  # fmt: skip
    limit, max_usage, *control = result.stdout.split("\n")
    counters = dict(line.split() for line in control if line.strip())
    return {"limit": int(limit), "max_usage": int(max_usage), "oom_kill": int(counters["oom_kill"])}


def oom_killed(pod: dict) -> list[str]:
    """``container: state`` of each of the pod's containers that ended OOMKilled (now or in an earlier run)."""
    found = []
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        for which in ("state", "lastState"):
            terminated = (status.get(which) or {}).get("terminated") or {}
            if terminated.get("reason") == "OOMKilled":
                found.append(f"{pod['metadata']['name']}/{status['name']}: {terminated}")
    return found


def assert_namespace_empty(k8s_api, namespace: str) -> None:
    wait_for(lambda: not objects_of(k8s_api, namespace), timeout=GONE_TIMEOUT, what=f"no job cluster object in {namespace}")


def test_wordcount_on_two_task_manager_pods_one_deleted_mid_job_then_the_job_manager(
    k8s_cluster, k8s_api, k8s_image, namespace, cli_env, tmp_path
):
    """Exact counts, read back from the output directory the executors wrote on the TaskManager pods; the
    TaskManager pods as the memory model and the options say, read back from the API server and from the
    containers' cgroups; a TaskManager pod deleted while tasks run is replaced; then the JobManager pod is deleted:
    the Deployment's new pod runs the job again as attempt 2 (the old attempt's TaskManagers go), the attached
    client follows it to its new address, and the counts stay exact."""
    data = tmp_path / "data"  # the corpus and the output: the driver (JobManager pod) and the executors read and write there
    source, out = corpus(data / "corpus"), data / "out"
    cluster_id = f"wc-{uuid.uuid4().hex[:6]}"
    options = {
        "taskmanager.numberOfTaskSlots": "2",
        "kubernetes.taskmanager.labels": "team:data",
        "kubernetes.taskmanager.memory.limit-factor": "1.5",
        "kubernetes.taskmanager.cpu.limit-factor": "2",
        **mounting(tmp_path, [data], writable=[data]),
    }
    args = [
        "run", "-t", "kubernetes-application", "-p", "4",
        *cluster_options(namespace, k8s_image, cluster_id, options),
        "--py-files", str(WORDCOUNT),
        str(SLOW_WORDCOUNT), "--input", str(source), "--output", str(out), "--delay", "3",
    ]  # fmt: skip
    core = kubernetes.client.CoreV1Api(k8s_api)
    started = time.monotonic()
    tm_selector = f"app={cluster_id},component=taskmanager"
    with Attached(cli_env, args, tmp_path) as cli:

        def two_pods() -> list[dict] | bool:
            cli.running()
            return len(found := list_json(k8s_api, namespace, "pods", tm_selector)) == 2 and found

        pods = wait_for(two_pods, timeout=300, interval=0.5, what="two TaskManager pods")
        (deployment,) = list_json(k8s_api, namespace, "deployments", f"app={cluster_id}")
        rest = cli.wait_for_output(r"REST API at (\S+)", what="the REST URL").group(1)
        wait_for(lambda: tasks_running(rest), timeout=300, interval=0.5, what="Spark tasks completed and more to run")

        # the limits are the containers' cgroups: what the pod specs say is what the kernel enforces
        (jm_pod,) = list_json(k8s_api, namespace, "pods", f"app={cluster_id},component=jobmanager")
        for pod in (jm_pod, *list_json(k8s_api, namespace, "pods", tm_selector)):
            assert container_cgroup(k8s_cluster, namespace, pod["metadata"]["name"])["limit"] == memory_limit(pod)

        victim = f"{cluster_id}-taskmanager-1-1"
        core.delete_namespaced_pod(victim, namespace, _request_timeout=TIMEOUT)
        cli.wait_for_output(f"TaskExecutor {cluster_id}-taskmanager-1-3 registered", what="the replacement TaskManager registered")
        wait_for(lambda: tasks_running(rest), timeout=300, interval=0.5, what="Spark tasks running again")
        (jm_pod,) = list_json(k8s_api, namespace, "pods", f"app={cluster_id},component=jobmanager")
        core.delete_namespaced_pod(jm_pod["metadata"]["name"], namespace, _request_timeout=TIMEOUT)
        code = cli.wait()
        out_text, err_text = cli.stdout, cli.stderr
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
        "limits": {"cpu": Decimal("1"), "memory": JM_MEMORY_MIB << 20},
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


def test_memory_limits_are_the_memory_models_and_a_memory_heavy_job_is_not_oom_killed(
    k8s_cluster, k8s_api, k8s_image, namespace, cli_env, tmp_path
):
    """The shipped memory model (limit factor 1): the JobManager's and the TaskManager's containers are limited to
    exactly its process sizes, in their pod specs and in their cgroups; memory_heavy.py (Python objects, cached
    blocks and a shuffle, 2 tasks at a time on one TaskManager) finishes with its exact result and no process of
    either container was killed for memory (the cgroups' oom_kill counters stay 0, no container ends OOMKilled,
    no TaskManager is replaced)."""
    spec = importlib.util.spec_from_file_location("memory_heavy", MEMORY_HEAVY)
    assert spec is not None and spec.loader is not None
    memory_heavy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(memory_heavy)
    records, checksum = memory_heavy.expected(8, 24)

    cluster_id = f"mem-{uuid.uuid4().hex[:6]}"
    options = {"taskmanager.numberOfTaskSlots": "2", "kubernetes.taskmanager.cpu.limit-factor": "4"}
    args = ["run", "-t", "kubernetes-application", "-p", "2", *cluster_options(namespace, k8s_image, cluster_id, options)]
    args.append(str(MEMORY_HEAVY))
    selector = f"app={cluster_id}"
    cgroups: dict[str, dict[str, int]] = {}  # pod → its container's cgroup, last read
    pods: dict[str, dict] = {}  # pod → the pod, last seen
    started = time.monotonic()
    with Attached(cli_env, args, tmp_path) as cli:

        def watch() -> None:
            for pod in list_json(k8s_api, namespace, "pods", selector):
                name = pod["metadata"]["name"]
                pods[name] = pod
                if (pod.get("status") or {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp"):
                    try:
                        cgroups[name] = container_cgroup(k8s_cluster, namespace, name)
                    except (subprocess.CalledProcessError, ValueError, KeyError):
                        pass  # the pod is going, or its container not yet there

        def both_read() -> bool:
            cli.running()
            watch()
            return any("-taskmanager-" in name for name in cgroups) and any("-taskmanager-" not in name for name in cgroups)

        wait_for(both_read, timeout=300, interval=1, what="the cgroups of the JobManager and TaskManager containers")
        while cli.process.poll() is None:  # the counters until the end (the pods go with the job)
            watch()
            time.sleep(2)
        code = cli.wait()
        out_text, err_text = cli.stdout, cli.stderr
    print(f"memory_heavy on Kubernetes took {time.monotonic() - started:.1f} s; peak memory of the containers (MiB): "
          + ", ".join(f"{name} {c['max_usage'] >> 20} of {c['limit'] >> 20}" for name, c in sorted(cgroups.items())))  # fmt: skip
    assert code == 0, f"stdout:\n{out_text}\nstderr:\n{err_text[-6000:]}"
    assert f"RESULT {records} {checksum}" in out_text, out_text
    assert "CACHED 8/8 partitions" in out_text, out_text

    (jm_name,) = [name for name in pods if "-taskmanager-" not in name]
    assert [p for p in pods if "-taskmanager-" in p] == [f"{cluster_id}-taskmanager-1-1"]  # never replaced
    tm_name = f"{cluster_id}-taskmanager-1-1"
    assert (memory_limit(pods[jm_name]), memory_limit(pods[tm_name])) == (JM_MEMORY_MIB << 20, TM_MEMORY_MIB << 20)
    assert (cgroups[jm_name]["limit"], cgroups[tm_name]["limit"]) == (JM_MEMORY_MIB << 20, TM_MEMORY_MIB << 20)
    assert {name: c["oom_kill"] for name, c in cgroups.items()} == {jm_name: 0, tm_name: 0}
    assert [killed for pod in pods.values() for killed in oom_killed(pod)] == []
    assert "OOMKilled" not in err_text and not re.search(r"TaskExecutor \S+ lost: ", err_text), err_text[-6000:]
    assert_namespace_empty(k8s_api, namespace)


def test_a_python_task_past_its_pyspark_workers_limit_fails_with_memory_error_and_no_container_is_killed(
    k8s_api, k8s_image, restricted_namespace, cli_env
):
    """Issue 27's program in real containers with the shipped sizes (-p 2, one TaskManager of 2 slots, its pod
    limited to its process size): each Python task fills 1,000 MiB, past the 268 MiB a PySpark worker may use (the
    daemon's RLIMIT_DATA, inherited by the workers). The tasks fail with MemoryError, the job's cause names the
    limit and the options to raise it, and the kernel killed nothing: the one TaskManager is never lost.
    In a namespace that enforces Pod Security "restricted": the JobManager's and the TaskManager's pods pass it."""
    namespace = restricted_namespace
    cluster_id = f"pyhog-{uuid.uuid4().hex[:6]}"
    options = {"taskmanager.numberOfTaskSlots": "2", "kubernetes.taskmanager.cpu.limit-factor": "4"}
    args = ["run", "-t", "kubernetes-application", "-p", "2", *cluster_options(namespace, k8s_image, cluster_id, options)]
    argv = [sys.executable, "-m", "jobcluster", *args, str(PYTHON_MEMORY_HOG), "--mib", "1000"]
    err_text, _ = memory_error_cause(*run_timing_stderr(argv, cli_env))
    assert len(re.findall(r"TaskExecutor \S+ registered", err_text)) == 1, err_text[-6000:]
    assert "OOMKilled" not in err_text and not re.search(r"TaskExecutor \S+ lost: ", err_text), err_text[-6000:]
    assert_namespace_empty(k8s_api, namespace)


#: Run in the TaskManager's container: make its TaskExecutor (the process under the container's init, tini) the one
#: the OOM killer picks, then allocate until the container's memory limit is reached.  Why the first step: on cgroup
#: v1 (this node) the kernel kills one process of the pod's memory cgroup, the one with the highest score (its memory
#: plus oom_score_adj thousandths of the limit), and the container lives on unless that is its main process; cgroup
#: v2's group kill (memory.oom.group, which the kubelet sets) would kill the whole container.  So the TaskExecutor
#: gets 1000 and every other process of the container, this one included, 0 (the kubelet gave them all the pod's QoS
#: value; any value down to 0 may be set by the same user).
MEMORY_HOG = """
import os
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
        task_executor = argv[1:3] == [b"-m", b"jobcluster.runtime.taskexecutor"]
        open(f"/proc/{pid}/oom_score_adj", "w").write("1000" if task_executor else "0")
    except OSError:
        continue
    if task_executor:
        print("TaskExecutor", pid, "goes first", flush=True)
hog = []
while True:
    hog.append(b"x" * (64 << 20))
"""


def test_task_manager_driven_past_its_memory_limit_is_reported_oom_killed_and_replaced(
    k8s_cluster, k8s_api, k8s_image, namespace, cli_env, tmp_path
):
    """A TaskManager container that outgrows its memory limit while tasks run is killed by the kernel: the CLI
    reports its pod with Kubernetes' words (OOMKilled, exit code 137), the limit from its spec and the option to
    change, a new TaskManager pod (the next number) takes its place, saying why the one it replaces ended, and the
    job finishes with exact counts."""
    data = tmp_path / "data"
    source, out = corpus(data / "corpus"), data / "out"
    cluster_id = f"oom-{uuid.uuid4().hex[:6]}"
    options = {"taskmanager.numberOfTaskSlots": "1", **mounting(tmp_path, [data], writable=[data])}
    args = [
        "run", "-t", "kubernetes-application", "-p", "1",
        *cluster_options(namespace, k8s_image, cluster_id, options),
        "--py-files", str(WORDCOUNT),
        str(SLOW_WORDCOUNT), "--input", str(source), "--output", str(out), "--delay", "3", "--partitions", "8",
    ]  # fmt: skip  # 3 s a partition: time for `kubectl exec` on a loaded node before the last tasks end (1 s was not)
    victim = f"{cluster_id}-taskmanager-1-1"
    started = time.monotonic()
    with Attached(cli_env, args, tmp_path) as cli:
        rest = cli.wait_for_output(r"REST API at (\S+)", what="the REST URL").group(1)
        wait_for(lambda: tasks_running(rest), timeout=300, interval=0.5, what="Spark tasks completed and more to run")
        (pod,) = list_json(k8s_api, namespace, "pods", f"app={cluster_id},component=taskmanager")
        assert pod["metadata"]["name"] == victim
        hog = k8s_cluster.kubectl("exec", "-n", namespace, victim, "-c", MAIN_CONTAINER, "--", "python3", "-c", MEMORY_HOG, check=False)
        assert "goes first" in hog.stdout, hog
        lost = cli.wait_for_output(rf"TaskExecutor {victim} lost: .*", timeout=120, what="the OOM-killed TaskManager reported").group(0)
        cli.wait_for_output(f"TaskExecutor {cluster_id}-taskmanager-1-2 registered", what="the replacement TaskManager registered")
        code = cli.wait()
        out_text, err_text = cli.stdout, cli.stderr
    print(f"slow WordCount with one TaskManager killed for memory took {time.monotonic() - started:.1f} s; the CLI said: {lost}")
    assert code == 0, f"stdout:\n{out_text}\nstderr:\n{err_text}"
    oom = "OOMKilled, exit code 137: killed by the kernel for exceeding the container's memory limit"
    assert lost.startswith(
        f"TaskExecutor {victim} lost: worker terminated: {oom} (OOMKilled: container {MAIN_CONTAINER} reached its memory limit of "
        f"{TM_MEMORY_MIB}Mi). The JVM overhead (384m of the {TM_MEMORY_MIB}m container) holds all memory no limit of the memory "
        "model covers"
    ), lost
    assert "raise taskmanager.memory.jvm-overhead.min (and .max, if lower)" in lost, lost
    assert "raise taskmanager.memory.process.size by as much too to keep them" in lost, lost
    replacement = re.search(
        rf"TaskExecutor {cluster_id}-taskmanager-1-2 registered: .*; it replaces (\S+), which ended with (.*)", err_text
    )
    assert replacement and replacement.groups() == (victim, oom), err_text
    assert read_counts(out) == expected_counts(source)
    registered = re.findall(r"TaskExecutor (\S+) registered", err_text)
    assert registered == [victim, f"{cluster_id}-taskmanager-1-2"], err_text
    assert re.search(r"Job [0-9a-f]{32} \(\S+\) FINISHED", err_text), err_text[-3000:]
    assert_namespace_empty(k8s_api, namespace)


def test_detached_then_list_cluster_id_in_use_and_cancel(k8s_api, k8s_image, namespace, cli_env, tmp_path):
    """A detached job is listed, its cluster id is refused to a second run, and cancel removes the cluster;
    its pods carry what the pod templates add (the TaskManager's staged in the ConfigMap, read by the JobManager)."""
    cluster_id = f"detached-{uuid.uuid4().hex[:6]}"
    programs = tmp_path / "programs"  # in the JobManager's container only: the program run from where it is
    programs.mkdir()
    waits = Path(shutil.copy(WAITS, programs))
    jm_template, tm_template = tmp_path / "jobmanager.yaml", tmp_path / "taskmanager.yaml"
    host_path_template(jm_template, [programs])
    tm_template.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": MAIN_CONTAINER}]}}))
    for path, label in ((jm_template, "jm"), (tm_template, "tm")):
        template = yaml.safe_load(path.read_text())
        template["metadata"] = {"labels": {"from-template": label}}
        template["spec"]["containers"][0]["env"] = [{"name": "FROM_TEMPLATE", "value": label}]
        path.write_text(yaml.safe_dump(template, sort_keys=False))
    target = ["-t", "kubernetes-application", *cluster_options(namespace, k8s_image)]
    common = [*target, "-p", "1", "-D", "taskmanager.numberOfTaskSlots=1", "-D", f"kubernetes.cluster-id={cluster_id}"]
    templates = [
        "-D",
        f"kubernetes.pod-template-file.jobmanager={jm_template}",
        "-D",
        f"kubernetes.pod-template-file.taskmanager={tm_template}",
    ]
    try:
        # the program is where the JobManager runs (local://): it runs it there, nothing of it is staged
        result = jobcluster(cli_env, "run", "-d", *common, *templates, f"local://{waits}", "600")
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
    "ServiceAccount that does not exist": (
        r'Error: the JobManager pod of job cluster fine cannot be created: FailedCreate: .*serviceaccount "nobody" not found'
    ),
    "image that cannot be pulled": r"Error: .*the JobManager pod fine-\S+ .*(ErrImagePull|ImagePullBackOff).*localhost/nope:1",
    "JobManager too large for the node": r"Error: job cluster fine did not start within 30 s: .* to be scheduled: .*Insufficient memory",
}
#: Seconds the client may wait for the JobManager (jobcluster.kubernetes.jobmanager.startup-timeout) in the cases that set it.
STARTUP_TIMEOUT = {"image that cannot be pulled": 60, "JobManager too large for the node": 30}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_and_faults_leave_nothing(k8s_cluster, k8s_api, k8s_image, namespace, cli_env, tmp_path, case):
    """Each is refused with a clear error (Kubernetes' reason where Kubernetes refused) and exit 1, within the
    startup timeout where one is set, and nothing of the cluster is left in the namespace."""
    cluster_id, target_namespace, program, extra = "fine", namespace, WORDCOUNT, {}
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
        extra = {"kubernetes.config.file": str(kubeconfig)}
    elif case == "JobManager without RBAC":
        extra = {"kubernetes.jobmanager.service-account": "default"}  # may not create pods
    elif case == "ServiceAccount that does not exist":
        extra = {"kubernetes.jobmanager.service-account": "nobody"}
    elif case == "image that cannot be pulled":
        extra = {"kubernetes.container.image.ref": "localhost/nope:1", "kubernetes.container.image.pull-policy": "IfNotPresent"}
    elif case == "JobManager too large for the node":
        extra = {"jobmanager.memory.process.size": "64g"}  # the node has ~23 GiB
    if case in STARTUP_TIMEOUT:
        extra["jobcluster.kubernetes.jobmanager.startup-timeout"] = f"{STARTUP_TIMEOUT[case]} s"
    started = time.monotonic()
    result = jobcluster(
        cli_env,
        "run",
        "-t",
        "kubernetes-application",
        *cluster_options(target_namespace, k8s_image, cluster_id, extra),
        str(program),
        "--input",
        str(WORDCOUNT),
        "--output",
        "/nonexistent",
        timeout=180,
    )
    took = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    assert re.search(BAD_INPUT[case], result.stderr), result.stderr
    assert result.stderr.count("Error:") == 1, result.stderr
    if case == "API server not reachable":
        assert took < 30
    if case in STARTUP_TIMEOUT:
        assert took < STARTUP_TIMEOUT[case] + 30, f"{took:.0f} s"  # the timeout, the CLI's start and the deletion
    assert_namespace_empty(k8s_api, namespace)


def test_task_manager_that_fits_no_node_fails_the_job_and_the_cluster_goes(k8s_cluster, k8s_api, k8s_image, namespace, cli_env, tmp_path):
    """The client says within seconds why the TaskManager pod does not start, in the scheduler's words; the job FAILS
    after slot.request.timeout with that reason in its cause; nothing is left."""
    cluster_id = f"nofit-{uuid.uuid4().hex[:6]}"
    options = {"taskmanager.numberOfTaskSlots": "1", "slot.request.timeout": "20 s", "kubernetes.taskmanager.cpu.amount": "64"}
    args = [
        "run", "-t", "kubernetes-application", "-p", "1",
        *cluster_options(namespace, k8s_image, cluster_id, options),
        str(WORDCOUNT), "--input", str(WORDCOUNT), "--output", "/nonexistent",
    ]  # fmt: skip
    unschedulable = rf"TaskExecutor {cluster_id}-taskmanager-1-1 cannot start yet: the pod cannot be scheduled: .*Insufficient cpu"
    with Attached(cli_env, args, tmp_path) as cli:
        cli.wait_for_output(rf"JobManager pod ({cluster_id}-\S+) is running", what="the JobManager pod")
        running = time.monotonic()
        cli.wait_for_output(unschedulable, timeout=60, what="the scheduler's reason in the CLI's output")
        said_after = time.monotonic() - running
        code = cli.wait(300)
        err_text = cli.stderr
    assert said_after < 15, f"the reason came {said_after:.0f} s after the JobManager ran"
    assert code == 1, err_text
    assert re.search(r"Job [0-9a-f]{32} \(wordcount\) FAILED", err_text), err_text
    cause = rf"NoResourceAvailableException: .*Workers that could not start: {cluster_id}-taskmanager-1-1: .*Insufficient cpu"
    assert re.search(cause, err_text), err_text
    assert_namespace_empty(k8s_api, namespace)
