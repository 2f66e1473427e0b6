"""What a FlinkJob's pods may ask for: the operator's policy, set by its administrator.

Whoever may create a FlinkJob in a watched namespace has the operator create pods
for it. Kubernetes' own admission control (Pod Security) is the cluster's line;
the operator draws its own, so that a FlinkJob cannot have it create what the
Pod Security Standards' "baseline" profile forbids, whatever the namespace
enforces: a privileged container, added capabilities, the node's network, PID
or IPC namespace, its ports, or a hostPath volume. An administrator who trusts
the FlinkJobs' authors allows some of these in the operator's
``defaultConfiguration``: ``jobcluster.operator.pod-template.allowed``, a
comma-separated list of :data:`KINDS` (never in a FlinkJob's own
``flinkConfiguration``: a tenant cannot allow itself anything). A FlinkJob's
pod templates are its ``podTemplate`` fields: ``kubernetes.pod-template-file.*``
would name files of the operator's own file system.

The pods run as a ServiceAccount the operator's ``defaultConfiguration`` allows
(``jobcluster.operator.service-accounts.allowed``, by default only ``jobcluster``,
the account the operator or the chart makes in each namespace): a FlinkJob
cannot borrow another workload's account, and never ``default``, which every
pod of a namespace runs as unless it says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.controller.resource import TARGET_KUBERNETES, FlinkJobSpec

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
_TEMPLATE_FILE_KEYS = "kubernetes.pod-template-file"

ACCOUNTS_KEY = "jobcluster.operator.service-accounts.allowed"
DEFAULT_ACCOUNTS = "jobcluster"
ACCOUNT_REASON = "ServiceAccountNotAllowed"
#: The keys of a FlinkJob's flinkConfiguration that name a ServiceAccount of its pods (besides spec.serviceAccount).
ACCOUNT_KEYS = ("kubernetes.service-account", "kubernetes.jobmanager.service-account", "kubernetes.taskmanager.service-account")


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


def allowed_accounts(defaults: Mapping[str, str]) -> frozenset[str]:
    """The ServiceAccounts the operator's ``defaults`` let a FlinkJob's pods run as
    (``jobcluster.operator.service-accounts.allowed``, comma-separated; ``jobcluster`` when unset).

    Raises:
        InvalidSpecError: the list is empty or names ``default``.
    """
    text = str(defaults.get(ACCOUNTS_KEY) or DEFAULT_ACCOUNTS)
    accounts = frozenset(part.strip() for part in text.split(",") if part.strip())
    if not accounts or "default" in accounts:
        raise InvalidSpecError(
            f"{ACCOUNTS_KEY}: '{text}' must name at least one ServiceAccount, and never 'default' (every pod of a "
            "namespace runs as it unless it says otherwise: binding the JobManager's rights to it gives them to them all)"
        )
    return accounts


def check_service_accounts(spec: FlinkJobSpec, defaults: Mapping[str, str]) -> None:
    """Refuse a ``kubernetes-application`` FlinkJob whose pods would run as a ServiceAccount the operator's
    ``defaults`` do not allow: ``spec.serviceAccount``, or one of :data:`ACCOUNT_KEYS` in its ``flinkConfiguration``.

    Raises:
        InvalidSpecError: with reason ``ServiceAccountNotAllowed``, naming the field and the accounts allowed.
    """
    if spec.deployment_target != TARGET_KUBERNETES:
        return
    allowed = allowed_accounts(defaults)
    named = [("spec.serviceAccount", spec.service_account)]
    named += [(f"spec.flinkConfiguration.{key}", spec.flink_configuration[key]) for key in ACCOUNT_KEYS if key in spec.flink_configuration]
    for field, account in named:
        if account not in allowed:
            raise InvalidSpecError(
                f"{field}: the pods may not run as ServiceAccount '{account}': the operator's administrator allows "
                f"{', '.join(sorted(allowed))} ({ACCOUNTS_KEY} in its defaultConfiguration)",
                reason=ACCOUNT_REASON,
            )


def check_pod_templates(spec: FlinkJobSpec, defaults: Mapping[str, str]) -> None:
    """Refuse a FlinkJob whose ``jobManager.podTemplate`` or ``taskManager.podTemplate`` asks for what the operator's
    ``defaults`` do not allow, or whose ``flinkConfiguration`` names a pod template file.

    Raises:
        InvalidSpecError: with reason ``PodTemplateNotAllowed``, naming the field, the kind and the option.
    """
    for key in spec.flink_configuration:
        if key.startswith(_TEMPLATE_FILE_KEYS):
            raise InvalidSpecError(
                f"spec.flinkConfiguration.{key}: a FlinkJob's pod templates are spec.jobManager.podTemplate and "
                "spec.taskManager.podTemplate (a file would be read from the operator's own file system)",
                reason=REASON,
            )
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
