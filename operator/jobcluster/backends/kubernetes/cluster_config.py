"""The configuration a Kubernetes job cluster runs with: the client's, with the deployment's facts pinned.

Why pin: the pods read only the staged configuration, so what the client
decided must be in it — the target and cluster id, the fixed REST port the
Service targets, and the TaskManagers' CPU by Flink's fallback
(``taskmanager.cpu.cores`` ← ``kubernetes.taskmanager.cpu.amount`` ← slots),
which the backend-agnostic runtime reads only as ``taskmanager.cpu.cores``.
Dropped, as Flink drops them from the cluster-side config: the client's
kubeconfig file and context (the JobManager uses its pod's service account)
and ``rest.address`` (the entry point binds REST to the pod's IP).
"""

from __future__ import annotations

from jobcluster.backends.kubernetes.config_options import (
    KUBERNETES_CLUSTER_ID,
    KUBERNETES_CONFIG_FILE,
    KUBERNETES_CONTEXT,
    KUBERNETES_NAMESPACE,
)
from jobcluster.backends.kubernetes.parameters import KubernetesJobManagerParameters, KubernetesTaskManagerParameters
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.config.targets import DeploymentTarget
from jobcluster.memory.spec import cpu_text


def cluster_side_configuration(
    config: Configuration, job_manager: KubernetesJobManagerParameters, task_manager: KubernetesTaskManagerParameters
) -> Configuration:
    """A copy of ``config`` to stage for the cluster (``config`` is not changed)."""
    staged = config.copy()
    staged.set(options.EXECUTION_TARGET, DeploymentTarget.KUBERNETES_APPLICATION)
    staged.set(KUBERNETES_CLUSTER_ID, job_manager.cluster_id)
    staged.set(KUBERNETES_NAMESPACE, job_manager.namespace)
    staged.set(options.REST_PORT, job_manager.rest_port)
    staged.remove(options.REST_BIND_PORT)  # the pod binds the REST Service's target port, the one rest.port
    if not staged.contains(options.DRIVER_OUTPUT_CONSOLE):  # the JobManager container's log holds the program's output
        staged.set(options.DRIVER_OUTPUT_CONSOLE, True)
    if not staged.contains(options.TASK_MANAGER_CPU_CORES):
        staged.set(options.TASK_MANAGER_CPU_CORES, cpu_text(task_manager.cpu_cores))
    for client_only in (KUBERNETES_CONFIG_FILE, KUBERNETES_CONTEXT, options.REST_ADDRESS):
        staged.remove(client_only)
    return staged
