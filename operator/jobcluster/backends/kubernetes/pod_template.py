"""Pod templates (``kubernetes.pod-template-file.*``) merged under the pods jobcluster builds.

Flink's rules (``KubernetesUtils.loadPodFromTemplateFile`` and the decorators
that build on the template): the main container is the template's container
with the main container's name (``object_names.MAIN_CONTAINER_NAME``); the template's
other containers, init containers and volumes stay as they are.  What
jobcluster sets wins over the template: scalar fields, map entries (labels,
annotations, node selector, resource requests and limits), and list entries of
the same name (env, volume mounts, ports, volumes); tolerations are appended.
Anything jobcluster does not set comes from the template.  One exception: the
security contexts (the pod's and the main container's), whose fields jobcluster
sets only so that its pods pass Pod Security "restricted" by default, take the
template's value field by field.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from jobcluster.errors import IllegalConfigurationError

#: Lists merged entry by entry, with the field that names an entry.
_NAMED_LISTS = {"env": "name", "volumeMounts": "mountPath", "ports": "name", "volumes": "name", "envFrom": None}
_MAP_FIELDS = ("labels", "annotations", "nodeSelector", "requests", "limits")


def load_pod_template(path: str, key: str) -> dict[str, Any]:
    """The Pod in the YAML file ``path`` (given by option ``key``).

    Raises:
        IllegalConfigurationError: the file cannot be read, is not YAML, or is
            not a Pod (a mapping whose ``kind``, if present, is ``Pod``); names
            ``key`` and the file.
    """
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise IllegalConfigurationError(f"{key}: cannot read the pod template {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise IllegalConfigurationError(f"{key}: the pod template {path} is not valid YAML: {exc}") from exc
    if not isinstance(document, dict) or document.get("kind", "Pod") != "Pod":
        raise IllegalConfigurationError(f"{key}: the pod template {path} must be a Pod (a YAML mapping with kind: Pod)")
    return document


def merge_pod_template(template: dict[str, Any] | None, pod: dict[str, Any]) -> dict[str, Any]:
    """``pod`` (``{"metadata", "spec"}`` as built) merged over ``template``; neither argument is changed.

    The result keeps the template's other containers after the main container.
    """
    if not template:
        return copy.deepcopy(pod)
    metadata = _merge_map(_drop(template.get("metadata") or {}, "name", "namespace"), pod.get("metadata") or {})
    template_spec = template.get("spec") or {}
    spec = _merge_map(template_spec, pod.get("spec") or {})
    spec["containers"] = _merge_containers(template_spec.get("containers") or [], pod["spec"]["containers"])
    merged = {"metadata": metadata, "spec": spec}
    return {**_drop(pod, "metadata", "spec"), **merged}


def _merge_containers(template: list[dict[str, Any]], built: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_name = {container.get("name"): container for container in template}
    main = [_merge_map(by_name.get(container["name"], {}), container) for container in built]
    built_names = {container["name"] for container in built}
    others = [copy.deepcopy(container) for container in template if container.get("name") not in built_names]
    return main + others


def _merge_map(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: maps merged per entry, named lists per name, tolerations appended."""
    merged = copy.deepcopy(base)
    for field, value in top.items():
        old = merged.get(field)
        if field in _MAP_FIELDS and isinstance(old, dict) and isinstance(value, dict):
            merged[field] = {**old, **copy.deepcopy(value)}
        elif field == "securityContext" and isinstance(old, dict) and isinstance(value, dict):
            merged[field] = {**copy.deepcopy(value), **old}  # the template's fields win (the module docstring)
        elif field == "resources" and isinstance(old, dict) and isinstance(value, dict):
            merged[field] = _merge_map(old, value)
        elif field in _NAMED_LISTS and isinstance(old, list) and isinstance(value, list):
            merged[field] = _merge_named(old, value, _NAMED_LISTS[field])
        elif field == "tolerations" and isinstance(old, list) and isinstance(value, list):
            merged[field] = old + [item for item in copy.deepcopy(value) if item not in old]
        else:
            merged[field] = copy.deepcopy(value)
    return merged


def _merge_named(base: list[Any], top: list[Any], name_field: str | None) -> list[Any]:
    if name_field is None:
        return copy.deepcopy(base) + copy.deepcopy(top)
    top_names = {item.get(name_field) for item in top}
    return [copy.deepcopy(item) for item in base if item.get(name_field) not in top_names] + copy.deepcopy(top)


def _drop(mapping: dict[str, Any], *fields: str) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if key not in fields}
