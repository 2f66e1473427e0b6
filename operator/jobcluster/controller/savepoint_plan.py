"""A streaming job's savepoints in a plan: the steps that carry its state across an upgrade or a suspension, and
its manual and periodic savepoints. Pure, as ``plan.py``, which calls it.

In ``savepoint`` mode an upgrade or a suspension is a sequence of reconciliations, each one step whose outcome the
status records before the next step is taken (:func:`carry_state`): the stop-with-savepoint is recorded (with the
operator's own trigger id, which Flink's REST API treats as idempotent), then triggered, then its outcome (the
savepoint's path) recorded in ``status.upgrade`` (:func:`next_upgrade`), and only then may the old cluster go.
``last-state`` records the JobID whose checkpoints the next job resumes. A savepoint that fails is not tried again
for the same spec: the job runs on, with the reason in the status.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

from jobcluster.controller.flinkjob_status import Lifecycle, job_status_of, timestamp
from jobcluster.controller.job_state import (
    LAST_STATE,
    MANUAL,
    PERIODIC,
    SAVEPOINT,
    UPGRADE,
    SavepointTrigger,
    StateSettings,
    completed_savepoint,
    failed_savepoint,
    is_streaming,
    prune_history,
    seconds_since,
)
from jobcluster.controller.plan_types import DISPOSE_SAVEPOINTS, ERROR_LIMIT, TRIGGER_SAVEPOINT, Facts, Plan
from jobcluster.jobgraph.job_status import TERMINAL_JOB_STATES

#: The reason of an upgrade refused because the job's checkpoints are not where the spec now says.
CHECKPOINTS_MOVED = "CheckpointDirectoryChanged"


def replacing_job(facts: Facts) -> bool:
    """Whether the job that runs is being replaced: its stop-with-savepoint is pending (in savepoint mode: in another
    the removal abandons it, see :func:`abandoning`) or has completed."""
    job = facts.status.get("jobStatus") or {}
    trigger = (job.get("savepointInfo") or {}).get("trigger") or {}
    upgrade = facts.status.get("upgrade") or {}
    stopped = bool(upgrade.get("savepointPath")) and upgrade.get("jobId") == job.get("jobId")
    return (trigger.get("triggerType") == UPGRADE and facts.state.upgrade_mode == SAVEPOINT) or stopped


def abandoning(facts: Facts, job: dict[str, Any]) -> list[tuple[str, str, str]]:
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


def kept_text(upgrade: Mapping[str, Any] | None) -> str:
    """How the job's state is kept across the removal, for an event's message."""
    if not upgrade:
        return ""
    if upgrade.get("savepointPath"):
        return f"; the next deployment starts from savepoint {upgrade['savepointPath']}"
    return f"; the next deployment resumes job {upgrade.get('jobId')} from its checkpoints (last-state)"


#: ``upgrade.mode`` of a redeployment from ``initialSavepointPath`` asked for by a new ``savepointRedeployNonce``.
REDEPLOY = "redeploy"


def redeploying(facts: Facts) -> bool:
    """Whether the spec asks for a redeployment from ``initialSavepointPath`` (the Flink Kubernetes Operator's
    ``savepointRedeployNonce``): its nonce is not the one the last deployment was made with. The job that runs is then
    removed with no savepoint of it taken: the state it starts from is the one named."""
    nonce = facts.state.savepoint_redeploy_nonce
    return nonce is not None and nonce != facts.status.get("savepointRedeployNonce") and bool(facts.status.get("deployTime"))


def next_upgrade(facts: Facts) -> dict[str, Any] | None:
    """The ``upgrade`` record of what the next deployment starts from: ``initialSavepointPath`` for a redeployment
    (:func:`redeploying`); the one recorded; in last-state mode the JobID of the streaming job it replaces, and so in
    savepoint mode when no savepoint can be taken (its job has ended or its cluster is gone: the Flink Kubernetes
    Operator's last-state fallback); before a first deployment ``initialSavepointPath``; None: it starts fresh."""
    upgrade = facts.status.get("upgrade")
    now = timestamp(facts.now)
    nonce = facts.state.savepoint_redeploy_nonce
    if redeploying(facts) and (not upgrade or upgrade.get("mode") != REDEPLOY or upgrade.get("nonce") != nonce):
        return {"mode": REDEPLOY, "savepointPath": facts.state.initial_savepoint_path, "nonce": nonce, "requestTime": now}
    if upgrade:
        return dict(upgrade)
    job = facts.status.get("jobStatus") or {}
    keeps_state = facts.state.upgrade_mode in (LAST_STATE, SAVEPOINT) and facts.state.checkpoint_directory
    if keeps_state and is_streaming(job) and job.get("jobId"):
        checkpoints = facts.status.get("deployedCheckpointDirectory") or facts.state.checkpoint_directory
        return {"mode": LAST_STATE, "jobId": job["jobId"], "checkpointDirectory": checkpoints, "requestTime": now}
    if facts.state.initial_savepoint_path and not facts.status.get("deployTime") and not facts.status.get("deployedSpec"):
        return {"mode": "initial", "savepointPath": facts.state.initial_savepoint_path, "requestTime": now}
    return None


def carry_state(facts: Facts, key: str, purpose: str, observed: Callable[[Facts], Plan]) -> Plan | None:
    """The step of an upgrade or suspension (``purpose``) in savepoint mode before the old cluster may go: a plan that
    triggers, follows or records its stop-with-savepoint, or waits (``observed``: the plan of the job that runs on
    meanwhile); None once the cluster may be removed (the savepoint is recorded, or the job is a batch job, has
    ended, or its mode is not savepoint). ``key`` names what the savepoint is for: one that failed is not tried
    again for the same spec (the job keeps running on the old one)."""
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
        return follow_trigger(facts, job, info, trigger, purpose)
    if job.get("state") in TERMINAL_JOB_STATES or (obs is not None and not obs.exists):
        return None  # nothing runs to take a savepoint of: the next job resumes this one's checkpoints (next_upgrade)
    failure = info.get("lastFailure") or {}
    if failure.get("key") == key or obs is None or obs.job is None or job.get("state") != "RUNNING":
        waiting = observed(facts) if obs is not None and obs.exists else Plan()
        if failure.get("key") == key:
            waiting.status["error"] = f"the {purpose} was not carried out: {failure.get('message')}; {RETRY_ADVICE}"
        else:
            waiting.status["error"] = (
                f"the {purpose} waits for the job to run: upgradeMode savepoint takes a savepoint of a RUNNING job "
                f"(it is {job.get('state') or 'not answering'}); {RETRY_ADVICE}"
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


RETRY_ADVICE = "change the spec to try again, or set spec.job.upgradeMode: last-state to go on from the job's checkpoints"


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


def trigger_outcome(
    facts: Facts, info: Mapping[str, Any], trigger: Mapping[str, Any]
) -> tuple[str, dict[str, Any], list[tuple[str, str, str]]]:
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


def follow_trigger(facts: Facts, job: dict[str, Any], info: dict[str, Any], trigger: Mapping[str, Any], purpose: str) -> Plan:
    """An upgrade or suspension whose job has a savepoint pending (its own stop-with-savepoint, or a manual or periodic
    one it waits for): record the outcome, trigger again what the cluster never received, or wait."""
    outcome, info, events = trigger_outcome(facts, info, trigger)
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
        status["error"] = f"the {purpose} was not carried out: {info['lastFailure']['message']}; {RETRY_ADVICE}"
    return Plan(status=status, events=events)  # a manual or periodic one ended: the next step triggers the stop


def checkpoints_moved(facts: Facts, upgrade: Mapping[str, Any] | None) -> str | None:
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


def routine_savepoints(facts: Facts, job: dict[str, Any], observed: Plan) -> None:
    """Add to ``observed`` (the plan of a streaming job that runs on) what its savepoints need: the outcome of a
    pending manual or periodic one (a failure leaves the job running, with a Warning and ``lastFailure``), a trigger
    again of one the cluster never received, a new one when ``savepointTriggerNonce`` changed or the periodic interval
    passed, and the disposal of those the history limits drop."""
    info = dict(job.get("savepointInfo") or {})
    trigger = info.get("trigger") or {}
    running = job.get("state") == "RUNNING" and facts.observation is not None and facts.observation.job is not None
    if trigger:
        outcome, info, events = trigger_outcome(facts, info, trigger)
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
