"""A deployment of a FlinkJob's cluster, run beside the FlinkJob's reconciliations rather than inside one.

A deployment takes minutes: the program is fetched and packed, the cluster
created, and its JobManager waited for until it serves REST. kopf handles one
FlinkJob's events one after the other, so a deployment held inside a handler
would hold up the FlinkJob's deletion, or an edit that corrects it, for as long.
The reconciler therefore records the deployment's beginning in the status
(:func:`starting_status`: an operator restarted meanwhile adopts what it
started), runs it as a task of its own (:class:`InFlight`) and returns; the task
writes the outcome (:func:`deployed_status`, :func:`retried_status`,
:func:`failed_status`) once it is over. A spec edited or suspended meanwhile, or
the FlinkJob's deletion, *supersedes* it: its cluster is removed, which ends the
wait for its JobManager, and its outcome is never written.

The status builders are pure; :func:`deploy_blocking` is the deployment itself,
run on a thread of the reconciler's deployment pool.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobcluster.client.operator_hook import ClusterRef, InvalidSpecError
from jobcluster.controller.clusters import Deployed, JobClusters
from jobcluster.controller.flinkjob_ref import FlinkJobRef
from jobcluster.controller.flinkjob_status import Lifecycle, replacing, timestamp
from jobcluster.controller.job_config import job_configuration
from jobcluster.controller.job_state import Restore, StateSettings, kept_job_status, restored_from
from jobcluster.controller.plan import deploy_retry
from jobcluster.controller.programs import job_program
from jobcluster.controller.reconciled_spec import rolled_back, validated
from jobcluster.controller.resource import FlinkJobSpec, deployed_spec_hash
from jobcluster.errors import AlreadyExistsError, DeploymentError, JobClusterError

log = logging.getLogger(__name__)


@dataclass
class InFlight:
    """A deployment in flight: the digest of the spec it deploys, the cluster it makes (``target``) and its task;
    ``superseded`` once that spec is no longer wanted (its outcome is dropped, what it made is removed)."""

    spec_hash: str
    target: ClusterRef
    task: asyncio.Task[None] | None = None
    superseded: bool = False


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


def report(job: FlinkJobRef, events: list[tuple[str, str, str]], post_event: Callable[[str, str, str], None]) -> None:
    """Post a deployment's events (type, reason, message) on FlinkJob ``job``, and log them (a Warning as a warning)."""
    for kind, reason, message in events:
        post_event(kind, reason, message)
        log.log(logging.WARNING if kind == "Warning" else logging.INFO, "FlinkJob %s/%s: %s", job.namespace, job.name, message)


def superseded_by(spec: Mapping[str, Any], status: Mapping[str, Any], defaults: Mapping[str, str], deploying: str) -> str | None:
    """Why a deployment of the spec digest ``deploying`` is no longer wanted by the FlinkJob's ``spec`` (raw, as the
    API server has it; while a rollback of it is in effect, the last stable spec of its ``status``): it was edited
    or suspended; None while it is still wanted. An invalid edit keeps the last valid spec, the one deploying: its
    refusal is recorded once the deployment is over."""
    try:
        valid = validated(spec, defaults)
    except InvalidSpecError:
        return None
    valid = rolled_back(status, valid, defaults) or valid
    if valid.spec.job.state == "suspended":
        return "job.state is suspended"
    return None if deployed_spec_hash(valid.raw) == deploying else "the spec changed"


def deploy_blocking(
    clusters: JobClusters, defaults: Mapping[str, str], job: FlinkJobRef, spec: FlinkJobSpec, target: ClusterRef, restore: Restore | None
) -> Deployed:
    """Fetch the program, build the configuration and deploy the cluster at ``target``; blocks until its JobManager
    serves REST (on a thread of the deployment pool).

    Raises:
        JobClusterError: the program, the configuration or the platform refuses (``transient`` when a later attempt
            may succeed); an error that is not one of ours (a bug, the operator's own disk full) is raised as a
            permanent DeploymentError, so the FlinkJob fails with it rather than being redeployed for ever.
    """
    try:
        with tempfile.TemporaryDirectory(prefix=f"flinkjob-{job.name}-") as scratch:
            program = job_program(spec.job, job.name, Path(scratch))
            config = job_configuration(spec, job.name, job.namespace, job.uid, defaults, Path(scratch), restore)
            return clusters.deploy(target, config, program)
    except JobClusterError:
        raise
    except Exception as exc:
        log.exception("FlinkJob %s/%s: the deployment failed unexpectedly", job.namespace, job.name)
        raise DeploymentError(f"the deployment failed unexpectedly: {type(exc).__name__}: {exc}") from exc
