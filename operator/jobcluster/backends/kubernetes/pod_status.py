"""Reading a TaskManager pod's state, as the driver's watch sees it (pods as JSON dicts).

Flink's rules (``KubernetesPod``): a pod is *scheduled* when its
``PodScheduled`` condition is ``True``; it is *terminated* when its phase is
``Failed`` or any container has a ``terminated`` state (with
``restartPolicy: Never`` a terminated container never comes back).  The
diagnostics of a terminated pod follow Flink's text, so an operator reading
both sees the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jobcluster.backends.kubernetes.taskmanager import attempt_of_pod


def is_scheduled(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "PodScheduled" and c.get("status") == "True" for c in conditions)


def unscheduled_reason(pod: Mapping[str, Any]) -> str | None:
    """The scheduler's message while the pod waits for a node (``PodScheduled`` False), else None."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message") or condition.get("reason") or "not scheduled")
    return None


def is_terminated(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") == "Failed":
        return True
    return any((c.get("state") or {}).get("terminated") for c in status.get("containerStatuses") or [])


def termination_diagnostics(pod: Mapping[str, Any]) -> str:
    """``Pod terminated, container termination statuses: [name(exitCode=1, reason=Error, message=...)]``,
    then ``, pod status: Failed(reason=..., message=...)`` when the pod failed (Flink's format)."""
    status = pod.get("status") or {}
    containers = []
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated:
            containers.append(
                f"{container.get('name')}(exitCode={terminated.get('exitCode')}, reason={terminated.get('reason')}, "
                f"message={terminated.get('message')})"
            )
    text = f"Pod terminated, container termination statuses: [{','.join(containers)}]"
    if status.get("phase") == "Failed":
        text += f", pod status: Failed(reason={status.get('reason')}, message={status.get('message')})"
    return text


def exit_code(pod: Mapping[str, Any]) -> int | None:
    """The exit code of the first terminated container, or None."""
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated and terminated.get("exitCode") is not None:
            return int(terminated["exitCode"])
    return None


def max_attempt(pod_names: Iterable[str]) -> int:
    """The highest JobManager attempt among TaskManager pod names, 0 if none (the next attempt is this + 1)."""
    return max((attempt for name in pod_names if (attempt := attempt_of_pod(name)) is not None), default=0)
