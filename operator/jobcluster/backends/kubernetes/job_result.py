"""The job result a finished cluster leaves behind for the resource that owns it (Flink's JobResultStore).

Why: a job cluster deletes its own Deployment when the job ends, and with it
every object it owns, so nobody could later ask how the job ended.  When the
Deployment has owners of its own (``kubernetes.jobmanager.owner.reference``, as
the FlinkJob operator sets), the JobManager first writes ConfigMap
``<cluster-id>-job-result`` owned by those same owners: it outlives the cluster,
an operator that was away when the job ended still learns its result, and it
goes when the owner is deleted.  Without owners nothing is written (nothing
would ever delete it).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any

import kubernetes

from jobcluster.backends.kubernetes import object_names
from jobcluster.backends.kubernetes.kube_client import api_call
from jobcluster.backends.kubernetes.labels import LABEL_JOB_ID, common_labels
from jobcluster.client.descriptor import JobResult
from jobcluster.errors import NotFoundError
from jobcluster.jobgraph.job_status import ApplicationStatus

COMPONENT = "job-result"


def build_job_result_config_map(
    deployment: Mapping[str, Any], status: str, diagnostics: str | None, now: datetime.datetime
) -> dict[str, Any] | None:
    """The result ConfigMap for the JobManager ``deployment`` (as read from the API server), or None when it has no owners.

    ``status``: the ApplicationStatus name; ``now``: the end time (aware, UTC).
    """
    metadata = deployment["metadata"]
    owners = metadata.get("ownerReferences") or []
    if not owners:
        return None
    cluster_id = metadata["name"]
    labels = {**common_labels(cluster_id), "component": COMPONENT}
    job_id = (metadata.get("labels") or {}).get(LABEL_JOB_ID, "")
    if job_id:
        labels[LABEL_JOB_ID] = job_id
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": object_names.job_result_name(cluster_id),
            "namespace": metadata["namespace"],
            "labels": labels,
            "ownerReferences": [_without_controller(owner) for owner in owners],
        },
        "data": {
            "result.json": json.dumps(
                {
                    "clusterId": cluster_id,
                    "jobId": job_id,
                    "state": ApplicationStatus[status].job_state if status in ApplicationStatus.__members__ else "UNKNOWN",
                    "endTime": now.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "diagnostics": diagnostics or "",
                },
                sort_keys=True,
            )
        },
    }


def _without_controller(owner: Mapping[str, Any]) -> dict[str, Any]:
    """An owner reference that only ties the ConfigMap's lifetime to the owner (the owner does not control it)."""
    return {key: value for key, value in owner.items() if key in ("apiVersion", "kind", "name", "uid")}


def parse_job_result(config_map: Mapping[str, Any]) -> JobResult | None:
    """The record in a result ConfigMap (as JSON from the API server); None when it holds none."""
    text = (config_map.get("data") or {}).get("result.json")
    if not text:
        return None
    record = json.loads(text)
    return JobResult(
        cluster_id=record.get("clusterId", ""),
        job_id=record.get("jobId", ""),
        state=record.get("state", "UNKNOWN"),
        end_time=record.get("endTime", ""),
        diagnostics=record.get("diagnostics", ""),
    )


def read_job_result(api: kubernetes.client.ApiClient, namespace: str, cluster_id: str) -> JobResult | None:
    """The result cluster ``cluster_id`` left, or None (none written, or not yet).

    Raises:
        DeploymentError: the API server refuses or cannot be reached.
    """
    core = kubernetes.client.CoreV1Api(api)
    try:
        response: Any = api_call(
            "get",
            "configmaps",
            namespace,
            core.read_namespaced_config_map,
            object_names.job_result_name(cluster_id),
            namespace,
            _preload_content=False,
        )
    except NotFoundError:
        return None
    return parse_job_result(json.loads(response.data))
