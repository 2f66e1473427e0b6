"""The kubernetes-application target: a job cluster as a JobManager Deployment and TaskManager pods.

Flink's native Kubernetes deployment: the client's KubernetesClusterDescriptor
(descriptor.py) creates the Deployment and what it owns; in the JobManager pod,
the entry point (entrypoint.py) runs the KubernetesResourceManagerDriver
(driver.py), which starts the TaskManager pods.  The manifests come from pure
``build_*`` functions over parameters objects (parameters.py); the API calls
are kept apart from them (cluster_objects.py, kube_client.py, pod_watch.py);
the options are declared in config_options.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobcluster.backends.kubernetes.descriptor import KubernetesClusterDescriptor
    from jobcluster.config.configuration import Configuration


def create_cluster_descriptor(config: Configuration) -> KubernetesClusterDescriptor:
    """The client's descriptor; it contacts the API server only when used.

    Imported when called: this package is imported for its options (every configuration is checked
    against them), which must not load the Kubernetes client.
    """
    from jobcluster.backends.kubernetes.descriptor import KubernetesClusterDescriptor

    return KubernetesClusterDescriptor(config)
