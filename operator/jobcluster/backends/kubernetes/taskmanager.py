"""TaskManager pods ``<cluster-id>-taskmanager-<attempt>-<n>``, sized by their TaskExecutorProcessSpec.

Why these rules (Flink's ``KubernetesResourceManagerDriver`` and
``InitTaskManagerDecorator``): the pod name is the worker's ResourceID and
carries the JobManager attempt, so a new attempt can tell its pods from the
previous one's; ``restartPolicy: Never`` because the ResourceManager, not the
kubelet, replaces a lost worker; the owner reference to the JobManager
Deployment lets the garbage collector remove the pods with the cluster.  The
pods reach the JobManager by its pod IP (no cluster DNS needed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jobcluster.backends.kubernetes import object_names
from jobcluster.backends.kubernetes.containers import main_container, pod_env, pod_metadata, pod_spec, volumes
from jobcluster.backends.kubernetes.labels import owner_reference_to, task_manager_selector, with_user_labels
from jobcluster.backends.kubernetes.parameters import KubernetesTaskManagerParameters
from jobcluster.backends.kubernetes.pod_template import merge_pod_template
from jobcluster.backends.kubernetes.resource_requirements import MiB, resource_requirements
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.runtime.entrypoint import layout

_POD_NAME = re.compile(r"\S+-taskmanager-(\d+)-(\d+)")


def task_manager_pod_name(cluster_id: str, attempt: int, pod_number: int) -> str:
    """``<cluster-id>-taskmanager-<attempt>-<n>`` (Flink's format)."""
    return f"{cluster_id}-taskmanager-{attempt}-{pod_number}"


def attempt_of_pod(pod_name: str) -> int | None:
    """The JobManager attempt in a TaskManager pod's name, or None if it is not one."""
    match = _POD_NAME.fullmatch(pod_name)
    return int(match.group(1)) if match else None


def task_manager_staged_items() -> list[dict[str, str]]:
    """What a TaskManager pod mounts of the ConfigMap: only the effective configuration."""
    return [{"key": layout.CONFIG_FILE, "path": layout.CONFIG_FILE}]


def build_task_manager_pod(
    params: KubernetesTaskManagerParameters,
    spec: TaskExecutorProcessSpec,
    pod_name: str,
    *,
    launch_env: Mapping[str, str],
    job_manager_address: str,
    owner: dict[str, Any],
    template: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The Pod ``pod_name`` running one TaskExecutor of exactly ``spec``'s size, merged over ``template``.

    Requests: memory = ``spec.total_process`` in MiB (rounded down), CPU =
    ``spec.cpu_cores``; limits = requests x the TaskManager limit factors.  The
    container runs ``<entrypoint dir>/taskmanager -D k=v ...`` with the spec's
    dynamic configs; its environment is the TaskExecutor's launch (``launch_env``:
    ``TaskExecutorLaunchSettings.environment`` for this pod, without the secret
    and the location, which the pod's volumes and entry script provide) and the
    JobManager pod's IP (``job_manager_address``); ``owner`` is the JobManager
    Deployment as read from the API server (with ``metadata.uid``).
    """
    args = [arg for key, value in spec.dynamic_configs().items() for arg in ("-D", f"{key}={value}")]
    env = pod_env(
        params,
        {**launch_env, object_names.ENV_JOB_MANAGER_ADDRESS: job_manager_address},
    )
    container = main_container(
        params,
        object_names.TASK_MANAGER_ENTRYPOINT,
        args,
        env,
        resource_requirements(spec.total_process // MiB, spec.cpu_cores, params.memory_limit_factor, params.cpu_limit_factor),
        [],
    )
    pod_spec_ = pod_spec(params, container, volumes(params.cluster_id, task_manager_staged_items()), api_token=False)
    metadata = pod_metadata(with_user_labels(params.labels, task_manager_selector(params.cluster_id)), params.annotations)
    pod = merge_pod_template(template, {"metadata": metadata, "spec": pod_spec_})
    pod["spec"]["restartPolicy"] = "Never"  # Flink overrides a template's value too: the ResourceManager replaces workers
    pod["metadata"].update(name=pod_name, namespace=params.namespace, ownerReferences=[owner_reference_to(owner)])
    return {"apiVersion": "v1", "kind": "Pod", **pod}
