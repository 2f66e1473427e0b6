"""What to do for one FlinkJob, decided from facts alone: pure, and tested without a cluster.

:func:`plan` compares the spec (its digest), the last status and one observation
of the cluster with the lifecycle of ``flinkjob_status.py``, and returns the actions to take
(remove, deploy, remove the result, delete the resource, trigger a savepoint, dispose of
savepoints), the status fields to write and the events to post. The
:class:`~jobcluster.controller.reconciler.Reconciler` observes, calls it, and carries the plan out.

A streaming job's state is carried across deployments by its ``upgradeMode``
(``job_state.py``): in ``savepoint`` mode an upgrade or a suspension is a
sequence of reconciliations, each one step whose outcome the status records
before the next step is taken, so that an operator killed between any two
resumes from the status: the trigger is recorded (with the operator's own
trigger id, which Flink's REST API treats as idempotent), then triggered, then its
outcome (the savepoint's path) recorded, then the old cluster removed, then the
new one deployed from the path. ``last-state`` records the JobID to keep, then
removes and deploys. Batch jobs and ``stateless`` mode are upgraded as before.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
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
    MANUAL,
    PERIODIC,
    SAVEPOINT,
    UPGRADE,
    Restore,
    SavepointTrigger,
    StateSettings,
    checkpoint_info,
    completed_savepoint,
    failed_savepoint,
    is_streaming,
    kept_job_status,
    prune_history,
    restore_of,
    seconds_since,
)
from jobcluster.jobgraph.job_status import TERMINAL_JOB_STATES

ERROR_LIMIT = 2000  # characters of a failure cause kept in the status (its end: where Python puts the error)
RETRY_FIRST_DELAY = 5.0  # seconds between the first two attempts of a deployment that failed transiently
RETRY_MAX_DELAY = 60.0  # seconds: the longest wait between attempts (the delay doubles up to it)
UNRESPONSIVE_AFTER = 30.0  # seconds a JobManager that served REST may be silent before its job is RECONCILING

#: Actions a plan can ask for, in the order they are carried out.
REMOVE, DEPLOY, REMOVE_RESULT, DELETE_RESOURCE = "remove", "deploy", "remove-result", "delete-resource"
#: Actions carried out only once the plan's status is written (the status says what they are about to do, so an
#: operator killed after it repeats the same trigger, with the same id, and never loses a savepoint to dispose of).
TRIGGER_SAVEPOINT, DISPOSE_SAVEPOINTS = "trigger-savepoint", "dispose-savepoints"


@dataclass
class Plan:
    """What to do: ``actions`` (of REMOVE, DEPLOY, REMOVE_RESULT, DELETE_RESOURCE, TRIGGER_SAVEPOINT,
    DISPOSE_SAVEPOINTS), the status fields to write, and ``events`` as (type, reason, message); ``trigger``: the
    savepoint TRIGGER_SAVEPOINT triggers; ``dispose``: the savepoints DISPOSE_SAVEPOINTS disposes of; ``restore``:
    where DEPLOY starts the job from (None: fresh)."""

    actions: list[str] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    trigger: SavepointTrigger | None = None
    dispose: list[str] = field(default_factory=list)
    restore: Restore | None = None


@dataclass(frozen=True)
class Facts:
    """What :func:`plan` decides on: the resource's generation, its spec digest and deadlines, the desired
    ``job.state``, its last status, the observation (None when none was made) and the time."""

    generation: int | None
    spec_hash: str
    desired: str
    startup_deadline: float
    active_deadline: float | None
    ttl: float | None
    delete_after_ttl: bool
    status: Mapping[str, Any]
    observation: Observation | None
    now: datetime.datetime
    silent_for: float | None = None  # seconds the cluster's REST API has not answered (None: it answered last time)
    state: StateSettings = field(default_factory=StateSettings)  # how a streaming job's state is carried (job_state.py)
    trigger_id: str = ""  # the id of a savepoint this plan may trigger (32 hex digits, new for each reconciliation)


def _seconds_since(text: str | None, now: datetime.datetime) -> float | None:
    if not text:
        return None
    return (now - datetime.datetime.fromisoformat(text)).total_seconds()


def needs_observation(facts: Facts) -> bool:
    """Whether the cluster must be looked at: while a job of the current spec may run, and before a new
    spec is deployed where a cluster of the previous one may still run; not for a settled suspension or
    an ended job."""
    lifecycle = facts.status.get("lifecycleState")
    deployed = facts.status.get("deployedSpec")
    if facts.desired == "suspended":
        return lifecycle != Lifecycle.SUSPENDED and not _ended_as_deployed(facts)
    if deployed != facts.spec_hash:
        return bool(deployed) and lifecycle != Lifecycle.SUSPENDED and not retry_waiting(facts)
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
    decided = _plan(facts)
    if DEPLOY in decided.actions:
        decided.restore = restore_of({**facts.status, **decided.status}, facts.state)
    return decided


def _plan(facts: Facts) -> Plan:
    if facts.desired == "suspended":
        return _plan_suspended(facts)
    lifecycle = facts.status.get("lifecycleState")
    if facts.status.get("deployedSpec") != facts.spec_hash:
        return Plan() if retry_waiting(facts) else _plan_new_spec(facts)
    if _replacing_job(facts):
        return _plan_new_spec(facts)  # resumed while its suspension's savepoint was being taken: redeploy from it
    if lifecycle in (Lifecycle.FINISHED, Lifecycle.FAILED):
        return _plan_ended(facts)
    return _plan_observed(facts)


#: The reason of an upgrade refused because the job's checkpoints are not where the spec now says.
CHECKPOINTS_MOVED = "CheckpointDirectoryChanged"


def _replacing_job(facts: Facts) -> bool:
    """Whether the job that runs is being replaced: its stop-with-savepoint is pending (in savepoint mode: in another
    the removal abandons it, see :func:`_abandoning`) or has completed."""
    job = facts.status.get("jobStatus") or {}
    trigger = (job.get("savepointInfo") or {}).get("trigger") or {}
    upgrade = facts.status.get("upgrade") or {}
    stopped = bool(upgrade.get("savepointPath")) and upgrade.get("jobId") == job.get("jobId")
    return (trigger.get("triggerType") == UPGRADE and facts.state.upgrade_mode == SAVEPOINT) or stopped


def _abandoning(facts: Facts, job: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Before a removal: a savepoint still pending is abandoned, recorded in ``job`` (its ``jobStatus``) as that
    trigger's failure, so that it is never sent to the next cluster; its events. An upgrade's or suspension's own
    stop gets here only when the mode left savepoint while it ran; a manual or periodic one, when the mode does not
    wait for it."""
    info = job.get("savepointInfo") or {}
    trigger = info.get("trigger") or {}
    if not trigger:
        return []
    if trigger.get("triggerType") == UPGRADE:
        why = f"job.upgradeMode changed to {facts.state.upgrade_mode} while it ran"
    else:
        why = f"its job cluster is removed ({facts.state.upgrade_mode} mode does not wait for a savepoint)"
    message = f"the savepoint {trigger.get('triggerId')} was abandoned: {why}"
    job["savepointInfo"] = failed_savepoint(info, message, trigger, str(trigger.get("key") or ""), facts.now)
    return [("Warning", "SavepointAbandoned", message)]


def retry_waiting(facts: Facts) -> bool:
    """Whether a deployment of the current spec failed transiently and its next attempt is not due yet."""
    retry = facts.status.get("deployRetry") or {}
    due_in = -(_seconds_since(retry.get("nextAttemptTime"), facts.now) or 0.0)
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
    if facts.status.get("lifecycleState") == Lifecycle.SUSPENDED or _ended_as_deployed(facts):
        return Plan()  # nothing runs to suspend; an ended job keeps its result, and resuming does not run it again
    carried = _carry_state(facts, f"suspend:{facts.status.get('deployedSpec') or ''}", "suspension")
    if carried is not None:
        return carried
    job = {**(facts.status.get("jobStatus") or {}), "state": "SUSPENDED"}
    abandoned = _abandoning(facts, job)
    status = {"lifecycleState": Lifecycle.SUSPENDED, "jobStatus": job, "deployedSpec": "", "restUrl": "", "error": "", "deployRetry": None}
    upgrade = _next_upgrade(facts)
    if upgrade is not None:
        status["upgrade"] = upgrade
    return Plan(
        actions=[REMOVE],
        status=status,
        events=[*abandoned, ("Normal", "Suspended", "job.state is suspended: the job cluster is removed" + _kept(upgrade))],
    )


def _kept(upgrade: Mapping[str, Any] | None) -> str:
    """How the job's state is kept across the removal, for an event's message."""
    if not upgrade:
        return ""
    if upgrade.get("savepointPath"):
        return f"; the next deployment starts from savepoint {upgrade['savepointPath']}"
    return f"; the next deployment resumes job {upgrade.get('jobId')} from its checkpoints (last-state)"


def _next_upgrade(facts: Facts) -> dict[str, Any] | None:
    """The ``upgrade`` record of what the next deployment starts from: the one recorded; in last-state mode the JobID of
    the streaming job it replaces, and so in savepoint mode when no savepoint can be taken (its job has ended or its
    cluster is gone: the Flink Kubernetes Operator's last-state fallback); before a first deployment
    ``initialSavepointPath``; None: it starts fresh."""
    upgrade = facts.status.get("upgrade")
    if upgrade:
        return dict(upgrade)
    job = facts.status.get("jobStatus") or {}
    now = timestamp(facts.now)
    keeps_state = facts.state.upgrade_mode in (LAST_STATE, SAVEPOINT) and facts.state.checkpoint_directory
    if keeps_state and is_streaming(job) and job.get("jobId"):
        checkpoints = facts.status.get("deployedCheckpointDirectory") or facts.state.checkpoint_directory
        return {"mode": LAST_STATE, "jobId": job["jobId"], "checkpointDirectory": checkpoints, "requestTime": now}
    if facts.state.initial_savepoint_path and not facts.status.get("deployTime") and not facts.status.get("deployedSpec"):
        return {"mode": "initial", "savepointPath": facts.state.initial_savepoint_path, "requestTime": now}
    return None


def _carry_state(facts: Facts, key: str, purpose: str) -> Plan | None:
    """The step of an upgrade or suspension (``purpose``) in savepoint mode before the old cluster may go: a plan that
    triggers, follows or records its stop-with-savepoint, or waits; None once the cluster may be removed (the savepoint
    is recorded, or the job is a batch job, has ended, or its mode is not savepoint). ``key`` names what the savepoint
    is for: one that failed is not tried again for the same spec (the job keeps running on the old one)."""
    obs = facts.observation
    job = dict(facts.status.get("jobStatus") or {})
    if obs is not None and obs.job is not None:
        job.update(job_status_of(obs.job))
    upgrade = facts.status.get("upgrade") or {}
    if facts.state.upgrade_mode != SAVEPOINT or not is_streaming(job) or upgrade.get("savepointPath"):
        return None
    info = dict(job.get("savepointInfo") or {})
    trigger = info.get("trigger") or {}
    if trigger:
        return _follow_trigger(facts, job, info, trigger, purpose)
    if job.get("state") in TERMINAL_JOB_STATES or (obs is not None and not obs.exists):
        return None  # nothing runs to take a savepoint of: the next job resumes this one's checkpoints (_next_upgrade)
    failure = info.get("lastFailure") or {}
    if failure.get("key") == key or obs is None or obs.job is None or job.get("state") != "RUNNING":
        waiting = _plan_observed(facts) if obs is not None and obs.exists else Plan()
        if failure.get("key") == key:
            waiting.status["error"] = f"the {purpose} was not carried out: {failure.get('message')}; {_RETRY_ADVICE}"
        else:
            waiting.status["error"] = (
                f"the {purpose} waits for the job to run: upgradeMode savepoint takes a savepoint of a RUNNING job "
                f"(it is {job.get('state') or 'not answering'}); {_RETRY_ADVICE}"
            )
        return waiting
    assert facts.trigger_id, "a plan that may trigger a savepoint needs Facts.trigger_id"
    stop = SavepointTrigger(facts.trigger_id, str(job["jobId"]), UPGRADE, True, facts.state.savepoint_directory)
    record = _trigger_record(stop, facts.now, key)
    job["savepointInfo"] = {**info, "trigger": record}
    return Plan(
        actions=[TRIGGER_SAVEPOINT],
        trigger=stop,
        status={"lifecycleState": Lifecycle.UPGRADING, "jobStatus": job, "error": ""},
        events=[
            ("Normal", "SavepointTriggered", f"stop-with-savepoint of job {stop.job_id} for the {purpose} (trigger {stop.trigger_id})")
        ],
    )


_RETRY_ADVICE = "change the spec to try again, or set spec.job.upgradeMode: last-state to go on from the job's checkpoints"


def _trigger_record(trigger: SavepointTrigger, now: datetime.datetime, key: str) -> dict[str, Any]:
    """``savepointInfo.trigger``: the pending trigger as the status keeps it."""
    return {
        "triggerId": trigger.trigger_id,
        "triggerType": trigger.trigger_type,
        "triggerTimestamp": timestamp(now),
        "stop": trigger.stop,
        "jobId": trigger.job_id,
        "key": key,
    }


def _trigger_of(record: Mapping[str, Any], settings: StateSettings) -> SavepointTrigger:
    return SavepointTrigger(
        str(record["triggerId"]),
        str(record.get("jobId")),
        str(record.get("triggerType")),
        bool(record.get("stop")),
        settings.savepoint_directory,
    )


def _outcome(facts: Facts, info: Mapping[str, Any], trigger: Mapping[str, Any]) -> tuple[str, dict[str, Any], list[tuple[str, str, str]]]:
    """What became of the pending ``trigger``: ``(outcome, savepointInfo, events)``, outcome one of ``pending``,
    ``unknown`` (the cluster never received it: trigger it again, same id), ``completed``, ``failed``, ``lost`` (a
    stop-with-savepoint whose cluster ended before its outcome was read)."""
    obs = facts.observation
    poll = obs.savepoint if obs is not None and obs.savepoint is not None and obs.savepoint.trigger_id == trigger.get("triggerId") else None
    kind = str(trigger.get("triggerType") or "").lower()
    what = f"the {kind} savepoint of job {trigger.get('jobId')} (trigger {trigger.get('triggerId')})"
    if poll is not None and poll.state == "COMPLETED" and poll.location:
        done = completed_savepoint(info, poll.location, trigger, facts.now)
        return "completed", done, [("Normal", "SavepointCompleted", f"{what} completed: {poll.location}")]
    waited = seconds_since(trigger.get("triggerTimestamp"), facts.now) or 0.0
    if poll is not None and poll.state == "FAILED":
        message = f"{what} failed: {poll.failure or 'no cause given'}"
    elif waited > facts.state.trigger_timeout:
        message = f"{what} did not complete within {facts.state.trigger_timeout:.0f} s (kubernetes.operator.savepoint.trigger.timeout)"
    elif obs is not None and not obs.exists:
        return "lost", dict(info), []
    elif poll is not None and poll.state == "UNKNOWN":
        return "unknown", dict(info), []
    else:
        return "pending", dict(info), []
    failed = failed_savepoint(info, message[-ERROR_LIMIT:], trigger, str(trigger.get("key") or ""), facts.now)
    return "failed", failed, [("Warning", "SavepointFailed", message)]


def _follow_trigger(facts: Facts, job: dict[str, Any], info: dict[str, Any], trigger: Mapping[str, Any], purpose: str) -> Plan:
    """An upgrade or suspension whose job has a savepoint pending (its own stop-with-savepoint, or a manual or periodic
    one it waits for): record the outcome, trigger again what the cluster never received, or wait."""
    outcome, info, events = _outcome(facts, info, trigger)
    job["savepointInfo"] = info
    status: dict[str, Any] = {"lifecycleState": Lifecycle.UPGRADING, "jobStatus": job}
    own = trigger.get("triggerType") == UPGRADE
    if outcome == "pending":
        return Plan(status=status)
    if outcome == "unknown":
        return Plan(actions=[TRIGGER_SAVEPOINT], trigger=_trigger_of(trigger, facts.state), status=status)
    if outcome == "completed" and own:
        location = info["lastSavepoint"]["location"]
        status["upgrade"] = {
            "mode": SAVEPOINT,
            "jobId": trigger.get("jobId"),
            "savepointPath": location,
            "requestTime": trigger.get("triggerTimestamp"),
        }
        return Plan(status=status, events=events)
    if outcome == "lost":
        job["savepointInfo"] = {**info, "trigger": None}
        if own and facts.state.checkpoint_directory:
            # the stop completed (the cluster ended) but its path was not read: the checkpoint root holds the same state
            checkpoints = facts.status.get("deployedCheckpointDirectory") or facts.state.checkpoint_directory
            status["upgrade"] = {
                "mode": LAST_STATE,
                "jobId": trigger.get("jobId"),
                "checkpointDirectory": checkpoints,
                "requestTime": trigger.get("triggerTimestamp"),
            }
            message = (
                f"the job cluster ended before the outcome of its stop-with-savepoint was read; the {purpose} goes on from job "
                f"{trigger.get('jobId')}'s checkpoints in {facts.state.checkpoint_directory}/{trigger.get('jobId')}"
            )
            return Plan(status=status, events=[("Warning", "SavepointLost", message)])
        message = f"the job cluster ended before the outcome of savepoint trigger {trigger.get('triggerId')} was read"
        job["savepointInfo"] = failed_savepoint(info, message, trigger, str(trigger.get("key") or ""), facts.now)
        return Plan(status=status, events=[("Warning", "SavepointFailed", message)])
    if outcome == "failed" and own:
        status["lifecycleState"] = Lifecycle.STABLE if job.get("state") == "RUNNING" else Lifecycle.DEPLOYED
        status["error"] = f"the {purpose} was not carried out: {info['lastFailure']['message']}; {_RETRY_ADVICE}"
    return Plan(status=status, events=events)  # a manual or periodic one ended: the next step triggers the stop


def _plan_new_spec(facts: Facts) -> Plan:
    """A spec never deployed: remove what runs for an older spec first (UPGRADING), then deploy."""
    obs = facts.observation
    previous = facts.status.get("deployedSpec")
    if obs is not None and previous:
        carried = _carry_state(facts, f"upgrade:{facts.spec_hash}", "upgrade")
        if carried is not None:
            return carried
    if obs is not None and obs.exists and previous:
        upgrade = _next_upgrade(facts)
        moved = _checkpoints_moved(facts, upgrade)
        if moved is not None:  # the job runs on: nothing of it is lost for the edit
            waiting = _plan_observed(facts)
            waiting.status.update(error=moved, failureReason=CHECKPOINTS_MOVED)
            if facts.status.get("error") != moved:
                waiting.events.append(("Warning", CHECKPOINTS_MOVED, moved))
            return waiting
        kept = kept_job_status(facts.status.get("jobStatus"))
        abandoned = _abandoning(facts, kept)
        status: dict[str, Any] = {"lifecycleState": Lifecycle.UPGRADING, "jobStatus": replacing(facts.status.get("jobStatus"), kept)}
        if upgrade is not None:
            status["upgrade"] = upgrade
        why = "the spec changed" if previous != facts.spec_hash else "the job is resumed"
        return Plan(
            actions=[REMOVE],
            status=status,
            events=[*abandoned, ("Normal", "Upgrading", f"{why}: removing the job cluster of the previous spec" + _kept(upgrade))],
        )
    upgrading = bool(previous) or facts.status.get("lifecycleState") in (
        Lifecycle.UPGRADING,
        Lifecycle.FINISHED,
        Lifecycle.FAILED,
    )
    status = {"lifecycleState": Lifecycle.UPGRADING if upgrading else Lifecycle.CREATED}
    upgrade = _next_upgrade(facts)
    moved = _checkpoints_moved(facts, upgrade)
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


def _checkpoints_moved(facts: Facts, upgrade: Mapping[str, Any] | None) -> str | None:
    """Why a last-state upgrade (or resumption) cannot go on: the job it resumes checkpoints in another directory
    than the spec's ``execution.checkpointing.dir``, where its new cluster would find no state; None when it can."""
    if not upgrade or upgrade.get("mode") != LAST_STATE or upgrade.get("savepointPath"):
        return None
    old, new = upgrade.get("checkpointDirectory"), facts.state.checkpoint_directory
    if not old or old == new:
        return None
    return (
        f"last-state resumes job {upgrade.get('jobId')} from its checkpoints in {old}, but execution.checkpointing.dir is now "
        f"{new}, where the job would start with no state: revert execution.checkpointing.dir, or change it in savepoint mode "
        "(job.upgradeMode: savepoint), whose savepoint carries the state into the new directory"
    )


def _plan_ended(facts: Facts) -> Plan:
    job = facts.status.get("jobStatus") or {}
    if facts.ttl is None or facts.status.get("ttlExpired"):
        return Plan()
    since_end = _seconds_since(facts.status.get("terminationTime") or job.get("endTime"), facts.now)
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
        return _ended(update, state, obs.failure_cause)
    lifecycle = Lifecycle.STABLE if state == "RUNNING" else Lifecycle.DEPLOYED
    update["lifecycleState"] = lifecycle
    ran_at = timestamp(facts.now) if state == "RUNNING" else _ran_at(obs.job)
    if ran_at and not facts.status.get("firstRunningTime"):
        update["firstRunningTime"] = ran_at  # the startup deadline is met for this deployment
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
        _routine_savepoints(facts, job, observed)
    return observed


def _routine_savepoints(facts: Facts, job: dict[str, Any], observed: Plan) -> None:
    """Add to ``observed`` (the plan of a streaming job that runs on) what its savepoints need: the outcome of a
    pending manual or periodic one (a failure leaves the job running, with a Warning and ``lastFailure``), a trigger
    again of one the cluster never received, a new one when ``savepointTriggerNonce`` changed or the periodic interval
    passed, and the disposal of those the history limits drop."""
    info = dict(job.get("savepointInfo") or {})
    trigger = info.get("trigger") or {}
    running = job.get("state") == "RUNNING" and facts.observation is not None and facts.observation.job is not None
    if trigger:
        outcome, info, events = _outcome(facts, info, trigger)
        observed.events.extend(events)
        if outcome == "unknown" and running:
            observed.actions.append(TRIGGER_SAVEPOINT)
            observed.trigger = _trigger_of(trigger, facts.state)
    elif running:
        settings = facts.state
        nonce = settings.savepoint_trigger_nonce
        since_periodic = seconds_since(info.get("lastPeriodicSavepointTimestamp") or facts.status.get("firstRunningTime"), facts.now)
        kind = None
        if nonce is not None and nonce != info.get("lastTriggerNonce"):
            kind, key = MANUAL, f"manual:{nonce}"
            info["lastTriggerNonce"] = nonce
        elif settings.periodic_interval and since_periodic is not None and since_periodic >= settings.periodic_interval:
            kind, key = PERIODIC, "periodic"
            info["lastPeriodicSavepointTimestamp"] = timestamp(facts.now)
        if kind is not None:
            assert facts.trigger_id, "a plan that may trigger a savepoint needs Facts.trigger_id"
            new = SavepointTrigger(facts.trigger_id, str(job.get("jobId")), kind, False, settings.savepoint_directory)
            info["trigger"] = {**_trigger_record(new, facts.now, key), **({"triggerNonce": nonce} if kind == MANUAL else {})}
            observed.actions.append(TRIGGER_SAVEPOINT)
            observed.trigger = new
            observed.events.append(
                ("Normal", "SavepointTriggered", f"{kind.lower()} savepoint of job {new.job_id} (trigger {new.trigger_id})")
            )
    history = info.get("savepointHistory") or []
    kept, dispose = prune_history(history, (info.get("lastSavepoint") or {}).get("location"), facts.state, facts.now)
    if len(kept) != len(history):
        info["savepointHistory"] = kept
    if dispose:
        observed.actions.append(DISPOSE_SAVEPOINTS)
        observed.dispose = dispose
        observed.events.append(("Normal", "SavepointsDisposed", f"savepoint history limit: disposing of {', '.join(dispose)}"))
    if info != (job.get("savepointInfo") or {}):
        job["savepointInfo"] = info
        observed.status["jobStatus"] = job


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
    deployed_for = _seconds_since(facts.status.get("deployTime"), facts.now)
    started = bool(facts.status.get("firstRunningTime")) or _ran_at(obs.job) is not None
    if not started and state != "RUNNING" and deployed_for is not None and deployed_for > facts.startup_deadline:
        why = obs.pending or f"the job is {state or 'not started'}"
        return "StartupDeadlineExceeded", f"not RUNNING within startupDeadlineSeconds ({facts.startup_deadline:.0f} s): {why}"
    running_for = _seconds_since(job.get("startTime"), facts.now)
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
        return _ended({"jobStatus": job, "restUrl": ""}, record.state, record.diagnostics or None)
    if _deploy_interrupted(facts):
        lifecycle = facts.status["lifecycleState"]
        message = f"the deployment begun at {facts.status.get('deployTime')} did not finish (the operator restarted): deploying again"
        return Plan(actions=[DEPLOY], status={"lifecycleState": lifecycle}, events=[("Normal", "Redeploying", message)])
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
