"""The Kubernetes backend's built manifests against the real API server of the test cluster.

What this proves, before any descriptor or driver exists: the API server
accepts every object the ``build_*`` functions make (server-side dry run, then
for real), a JobManager pod built from them gets its pod IP through the
downward API, the cluster's secret as a file of the Secret (never in its
environment), and the staged files through the ConfigMap; a TaskManager pod
keeps the requests, limits, labels and owner reference it was built with;
deleting the Deployment removes every object of the cluster (garbage
collection through the owner references); and manifests/rbac.yaml grants the
JobManager's service account exactly what it needs.  The pods run the
project's image; their command is a stand-in entry point (mounted from this
machine through a pod template) that reports what it sees: the real
bootstraps need the descriptor (later steps of issue 10).
"""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes
import pytest

from jobcluster.backends.kubernetes.jobmanager import build_job_manager_deployment, build_rest_service
from jobcluster.backends.kubernetes.labels import selector_text
from jobcluster.backends.kubernetes.parameters import job_manager_parameters, task_manager_parameters
from jobcluster.backends.kubernetes.pod_template import load_pod_template
from jobcluster.backends.kubernetes.staging import CONFIG_MAP_MAX_BYTES, build_config_map, build_secret, staged_items
from jobcluster.backends.kubernetes.taskmanager import build_task_manager_pod, task_manager_pod_name
from jobcluster.config.configuration import Configuration
from jobcluster.errors import DeploymentError
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.runtime.taskexecutor.launch import TaskExecutorLaunchSettings
from tests.integration.k8s.pods import image_options
from tests.integration.k8s.test_kubernetes_cluster_objects import STAND_IN_HEADER, stand_in_template
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

TIMEOUT = (5, 30)
ROOT = Path(__file__).resolve().parents[3]
JOB_ID = "0123456789abcdef0123456789abcdef"
CLUSTER_ID = "wordcount"
SECRET = "s3cr3t-0123456789"
PROGRAM = "print('hello from the ConfigMap')\n"

# A stand-in for entrypoints/jobmanager and /taskmanager (the image's python3, under tini): prints what
# the pod gives it (environment, staged files, the Secret's files, arguments, user), then waits.
REPORTING = """import json, time

def read_tree(top_dir):
    found = {}
    for top, dirs, names in os.walk(top_dir, followlinks=True):
        dirs[:] = [d for d in dirs if not d.startswith("..")]
        for name in names:
            if not name.startswith(".."):
                path = os.path.join(top, name)
                found[os.path.relpath(path, top_dir)] = open(path).read()
    return found

env = {k: v for k, v in os.environ.items() if k.startswith("JOBCLUSTER_")}
report = {
    "env": env,
    "files": read_tree(env["JOBCLUSTER_STAGED_DIR"]),
    "secret": read_tree(env["JOBCLUSTER_SECRET_DIR"]),
    "argv": sys.argv[1:],
    "uid": os.getuid(),
}
print("REPORT " + json.dumps(report), flush=True)
time.sleep(3600)
"""
STAND_IN = STAND_IN_HEADER + REPORTING


def as_dict(response) -> dict:
    """The JSON body of a ``_preload_content=False`` response."""
    return json.loads(response.data)


@pytest.fixture
def entrypoint_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "bin"
    directory.mkdir()
    for name in ("jobmanager", "taskmanager"):
        script = directory / name
        script.write_text(STAND_IN)
        script.chmod(0o755)
    return directory


@pytest.fixture
def pod_template(tmp_path: Path, entrypoint_dir: Path) -> Path:
    """The pod template that mounts the stand-in entry points in the main container."""
    return stand_in_template(tmp_path / "pod-template.yaml", entrypoint_dir)


def configuration(namespace: str, entrypoint_dir: Path, pod_template: Path, image: str) -> Configuration:
    return Configuration(
        {
            "jobmanager.memory.process.size": "1600m",
            "taskmanager.memory.process.size": "1728m",
            "taskmanager.numberOfTaskSlots": "1",
            "taskmanager.cpu.cores": "0.1",  # small requests: the test node has 2 cores, shared with other tests
            "kubernetes.cluster-id": CLUSTER_ID,
            "kubernetes.namespace": namespace,
            "kubernetes.jobmanager.cpu.amount": "0.1",
            "kubernetes.taskmanager.memory.limit-factor": "1.5",
            "kubernetes.taskmanager.labels": "team:data",
            "jobcluster.kubernetes.entrypoint.dir": str(entrypoint_dir),
            "kubernetes.pod-template-file.default": str(pod_template),
            **image_options(image),
        }
    )


def report(k8s_cluster, namespace: str, pod: str) -> dict:
    def line():
        for text in k8s_cluster.pod_log(namespace, pod).splitlines():
            if text.startswith("REPORT "):
                return json.loads(text.removeprefix("REPORT "))
        return None

    found: dict = wait_for(line, what=f"the report of pod {pod}")
    return found


def exists(read, *args) -> bool:
    try:
        read(*args, _request_timeout=TIMEOUT)
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def test_built_objects_run_a_cluster_shape_and_go_with_the_deployment(
    k8s_cluster, k8s_api, k8s_namespace, k8s_image, entrypoint_dir, pod_template
):
    ns = k8s_namespace
    core, apps = kubernetes.client.CoreV1Api(k8s_api), kubernetes.client.AppsV1Api(k8s_api)
    config = configuration(ns, entrypoint_dir, pod_template, k8s_image)
    jm = job_manager_parameters(config, JOB_ID)
    tm = task_manager_parameters(config, JOB_ID)
    assert jm.pod_template_file == tm.pod_template_file == str(pod_template)
    template = load_pod_template(str(pod_template), "kubernetes.pod-template-file.default")
    files = {"jobcluster.yaml": b"parallelism.default: 1\n", "jobgraph.json": b"{}", "artifacts/wordcount.py": PROGRAM.encode()}
    deployment = build_job_manager_deployment(jm, staged_items(list(files)), template)

    # server-side dry run: valid for the API server, nothing stored
    apps.create_namespaced_deployment(ns, deployment, dry_run="All", _request_timeout=TIMEOUT)
    assert not exists(apps.read_namespaced_deployment, CLUSTER_ID, ns)

    # Flink's order: the Deployment first, then everything else owned by it
    created = as_dict(apps.create_namespaced_deployment(ns, deployment, _request_timeout=TIMEOUT, _preload_content=False))
    owned = [
        (core.create_namespaced_config_map, build_config_map(CLUSTER_ID, ns, files, created)),
        (core.create_namespaced_secret, build_secret(CLUSTER_ID, ns, SECRET, created)),
        (core.create_namespaced_service, build_rest_service(jm, created)),
    ]
    for create, body in owned:
        create(ns, body, dry_run="All", _request_timeout=TIMEOUT)
        create(ns, body, _request_timeout=TIMEOUT)

    # the JobManager pod sees its pod IP, the secret (a file, not a variable) and the staged files
    selector = selector_text(deployment["spec"]["selector"]["matchLabels"])
    jm_pod = wait_for(
        lambda: next(iter(as_dict(core.list_namespaced_pod(ns, label_selector=selector, _preload_content=False))["items"]), None),
        what="the JobManager pod",
    )
    seen = report(k8s_cluster, ns, jm_pod["metadata"]["name"])
    pod_ip = as_dict(core.read_namespaced_pod(jm_pod["metadata"]["name"], ns, _preload_content=False))["status"]["podIP"]
    assert seen["env"]["JOBCLUSTER_POD_IP"] == pod_ip
    assert seen["secret"] == {"cluster-secret": SECRET}
    assert "JOBCLUSTER_CLUSTER_SECRET" not in seen["env"] and SECRET not in json.dumps(seen["env"])
    assert seen["env"]["JOBCLUSTER_SECRET_DIR"] == "/opt/jobcluster/secret"
    assert seen["uid"] == 9999  # the image's user
    assert seen["env"]["JOBCLUSTER_CLUSTER_ID"] == CLUSTER_ID
    assert seen["env"]["JOBCLUSTER_NAMESPACE"] == ns
    assert seen["files"] == {name: content.decode() for name, content in files.items()}
    assert SECRET not in json.dumps(jm_pod)  # only a secretKeyRef in the pod

    # a TaskManager pod, built as the driver will, keeps its size, labels and owner
    spec = task_executor_process_spec_from_config(config)
    name = task_manager_pod_name(CLUSTER_ID, 1, 1)
    pod = build_task_manager_pod(
        tm,
        spec,
        name,
        launch_env=TaskExecutorLaunchSettings(tm.cluster_id, f"{pod_ip}:6123", "rm").environment(name),
        job_manager_address=pod_ip,
        owner=created,
        template=template,
    )
    core.create_namespaced_pod(ns, pod, _request_timeout=TIMEOUT)
    stored = as_dict(core.read_namespaced_pod(name, ns, _preload_content=False))
    assert stored["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "100m", "memory": "1728Mi"},
        "limits": {"cpu": "100m", "memory": "2592Mi"},
    }
    assert stored["metadata"]["labels"] == {
        "team": "data",
        "type": "jobcluster-native-kubernetes",
        "app": CLUSTER_ID,
        "component": "taskmanager",
    }
    assert stored["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": CLUSTER_ID,
            "uid": created["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert stored["spec"]["restartPolicy"] == "Never"
    tm_seen = report(k8s_cluster, ns, name)
    assert tm_seen["files"] == {"jobcluster.yaml": files["jobcluster.yaml"].decode()}
    assert tm_seen["env"]["JOBCLUSTER_RESOURCE_ID"] == name
    assert tm_seen["env"]["JOBCLUSTER_JOBMANAGER_ADDRESS"] == pod_ip
    assert tm_seen["secret"] == {"cluster-secret": SECRET}
    assert "JOBCLUSTER_CLUSTER_SECRET" not in tm_seen["env"]
    assert "-D" in tm_seen["argv"] and "taskmanager.numberOfTaskSlots=1" in tm_seen["argv"]

    # deleting the Deployment removes the whole cluster
    apps.delete_namespaced_deployment(CLUSTER_ID, ns, propagation_policy="Background", _request_timeout=TIMEOUT)

    def remaining() -> list[str]:
        left = (
            [f"configmap/jobcluster-config-{CLUSTER_ID}"]
            if exists(core.read_namespaced_config_map, f"jobcluster-config-{CLUSTER_ID}", ns)
            else []
        )
        left += [f"secret/{CLUSTER_ID}-secret"] if exists(core.read_namespaced_secret, f"{CLUSTER_ID}-secret", ns) else []
        left += [f"service/{CLUSTER_ID}-rest"] if exists(core.read_namespaced_service, f"{CLUSTER_ID}-rest", ns) else []
        pods = as_dict(core.list_namespaced_pod(ns, label_selector=f"app={CLUSTER_ID}", _preload_content=False))["items"]
        return left + [f"pod/{p['metadata']['name']}" for p in pods]

    wait_for(lambda: not remaining(), timeout=120, what="the cluster's objects to be garbage-collected")


def test_rbac_grants_the_jobmanager_exactly_what_it_needs(k8s_cluster, k8s_namespace):
    ns = k8s_namespace
    k8s_cluster.kubectl("apply", "-n", ns, "-f", str(ROOT / "manifests" / "rbac.yaml"))
    account = f"system:serviceaccount:{ns}:jobcluster"

    def can(verb: str, resource: str) -> bool:
        result = k8s_cluster.kubectl("auth", "can-i", verb, resource, "-n", ns, "--as", account, check=False)
        return result.stdout.strip() == "yes"

    allowed = [("create", "pods"), ("delete", "pods"), ("get", "pods"), ("list", "pods"), ("watch", "pods")]
    allowed += [("get", "configmaps"), ("create", "configmaps"), ("get", "deployments.apps"), ("patch", "deployments.apps")]
    allowed += [("delete", "deployments.apps")]
    denied = [("get", "secrets"), ("create", "deployments.apps"), ("create", "services"), ("update", "pods")]
    denied += [("update", "configmaps"), ("delete", "configmaps"), ("list", "deployments.apps"), ("update", "deployments.apps")]
    assert {f"{v} {r}" for v, r in allowed if not can(v, r)} == set()
    assert {f"{v} {r}" for v, r in denied if can(v, r)} == set()
    # only in its own namespace
    other = k8s_cluster.kubectl("auth", "can-i", "create", "pods", "-n", "default", "--as", account, check=False)
    assert other.stdout.strip() == "no"


def test_the_config_map_limit_is_the_api_servers(k8s_api, k8s_namespace):
    """The builder's limit is the API server's: what it builds at the limit is stored; one byte more the API server refuses too."""
    core = kubernetes.client.CoreV1Api(k8s_api)
    at_limit = {"jobcluster.yaml": b"a: 1\n", "artifacts/big.py": b"#" * (CONFIG_MAP_MAX_BYTES - 5)}
    core.create_namespaced_config_map(
        k8s_namespace, build_config_map("fits", k8s_namespace, at_limit, None), dry_run="All", _request_timeout=TIMEOUT
    )
    over = {**at_limit, "artifacts/big.py": b"#" * (CONFIG_MAP_MAX_BYTES - 4)}
    with pytest.raises(DeploymentError, match="more than a ConfigMap can hold"):
        build_config_map("too-big", k8s_namespace, over, None)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "too-big"},
        "data": {k.replace("/", "."): v.decode() for k, v in over.items()},
    }
    with pytest.raises(kubernetes.client.ApiException) as info:
        core.create_namespaced_config_map(k8s_namespace, body, dry_run="All", _request_timeout=TIMEOUT)
    assert info.value.status == 422
