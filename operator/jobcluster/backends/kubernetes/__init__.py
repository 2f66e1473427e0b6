"""The kubernetes-application target: a job cluster as a JobManager Deployment and TaskManager pods.

Flink's native Kubernetes deployment: the client's KubernetesClusterDescriptor
(descriptor.py) creates the Deployment and what it owns; the JobManager pod's
KubernetesResourceManagerDriver (driver.py), which the pod's entry point
(entrypoint.py) runs with, starts the TaskManager pods.  The
manifests come from pure ``build_*`` functions over parameters objects
(parameters.py); the API calls are kept apart from them (cluster_objects.py,
kube_client.py, pod_watch.py).
"""

from __future__ import annotations

from jobcluster.backends.kubernetes.descriptor import KubernetesClusterDescriptor
from jobcluster.config.configuration import Configuration


def create_cluster_descriptor(config: Configuration) -> KubernetesClusterDescriptor:
    """The client's descriptor; it contacts the API server only when used."""
    return KubernetesClusterDescriptor(config)
