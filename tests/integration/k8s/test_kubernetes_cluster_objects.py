"""Creating and deleting a job cluster's objects against the real API server: order, conflicts, cleanup.

The JobManager pod runs the project's image with a stand-in entry point, from a
directory of this machine that a pod template mounts in its container (the
helpers here serve test_kubernetes_driver.py too).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from jobcluster.backends.kubernetes.cluster_objects import create_job_manager_objects, delete_cluster
from jobcluster.backends.kubernetes.descriptor import KubernetesClusterDescriptor
from jobcluster.backends.kubernetes.kube_client import ObjectExistsError, ObjectNotFoundError
from jobcluster.backends.kubernetes.parameters import job_manager_parameters
from jobcluster.backends.kubernetes.pod_template import load_pod_template
from jobcluster.backends.kubernetes.staging import CONFIG_MAP_MAX_BYTES
from jobcluster.config.configuration import Configuration
from jobcluster.errors import DeploymentError
from tests.integration.k8s.flinkjobs import labelled_objects
from tests.integration.k8s.pods import host_path_template, image_options
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

TIMEOUT = (5, 30)
JOB_ID = "0123456789abcdef0123456789abcdef"
FILES = {"jobcluster.yaml": b"parallelism.default: 1\n", "jobgraph.json": b"{}", "artifacts/wordcount.py": b"print(1)\n"}
TEMPLATE_OPTION = "kubernetes.pod-template-file.default"

# The start of a stand-in entry point (the image's python3). Like the real ones (entrypoints/), it
# runs itself under tini when it is PID 1 of its container: PID 1 has no default action for SIGTERM,
# and tini passes the kubelet's SIGTERM on, so a deleted pod's container ends at once (exit code 143).
STAND_IN_HEADER = """#!/usr/bin/env python3
import os, sys
if os.getpid() == 1:
    os.execv("/usr/bin/tini", ["/usr/bin/tini", "--", sys.executable, *sys.argv])
"""
SLEEPING = STAND_IN_HEADER + "import time\ntime.sleep(3600)\n"
# Seconds between the kubelet's SIGTERM and SIGKILL for the stand-ins' pods: a pod deleted while its
# stand-in is still starting (python as PID 1, tini not yet exec'd) would otherwise wait out the default 30.
GRACE_SECONDS = 3


def write_entrypoints(directory: Path, scripts: dict[str, str]) -> Path:
    """The stand-in entry points (name: text) in ``directory``, executable."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in scripts.items():
        (directory / name).write_text(text)
        (directory / name).chmod(0o755)
    return directory


@pytest.fixture
def entrypoint_dir(tmp_path: Path) -> Path:
    """A stand-in JobManager entry point that just waits (the real one needs the descriptor)."""
    return write_entrypoints(tmp_path / "bin", {"jobmanager": SLEEPING})


def stand_in_template(path: Path, entrypoint_dir: Path) -> Path:
    """A pod template (YAML at ``path``) that mounts the stand-in entry points in the main container, with a short grace."""
    host_path_template(path, [entrypoint_dir])
    template = yaml.safe_load(path.read_text())
    template["spec"]["terminationGracePeriodSeconds"] = GRACE_SECONDS
    path.write_text(yaml.safe_dump(template, sort_keys=False))
    return path


@pytest.fixture
def pod_template(tmp_path: Path, entrypoint_dir: Path) -> Path:
    return stand_in_template(tmp_path / "pod-template.yaml", entrypoint_dir)


def template_of(path: Path) -> dict[str, Any]:
    """The pod template as the descriptor and the driver load it."""
    return load_pod_template(str(path), TEMPLATE_OPTION)


def params(namespace: str, entrypoint_dir: Path, image: str, pod_template: Path, cluster_id: str = "wordcount", **more: str):
    config = Configuration(
        {
            "jobmanager.memory.process.size": "1g",
            "kubernetes.cluster-id": cluster_id,
            "kubernetes.namespace": namespace,
            "kubernetes.jobmanager.cpu.amount": "0.1",
            "jobcluster.kubernetes.entrypoint.dir": str(entrypoint_dir),
            TEMPLATE_OPTION: str(pod_template),
            **image_options(image),
            **more,
        }
    )
    return job_manager_parameters(config, JOB_ID)


def objects_of(k8s_api, namespace: str) -> list[str]:
    """Every object of a jobcluster cluster in ``namespace`` (by its labels), as kind/name."""
    return labelled_objects(k8s_api, namespace, "type=jobcluster-native-kubernetes")


def running_pods(k8s_api, namespace: str) -> list[str]:
    core = kubernetes.client.CoreV1Api(k8s_api)
    pods = core.list_namespaced_pod(namespace, label_selector="type=jobcluster-native-kubernetes", _request_timeout=TIMEOUT).items
    return [p.metadata.name for p in pods if p.status.phase == "Running"]


def test_create_then_delete_the_whole_cluster(k8s_api, k8s_namespace, k8s_image, entrypoint_dir, pod_template):
    p = params(k8s_namespace, entrypoint_dir, k8s_image, pod_template)
    created = create_job_manager_objects(k8s_api, p, FILES, "s3cr3t", template_of(pod_template))
    assert created["metadata"]["uid"]
    wanted = ["configmap/jobcluster-config-wordcount", "deployment/wordcount", "secret/wordcount-secret", "service/wordcount-rest"]
    assert [o for o in objects_of(k8s_api, k8s_namespace) if not o.startswith("pod/")] == wanted
    (jm_pod,) = wait_for(lambda: running_pods(k8s_api, k8s_namespace), what="the JobManager pod Running")

    # the same cluster id again: refused, and the running cluster is left alone
    with pytest.raises(DeploymentError, match=r"job cluster wordcount already exists in namespace .*kubernetes.cluster-id"):
        create_job_manager_objects(k8s_api, p, FILES, "other", template_of(pod_template))
    assert [o for o in objects_of(k8s_api, k8s_namespace) if not o.startswith("pod/")] == wanted
    assert running_pods(k8s_api, k8s_namespace) == [jm_pod]

    # a deletion names the Deployment it means by its uid: another of the same name is left alone
    assert delete_cluster(k8s_api, k8s_namespace, "wordcount", "00000000-0000-0000-0000-000000000000") is False
    assert [o for o in objects_of(k8s_api, k8s_namespace) if not o.startswith("pod/")] == wanted
    assert delete_cluster(k8s_api, k8s_namespace, "wordcount", created["metadata"]["uid"]) is True
    wait_for(lambda: not objects_of(k8s_api, k8s_namespace), timeout=120, what="the cluster's objects to go")
    assert delete_cluster(k8s_api, k8s_namespace, "wordcount", created["metadata"]["uid"]) is False


def test_the_users_secrets_reach_the_main_container_as_a_file_and_a_variable(
    k8s_cluster, k8s_api, k8s_namespace, k8s_image, entrypoint_dir, pod_template
):
    """kubernetes.secrets and kubernetes.env.secretKeyRef, resolved by the real kubelet (the pod would not start
    without the Secret); the value is in no object jobcluster wrote."""
    core = kubernetes.client.CoreV1Api(k8s_api)
    secret = {"metadata": {"name": "s3-credentials"}, "stringData": {"secret-key": "wJalrXUtnFEMI"}}
    core.create_namespaced_secret(k8s_namespace, secret, _request_timeout=TIMEOUT)
    options = {
        "kubernetes.secrets": "s3-credentials:/opt/secrets/s3",
        "kubernetes.env.secretKeyRef": "env:S3_KEY,secret:s3-credentials,key:secret-key",
    }
    created = create_job_manager_objects(
        k8s_api, params(k8s_namespace, entrypoint_dir, k8s_image, pod_template, **options), FILES, "s3cr3t", template_of(pod_template)
    )
    try:
        (pod,) = wait_for(lambda: running_pods(k8s_api, k8s_namespace), what="the JobManager pod Running")
        shown = k8s_cluster.kubectl("exec", "-n", k8s_namespace, pod, "--", "sh", "-c", 'echo "$S3_KEY"; cat /opt/secrets/s3/secret-key')
        assert shown.stdout.split() == ["wJalrXUtnFEMI", "wJalrXUtnFEMI"]
        written = k8s_cluster.kubectl("get", "deployment,configmap", "-n", k8s_namespace, "-o", "yaml").stdout
        assert "wJalrXUtnFEMI" not in written
    finally:
        delete_cluster(k8s_api, k8s_namespace, "wordcount", created["metadata"]["uid"])
        wait_for(lambda: not objects_of(k8s_api, k8s_namespace), timeout=120, what="the cluster's objects to go")
        core.delete_namespaced_secret("s3-credentials", k8s_namespace, _request_timeout=TIMEOUT)


def test_a_deployment_that_is_not_a_job_clusters_is_neither_found_nor_deleted(k8s_api, k8s_namespace, k8s_image):
    """`jobcluster cancel`, and the operator removing a FlinkJob's cluster, act on job clusters only: another workload's
    Deployment of the same name is left alone."""
    apps = kubernetes.client.AppsV1Api(k8s_api)
    labels = {"app": "frontend"}
    container = {"name": "web", "image": k8s_image, "imagePullPolicy": "Never"}
    body = {
        "metadata": {"name": "frontend", "labels": labels},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }
    apps.create_namespaced_deployment(k8s_namespace, body, _request_timeout=TIMEOUT)
    try:
        descriptor = KubernetesClusterDescriptor(Configuration({"kubernetes.namespace": k8s_namespace}), api=k8s_api)
        assert descriptor.retrieve("frontend") is None and descriptor.job_manager_deployment("frontend") is None
        with pytest.raises(ObjectNotFoundError, match=f"no job cluster frontend in namespace {k8s_namespace}"):
            descriptor.kill_cluster("frontend")
        assert apps.read_namespaced_deployment("frontend", k8s_namespace, _request_timeout=TIMEOUT).metadata.deletion_timestamp is None
    finally:
        apps.delete_namespaced_deployment("frontend", k8s_namespace, _request_timeout=TIMEOUT)


def test_a_cluster_id_is_used_again_only_once_the_deleted_clusters_pods_are_gone(
    k8s_api, k8s_namespace, k8s_image, entrypoint_dir, pod_template
):
    # A JobManager pod of the deleted Deployment that still ran would read the new Deployment by its name and start
    # TaskManagers for it. A finalizer keeps the old pod, deleted, for as long as the test wants.
    p, core = params(k8s_namespace, entrypoint_dir, k8s_image, pod_template), kubernetes.client.CoreV1Api(k8s_api)
    first = create_job_manager_objects(k8s_api, p, FILES, "s3cr3t", template_of(pod_template))
    (old_pod,) = wait_for(lambda: running_pods(k8s_api, k8s_namespace), what="the JobManager pod Running")
    hold = {"metadata": {"finalizers": ["jobcluster.io/test-hold"]}}
    core.patch_namespaced_pod(old_pod, k8s_namespace, hold, _request_timeout=TIMEOUT)
    release = threading.Timer(5, _release, (core, k8s_namespace, old_pod))
    try:
        assert delete_cluster(k8s_api, k8s_namespace, "wordcount", first["metadata"]["uid"]) is True

        with pytest.raises(ObjectExistsError, match=rf"pod/{old_pod} of a deleted job cluster wordcount still exist .* after 2 s"):
            create_job_manager_objects(k8s_api, p, FILES, "s3cr3t", template_of(pod_template), previous_cluster_timeout=2)
        assert objects_of(k8s_api, k8s_namespace) == [f"pod/{old_pod}"]  # nothing created, the rest collected

        release.start()  # the old pod goes while the next deployment waits for it
        said: list[str] = []
        created = create_job_manager_objects(k8s_api, p, FILES, "s3cr3t", template_of(pod_template), progress=said.append)
        assert said == [f"Waiting up to 60 s for pod/{old_pod} of the deleted job cluster wordcount to go"]
        assert old_pod not in [pod.metadata.name for pod in core.list_namespaced_pod(k8s_namespace, _request_timeout=TIMEOUT).items]
        (new_pod,) = wait_for(lambda: running_pods(k8s_api, k8s_namespace), what="the new JobManager pod Running")
        replica_set = core.read_namespaced_pod(new_pod, k8s_namespace, _request_timeout=TIMEOUT).metadata.owner_references[0].name
        apps = kubernetes.client.AppsV1Api(k8s_api)
        owner = apps.read_namespaced_replica_set(replica_set, k8s_namespace, _request_timeout=TIMEOUT).metadata.owner_references[0]
        assert owner.uid == created["metadata"]["uid"]
    finally:
        release.cancel()
        _release(core, k8s_namespace, old_pod)
    delete_cluster(k8s_api, k8s_namespace, "wordcount", created["metadata"]["uid"])
    wait_for(lambda: not objects_of(k8s_api, k8s_namespace), timeout=120, what="the cluster's objects to go")


def _release(core: kubernetes.client.CoreV1Api, namespace: str, pod: str) -> None:
    """Remove the pod's finalizers (if it is still there): a deleted pod then goes."""
    try:
        core.patch_namespaced_pod(pod, namespace, {"metadata": {"finalizers": None}}, _request_timeout=TIMEOUT)
    except kubernetes.client.ApiException as exc:
        if exc.status != 404:
            raise


def test_a_namespace_that_does_not_exist(k8s_api, k8s_image, entrypoint_dir, pod_template):
    with pytest.raises(DeploymentError, match=r"namespace no-such-ns does not exist; .*kubernetes.namespace"):
        create_job_manager_objects(k8s_api, params("no-such-ns", entrypoint_dir, k8s_image, pod_template), FILES, "s3cr3t")


def test_a_program_too_big_for_a_config_map_creates_nothing(k8s_api, k8s_namespace, k8s_image, entrypoint_dir, pod_template):
    files = {**FILES, "artifacts/big.py": b"#" * CONFIG_MAP_MAX_BYTES}
    with pytest.raises(DeploymentError, match="local://"):
        create_job_manager_objects(k8s_api, params(k8s_namespace, entrypoint_dir, k8s_image, pod_template), files, "s3cr3t")
    assert objects_of(k8s_api, k8s_namespace) == []


def test_a_failure_after_the_deployment_removes_everything_created(k8s_api, k8s_namespace, k8s_image, entrypoint_dir, pod_template):
    # a Secret of that name that is not ours makes the third step fail
    core = kubernetes.client.CoreV1Api(k8s_api)
    core.create_namespaced_secret(
        k8s_namespace, {"metadata": {"name": "wordcount-secret"}, "stringData": {"x": "y"}}, _request_timeout=TIMEOUT
    )
    with pytest.raises(DeploymentError, match=r"could not create Secret wordcount-secret: Secret wordcount-secret already exists"):
        create_job_manager_objects(
            k8s_api, params(k8s_namespace, entrypoint_dir, k8s_image, pod_template), FILES, "s3cr3t", template_of(pod_template)
        )
    wait_for(lambda: not objects_of(k8s_api, k8s_namespace), timeout=120, what="the Deployment and its ConfigMap to go")
    assert core.read_namespaced_secret("wordcount-secret", k8s_namespace, _request_timeout=TIMEOUT).data == {"x": "eQ=="}  # not ours: kept
