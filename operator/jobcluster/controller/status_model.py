"""The FlinkJob's status as typed models, in the Flink Kubernetes Operator's shape (``FlinkDeploymentStatus``).

These models are the one declaration of what the operator writes to ``status``:

* the reconciler checks every status patch it writes against them (:func:`checked_patch`): a field of the wrong
  type is a bug of the planner, refused before it reaches the API server;
* the CRD's ``status`` schema is generated from them (:func:`crd_status_schema`, written by ``make docs``), so
  the API server, ``kubectl explain`` and the reference page describe exactly these fields;
* the unit tests check that every field the planner writes is declared here (:func:`undeclared`).

Every model keeps keys it does not declare (``extra="allow"``, and ``x-kubernetes-preserve-unknown-fields`` in
the CRD): a status written by an older or newer operator reads back whole. Times are RFC 3339 strings (UTC, whole
seconds) or ``""`` once cleared; the planner writes JSON merge patches, in which ``null`` deletes a field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from jobcluster.controller.flinkjob_status import Lifecycle


class _Status(BaseModel):
    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True, use_attribute_docstrings=True)


class Savepoint(_Status):
    """A completed savepoint."""

    location: str | None = None
    """Where it is (a directory URI under execution.checkpointing.savepoint-dir)."""
    time_stamp: str | None = None
    """When it completed."""
    trigger_type: str | None = None
    """MANUAL (savepointTriggerNonce), PERIODIC (kubernetes.operator.periodic.savepoint.interval) or UPGRADE."""
    trigger_nonce: int | None = None
    """The savepointTriggerNonce that asked for it (MANUAL)."""


class PendingSavepoint(_Status):
    """A savepoint triggered and not completed yet."""

    trigger_id: str | None = None
    """The operator's own trigger id, which Flink's REST API treats as idempotent."""
    trigger_type: str | None = None
    trigger_timestamp: str | None = None
    stop: bool | None = None
    """Whether it is a stop-with-savepoint (an upgrade's or a suspension's)."""
    job_id: str | None = None
    key: str | None = None
    """What it is for (an upgrade of one spec, a suspension, a nonce): one that failed is not tried again for it."""
    trigger_nonce: int | None = None


class SavepointFailure(_Status):
    """The last savepoint that failed: the job runs on."""

    trigger_type: str | None = None
    trigger_timestamp: str | None = None
    failure_timestamp: str | None = None
    message: str | None = None
    key: str | None = None


class SavepointInfo(_Status):
    """The job's savepoints."""

    last_savepoint: Savepoint | None = None
    trigger: PendingSavepoint | None = None
    last_failure: SavepointFailure | None = None
    savepoint_history: list[Savepoint] | None = None
    """Bounded by kubernetes.operator.savepoint.history.max.count and .max.age."""
    last_periodic_savepoint_timestamp: str | None = None
    last_trigger_nonce: int | None = None
    """The last spec.job.savepointTriggerNonce acted on."""


class QueryCheckpoint(_Status):
    """One streaming query's last committed micro-batch."""

    name: str | None = None
    committed_batch_id: int | None = None
    last_commit_time: str | None = None


class CheckpointInfo(_Status):
    """Each streaming query's last committed micro-batch and when (written at most once a minute)."""

    queries: list[QueryCheckpoint] | None = None
    update_time: str | None = None
    last_commit_time: str | None = None
    """The latest commit of all the queries."""


class JobStatus(_Status):
    """The job, as its JobManager last reported it (Flink's REST API, GET /jobs/:jobid)."""

    job_id: str | None = None
    job_name: str | None = None
    state: str | None = None
    """INITIALIZING, CREATED, RUNNING, FAILING, CANCELLING, CANCELED, FINISHED, FAILED, RESTARTING, SUSPENDED, RECONCILING."""
    start_time: str | None = None
    end_time: str | None = None
    duration: str | None = None
    """How long the job ran, once it has ended (e.g. 2m10s)."""
    update_time: str | None = None
    """When the operator last saw this job status change; a JobManager that has not answered for 30 s makes the state RECONCILING."""
    job_type: str | None = None
    """STREAMING when the program runs streaming queries, else BATCH."""
    upgrade_savepoint_path: str | None = None
    """What the current deployment started from: the savepoint or (last-state) the checkpoint root of its JobID."""
    savepoint_info: SavepointInfo | None = None
    checkpoint_info: CheckpointInfo | None = None


class TaskManagers(_Status):
    """The TaskManagers of the running job cluster."""

    count: int | None = None
    slots_per_task_manager: int | None = None
    process_memory: str | None = None
    """Each one's total process memory, e.g. 2560Mi."""


class DeployRetry(_Status):
    """A deployment that failed transiently, tried again with a doubling delay until startupDeadlineSeconds."""

    attempts: int | None = None
    """Failed attempts so far."""
    first_attempt_time: str | None = None
    next_attempt_time: str | None = None
    spec: str | None = None
    """The digest of the spec being deployed."""


class Upgrade(_Status):
    """What the next (or the running) deployment starts from, kept until its job runs on it."""

    mode: str | None = None
    """savepoint, last-state, redeploy (savepointRedeployNonce) or initial (initialSavepointPath)."""
    savepoint_path: str | None = None
    job_id: str | None = None
    """The JobID whose checkpoints a last-state deployment resumes."""
    checkpoint_directory: str | None = None
    nonce: int | None = None
    request_time: str | None = None


class Rollback(_Status):
    """A rollback in effect: the last stable spec runs until the spec is edited."""

    spec: str | None = None
    """The digest of the spec rolled back from."""
    reason: str | None = None
    time: str | None = None


class ReconciliationStatus(_Status):
    """What the operator reconciled (the Flink Kubernetes Operator's ReconciliationStatus)."""

    last_reconciled_spec: str | None = None
    """The last valid spec the operator reconciled, as JSON; a refused edit leaves this spec going."""
    last_stable_spec: str | None = None
    """The spec whose job last ran, as JSON; with kubernetes.operator.deployment.rollback.enabled an upgrade that does
    not run in time is rolled back to it."""


class Condition(_Status):
    """A standard condition (``kubectl wait --for=condition=Ready``)."""

    type: str
    """Ready, Running, Succeeded or Failed."""
    status: Literal["True", "False", "Unknown"]
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    observed_generation: int | None = None


class FlinkJobStatus(_Status):
    """Written by the operator only."""

    lifecycle_state: Lifecycle | None = None
    """Where the resource is in its lifecycle (the Flink Kubernetes Operator's ResourceLifecycleState)."""
    observed_generation: int | None = None
    job_status: JobStatus | None = None
    conditions: list[Condition] | None = None
    error: str | None = None
    """Why the FlinkJob failed, why its last deployment attempt failed, why its JobManager does not answer, or why an edit of its spec was
    refused."""
    failure_reason: str | None = None
    """The reason of the error, as the Failed or Ready condition gives it (e.g. JobFailed, InvalidSpec, SavepointDirectoryMissing)."""
    cluster_id: str | None = None
    rest_url: str | None = None
    task_managers: TaskManagers | None = None
    cluster_access: dict[str, str | None] | None = None  # None: a merge patch deleting one file
    """What the operator keeps, as the deployment begins, to reach the job cluster once the objects the spec names are gone (file name to
    content; yarn-application: the site files of spec.hadoopConfigMap). Dropped when the deployment fails."""
    cluster_access_signature: str | None = None
    """The operator's HMAC-SHA256 of clusterAccess and the FlinkJob's uid: kept files whose signature is not the operator's
    own are ignored."""
    reconciliation_status: ReconciliationStatus | None = None
    last_reconciled_spec: str | None = None
    """Where operators before reconciliationStatus kept reconciliationStatus.lastReconciledSpec (moved there at the next reconciliation)."""
    last_stable_spec: str | None = None
    """Where operators before reconciliationStatus kept reconciliationStatus.lastStableSpec (moved there at the next reconciliation)."""
    refused_spec: str | None = None
    """The digest of a refused spec; cleared once the spec is fixed or reverted."""
    deployed_spec: str | None = None
    """The digest of the spec whose cluster runs or ran (of the fields that need a new cluster)."""
    deployed_target: str | None = None
    """The target that cluster runs or ran on."""
    deployed_checkpoint_directory: str | None = None
    """Where its job checkpoints: a last-state upgrade resumes from there."""
    deploy_time: str | None = None
    """When that deployment began."""
    deploy_seconds: float | None = None
    """How long its JobManager took to serve REST."""
    first_running_time: str | None = None
    """When its job was first seen RUNNING (the startup deadline is met)."""
    termination_time: str | None = None
    """When the FlinkJob became FINISHED or FAILED, whatever ended it; ttlSecondsAfterFinished counts from it."""
    ttl_expired: bool | None = None
    deploy_retry: DeployRetry | None = None
    upgrade: Upgrade | None = None
    rollback: Rollback | None = None
    savepoint_redeploy_nonce: int | None = None
    """The spec.job.savepointRedeployNonce the running deployment was made with."""


def checked_patch(patch: Mapping[str, Any]) -> None:
    """Check a status merge patch (``null`` deletes a field) against :class:`FlinkJobStatus`.

    Raises:
        pydantic.ValidationError: a field of the wrong type (a bug of the planner).
    """
    FlinkJobStatus.model_validate(patch)


def undeclared(status: Mapping[str, Any]) -> list[str]:
    """The paths (``jobStatus.savepointInfo.x``) of the keys of ``status`` no model declares."""
    return list(_extra(FlinkJobStatus.model_validate(status), ""))


def _extra(model: BaseModel, path: str) -> Iterator[str]:
    for key in model.model_extra or {}:
        yield f"{path}{key}"
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, BaseModel):
                yield from _extra(item, f"{path}{info.alias or name}.")


def crd_status_schema() -> dict[str, Any]:
    """The CRD's ``status`` schema (structural OpenAPI v3: no references, no defaults, every object keeping unknown
    fields), from :class:`FlinkJobStatus`."""
    schema = FlinkJobStatus.model_json_schema(by_alias=True)
    return _structural(schema, schema.get("$defs", {}))


def _structural(node: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    description = node.get("description")
    if "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    if "anyOf" in node:  # X | None: null in a merge patch deletes the field, so the stored value is never null
        (choice,) = [choice for choice in node["anyOf"] if choice.get("type") != "null"]
        return _structural({**choice, **{key: value for key, value in node.items() if key in ("description", "format")}}, defs)
    out: dict[str, Any] = {"type": node["type"]}
    description = description or node.get("description")
    if description:
        out["description"] = " ".join(description.split())
    if node.get("format"):
        out["format"] = node["format"]
    if node.get("enum"):
        out["enum"] = list(node["enum"])
    if node["type"] == "array":
        out["items"] = _structural(node["items"], defs)
    if node["type"] == "object":
        if node.get("required"):
            out["required"] = list(node["required"])
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping):
            out["additionalProperties"] = _structural(extra, defs)
        elif node.get("properties"):
            out["x-kubernetes-preserve-unknown-fields"] = True
        if node.get("properties"):
            out["properties"] = {key: _structural(value, defs) for key, value in node["properties"].items()}
    return out
