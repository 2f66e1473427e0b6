"""What a FlinkJob's pod templates may ask for: the operator's policy, set by its administrator.

Whoever may create a FlinkJob in a watched namespace has the operator create pods
for it. Kubernetes' own admission control (Pod Security) is the cluster's line;
the operator draws its own, so that a FlinkJob cannot have it create what the
Pod Security Standards' "baseline" profile forbids, whatever the namespace
enforces: a privileged container, added capabilities, the node's network, PID
or IPC namespace, its ports, or a hostPath volume. An administrator who trusts
the FlinkJobs' authors allows some of these in the operator's
``defaultConfiguration``: ``jobcluster.operator.pod-template.allowed``, a
comma-separated list of :data:`KINDS` (never in a FlinkJob's own
``flinkConfiguration``: a tenant cannot allow itself anything).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.controller.resource import FlinkJobSpec

ALLOWED_KEY = "jobcluster.operator.pod-template.allowed"
#: What a pod template may be allowed to ask for, with the fields that ask for it.
KINDS = {
    "privileged": "a container's securityContext.privileged",
    "capabilities": "a container's securityContext.capabilities.add",
    "host-namespaces": "spec.hostNetwork, spec.hostPID or spec.hostIPC",
    "host-ports": "a container port's hostPort",
    "host-path": "a hostPath volume",
}
REASON = "PodTemplateNotAllowed"
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def allowed_kinds(defaults: Mapping[str, str]) -> frozenset[str]:
    """The kinds the operator's ``defaults`` allow (``jobcluster.operator.pod-template.allowed``).

    Raises:
        InvalidSpecError: a kind that is not one of :data:`KINDS`.
    """
    kinds = frozenset(part.strip() for part in str(defaults.get(ALLOWED_KEY) or "").split(",") if part.strip())
    unknown = sorted(kinds - KINDS.keys())
    if unknown:
        raise InvalidSpecError(f"{ALLOWED_KEY}: {', '.join(unknown)} is not one of {', '.join(KINDS)}")
    return kinds


def check_pod_templates(spec: FlinkJobSpec, defaults: Mapping[str, str]) -> None:
    """Refuse a FlinkJob whose ``jobManager.podTemplate`` or ``taskManager.podTemplate`` asks for what the operator's
    ``defaults`` do not allow.

    Raises:
        InvalidSpecError: with reason ``PodTemplateNotAllowed``, naming the field, the kind and the option.
    """
    allowed = allowed_kinds(defaults)
    for role, template in (("jobManager", spec.job_manager.pod_template), ("taskManager", spec.task_manager.pod_template)):
        for kind, field in asks(template or {}):
            if kind not in allowed:
                raise InvalidSpecError(
                    f"spec.{role}.podTemplate.{field} is not allowed: the operator creates no pod with {KINDS[kind]} "
                    f"(Pod Security baseline); remove it, or have the operator's administrator add {kind} to "
                    f"{ALLOWED_KEY} in its defaultConfiguration",
                    reason=REASON,
                )


def asks(template: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(kind, field path) of each thing ``template`` (a Pod) asks for that a kind of :data:`KINDS` names."""
    spec = template.get("spec") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            yield "host-namespaces", f"spec.{field}"
    for volume in spec.get("volumes") or []:
        if isinstance(volume, Mapping) and "hostPath" in volume:
            yield "host-path", f"spec.volumes[{volume.get('name')}].hostPath"
    for containers in _CONTAINER_LISTS:
        for container in spec.get(containers) or []:
            if not isinstance(container, Mapping):
                continue
            where = f"spec.{containers}[{container.get('name')}]"
            security = container.get("securityContext") or {}
            if security.get("privileged"):
                yield "privileged", f"{where}.securityContext.privileged"
            if (security.get("capabilities") or {}).get("add"):
                yield "capabilities", f"{where}.securityContext.capabilities.add"
            for port in container.get("ports") or []:
                if isinstance(port, Mapping) and port.get("hostPort"):
                    yield "host-ports", f"{where}.ports[{port.get('name') or port.get('containerPort')}].hostPort"
