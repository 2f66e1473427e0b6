"""Reading the JobManager pod while the client waits for it (pods as JSON dicts): pure rules.

Why these rules: the Deployment restarts a JobManager container that exits
(``restartPolicy: Always``), so a JobManager that cannot start never reaches a
terminal phase; it crash-loops.  The client therefore counts a container that
has terminated once (``state`` or ``lastState``), and the waiting reasons that
need a user's change (an image that cannot be pulled), as a failed start, and reports the scheduler's reason while the pod
waits for a node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jobcluster.backends.kubernetes import object_names
from jobcluster.backends.kubernetes.pod_status import unscheduled_reason

__all__ = ["creation_failure", "is_running", "newest_pod", "rest_port", "startup_failure", "unscheduled_reason", "waiting_reason"]

#: Waiting reasons that do not go away without a change by the user.  Not among them: ``ErrImagePull``
#: (the kubelet retries, and a registry hiccup passes: ``ImagePullBackOff`` follows a repeated failure) and
#: ``CreateContainerConfigError`` (the kubelet retries until the ConfigMap and Secret exist, which the client
#: creates right after the Deployment).
FATAL_WAITING_REASONS = frozenset({"ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"})


def newest_pod(pods: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The most recently created pod that is not being deleted, or None."""
    live = [pod for pod in pods if not (pod.get("metadata") or {}).get("deletionTimestamp")]
    return max(live, key=lambda pod: (pod.get("metadata") or {}).get("creationTimestamp") or "", default=None)


def creation_failure(deployment: Mapping[str, Any]) -> str | None:
    """Why the Deployment's pod cannot even be created, or None: its ``ReplicaFailure`` condition, which the
    ReplicaSet controller sets when the API server refuses the pod (a ServiceAccount that does not exist, an
    exceeded ResourceQuota, a PodSecurity or other admission rule) and keeps while it retries."""
    for condition in (deployment.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "ReplicaFailure" and condition.get("status") == "True":
            return f"{condition.get('reason')}: {condition.get('message')}"
    return None


def startup_failure(pod: Mapping[str, Any]) -> str | None:
    """Why the JobManager pod cannot start, or None while it may still: a terminated container or a fatal waiting reason."""
    status = pod.get("status") or {}
    if status.get("phase") == "Failed":
        return f"the pod failed ({status.get('reason')}: {status.get('message')})"
    for container in status.get("containerStatuses") or []:
        for which in ("state", "lastState"):
            terminated = (container.get(which) or {}).get("terminated")
            if terminated:
                detail = f": {terminated['message'].strip()}" if terminated.get("message") else ""
                return f"its container exited with code {terminated.get('exitCode')} ({terminated.get('reason')}){detail}"
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in FATAL_WAITING_REASONS:
            return f"its container cannot start ({waiting['reason']}: {waiting.get('message')})"
    return None


def waiting_reason(pod: Mapping[str, Any]) -> str | None:
    """``reason: message`` of the first container that waits, or None."""
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            return f"{waiting['reason']}: {waiting.get('message')}" if waiting.get("message") else str(waiting["reason"])
    return None


def is_running(pod: Mapping[str, Any]) -> bool:
    """Phase Running with an IP."""
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and bool(status.get("podIP"))


def rest_port(deployment: Mapping[str, Any], default: int) -> int:
    """The container port named ``rest`` of the Deployment's first container, else ``default``."""
    containers = ((((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    for container in containers[:1]:
        for port in container.get("ports") or []:
            if port.get("name") == object_names.REST_PORT_NAME:
                return int(port["containerPort"])
    return default
