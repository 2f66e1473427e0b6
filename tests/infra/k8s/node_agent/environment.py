"""A container's environment, and Kubernetes ``$(VAR)`` expansion.

Why: this machine stands in for the image, so a container starts from the
agent's own environment, minus what belongs to the agent or to the test run
(``KUBECONFIG``, ``KUBERNETES_*``, ``PYTEST_*``). On top come what the kubelet
sets (``HOSTNAME``, ``KUBERNETES_SERVICE_*`` pointing at the real API server),
the agent's markers (``POD_VOLUME_ROOT``, the pod UID) and the pod's
``envFrom``/``env`` with ConfigMap/Secret refs, the downward API and
``$(VAR)`` expansion, mountPaths in the values rewritten to host paths.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path

from tests.infra.k8s.node_agent.downward_api import field_value, resource_value
from tests.infra.k8s.node_agent.errors import PodConfigError
from tests.infra.k8s.node_agent.image import image_python_dir
from tests.infra.k8s.node_agent.processes import POD_UID_ENV

VOLUME_ROOT_ENV = "POD_VOLUME_ROOT"
# Not passed from the agent's environment to pods.
ENV_DENY = ("KUBECONFIG",)
ENV_DENY_PREFIXES = ("KUBERNETES_", "PYTEST_")

# read_object(kind, namespace, name): a ConfigMap ("configmap") or Secret ("secret"), None if missing.
ReadObject = Callable[[str, str, str], "dict | None"]


def expand_vars(text: str, env: dict[str, str]) -> str:
    """Kubernetes $(VAR) expansion: defined vars are replaced, $$ escapes, the rest stays."""
    out = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i):
            end = text.find(")", i + 2)
            name = text[i + 2 : end] if end != -1 else None
            if name is not None and name in env:
                out.append(env[name])
                i = end + 1
            else:
                out.append("$(")
                i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def container_environment(
    c: dict,
    root: Path,
    *,
    pod: dict,
    pod_ip: str,
    api_host_port: tuple[str, int],
    read_object: ReadObject,
    node_allocatable: dict[str, str],
    rewrite: Callable[[str], str],
) -> dict[str, str]:
    """The environment container c of pod starts with; root is its $POD_VOLUME_ROOT."""
    meta = pod["metadata"]
    namespace = meta["namespace"]
    env = {k: v for k, v in os.environ.items() if k not in ENV_DENY and not k.startswith(ENV_DENY_PREFIXES)}
    env["PATH"] = f"{image_python_dir()}{os.pathsep}{env.get('PATH', '')}"  # the image's Python first (image.py)
    host, port = api_host_port
    env.update(
        {
            "HOSTNAME": pod["spec"].get("hostname") or meta["name"],
            "KUBERNETES_SERVICE_HOST": host,
            "KUBERNETES_SERVICE_PORT": str(port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
            "KUBERNETES_PORT": f"tcp://{host}:{port}",
            VOLUME_ROOT_ENV: str(root),
            POD_UID_ENV: meta["uid"],
        }
    )
    pod_env: dict[str, str] = {}
    for src in c.get("envFrom") or []:
        prefix = src.get("prefix", "")
        for kind, key in (("configmap", "configMapRef"), ("secret", "secretRef")):
            if key not in src:
                continue
            obj = read_object(kind, namespace, src[key]["name"])
            if obj is None:
                if src[key].get("optional"):
                    continue
                raise PodConfigError(f"{kind} {namespace}/{src[key]['name']} not found")
            for k, v in (obj.get("data") or {}).items():
                pod_env[prefix + k] = base64.b64decode(v).decode() if kind == "secret" else v
    for var in c.get("env") or []:
        name = var["name"]
        if "valueFrom" not in var:
            pod_env[name] = expand_vars(var.get("value", ""), {**env, **pod_env})
            continue
        vf = var["valueFrom"]
        if "fieldRef" in vf:
            pod_env[name] = field_value(pod, vf["fieldRef"]["fieldPath"], pod_ip)
        elif "resourceFieldRef" in vf:
            pod_env[name] = resource_value(c, vf["resourceFieldRef"], node_allocatable)
        else:
            kind, ref = ("configmap", vf["configMapKeyRef"]) if "configMapKeyRef" in vf else ("secret", vf["secretKeyRef"])
            obj = read_object(kind, namespace, ref["name"])
            data = (obj or {}).get("data") or {}
            if ref["key"] not in data:
                if ref.get("optional"):
                    continue
                raise PodConfigError(f"env {name}: {kind} {namespace}/{ref['name']} key {ref['key']!r} not found")
            value = data[ref["key"]]
            pod_env[name] = base64.b64decode(value).decode() if kind == "secret" else value
    env.update({k: rewrite(v) for k, v in pod_env.items()})
    return env
