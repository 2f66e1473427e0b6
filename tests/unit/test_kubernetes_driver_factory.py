"""create_driver: what the JobManager pod must give the Kubernetes driver, checked before any API call."""

from __future__ import annotations

import pytest

from jobcluster.backends.kubernetes.driver import KubernetesResourceManagerDriver, create_driver
from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError
from tests.unit.test_kubernetes_kube_client import kubeconfig


@pytest.fixture(autouse=True)
def no_home_kubeconfig(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("JOBCLUSTER_POD_IP", raising=False)


def staged(tmp_path, **extra: str) -> Configuration:
    return Configuration(
        {"kubernetes.cluster-id": "wordcount", "kubernetes.config.file": str(kubeconfig(tmp_path)), "taskmanager.numberOfTaskSlots": "2"}
        | extra
    )


def test_a_driver_for_the_pinned_cluster_id_with_the_pod_ip(tmp_path, monkeypatch):
    monkeypatch.setenv("JOBCLUSTER_POD_IP", "10.1.2.3")
    driver = create_driver(staged(tmp_path))
    assert isinstance(driver, KubernetesResourceManagerDriver)
    assert driver.attempt == 0  # known only after initialize lists the pods


def test_no_cluster_id_is_an_error_not_a_default(tmp_path, monkeypatch):
    monkeypatch.setenv("JOBCLUSTER_POD_IP", "10.1.2.3")
    config = staged(tmp_path)
    config.remove("kubernetes.cluster-id")
    with pytest.raises(IllegalConfigurationError, match=r"kubernetes\.cluster-id must be set"):
        create_driver(config)


def test_outside_a_pod_there_is_no_jobmanager_address(tmp_path):
    with pytest.raises(IllegalConfigurationError, match=r"\$JOBCLUSTER_POD_IP is not set"):
        create_driver(staged(tmp_path))


def test_a_bad_taskmanager_option_names_its_key(tmp_path, monkeypatch):
    monkeypatch.setenv("JOBCLUSTER_POD_IP", "10.1.2.3")
    with pytest.raises(IllegalConfigurationError, match=r"kubernetes\.taskmanager\.memory\.limit-factor"):
        create_driver(staged(tmp_path, **{"kubernetes.taskmanager.memory.limit-factor": "0.5"}))
