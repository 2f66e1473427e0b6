"""Labels that find a job cluster's objects, and the owner references that tie them to the Deployment.

Why Flink's scheme: ``app=<cluster-id>`` plus ``component`` lets
``kubectl get pods -l app=<cluster-id>`` show a whole cluster and lets the
driver watch exactly its TaskManager pods; the ``type`` label marks objects
jobcluster made.  The JobID label lets ``cancel JOB_ID`` find the Deployment.
User labels never override these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LABEL_TYPE = "type"
LABEL_APP = "app"
LABEL_COMPONENT = "component"
LABEL_JOB_ID = "jobcluster.io/job-id"
#: On the JobManager Deployment: the last JobManager attempt, the number in its TaskManager pods' names.
ANNOTATION_ATTEMPT = "jobcluster.io/jobmanager-attempt"
#: The JobManager's recent start times on its Deployment (jobmanager_attempts.py).
ANNOTATION_STARTS = "jobcluster.io/jobmanager-starts"

TYPE_VALUE = "jobcluster-native-kubernetes"
COMPONENT_JOB_MANAGER = "jobmanager"
COMPONENT_TASK_MANAGER = "taskmanager"


def common_labels(cluster_id: str) -> dict[str, str]:
    """``{type, app}``: on every object of the cluster."""
    return {LABEL_TYPE: TYPE_VALUE, LABEL_APP: cluster_id}


def job_manager_selector(cluster_id: str) -> dict[str, str]:
    """The labels that select the JobManager pod (the Deployment's and the REST Service's selector)."""
    return {**common_labels(cluster_id), LABEL_COMPONENT: COMPONENT_JOB_MANAGER}


def task_manager_selector(cluster_id: str) -> dict[str, str]:
    """The labels that select the cluster's TaskManager pods (the driver's watch)."""
    return {**common_labels(cluster_id), LABEL_COMPONENT: COMPONENT_TASK_MANAGER}


def selector_text(labels: Mapping[str, str]) -> str:
    """A label selector string: ``k1=v1,k2=v2``."""
    return ",".join(f"{key}={value}" for key, value in labels.items())


def with_user_labels(user: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """``user`` labels with ``own`` on top: a user label never hides a selector label."""
    return {**user, **own}


def owner_reference_to(owner: Mapping[str, Any]) -> dict[str, Any]:
    """An OwnerReference to the created object ``owner`` (a manifest read back, so with ``metadata.uid``).

    ``controller`` and ``blockOwnerDeletion`` are true, as Flink sets them, so
    that deleting the owner (the JobManager Deployment) with foreground or
    background propagation removes the owned object.

    Raises:
        KeyError: ``owner`` has no ``apiVersion``, ``kind``, ``metadata.name`` or ``metadata.uid``.
    """
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
