"""The kubernetes-application target: a job cluster as a JobManager Deployment and TaskManager pods.

Flink's native Kubernetes deployment: the client's KubernetesClusterDescriptor
(descriptor.py) creates the Deployment and what it owns; the JobManager pod's
KubernetesResourceManagerDriver (driver.py) starts the TaskManager pods.  The
manifests come from pure ``build_*`` functions over parameters objects
(parameters.py); the API calls are kept apart from them (cluster_objects.py,
kube_client.py, pod_watch.py).
"""

from __future__ import annotations

from jobcluster.backends.kubernetes.descriptor import KubernetesClusterDescriptor
from jobcluster.backends.kubernetes.driver import KubernetesResourceManagerDriver
from jobcluster.backends.kubernetes.driver import create_driver as _create_driver
from jobcluster.config.configuration import Configuration


def create_cluster_descriptor(config: Configuration) -> KubernetesClusterDescriptor:
    """The client's descriptor; it contacts the API server only when used."""
    return KubernetesClusterDescriptor(config)


def create_driver(config: Configuration, rest_url: str) -> KubernetesResourceManagerDriver:
    """The JobManager pod's driver; ``rest_url`` is not needed (the pods reach the JobManager by its pod IP)."""
    return _create_driver(config, rest_url)
