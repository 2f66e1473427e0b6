"""The Kubernetes client wrapper against the real API server: kubeconfig loading and clear errors."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import kubernetes
import pytest
import yaml

from jobcluster.backends.kubernetes.kube_client import api_call, load_api_client
from jobcluster.config.configuration import Configuration
from jobcluster.errors import AlreadyExistsError, DeploymentError, NotFoundError

pytestmark = pytest.mark.k8s

ROOT = Path(__file__).resolve().parents[3]
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "none", "command": ["true"]}]},
}


def test_the_configured_kubeconfig_reaches_the_cluster(k8s_cluster, k8s_namespace):
    api = load_api_client(Configuration({"kubernetes.config.file": str(k8s_cluster.kubeconfig)}), {})
    with api:
        core = kubernetes.client.CoreV1Api(api)
        namespace = api_call("get", "namespaces", None, core.read_namespace, k8s_namespace)
        assert namespace.metadata.name == k8s_namespace
        with pytest.raises(NotFoundError, match=f"deployments in namespace {k8s_namespace}: not found"):  # the caller decides
            api_call(
                "get", "deployments", k8s_namespace, kubernetes.client.AppsV1Api(api).read_namespaced_deployment, "nope", k8s_namespace
            )
        config_map = {"metadata": {"name": "twice"}}
        api_call("create", "configmaps", k8s_namespace, core.create_namespaced_config_map, k8s_namespace, config_map)
        with pytest.raises(AlreadyExistsError, match="already exists"):
            api_call("create", "configmaps", k8s_namespace, core.create_namespaced_config_map, k8s_namespace, config_map)


def test_a_missing_permission_names_the_verb_the_resource_and_the_namespace(k8s_cluster, k8s_namespace):
    k8s_cluster.kubectl("apply", "-n", k8s_namespace, "-f", str(ROOT / "manifests" / "rbac.yaml"))
    api = load_api_client(Configuration({"kubernetes.config.file": str(k8s_cluster.kubeconfig)}), {})
    api.set_default_header("Impersonate-User", f"system:serviceaccount:{k8s_namespace}:jobcluster")
    with api:
        apps = kubernetes.client.AppsV1Api(api)
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": POD["spec"]}},
        }
        with pytest.raises(
            DeploymentError, match=rf"not allowed to create deployments in namespace {k8s_namespace}: .*manifests/rbac.yaml"
        ):
            api_call("create", "deployments", k8s_namespace, apps.create_namespaced_deployment, k8s_namespace, deployment)
        core = kubernetes.client.CoreV1Api(api)
        api_call("create", "pods", k8s_namespace, core.create_namespaced_pod, k8s_namespace, POD, dry_run="All")  # granted


def test_an_unreachable_api_server_is_reported_within_30_seconds(k8s_cluster, tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    kubeconfig = yaml.safe_load(k8s_cluster.kubeconfig.read_text())
    for cluster in kubeconfig["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    api = load_api_client(Configuration({"kubernetes.config.file": str(path)}), {})
    started = time.monotonic()
    with api, pytest.raises(DeploymentError, match=rf"the Kubernetes API server at https://127.0.0.1:{port} is not reachable \(list pods"):
        api_call("list", "pods", "default", kubernetes.client.CoreV1Api(api).list_namespaced_pod, "default")
    assert time.monotonic() - started < 30
