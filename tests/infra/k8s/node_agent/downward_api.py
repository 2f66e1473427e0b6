"""Values of the downward API: a pod's own fields and its containers' resources.

Why: pods learn their name, namespace, IP, node and resource limits through
``fieldRef``/``resourceFieldRef`` in env vars and downwardAPI volumes, and the
job cluster's processes depend on them. Pure functions of the pod object (plus
its IP and the node's allocatable resources, which stand in for unset limits).
"""

from __future__ import annotations

import math
import re
from typing import Any

from kubernetes.utils.quantity import parse_quantity

from tests.infra.k8s.node_agent.addresses import HOST_IP
from tests.infra.k8s.node_agent.errors import PodConfigError


def quantity(value: Any) -> float:
    return float(parse_quantity(str(value)))


def field_value(pod: dict, path: str, pod_ip: str) -> str:
    meta = pod.get("metadata", {})
    spec = pod.get("spec", {})
    m = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if m:
        return (meta.get(m.group(1)) or {}).get(m.group(2), "")
    values = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "metadata.labels": "\n".join(f'{k}="{v}"' for k, v in sorted((meta.get("labels") or {}).items())),
        "metadata.annotations": "\n".join(f'{k}="{v}"' for k, v in sorted((meta.get("annotations") or {}).items())),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.hostIP": HOST_IP,
        "status.hostIPs": HOST_IP,
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
    }
    if path not in values:
        raise PodConfigError(f"unsupported fieldRef {path!r}")
    return values[path]


def resource_value(container: dict, ref: dict, node_allocatable: dict[str, str]) -> str:
    resource = ref["resource"]
    kind, _, name = resource.partition(".")
    resources = container.get("resources") or {}
    value = (resources.get(kind) or {}).get(name)
    if value is None and kind == "limits":
        value = node_allocatable.get(name, "0")
    if value is None:
        value = "0"
    divisor = quantity(ref.get("divisor") or "1")
    return str(math.ceil(quantity(value) / divisor))
