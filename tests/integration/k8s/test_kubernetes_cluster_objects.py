"""Creating and deleting a job cluster's objects against the real API server: order, conflicts, cleanup."""

from __future__ import annotations

import sys
from pathlib import Path

import kubernetes
import pytest

from jobcluster.backends.kubernetes.cluster_objects import create_job_manager_objects, delete_cluster
from jobcluster.backends.kubernetes.parameters import job_manager_parameters
from jobcluster.backends.kubernetes.staging import CONFIG_MAP_MAX_BYTES
from jobcluster.config.configuration import Configuration
from jobcluster.errors import DeploymentError
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

TIMEOUT = (5, 30)
JOB_ID = "0123456789abcdef0123456789abcdef"
FILES = {"jobcluster.yaml": b"parallelism.default: 1\n", "jobgraph.json": b"{}", "artifacts/wordcount.py": b"print(1)\n"}


@pytest.fixture
def entrypoint_dir(tmp_path: Path) -> Path:
    """A stand-in JobManager entry point that just waits (the real one needs the descriptor)."""
    script = tmp_path / "jobmanager"
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(3600)\n")
    script.chmod(0o755)
    return tmp_path


def params(namespace: str, entrypoint_dir: Path, cluster_id: str = "wordcount"):
    config = Configuration(
        {
            "jobmanager.memory.process.size": "1g",
            "kubernetes.cluster-id": cluster_id,
            "kubernetes.namespace": namespace,
            "kubernetes.jobmanager.cpu.amount": "0.1",
            "jobcluster.kubernetes.entrypoint.dir": str(entrypoint_dir),
        }
    )
    return job_manager_parameters(config, JOB_ID)


def objects_of(k8s_api, namespace: str) -> list[str]:
    """Every object of a jobcluster cluster in ``namespace`` (by its labels), as kind/name."""
    core, apps = kubernetes.client.CoreV1Api(k8s_api), kubernetes.client.AppsV1Api(k8s_api)
    selector = "type=jobcluster-native-kubernetes"
    found = [
        f"deployment/{d.metadata.name}"
        for d in apps.list_namespaced_deployment(namespace, label_selector=selector, _request_timeout=TIMEOUT).items
    ]
    for kind, lister in (
        ("configmap", core.list_namespaced_config_map),
        ("secret", core.list_namespaced_secret),
        ("service", core.list_namespaced_service),
        ("pod", core.list_namespaced_pod),
    ):
        found += [f"{kind}/{o.metadata.name}" for o in lister(namespace, label_selector=selector, _request_timeout=TIMEOUT).items]
    return sorted(found)


def test_create_then_delete_the_whole_cluster(k8s_api, k8s_namespace, entrypoint_dir):
    p = params(k8s_namespace, entrypoint_dir)
    created = create_job_manager_objects(k8s_api, p, FILES, "s3cr3t")
    assert created["metadata"]["uid"]
    wanted = ["configmap/jobcluster-config-wordcount", "deployment/wordcount", "secret/wordcount-secret", "service/wordcount-rest"]
    assert [o for o in objects_of(k8s_api, k8s_namespace) if not o.startswith("pod/")] == wanted

    # the same cluster id again: refused, and the running cluster is left alone
    with pytest.raises(DeploymentError, match=r"job cluster wordcount already exists in namespace .*kubernetes.cluster-id"):
        create_job_manager_objects(k8s_api, p, FILES, "other")
    assert [o for o in objects_of(k8s_api, k8s_namespace) if not o.startswith("pod/")] == wanted

    assert delete_cluster(k8s_api, k8s_namespace, "wordcount") is True
    wait_for(lambda: not objects_of(k8s_api, k8s_namespace), timeout=120, what="the cluster's objects to go")
    assert delete_cluster(k8s_api, k8s_namespace, "wordcount") is False


def test_a_namespace_that_does_not_exist(k8s_api, entrypoint_dir):
    with pytest.raises(DeploymentError, match=r"namespace no-such-ns does not exist; .*kubernetes.namespace"):
        create_job_manager_objects(k8s_api, params("no-such-ns", entrypoint_dir), FILES, "s3cr3t")


def test_a_program_too_big_for_a_config_map_creates_nothing(k8s_api, k8s_namespace, entrypoint_dir):
    files = {**FILES, "artifacts/big.py": b"#" * CONFIG_MAP_MAX_BYTES}
    with pytest.raises(DeploymentError, match="local://"):
        create_job_manager_objects(k8s_api, params(k8s_namespace, entrypoint_dir), files, "s3cr3t")
    assert objects_of(k8s_api, k8s_namespace) == []


def test_a_failure_after_the_deployment_removes_everything_created(k8s_api, k8s_namespace, entrypoint_dir):
    # a Secret of that name that is not ours makes the third step fail
    core = kubernetes.client.CoreV1Api(k8s_api)
    core.create_namespaced_secret(
        k8s_namespace, {"metadata": {"name": "wordcount-secret"}, "stringData": {"x": "y"}}, _request_timeout=TIMEOUT
    )
    with pytest.raises(DeploymentError, match=r"could not create Secret wordcount-secret: 409"):
        create_job_manager_objects(k8s_api, params(k8s_namespace, entrypoint_dir), FILES, "s3cr3t")
    wait_for(lambda: not objects_of(k8s_api, k8s_namespace), timeout=120, what="the Deployment and its ConfigMap to go")
    assert core.read_namespaced_secret("wordcount-secret", k8s_namespace, _request_timeout=TIMEOUT).data == {"x": "eQ=="}  # not ours: kept
