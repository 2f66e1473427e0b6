"""A deployment of a FlinkJob's cluster, run beside the FlinkJob's reconciliations rather than inside one.

A deployment takes minutes: the program is fetched and packed, the cluster
created, and its JobManager waited for until it serves REST. kopf handles one
FlinkJob's events one after the other, so a deployment held inside a handler
would hold up the FlinkJob's deletion, or an edit that corrects it, for as long.
The reconciler therefore records the deployment's beginning in the status
(``deployment_status.starting_status``: an operator restarted meanwhile adopts
what it started), runs it as a task of its own (:class:`InFlight`) and returns;
the task writes the outcome (``deployment_status``) once it is over. A spec
edited or suspended meanwhile, or the FlinkJob's deletion, *supersedes* it: its
cluster is removed, which ends the wait for its JobManager, and its outcome is
never written.

:func:`deploy_blocking` is the deployment itself, run on a thread of the
reconciler's deployment pool.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobcluster.client.operator_hook import ClusterRef, InvalidSpecError
from jobcluster.controller.clusters import Deployed, JobClusters
from jobcluster.controller.flinkjob_ref import FlinkJobRef
from jobcluster.controller.job_config import job_configuration
from jobcluster.controller.job_state import Restore
from jobcluster.controller.programs import job_program
from jobcluster.controller.reconciled_spec import rolled_back, validated
from jobcluster.controller.resource import FlinkJobSpec, deployed_spec_hash
from jobcluster.errors import DeploymentError, JobClusterError

log = logging.getLogger(__name__)


@dataclass
class InFlight:
    """A deployment in flight: the digest of the spec it deploys, the cluster it makes (``target``) and its task;
    ``superseded`` once that spec is no longer wanted (its outcome is dropped, what it made is removed)."""

    spec_hash: str
    target: ClusterRef
    task: asyncio.Task[None] | None = None
    superseded: bool = False


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
