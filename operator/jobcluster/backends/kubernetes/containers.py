"""The parts every jobcluster pod has: the main container, its environment and the two volumes.

Why shared: the JobManager and TaskManager pods differ only in command,
environment and size; the image, the mounts of the staged files and the
work directory, and the way the cluster's secret arrives (a file from the
cluster's Secret, never a literal value nor an environment variable) are the same.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jobcluster.backends.kubernetes import object_names
from jobcluster.backends.kubernetes.parameters import KubernetesPodParameters
from jobcluster.runtime.entrypoint import layout


def value_env(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def field_env(name: str, field_path: str) -> dict[str, Any]:
    """An env var from the downward API (``metadata.name``, ``status.podIP``, ...)."""
    return {"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": field_path}}}


def pod_env(params: KubernetesPodParameters, own: Mapping[str, str]) -> list[dict[str, Any]]:
    """The environment of a main container: the user's (``containerized.*.env.*``, then the variables from Secrets,
    ``kubernetes.env.secretKeyRef``), then jobcluster's.

    jobcluster's entries win over a user entry of the same name, which is
    dropped (a duplicate name would leave the value to the kubelet), and a
    user entry ``JOBCLUSTER_CLUSTER_SECRET`` is dropped as well; a variable from a Secret wins over a plain one.
    """
    entries = [
        value_env(layout.ENV_CLUSTER_ID, params.cluster_id),
        field_env(object_names.ENV_NAMESPACE, "metadata.namespace"),
        field_env(object_names.ENV_POD_NAME, "metadata.name"),
        field_env(object_names.ENV_POD_IP, "status.podIP"),
        value_env(object_names.ENV_STAGED_DIR, object_names.STAGED_MOUNT_PATH),
        value_env(object_names.ENV_WORK_DIR, object_names.WORK_MOUNT_PATH),
        value_env(object_names.ENV_SECRET_DIR, object_names.SECRET_MOUNT_PATH),
    ]
    every_pod = {entry["name"] for entry in entries}
    entries += [value_env(name, value) for name, value in own.items() if name not in every_pod]
    # The secret's variable too: the bootstraps would take it before the secret's file.
    ours = {entry["name"] for entry in entries} | {layout.ENV_CLUSTER_SECRET}
    from_secrets = [entry for entry in params.secrets.env_entries() if entry["name"] not in ours]
    ours |= {entry["name"] for entry in from_secrets}
    return [value_env(name, value) for name, value in params.env.items() if name not in ours] + from_secrets + entries


#: What every job pod sets so that it passes the Pod Security Standards' "restricted" profile (the default posture of
#: managed clusters): the image's user (numeric, 9999) must not be root, the runtime's default seccomp profile. A pod
#: template's own values win (see pod_template.py), so a cluster that allows more can have it.
RESTRICTED_POD_SECURITY: dict[str, Any] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
#: ... and every main container: no privilege escalation, no capability.
RESTRICTED_CONTAINER_SECURITY: dict[str, Any] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def main_container(
    params: KubernetesPodParameters,
    entrypoint: str,
    args: list[str],
    env: list[dict[str, Any]],
    resources: dict[str, Any],
    ports: list[dict[str, Any]],
) -> dict[str, Any]:
    """The container ``jobcluster-main-container`` running ``<entrypoint dir>/<entrypoint> args...``."""
    container: dict[str, Any] = {
        "name": object_names.MAIN_CONTAINER_NAME,
        "image": params.image,
        "imagePullPolicy": params.image_pull_policy,
        "command": [f"{params.entrypoint_dir}/{entrypoint}"],
        "env": env,
        "resources": resources,
        "securityContext": copy.deepcopy(RESTRICTED_CONTAINER_SECURITY),
        "volumeMounts": [
            {"name": object_names.STAGED_VOLUME, "mountPath": object_names.STAGED_MOUNT_PATH, "readOnly": True},
            {"name": object_names.WORK_VOLUME, "mountPath": object_names.WORK_MOUNT_PATH},
            {"name": object_names.SECRET_VOLUME, "mountPath": object_names.SECRET_MOUNT_PATH, "readOnly": True},
            *params.secrets.volume_mounts(),
        ],
    }
    if args:
        container["args"] = args
    if ports:
        container["ports"] = ports
    return container


def volumes(cluster_id: str, staged_items: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The staged files (the ConfigMap, only ``staged_items`` of it), the work directory (an emptyDir)
    and the cluster's secret (the Secret's one key; readable by the container's user whatever its uid,
    since only the pod mounts it)."""
    return [
        {"name": object_names.STAGED_VOLUME, "configMap": {"name": object_names.config_map_name(cluster_id), "items": staged_items}},
        {"name": object_names.WORK_VOLUME, "emptyDir": {}},
        {
            "name": object_names.SECRET_VOLUME,
            "secret": {
                "secretName": object_names.secret_name(cluster_id),
                "items": [{"key": object_names.SECRET_KEY, "path": object_names.SECRET_KEY}],
                "defaultMode": 0o444,
            },
        },
    ]


def pod_spec(
    params: KubernetesPodParameters, container: dict[str, Any], pod_volumes: list[dict[str, Any]], api_token: bool = True
) -> dict[str, Any]:
    """A pod spec with the parameters' service account, image pull secrets, node selector and tolerations (empty ones
    left out), the restricted security context; ``api_token``: whether the service account's token is mounted (only
    the JobManager talks to the API server)."""
    spec: dict[str, Any] = {
        "serviceAccountName": params.service_account,
        "securityContext": copy.deepcopy(RESTRICTED_POD_SECURITY),
        "containers": [container],
        "volumes": [*pod_volumes, *params.secrets.volumes()],
    }
    if not api_token:
        spec["automountServiceAccountToken"] = False
    if params.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": name} for name in params.image_pull_secrets]
    if params.node_selector:
        spec["nodeSelector"] = dict(params.node_selector)
    if params.tolerations:
        spec["tolerations"] = [dict(toleration) for toleration in params.tolerations]
    return spec


def pod_metadata(labels: Mapping[str, str], annotations: Mapping[str, str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": dict(labels)}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return metadata
