"""The status of a deployment's beginning and of its outcome: pure functions, as the planner's are.

A deployment runs as a task of its own (``deployments.InFlight``); what it writes
is decided here: the fields it begins with (:func:`starting_status`), those of a
JobManager that serves REST (:func:`deployed_status`), of an attempt that failed
transiently and is tried again (:func:`retried_status`) and of one that failed
for good (:func:`failed_status`); :func:`failure_of` chooses between the last two.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from jobcluster.controller.clusters import Deployed
from jobcluster.controller.flinkjob_ref import FlinkJobRef
from jobcluster.controller.flinkjob_status import Lifecycle, replacing, timestamp
from jobcluster.controller.job_state import Restore, StateSettings, kept_job_status, restored_from
from jobcluster.controller.plan import deploy_retry
from jobcluster.controller.resource import FlinkJobSpec
from jobcluster.errors import AlreadyExistsError, DeploymentError, JobClusterError


def reason_of(error: JobClusterError) -> str:
    """The CamelCase reason of a deployment's failure: its own, or one by its kind."""
    reason = getattr(error, "reason", None)
    if reason:
        return str(reason)
    if isinstance(error, AlreadyExistsError):
        return "ClusterExists"
    return "DeploymentFailed" if isinstance(error, DeploymentError) else "InvalidSpec"


def starting_status(
    job: FlinkJobRef,
    status: Mapping[str, Any],
    spec: FlinkJobSpec,
    spec_hash: str,
    state: StateSettings,
    restore: Restore | None,
    started: datetime.datetime,
) -> dict[str, Any]:
    """The status fields a deployment begins with (``status``: what the plan writes with it): the spec and target
    recorded before the long wait, so that an operator restarted meanwhile adopts this deployment; the cluster id
    cleared, so that it never takes the previous cluster's result for this one's; of ``jobStatus`` only what
    describes the job's state across deployments (``job_state.KEPT_JOB_STATUS``), as a merge patch that deletes the
    rest."""
    previous = status["jobStatus"] if "jobStatus" in status else job.status.get("jobStatus")
    kept = {**kept_job_status(previous), "upgradeSavepointPath": restored_from(restore, state)}
    kept = replacing(job.status.get("jobStatus"), {key: value for key, value in kept.items() if value is not None})
    return {
        **status,
        "deployedSpec": spec_hash,
        "deployedTarget": spec.target,
        "deployedCheckpointDirectory": state.checkpoint_directory or "",
        "savepointRedeployNonce": state.savepoint_redeploy_nonce,  # a later change of it asks for a redeployment
        "ttlExpired": None,  # a new run has its own TTL
        "deployTime": timestamp(started),
        "error": "",
        "jobStatus": kept,
        "clusterId": "",
        "firstRunningTime": "",
        "terminationTime": "",
    }


def deployed_status(starting: Mapping[str, Any], deployed: Deployed, job_name: str, seconds: float) -> dict[str, Any]:
    """The status fields of a deployment whose JobManager serves REST after ``seconds``: DEPLOYED (a rollback's stays
    ROLLING_BACK until its job runs)."""
    rolling_back = starting.get("lifecycleState") == Lifecycle.ROLLING_BACK
    return {
        **starting,
        "lifecycleState": Lifecycle.ROLLING_BACK if rolling_back else Lifecycle.DEPLOYED,
        "clusterId": deployed.cluster_id,
        "restUrl": deployed.rest_url,
        "jobStatus": {**starting["jobStatus"], "jobId": deployed.job_id, "jobName": job_name, "state": "CREATED"},
        "failureReason": "",
        "deploySeconds": round(seconds, 1),
        "deployRetry": None,
    }


def retried_status(job: FlinkJobRef, starting: Mapping[str, Any], message: str, retry: Mapping[str, Any]) -> dict[str, Any]:
    """The status fields of an attempt that failed transiently: nothing of it runs (a descriptor leaves nothing
    behind), so the status goes back to the previous spec's and the plan deploys again once
    ``retry['nextAttemptTime']`` has come."""
    return {
        **starting,
        "lifecycleState": starting.get("lifecycleState") or Lifecycle.CREATED,
        "deployedSpec": job.status.get("deployedSpec") or "",
        "deployedTarget": job.status.get("deployedTarget") or "",
        "deployTime": job.status.get("deployTime") or "",
        "error": message,
        "deployRetry": dict(retry),
        "clusterAccess": None,  # nothing of the attempt runs
        "clusterAccessSignature": None,
    }


def failed_status(starting: Mapping[str, Any], spec_hash: str, message: str, reason: str) -> dict[str, Any]:
    """The status fields of a deployment that failed for good: FAILED with the reason; a refused deployment leaves
    nothing to reach, so the FlinkJob is deletable at once."""
    return {
        **starting,
        "lifecycleState": Lifecycle.FAILED,
        "deployedSpec": spec_hash,
        "error": message,
        "failureReason": reason,
        "restUrl": "",
        "deployRetry": None,
        "clusterAccess": None,
        "clusterAccessSignature": None,
    }


def failure_of(
    job: FlinkJobRef,
    spec: FlinkJobSpec,
    spec_hash: str,
    starting: Mapping[str, Any],
    error: JobClusterError,
    started: datetime.datetime,
    now: datetime.datetime,
) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    """The status fields and events of a deployment begun at ``started`` that failed with ``error``: after a
    transient failure, the previous spec's fields and when to try again (``plan.deploy_retry``); FAILED with the
    reason when the failure is permanent, or the next attempt would begin past ``spec.startupDeadlineSeconds``.
    Nothing is logged here: the failure of a superseded deployment (its cluster removed on purpose) is never reported."""
    reason = reason_of(error)
    deadline = float(spec.startup_deadline_seconds)
    retry = deploy_retry(job.status, spec_hash, started, now, deadline) if error.transient else None
    if retry is not None:
        message = f"attempt {retry['attempts']} failed: {error}; trying again at {retry['nextAttemptTime']}"
        return retried_status(job, starting, message, retry), [("Warning", reason, message)]
    message = f"{error} (gave up: the next attempt would begin past startupDeadlineSeconds)" if error.transient else str(error)
    return failed_status(starting, spec_hash, message, reason), [("Warning", reason, message)]
