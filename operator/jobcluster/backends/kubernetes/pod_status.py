"""Reading a TaskManager pod's state, as the driver's watch sees it (pods as JSON dicts).

Flink's rules (``KubernetesPod``): a pod is *scheduled* when its
``PodScheduled`` condition is ``True``; it is *terminated* when its phase is
``Failed`` or any container has a ``terminated`` state (with
``restartPolicy: Never`` a terminated container never comes back).  The
diagnostics of a terminated pod follow Flink's text, so an operator reading
both sees the same thing. Why it ended (:func:`pod_termination`) is the
container's ``state.terminated`` reason and exit code, as Kubernetes names
them (``OOMKilled``, ``Error``, ``Completed``, ...), with their meaning; an
``OOMKilled`` container is a memory kill at its memory limit from the pod's
spec.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jobcluster.backends.kubernetes.taskmanager import attempt_of_pod
from jobcluster.runtime.resourcemanager.worker_termination import MemoryKill, WorkerTermination, exit_code_meaning


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


OOM_KILLED = "OOMKilled"

#: What Kubernetes' reasons for a terminated container mean (the kubelet's and the container runtime's words);
#: ``Error`` and ``Completed`` are said by the exit code.
_CONTAINER_REASONS = {
    OOM_KILLED: "killed by the kernel for exceeding the container's memory limit",
    "ContainerCannotRun": "its container could not be run",
    "StartError": "its container could not be started",
    "DeadlineExceeded": "its pod ran past its activeDeadlineSeconds",
}
#: What a failed pod's reason means when no container terminated (the kubelet's words).
_POD_REASONS = {
    "Evicted": "evicted by its node (the node ran short of a resource)",
    "DeadlineExceeded": "it ran past its activeDeadlineSeconds",
    "Shutdown": "its node shut down",
    "Terminated": "its node shut down",
    "NodeLost": "its node was lost",
}


def pod_termination(pod: Mapping[str, Any], diagnostics: str) -> WorkerTermination:
    """Why the TaskManager pod ended, with ``diagnostics`` (:func:`termination_diagnostics`'s text).

    The first terminated container's reason and exit code (``OOMKilled, exit code 137``) and their meaning;
    else the failed pod's reason (``pod Evicted``); else the pod was deleted while its container ran. An
    ``OOMKilled`` container is a memory kill: Kubernetes' words with the container's memory limit from the spec.
    """
    status = pod.get("status") or {}
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if not terminated:
            continue
        reason, code = terminated.get("reason"), terminated.get("exitCode")
        exit_words = f"exit code {code}" if code is not None else "no exit code"
        meaning = _CONTAINER_REASONS.get(reason) or (exit_code_meaning(int(code)) if code is not None else "its container ended")
        memory_kill = _oom_kill(pod, str(container.get("name"))) if reason == OOM_KILLED else None
        return WorkerTermination(f"{reason}, {exit_words}" if reason else exit_words, meaning, diagnostics, memory_kill)
    if status.get("phase") == "Failed":
        reason = status.get("reason") or "Failed"
        message = status.get("message")
        meaning = _POD_REASONS.get(reason, "its pod failed") + (f": {message}" if message else "")
        return WorkerTermination(f"pod {reason}", meaning, diagnostics)
    return WorkerTermination("pod deleted", "deleted while its container ran (by a user, a controller, or its node's loss)", diagnostics)


def _oom_kill(pod: Mapping[str, Any], container_name: str) -> MemoryKill:
    """Kubernetes' words for an OOMKilled container, with its memory limit (``limits.memory``) from the pod's spec."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        if container.get("name") == container_name:
            limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
            if limit:
                return MemoryKill(f"{OOM_KILLED}: container {container_name} reached its memory limit of {limit}")
    return MemoryKill(f"{OOM_KILLED}: container {container_name} reached its memory limit")
