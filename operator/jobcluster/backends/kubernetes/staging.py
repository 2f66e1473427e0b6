"""Staging a job cluster in the API server: a ConfigMap of files, and a Secret for the cluster's secret.

Why a ConfigMap: it needs no shared storage and it is owned by the JobManager
Deployment, so the garbage collector removes it with the cluster.  The API
server refuses a ConfigMap whose values exceed 1 MiB, so a bigger program
must be in the image and referenced by a ``local://`` URI.  The cluster's secret
goes into a Secret and reaches the containers as a file of a Secret volume: never
into the ConfigMap, never onto a command line.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jobcluster.backends.cluster_files import cluster_files
from jobcluster.backends.kubernetes.config_options import (
    KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE,
    KUBERNETES_POD_TEMPLATE_FILE,
    KUBERNETES_TASK_MANAGER_POD_TEMPLATE_FILE,
)
from jobcluster.backends.kubernetes.labels import common_labels, owner_reference_to
from jobcluster.backends.kubernetes.object_names import SECRET_KEY, config_map_name, secret_name
from jobcluster.backends.kubernetes.parameters import KubernetesTaskManagerParameters
from jobcluster.backends.kubernetes.pod_template import load_pod_template
from jobcluster.client.descriptor import PackagedProgram
from jobcluster.config.configuration import Configuration
from jobcluster.errors import DeploymentError
from jobcluster.jobgraph.model import JobGraph

#: The API server's limit on the sum of a ConfigMap's values, bytes (``core.MaxSecretSize``, which ``ValidateConfigMap`` applies).
CONFIG_MAP_MAX_BYTES = 1 << 20
#: The TaskManager pod template's file in the ConfigMap; the driver reads it relative to the JobManager's cluster dir.
TASK_MANAGER_TEMPLATE_FILE = "taskmanager-pod-template.yaml"
_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_MAX_KEY_LENGTH = 253


def staged_items(paths: list[str]) -> list[dict[str, str]]:
    """Volume ``items`` mapping each ConfigMap key to its path below the mount: ``[{"key", "path"}]``.

    A path ``artifacts/wordcount.py`` gets the key ``artifacts.wordcount.py``
    (ConfigMap keys hold no ``/``).

    Raises:
        DeploymentError: a file name that cannot be a ConfigMap key (characters
            other than letters, digits, ``-``, ``_`` and ``.``), or two paths
            with the same key.
    """
    items: list[dict[str, str]] = []
    seen: dict[str, str] = {}
    for path in sorted(paths):
        key = path.replace("/", ".")
        if not _KEY.fullmatch(key) or len(key) > _MAX_KEY_LENGTH or path.startswith("/") or ".." in path.split("/"):
            raise DeploymentError(
                f"cannot stage '{path}' in a ConfigMap: file names may only hold letters, digits, '-', '_' and '.'; "
                "rename the file, or reference it by a local:// URI of a file in the image"
            )
        if key in seen:
            raise DeploymentError(f"cannot stage both '{seen[key]}' and '{path}' in one ConfigMap: both become the key '{key}'")
        seen[key] = path
        items.append({"key": key, "path": path})
    return items


def build_config_map(cluster_id: str, namespace: str, files: Mapping[str, bytes], owner: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ConfigMap ``jobcluster-config-<cluster-id>`` holding ``files`` (path below the cluster dir → content).

    UTF-8 text goes into ``data``, anything else into ``binaryData`` (base64);
    keys as :func:`staged_items` makes them.  ``owner``: the created JobManager
    Deployment, or None before it exists.

    Raises:
        DeploymentError: the files exceed the ConfigMap limit (1 MiB of
            contents); the message lists the largest files and says to reference
            the program by a ``local://`` URI; or a name :func:`staged_items` refuses.
    """
    data: dict[str, str] = {}
    binary: dict[str, str] = {}
    for item in staged_items(list(files)):
        content = files[item["path"]]
        try:
            data[item["key"]] = content.decode("utf-8")
        except UnicodeDecodeError:
            binary[item["key"]] = base64.b64encode(content).decode("ascii")
    check_config_map_size(cluster_id, files)
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(config_map_name(cluster_id), cluster_id, namespace, owner),
        "data": data,
    }
    if binary:
        manifest["binaryData"] = binary
    return manifest


def check_config_map_size(cluster_id: str, files: Mapping[str, bytes]) -> int:
    """The bytes the API server counts for ``files``: the sum of their raw contents.

    Raises:
        DeploymentError: more than :data:`CONFIG_MAP_MAX_BYTES`.
    """
    size = sum(len(content) for content in files.values())
    if size > CONFIG_MAP_MAX_BYTES:
        largest = sorted(files.items(), key=lambda item: len(item[1]), reverse=True)[:3]
        listing = ", ".join(f"{path} ({len(content)} bytes)" for path, content in largest)
        raise DeploymentError(
            f"the files staged for job cluster {cluster_id} take {size} bytes, more than a ConfigMap can hold "
            f"({CONFIG_MAP_MAX_BYTES} bytes); largest: {listing}. Put the program and its --py-files into the image "
            "and reference the program by its URI instead, e.g. local:///opt/app/wordcount.py"
        )
    return size


def build_secret(cluster_id: str, namespace: str, secret: str, owner: Mapping[str, Any] | None) -> dict[str, Any]:
    """The Secret ``<cluster-id>-secret`` with the cluster's secret under key ``cluster-secret`` (base64, as the API stores it)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(secret_name(cluster_id), cluster_id, namespace, owner),
        "type": "Opaque",
        "data": {SECRET_KEY: base64.b64encode(secret.encode()).decode("ascii")},
    }


def _metadata(name: str, cluster_id: str, namespace: str, owner: Mapping[str, Any] | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": common_labels(cluster_id)}
    if owner is not None:
        metadata["ownerReferences"] = [owner_reference_to(owner)]
    return metadata


def config_map_files(
    graph: JobGraph, program: PackagedProgram, config: Configuration, tm: KubernetesTaskManagerParameters, secret: str
) -> dict[str, bytes]:
    """Path below the cluster dir → content, for the ConfigMap: the cluster's files but its secret, and the TaskManager template.

    Raises:
        IllegalConfigurationError: the TaskManager pod template cannot be read or is not a pod.

    The TaskManager pod template is read here (the client's file) and staged;
    the staged configuration then names its staged copy, relative to the
    JobManager's cluster dir.  ``config`` is changed accordingly.
    """
    files: dict[str, bytes] = {}
    if tm.pod_template_file:
        template_key = KUBERNETES_TASK_MANAGER_POD_TEMPLATE_FILE.key
        load_pod_template(tm.pod_template_file, template_key)  # refuse a bad template before anything is created
        files[TASK_MANAGER_TEMPLATE_FILE] = Path(tm.pod_template_file).read_bytes()
        config.set(KUBERNETES_TASK_MANAGER_POD_TEMPLATE_FILE, TASK_MANAGER_TEMPLATE_FILE)
    for option in (KUBERNETES_POD_TEMPLATE_FILE, KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE):
        config.remove(option)  # client-side paths; the JobManager pod reads only the TaskManager template, staged above
    # the secret goes into the cluster's Secret instead (create_job_manager_objects), never into the ConfigMap
    files |= {file.name: file.read() for file in cluster_files(graph, program, config, secret) if not file.private}
    return files
