"""Where the Kubernetes client's configuration comes from (kubectl's order), without a cluster."""

from __future__ import annotations

import json

import kubernetes
import pytest

from jobcluster.backends.kubernetes import kube_client
from jobcluster.backends.kubernetes.kube_client import CONNECT_RETRIES, load_api_client
from jobcluster.config.configuration import Configuration
from jobcluster.errors import AlreadyExistsError, DeploymentError, IllegalConfigurationError, NotFoundError

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {{server: "{server}", insecure-skip-tls-verify: true}}
users:
- name: u
  user: {{token: t0k3n}}
contexts:
- name: first
  context: {{cluster: a, user: u}}
- name: second
  context: {{cluster: a, user: u, namespace: x}}
current-context: first
"""


@pytest.fixture(autouse=True)
def no_home_kubeconfig(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)


def kubeconfig(tmp_path, server: str = "https://127.0.0.1:6443"):
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server=server))
    return path


def test_the_configured_file_and_context_are_used(tmp_path):
    path = kubeconfig(tmp_path, "https://api.example.com:6443")
    client = load_api_client(Configuration({"kubernetes.config.file": str(path), "kubernetes.context": "second"}), {})
    assert client.configuration.host == "https://api.example.com:6443"
    assert client.configuration.retries == CONNECT_RETRIES


def test_kubeconfig_env_is_read_at_call_time(tmp_path):
    path = kubeconfig(tmp_path, "https://10.0.0.1:6443")
    assert load_api_client(Configuration(), {"KUBECONFIG": str(path)}).configuration.host == "https://10.0.0.1:6443"


def test_a_loopback_api_server_is_never_proxied(tmp_path):
    path = kubeconfig(tmp_path, "https://127.0.0.1:6443")
    assert load_api_client(Configuration({"kubernetes.config.file": str(path)}), {}).configuration.proxy is None


def test_unknown_context_names_the_key(tmp_path):
    path = kubeconfig(tmp_path)
    with pytest.raises(IllegalConfigurationError, match=r"context 'nope', kubernetes.context"):
        load_api_client(Configuration({"kubernetes.config.file": str(path), "kubernetes.context": "nope"}), {})


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(IllegalConfigurationError, match=r"cannot use the Kubernetes configuration .*missing.*kubernetes.config.file"):
        load_api_client(Configuration({"kubernetes.config.file": str(tmp_path / "missing")}), {})


def test_in_cluster_service_account(tmp_path, monkeypatch):
    account = tmp_path / "serviceaccount"  # where the kubelet mounts it: /var/run/secrets/kubernetes.io/serviceaccount
    account.mkdir(parents=True)
    (account / "token").write_text("pod-token")
    (account / "ca.crt").write_text("not checked until a call is made")
    monkeypatch.setattr(kube_client, "_SERVICE_ACCOUNT_DIR", str(account))
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "6443"}
    client = load_api_client(Configuration(), env)
    assert client.configuration.host == "https://127.0.0.1:6443"
    assert client.configuration.api_key["BearerToken"].lower() == "bearer pod-token"
    assert client.configuration.ssl_ca_cert == str(account / "ca.crt")


def test_neither_kubeconfig_nor_service_account():
    with pytest.raises(IllegalConfigurationError, match="cannot use the Kubernetes configuration"):
        load_api_client(Configuration(), {})


def _refused(status: int, reason: str, message: str):
    """A call the API server refuses with a Status (a write conflict cannot be provoked on a real one on demand)."""

    def call(*args, **kwargs):
        error = kubernetes.client.ApiException(status=status, reason=reason)
        error.body = json.dumps({"kind": "Status", "reason": reason, "message": message})
        raise error

    return call


def test_a_write_conflict_is_not_taken_for_an_object_that_exists():
    with pytest.raises(AlreadyExistsError):
        kube_client.api_call("create", "pods", "ns", _refused(409, "AlreadyExists", 'pods "p" already exists'))
    with pytest.raises(DeploymentError, match=r"could not patch deployments in namespace ns: 409 .*modified") as info:
        kube_client.api_call("patch", "deployments", "ns", _refused(409, "Conflict", "the object has been modified"))
    assert not isinstance(info.value, AlreadyExistsError) and isinstance(info.value, kube_client.ObjectChangedError)
    with pytest.raises(NotFoundError, match="pods in namespace ns: not found"):
        kube_client.api_call("get", "pods", "ns", _refused(404, "NotFound", 'pods "p" not found'))
