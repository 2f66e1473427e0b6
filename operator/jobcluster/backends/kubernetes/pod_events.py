"""What the driver makes of TaskManager pods: watch events as worker terminations, and a previous attempt's recovery.

Pure functions of pods as JSON dicts (as the watch's ``raw_object`` and a list
give them), so the rules are tested without a cluster.  The rules are Flink's
(``KubernetesResourceManagerDriver``): a ``DELETED`` event or a terminated pod
(``pod_status.is_terminated``) ends the worker; on a new JobManager attempt the
previous attempts' pods that are terminated or not scheduled are deleted, the
others are recovered, and the new attempt is one above the highest found, in a
pod's name or in the attempt the Deployment records (an attempt whose pods were
all deleted before the next one started still counts).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jobcluster.backends.kubernetes.labels import ANNOTATION_ATTEMPT
from jobcluster.backends.kubernetes.pod_status import is_scheduled, is_terminated, max_attempt, pod_termination, termination_diagnostics
from jobcluster.backends.kubernetes.taskmanager import attempt_of_pod
from jobcluster.runtime.resourcemanager.worker_termination import WorkerTermination
from jobcluster.runtime.taskexecutor.launch import ENV_RESOURCE_MANAGER_ADDRESS

#: Watch event types (``watch.Event.type``) the API server sends for objects.
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


def pod_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name", ""))


def worker_termination(event_type: str, pod: Mapping[str, Any]) -> WorkerTermination | None:
    """Why the worker this event ends ended (``pod_status.pod_termination``), or None if the pod is still alive.

    The diagnostics of a terminated pod are Flink's text (container exit codes
    and reasons, the pod's failure); a pod deleted before its container ended
    says so, with whatever container states it had.
    """
    if is_terminated(pod):
        suffix = ", pod deleted" if event_type == DELETED else ""
        return pod_termination(pod, termination_diagnostics(pod) + suffix)
    if event_type == DELETED:
        statuses = termination_diagnostics(pod)[len("Pod terminated, ") :]
        return pod_termination(pod, f"Pod deleted before its container terminated, {statuses}")
    return None


def resync_events(known: Iterable[str], pods: Iterable[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Events equivalent to a fresh list ``pods``, for a watch that expired (410) and missed some.

    Every listed pod comes as ``MODIFIED`` (its termination is then seen as on
    a watch); every ``known`` worker absent from the list comes as ``DELETED``
    (a stub pod with only its name).
    """
    listed = {pod_name(pod): dict(pod) for pod in pods}
    events = [(MODIFIED, pod) for pod in listed.values()]
    events += [(DELETED, {"metadata": {"name": name}}) for name in sorted(set(known) - set(listed))]
    return events


@dataclass(frozen=True)
class Recovery:
    """What a new JobManager attempt does with the TaskManager pods it finds.

    ``recovered``: pods kept as workers of this attempt (scheduled and alive);
    ``to_delete``: terminated or unscheduled pods, and those told to register at another JobManager's address (a
    JobManager pod that was replaced: theirs would retry it until their registration timeout, counted as workers on
    their way all along, while the job's slot request times out); ``attempt``: the new attempt,
    one above the highest in any pod name or recorded (1 on a first start).
    """

    recovered: list[str]
    to_delete: list[str]
    attempt: int


def plan_recovery(
    pods: Iterable[Mapping[str, Any]],
    recorded_attempt: int = 0,
    owner_uid: str | None = None,
    resource_manager_address: str | None = None,
) -> Recovery:
    """Sort the listed TaskManager pods of earlier attempts (see :class:`Recovery`).

    ``recorded_attempt``: the last attempt the Deployment recorded (0 if none);
    ``owner_uid``: the uid of this cluster's JobManager Deployment, which owns its pods;
    ``resource_manager_address``: where this attempt's ResourceManager is reached (None: any pod may register).

    Pods whose name is not ``<cluster-id>-taskmanager-<attempt>-<n>`` are
    left alone (not ours to recover, not ours to delete). So are pods owned by
    another Deployment of the same name: a removed cluster's, which the
    garbage collector is still deleting when the operator deploys a new one
    under the same cluster id (an upgrade); recovered, they would be waited for
    in vain. Their attempts still count, so that no new pod takes their names.
    """
    recovered, to_delete, others = [], [], []
    for pod in pods:
        name = pod_name(pod)
        if attempt_of_pod(name) is None:
            continue
        if owner_uid is not None and not _owned_by(pod, owner_uid):
            others.append(name)
        elif _ended(pod) or (resource_manager_address is not None and _resource_manager_of(pod) != resource_manager_address):
            to_delete.append(name)
        else:
            recovered.append(name)
    attempt = max(max_attempt(recovered + to_delete + others), recorded_attempt) + 1
    return Recovery(sorted(recovered), sorted(to_delete), attempt)


def _ended(pod: Mapping[str, Any]) -> bool:
    """Terminated, never scheduled, or being deleted: no worker to wait for."""
    return is_terminated(pod) or not is_scheduled(pod) or bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def _resource_manager_of(pod: Mapping[str, Any]) -> str | None:
    """The ResourceManager address the pod's TaskExecutor was told to register at (its main container's environment)."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        for variable in container.get("env") or []:
            if variable.get("name") == ENV_RESOURCE_MANAGER_ADDRESS:
                return str(variable.get("value"))
    return None


def _owned_by(pod: Mapping[str, Any], uid: str) -> bool:
    return any(owner.get("uid") == uid for owner in (pod.get("metadata") or {}).get("ownerReferences") or [])


def recorded_attempt(deployment: Mapping[str, Any]) -> int:
    """The last JobManager attempt recorded on the Deployment (annotation ``jobcluster.io/jobmanager-attempt``), 0 if none."""
    value = ((deployment.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_ATTEMPT, "0")
    return int(value) if str(value).isdigit() else 0


def attempt_patch(attempt: int) -> dict[str, Any]:
    """The merge patch that records ``attempt`` on the Deployment (metadata only: its pods are not rolled)."""
    return {"metadata": {"annotations": {ANNOTATION_ATTEMPT: str(attempt)}}}
