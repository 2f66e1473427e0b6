"""What to do for one FlinkJob, decided from facts alone: pure, and tested without a cluster.

:func:`plan` compares the spec (its digest), the last status and one observation
of the cluster with the lifecycle of ``flinkjob_status.py``, and returns the actions to take
(remove, deploy, remove the result, delete the resource, trigger a savepoint, dispose of
savepoints), the status fields to write and the events to post. The
:class:`~jobcluster.controller.reconciler.Reconciler` observes, calls it, and carries the plan out.

A streaming job's state is carried across deployments by its ``upgradeMode``
(``job_state.py``); the steps of a savepoint-mode upgrade or suspension, and a
running job's manual and periodic savepoints, are planned in ``savepoint_plan.py``.
Batch jobs and ``stateless`` mode are upgraded by removing, then deploying. What a
plan decides on and decides is in ``plan_types.py``.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from jobcluster.controller.clusters import Observation
from jobcluster.controller.flinkjob_status import (
    Lifecycle,
    duration_text,
    from_epoch_ms,
    job_status_of,
    lifecycle_of_terminal_job,
    replacing,
    task_managers_of,
    timestamp,
)
from jobcluster.controller.job_state import (
    LAST_STATE,
    RESTART_FAILED,
    SAVEPOINT,
    checkpoint_info,
    is_streaming,
    kept_job_status,
    restore_of,
    seconds_since,
)
from jobcluster.controller.plan_types import (
    DELETE_RESOURCE,
    DEPLOY,
    ERROR_LIMIT,
    REMOVE,
    REMOVE_RESULT,
    Facts,
    Plan,
)
from jobcluster.controller.rollback_plan import as_upgrade, named, rollback, rollback_due
from jobcluster.controller.savepoint_plan import (
    CHECKPOINTS_MOVED,
    abandoning,
    carry_state,
    checkpoints_moved,
    kept_text,
    next_upgrade,
    redeploying,
    replacing_job,
    routine_savepoints,
)
from jobcluster.jobgraph.job_status import TERMINAL_JOB_STATES

RETRY_FIRST_DELAY = 5.0  # seconds between the first two attempts of a deployment that failed transiently
RETRY_MAX_DELAY = 60.0  # seconds: the longest wait between attempts (the delay doubles up to it)
UNRESPONSIVE_AFTER = 30.0  # seconds a JobManager that served REST may be silent before its job is RECONCILING


def needs_observation(facts: Facts) -> bool:
    """Whether the cluster must be looked at: while a job of the current spec may run, and before a new
    spec is deployed where a cluster of the previous one may still run; not for a settled suspension or
    an ended job."""
    facts = as_upgrade(facts)
    lifecycle = facts.status.get("lifecycleState")
    deployed = facts.status.get("deployedSpec")
    if facts.desired == "suspended":
        return lifecycle != Lifecycle.SUSPENDED and not _ended_as_deployed(facts)
    if deployed != facts.spec_hash:
        return (bool(deployed) or _retrying(facts)) and lifecycle != Lifecycle.SUSPENDED and not retry_waiting(facts)
    return lifecycle in (Lifecycle.CREATED, Lifecycle.DEPLOYED, Lifecycle.STABLE, Lifecycle.UPGRADING)


def _deploy_interrupted(facts: Facts) -> bool:
    """Whether a deployment of the current spec began and never recorded its outcome: the operator that ran it
    went away (the one that deploys holds the FlinkJob's lock until it writes DEPLOYED or FAILED)."""
    return facts.status.get("deployedSpec") == facts.spec_hash and facts.status.get("lifecycleState") in (
        Lifecycle.CREATED,
        Lifecycle.UPGRADING,
    )


def plan(facts: Facts) -> Plan:
    """The next step for one FlinkJob (see the module docstring and ``flinkjob_status.py``'s lifecycle)."""
    upgrade = as_upgrade(facts)
    decided = _plan(upgrade)
    if DEPLOY in decided.actions:
        decided.restore = restore_of({**upgrade.status, **decided.status}, facts.state)
    return named(facts, decided)


def _plan(facts: Facts) -> Plan:
    if facts.desired == "suspended":
        return _plan_suspended(facts)
    lifecycle = facts.status.get("lifecycleState")
    if facts.status.get("deployedSpec") != facts.spec_hash:
        return Plan() if retry_waiting(facts) else _plan_new_spec(facts)
    if replacing_job(facts):
        return _plan_new_spec(facts)  # resumed while its suspension's savepoint was being taken: redeploy from it
    if lifecycle in (Lifecycle.FINISHED, Lifecycle.FAILED):
        return _plan_ended(facts)
    return _plan_observed(facts)


def _retrying(facts: Facts) -> bool:
    """Whether a deployment of the current spec failed transiently and is tried again: what the failed attempt left
    (a cluster whose teardown failed too, a YARN application whose kill did not arrive) may run."""
    return (facts.status.get("deployRetry") or {}).get("spec") == facts.spec_hash


def retry_waiting(facts: Facts) -> bool:
    """Whether a deployment of the current spec failed transiently and its next attempt is not due yet."""
    retry = facts.status.get("deployRetry") or {}
    due_in = -(seconds_since(retry.get("nextAttemptTime"), facts.now) or 0.0)
    return retry.get("spec") == facts.spec_hash and due_in > 0


def deploy_retry(
    status: Mapping[str, Any], spec_hash: str, started: datetime.datetime, now: datetime.datetime, startup_deadline: float
) -> dict[str, Any] | None:
    """``status.deployRetry`` after the attempt begun at ``started`` failed transiently: ``attempts`` so far, the
    ``firstAttemptTime`` and the ``nextAttemptTime`` (the delay doubles from :data:`RETRY_FIRST_DELAY` up to
    :data:`RETRY_MAX_DELAY` seconds); None when that next attempt would begin more than ``startup_deadline`` seconds
    after the first (``spec.startupDeadlineSeconds`` bounds the retries as it bounds the start)."""
    previous = status.get("deployRetry") or {}
    if previous.get("spec") != spec_hash:
        previous = {}
    attempts = int(previous.get("attempts") or 0) + 1
    first = str(previous.get("firstAttemptTime") or timestamp(started))
    next_attempt = now + datetime.timedelta(seconds=min(RETRY_MAX_DELAY, RETRY_FIRST_DELAY * 2 ** (attempts - 1)))
    if (next_attempt - datetime.datetime.fromisoformat(first)).total_seconds() > startup_deadline:
        return None
    return {"spec": spec_hash, "attempts": attempts, "firstAttemptTime": first, "nextAttemptTime": timestamp(next_attempt)}


def _ended_as_deployed(facts: Facts) -> bool:
    """Whether the job of the current spec has ended (FINISHED or FAILED): nothing of it runs any more."""
    ended = facts.status.get("lifecycleState") in (Lifecycle.FINISHED, Lifecycle.FAILED)
    return ended and facts.status.get("deployedSpec") == facts.spec_hash


def _plan_suspended(facts: Facts) -> Plan:
    if _ended_as_deployed(facts):  # an ended job keeps its result (and its TTL); resuming does not run it again
        return _ttl_expiry(facts)
    if facts.status.get("lifecycleState") == Lifecycle.SUSPENDED:
        return Plan()  # nothing runs to suspend
    carried = carry_state(facts, f"suspend:{facts.status.get('deployedSpec') or ''}", "suspension", _plan_observed)
    if carried is not None:
        return carried
    job = {**(facts.status.get("jobStatus") or {}), "state": "SUSPENDED"}
    abandoned = abandoning(facts, job)
    status = {"lifecycleState": Lifecycle.SUSPENDED, "jobStatus": job, "deployedSpec": "", "restUrl": "", "error": "", "deployRetry": None}
    upgrade = next_upgrade(facts)
    if upgrade is not None:
        status["upgrade"] = upgrade
    return Plan(
        actions=[REMOVE],
        status=status,
        events=[*abandoned, ("Normal", "Suspended", "job.state is suspended: the job cluster is removed" + kept_text(upgrade))],
    )


def _plan_new_spec(facts: Facts) -> Plan:
    """A spec never deployed: remove what runs for an older spec, or what a failed attempt of this one left, first
    (UPGRADING), then deploy."""
    obs = facts.observation
    previous = facts.status.get("deployedSpec")
    if obs is not None and obs.exists and not previous and _retrying(facts):
        left = "a cluster the failed deployment left runs: removing it before the next attempt (never two of one FlinkJob)"
        events = [("Warning", "LeftoverRemoved", left)] if facts.status.get("error") != left else []
        return Plan(actions=[REMOVE], status={"error": left}, events=events)
    if obs is not None and previous and not redeploying(facts):
        carried = carry_state(facts, f"upgrade:{facts.spec_hash}", "upgrade", _plan_observed)
        if carried is not None:
            return carried
    if obs is not None and obs.exists and previous:
        upgrade = next_upgrade(facts)
        moved = checkpoints_moved(facts, upgrade)
        if moved is not None:  # the job runs on: nothing of it is lost for the edit
            waiting = _plan_observed(facts)
            waiting.status.update(error=moved, failureReason=CHECKPOINTS_MOVED)
            if facts.status.get("error") != moved:
                waiting.events.append(("Warning", CHECKPOINTS_MOVED, moved))
            return waiting
        kept = kept_job_status(facts.status.get("jobStatus"))
        abandoned = abandoning(facts, kept)
        status: dict[str, Any] = {"lifecycleState": Lifecycle.UPGRADING, "jobStatus": replacing(facts.status.get("jobStatus"), kept)}
        if upgrade is not None:
            status["upgrade"] = upgrade
        why = "the spec changed" if previous != facts.spec_hash else "the job is resumed"
        if redeploying(facts):
            why = f"savepointRedeployNonce is {facts.state.savepoint_redeploy_nonce}: no savepoint of the job is taken"
        return Plan(
            actions=[REMOVE],
            status=status,
            events=[*abandoned, ("Normal", "Upgrading", f"{why}: removing the job cluster of the previous spec" + kept_text(upgrade))],
        )
    upgrading = bool(previous) or facts.status.get("lifecycleState") in (
        Lifecycle.UPGRADING,
        Lifecycle.FINISHED,
        Lifecycle.FAILED,
    )
    status = {"lifecycleState": Lifecycle.UPGRADING if upgrading else Lifecycle.CREATED}
    upgrade = next_upgrade(facts)
    moved = checkpoints_moved(facts, upgrade)
    if moved is not None:  # nothing runs (suspended, or gone): the job would start with no state
        events = [("Warning", CHECKPOINTS_MOVED, moved)] if facts.status.get("error") != moved else []
        return Plan(status={"lifecycleState": Lifecycle.FAILED, "error": moved, "failureReason": CHECKPOINTS_MOVED}, events=events)
    if upgrade is not None:
        status["upgrade"] = upgrade
    first_nonce = facts.state.savepoint_trigger_nonce
    if first_nonce is not None and not facts.status.get("deployTime"):  # a nonce the FlinkJob was created with asks for nothing
        job = dict(facts.status.get("jobStatus") or {})
        job["savepointInfo"] = {**(job.get("savepointInfo") or {}), "lastTriggerNonce": first_nonce}
        status["jobStatus"] = job
    return Plan(actions=[DEPLOY], status=status)


def _plan_ended(facts: Facts) -> Plan:
    why = rollback_due(facts, failed=facts.status.get("lifecycleState") == Lifecycle.FAILED)
    if why is not None:
        return rollback(facts, why)
    return _ttl_expiry(facts)


def _ttl_expiry(facts: Facts) -> Plan:
    """An ended job's result removed once ``ttlSecondsAfterFinished`` passed (and the FlinkJob deleted, with
    ``deleteAfterTtl``)."""
    job = facts.status.get("jobStatus") or {}
    if facts.ttl is None or facts.status.get("ttlExpired"):
        return Plan()
    since_end = seconds_since(facts.status.get("terminationTime") or job.get("endTime"), facts.now)
    if since_end is None or since_end < facts.ttl:
        return Plan()
    actions = [REMOVE, REMOVE_RESULT] + ([DELETE_RESOURCE] if facts.delete_after_ttl else [])
    return Plan(actions=actions, status={"ttlExpired": True}, events=[("Normal", "TtlExpired", "ttlSecondsAfterFinished passed")])


def _plan_observed(facts: Facts) -> Plan:
    obs = facts.observation
    assert obs is not None
    old_job = dict(facts.status.get("jobStatus") or {})
    if not obs.exists:
        return _plan_gone(facts, old_job)
    if obs.job is None and _unresponsive(facts, old_job):
        return _plan_unresponsive(facts, old_job)
    job = {**old_job, **job_status_of(obs.job)} if obs.job is not None else old_job
    if obs.job is not None and job != old_job:
        job["updateTime"] = timestamp(facts.now)  # when this job status was observed from the JobManager
    if obs.job is not None and is_streaming(job):
        job["checkpointInfo"] = checkpoint_info(obs.job, old_job.get("checkpointInfo"), facts.now)
    state = job.get("state")
    update: dict[str, Any] = {"jobStatus": job, "restUrl": obs.rest_url or facts.status.get("restUrl", "")}
    if obs.cluster_id:
        update["clusterId"] = obs.cluster_id
    if obs.job is not None:
        update["taskManagers"] = replacing(facts.status.get("taskManagers"), task_managers_of(obs.task_managers))
        update["error"] = ""  # the JobManager answers again
    if state in TERMINAL_JOB_STATES and obs.job is not None:
        ended = _ended(update, state, obs.failure_cause)
        why = rollback_due(facts, failed=ended.status["lifecycleState"] == Lifecycle.FAILED, started=_ran_at(obs.job) is not None)
        return rollback(facts, why, ended) if why else _restarting(facts, ended)
    lifecycle = Lifecycle.STABLE if state == "RUNNING" else Lifecycle.DEPLOYED
    update["lifecycleState"] = lifecycle
    ran_at = timestamp(facts.now) if state == "RUNNING" else _ran_at(obs.job)
    why = rollback_due(facts, started=bool(ran_at))
    if why is not None:
        return rollback(facts, why)
    if ran_at and not facts.status.get("firstRunningTime"):
        update["firstRunningTime"] = ran_at  # the startup deadline is met for this deployment
        update["reconciliationStatus"] = {"lastStableSpec": facts.spec_json or None}  # what a failed upgrade rolls back to
        if facts.status.get("upgrade"):
            update["upgrade"] = None  # the new job runs on the state it was given: the record has served
    events = []
    if lifecycle == Lifecycle.STABLE and facts.status.get("lifecycleState") != Lifecycle.STABLE:
        events.append(
            (
                "Normal",
                "JobRunning",
                f"job {job.get('jobId')} is RUNNING on {update.get('taskManagers', {}).get('count', 0)} TaskManager(s)",
            )
        )
    deadline = _deadline_passed(facts, job, obs)
    if deadline is not None:
        reason, message = deadline
        # the cluster is removed: the job ends here, CANCELED when it ran too long, FAILED when it never ran
        job["state"] = "CANCELED" if state == "RUNNING" else "FAILED"
        job["endTime"] = timestamp(facts.now)
        update.update(lifecycleState=Lifecycle.FAILED, error=message, failureReason=reason)
        return Plan(actions=[REMOVE], status=update, events=[("Warning", reason, message)])
    observed = Plan(status=update, events=events)
    if is_streaming(job):
        routine_savepoints(facts, job, observed)
    return observed


def _unresponsive(facts: Facts, job: Mapping[str, Any]) -> bool:
    """Whether the JobManager of a job that was seen RUNNING has not answered for :data:`UNRESPONSIVE_AFTER` seconds."""
    silent = facts.silent_for is not None and facts.silent_for >= UNRESPONSIVE_AFTER
    return silent and bool(facts.status.get("firstRunningTime")) and job.get("state") not in TERMINAL_JOB_STATES


def _plan_unresponsive(facts: Facts, job: dict[str, Any]) -> Plan:
    """The cluster runs but its JobManager does not answer: the job's state is unknown, so it is RECONCILING (as the
    Flink Kubernetes Operator says of a job it cannot observe), no longer RUNNING; the deadlines wait for an answer."""
    if job.get("state") == "RECONCILING":
        return Plan()  # said already; the status changes again when the JobManager answers
    assert facts.silent_for is not None
    since = timestamp(facts.now - datetime.timedelta(seconds=facts.silent_for))
    message = f"the JobManager at {facts.status.get('restUrl') or '?'} has not answered since {since}"
    return Plan(
        status={"jobStatus": {**job, "state": "RECONCILING", "updateTime": since}, "lifecycleState": Lifecycle.DEPLOYED, "error": message},
        events=[("Warning", "JobManagerUnreachable", message)],
    )


def _ran_at(details: Mapping[str, Any] | None) -> str | None:
    """When the job last began RUNNING by its JobManager (``timestamps.RUNNING`` of ``GET /jobs/{id}``, Flink's status
    timestamps); None when it never ran. A job that ran while no operator looked has met its startup deadline."""
    millis = ((details or {}).get("timestamps") or {}).get("RUNNING")
    return from_epoch_ms(millis) if millis else None


def _deadline_passed(facts: Facts, job: Mapping[str, Any], obs: Observation) -> tuple[str, str] | None:
    """The startup deadline holds until the job of this deployment first runs (a restart later is not a late
    start); the active deadline, while it runs."""
    state = job.get("state")
    deployed_for = seconds_since(facts.status.get("deployTime"), facts.now)
    started = bool(facts.status.get("firstRunningTime")) or _ran_at(obs.job) is not None
    if not started and state != "RUNNING" and deployed_for is not None and deployed_for > facts.startup_deadline:
        why = obs.pending or f"the job is {state or 'not started'}"
        return "StartupDeadlineExceeded", f"not RUNNING within startupDeadlineSeconds ({facts.startup_deadline:.0f} s): {why}"
    running_for = seconds_since(job.get("startTime"), facts.now)
    if state == "RUNNING" and facts.active_deadline is not None and running_for is not None and running_for > facts.active_deadline:
        return "ActiveDeadlineExceeded", f"ran longer than activeDeadlineSeconds ({facts.active_deadline:.0f} s): cancelled"
    return None


def _plan_gone(facts: Facts, job: dict[str, Any]) -> Plan:
    obs = facts.observation
    assert obs is not None
    record = obs.result
    if record is not None and _deploy_interrupted(facts) and _before(record.end_time, facts.status.get("deployTime")):
        record = None  # the result of the run before this deployment, which had not removed it yet
    if record is not None and (not job.get("jobId") or record.job_id == job.get("jobId")):
        job.update(jobId=record.job_id, state=record.state)
        if record.end_time:
            job["endTime"] = record.end_time
            if job.get("startTime"):  # a running job's duration is not written while it grows: it is now, once
                job["duration"] = duration_text(_seconds_between(job["startTime"], record.end_time))
        return _restarting(facts, _ended({"jobStatus": job, "restUrl": ""}, record.state, record.diagnostics or None))
    if _deploy_interrupted(facts):
        lifecycle = facts.status["lifecycleState"]
        message = f"the deployment begun at {facts.status.get('deployTime')} did not finish (the operator restarted): deploying again"
        return Plan(actions=[DEPLOY], status={"lifecycleState": lifecycle}, events=[("Normal", "Redeploying", message)])
    recovered = _recovering(facts)
    if recovered is not None:
        return recovered
    message = "the job cluster is gone and left no result (its Deployment was deleted from outside?)"
    job["state"] = job.get("state") if job.get("state") in TERMINAL_JOB_STATES else "FAILED"
    return Plan(
        status={
            "jobStatus": job,
            "lifecycleState": Lifecycle.FAILED,
            "error": message,
            "failureReason": "ClusterLost",
            "restUrl": "",
        },
        events=[("Warning", "ClusterLost", message)],
    )


def _seconds_between(start: str, end: str) -> float:
    return (datetime.datetime.fromisoformat(end) - datetime.datetime.fromisoformat(start)).total_seconds()


def _before(end_time: str | None, deploy_time: str | None) -> bool:
    """Whether a job ended before a deployment began (both RFC 3339; False when either is unknown)."""
    if not end_time or not deploy_time:
        return False
    return datetime.datetime.fromisoformat(end_time) < datetime.datetime.fromisoformat(deploy_time)


def _ended(update: dict[str, Any], state: str, cause: str | None) -> Plan:
    lifecycle, reason = lifecycle_of_terminal_job(state)
    update.update(lifecycleState=lifecycle, error=(cause or "")[-ERROR_LIMIT:] if reason else "", failureReason=reason or "")
    job = update["jobStatus"]
    if reason:
        return Plan(
            status=update,
            events=[
                (
                    "Warning",
                    reason,
                    f"job {job.get('jobId')} {state}" + (f": {cause.strip().splitlines()[-1]}" if cause and cause.strip() else ""),
                )
            ],
        )
    return Plan(status=update, events=[("Normal", "JobFinished", f"job {job.get('jobId')} FINISHED in {job.get('duration', '?')}")])


def _restarting(facts: Facts, ended: Plan) -> Plan:
    """``ended`` (the plan of a job that ended), or, for a job that FAILED while ``kubernetes.operator.job.restart.failed``
    is on, its removal and a new deployment: from the failed job's checkpoints in last-state and savepoint mode (no
    savepoint can be taken of a failed job), fresh otherwise. As the suspension does, it clears ``deployedSpec``: the
    next look deploys the spec as a resumption."""
    if not facts.state.restart_failed or ended.status.get("failureReason") != "JobFailed":
        return ended
    upgrade = next_upgrade(dataclasses.replace(facts, status={**facts.status, **ended.status}))
    job = ended.status["jobStatus"]
    status = {**ended.status, "lifecycleState": Lifecycle.UPGRADING, "failureReason": "", "deployedSpec": "", "upgrade": upgrade}
    message = f"job {job.get('jobId')} FAILED; {RESTART_FAILED} is on: deploying it again" + kept_text(upgrade)
    return Plan(actions=[REMOVE], status=status, events=[*ended.events, ("Normal", "JobRestarting", message)])


def _recovering(facts: Facts) -> Plan | None:
    """The plan of a cluster deleted from outside (it left no result) whose streaming job can resume its checkpoints:
    deployed again, its job with the same JobID (``kubernetes.operator.jm-deployment-recovery.enabled``, on by
    default, as the Flink Kubernetes Operator recovers a missing JobManager Deployment); None when it cannot be (a
    batch or stateless job: running it again could repeat what it wrote)."""
    if not facts.state.jm_deployment_recovery or facts.state.upgrade_mode not in (LAST_STATE, SAVEPOINT):
        return None
    upgrade = next_upgrade(facts)
    if not upgrade or upgrade.get("mode") != LAST_STATE:
        return None
    message = "the job cluster is gone and left no result (its Deployment was deleted from outside?): deploying it again"
    status = {"lifecycleState": Lifecycle.UPGRADING, "upgrade": upgrade}
    return Plan(actions=[DEPLOY], status=status, events=[("Warning", "ClusterRecovering", message + kept_text(upgrade))])
