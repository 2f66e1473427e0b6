"""A streaming FlinkJob's state across deployments: upgrade modes, savepoint settings and records (pure).

What the planner (``plan.py``) needs to carry a streaming job's state from one
deployment to the next: the settings of the spec and its configuration
(:class:`StateSettings`, checked by :func:`state_settings`), the records it keeps in
the status (``jobStatus.savepointInfo``, ``jobStatus.checkpointInfo``, the
operator's ``upgrade`` record) and the decisions on them that need no cluster:
which savepoints the history limits dispose of, where the next deployment
restores from.  Nothing here talks to an API.

Status records (see docs/operations/flinkjob-savepoints.md):

- ``jobStatus.savepointInfo``: ``lastSavepoint`` {location, timeStamp, triggerType,
  triggerNonce}, ``trigger`` (the one pending: triggerId, triggerType,
  triggerTimestamp, triggerNonce, stop, jobId), ``lastFailure`` (triggerType,
  triggerTimestamp, failureTimestamp, message, key), ``savepointHistory`` (oldest
  first), ``lastPeriodicSavepointTimestamp``, ``lastTriggerNonce``;
- ``jobStatus.checkpointInfo``: each query's last committed micro-batch and when;
- ``jobStatus.upgradeSavepointPath``: the savepoint the current deployment started from;
- ``upgrade`` (the operator's own): what the next deployment starts from, written
  before the old cluster is removed and dropped once the new job runs: ``mode``,
  ``jobId`` (the job replaced; last-state keeps it), ``savepointPath`` (once taken),
  ``requestTime``.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.config.values import parse_duration
from jobcluster.controller.flinkjob_status import from_epoch_ms, timestamp
from jobcluster.controller.resource import JobSpec

STATELESS, SAVEPOINT, LAST_STATE = "stateless", "savepoint", "last-state"
UPGRADE_MODES = (STATELESS, SAVEPOINT, LAST_STATE)

#: ``savepointInfo`` trigger types (the Flink Kubernetes Operator's SnapshotTriggerType names).
MANUAL, PERIODIC, UPGRADE = "MANUAL", "PERIODIC", "UPGRADE"

PERIODIC_SAVEPOINT_INTERVAL = "kubernetes.operator.periodic.savepoint.interval"
HISTORY_MAX_COUNT = "kubernetes.operator.savepoint.history.max.count"
HISTORY_MAX_AGE = "kubernetes.operator.savepoint.history.max.age"
TRIGGER_TIMEOUT = "kubernetes.operator.savepoint.trigger.timeout"
#: Whether savepoints the history limits drop are disposed of (the Flink Kubernetes Operator's option; off by default).
DISPOSE_ON_DELETE = "kubernetes.operator.savepoint.dispose-on-delete"
#: Whether a job that FAILED is deployed again (the Flink Kubernetes Operator's option; off by default).
RESTART_FAILED = "kubernetes.operator.job.restart.failed"
#: Whether a cluster deleted from outside (its JobManager Deployment) is deployed again, resuming its job's
#: checkpoints (the Flink Kubernetes Operator's option; on by default).
JM_DEPLOYMENT_RECOVERY = "kubernetes.operator.jm-deployment-recovery.enabled"
#: How long what is left of an ended job's cluster stays, where ``spec.ttlSecondsAfterFinished`` says nothing (the
#: Flink Kubernetes Operator's option; here unset by default: an ended FlinkJob with a TTL to run out keeps a timer).
SHUTDOWN_TTL = "kubernetes.operator.jm-deployment.shutdown-ttl"
#: Whether an upgraded job that does not become STABLE in time is rolled back to the last stable spec (the Flink
#: Kubernetes Operator's options and defaults: off; 5 min).
ROLLBACK_ENABLED = "kubernetes.operator.deployment.rollback.enabled"
READINESS_TIMEOUT = "kubernetes.operator.deployment.readiness.timeout"
DEFAULT_READINESS_TIMEOUT = 300.0
#: Whether a FlinkJob is deleted once its TTL has passed, where ``spec.deleteAfterTtl`` says nothing (ours).
DELETE_AFTER_TTL = "jobcluster.operator.delete-after-ttl"
DEFAULT_HISTORY_MAX_COUNT = 10
DEFAULT_HISTORY_MAX_AGE = 24 * 3600.0
DEFAULT_TRIGGER_TIMEOUT = 600.0
CHECKPOINT_INFO_INTERVAL = 60.0  # seconds: checkpointInfo is written at most this often (a micro-batch commits every few seconds)

#: Keys of ``jobStatus`` that describe the job's state rather than one run of it: kept when a new deployment begins.
KEPT_JOB_STATUS = ("savepointInfo", "checkpointInfo", "upgradeSavepointPath", "jobType")

#: What the CRD's rule and the operator say of savepoint mode without a savepoint directory.
SAVEPOINT_DIRECTORY_RULE = (
    "spec.job.upgradeMode savepoint needs a savepoint directory: set execution.checkpointing.savepoint-dir in "
    "spec.flinkConfiguration (or in the operator's defaultConfiguration)"
)
#: What the operator says of savepointRedeployNonce without initialSavepointPath.
REDEPLOY_NONCE_RULE = (
    "spec.job.savepointRedeployNonce redeploys the job from spec.job.initialSavepointPath, which is not set: set it "
    "to the savepoint to start from, or leave savepointRedeployNonce unset"
)
#: ... and of savepoint or last-state without a checkpoint directory (the restored queries checkpoint there).
CHECKPOINT_DIRECTORY_RULE = (
    "spec.job.upgradeMode savepoint and last-state need a checkpoint directory, where the job's queries resume from: "
    "set execution.checkpointing.dir in spec.flinkConfiguration (or in the operator's defaultConfiguration)"
)


@dataclass(frozen=True)
class StateSettings:
    """How a FlinkJob's state is carried and its lifecycle runs: its upgrade mode, savepoint nonces and directories,
    and the operator's ``kubernetes.operator.*`` options (durations in seconds; None: off): savepoints, the restart
    of a FAILED job, the recovery of a cluster deleted from outside, the default TTL."""

    upgrade_mode: str = STATELESS
    savepoint_trigger_nonce: int | None = None
    savepoint_redeploy_nonce: int | None = None
    initial_savepoint_path: str | None = None
    allow_non_restored_state: bool = False
    savepoint_directory: str | None = None
    checkpoint_directory: str | None = None
    periodic_interval: float | None = None
    history_max_count: int = DEFAULT_HISTORY_MAX_COUNT
    history_max_age: float | None = DEFAULT_HISTORY_MAX_AGE
    trigger_timeout: float = DEFAULT_TRIGGER_TIMEOUT
    dispose_on_delete: bool = False
    restart_failed: bool = False
    jm_deployment_recovery: bool = True
    shutdown_ttl: float | None = None
    delete_after_ttl: bool = False
    rollback_enabled: bool = False
    readiness_timeout: float = DEFAULT_READINESS_TIMEOUT


@dataclass(frozen=True)
class SavepointTrigger:
    """A savepoint to trigger (``TRIGGER_SAVEPOINT``): the operator's own trigger id (Flink's idempotent ``triggerId``,
    so a trigger repeated after an operator restart is the same operation), of job ``job_id``; ``stop``: stop-with-savepoint."""

    trigger_id: str
    job_id: str
    trigger_type: str
    stop: bool
    directory: str | None


@dataclass(frozen=True)
class SavepointPoll:
    """What the cluster says of a pending trigger: ``state`` UNKNOWN (it never heard of it), IN_PROGRESS, COMPLETED
    (``location``) or FAILED (``failure``)."""

    trigger_id: str
    state: str
    location: str | None = None
    failure: str | None = None


@dataclass(frozen=True)
class Restore:
    """Where a deployment starts from: a savepoint ``path`` (``execution.state-recovery.path``), or the JobID
    ``job_id`` of the job it replaces (last-state: its checkpoint root ``<dir>/<job-id>``), or neither."""

    path: str | None = None
    allow_non_restored_state: bool = False
    job_id: str | None = None


def state_settings(spec_job: Any, flink_configuration: Mapping[str, str], defaults: Mapping[str, str]) -> StateSettings:
    """The state settings of a FlinkJob's ``spec.job`` (a ``resource.JobSpec``) under its configuration (the
    operator's defaults, then ``flinkConfiguration``).

    Raises:
        InvalidSpecError: savepoint mode without a savepoint directory (:data:`SAVEPOINT_DIRECTORY_RULE`), last-state
            without a checkpoint directory (:data:`CHECKPOINT_DIRECTORY_RULE`), ``savepointRedeployNonce`` without
            ``initialSavepointPath`` (:data:`REDEPLOY_NONCE_RULE`), or an option of ours that is not a duration,
            count or flag (reason ``InvalidSpec``).
    """
    config = Configuration({**defaults, **flink_configuration})
    savepoint_dir = config.get(options.SAVEPOINT_DIRECTORY) or None
    checkpoint_dir = config.get(options.CHECKPOINTS_DIRECTORY) or None
    mode = spec_job.upgrade_mode
    if mode == SAVEPOINT and not savepoint_dir:
        raise InvalidSpecError(SAVEPOINT_DIRECTORY_RULE, reason="SavepointDirectoryMissing")
    if mode in (SAVEPOINT, LAST_STATE) and not checkpoint_dir:
        raise InvalidSpecError(CHECKPOINT_DIRECTORY_RULE, reason="CheckpointDirectoryMissing")
    if spec_job.savepoint_redeploy_nonce is not None and not spec_job.initial_savepoint_path:
        raise InvalidSpecError(REDEPLOY_NONCE_RULE)
    merged = {**defaults, **flink_configuration}
    interval = _duration(merged, PERIODIC_SAVEPOINT_INTERVAL, None)
    return StateSettings(
        upgrade_mode=mode,
        savepoint_trigger_nonce=spec_job.savepoint_trigger_nonce,
        savepoint_redeploy_nonce=spec_job.savepoint_redeploy_nonce,
        initial_savepoint_path=spec_job.initial_savepoint_path or None,
        allow_non_restored_state=spec_job.allow_non_restored_state,
        savepoint_directory=savepoint_dir,
        checkpoint_directory=checkpoint_dir,
        periodic_interval=interval or None,  # 0 turns periodic savepoints off, as in Flink's operator
        history_max_count=_count(merged, HISTORY_MAX_COUNT, DEFAULT_HISTORY_MAX_COUNT),
        history_max_age=_duration(merged, HISTORY_MAX_AGE, DEFAULT_HISTORY_MAX_AGE) or None,
        trigger_timeout=_duration(merged, TRIGGER_TIMEOUT, DEFAULT_TRIGGER_TIMEOUT) or DEFAULT_TRIGGER_TIMEOUT,
        dispose_on_delete=_flag(merged, DISPOSE_ON_DELETE),
        restart_failed=_flag(merged, RESTART_FAILED),
        jm_deployment_recovery=_flag(merged, JM_DEPLOYMENT_RECOVERY, default=True),
        shutdown_ttl=_duration(merged, SHUTDOWN_TTL, None),
        delete_after_ttl=_flag(merged, DELETE_AFTER_TTL),
        rollback_enabled=_flag(merged, ROLLBACK_ENABLED),
        readiness_timeout=_duration(merged, READINESS_TIMEOUT, DEFAULT_READINESS_TIMEOUT) or DEFAULT_READINESS_TIMEOUT,
    )


def check_defaults(defaults: Mapping[str, str]) -> None:
    """The operator's default configuration checked as :func:`state_settings` checks a FlinkJob's: InvalidSpecError
    when one of its options of ours is not a duration or count (every FlinkJob would be refused for it)."""
    state_settings(JobSpec(), {}, defaults)


def _duration(config: Mapping[str, str], key: str, default: float | None) -> float | None:
    text = config.get(key)
    if text is None or str(text).strip() == "":
        return default
    try:
        return parse_duration(str(text))
    except ValueError as exc:
        raise InvalidSpecError(f"{key}: {exc}") from None


def _flag(config: Mapping[str, str], key: str, default: bool = False) -> bool:
    text = str(config.get(key) or str(default)).strip().lower()
    if text not in ("true", "false"):
        raise InvalidSpecError(f"{key}: {config.get(key)!r} is not true or false")
    return text == "true"


def _count(config: Mapping[str, str], key: str, default: int) -> int:
    text = config.get(key)
    if text is None or str(text).strip() == "":
        return default
    try:
        value = int(str(text).strip())
    except ValueError:
        value = -1
    if value < 1:
        raise InvalidSpecError(f"{key}: {text!r} is not a count of at least 1")
    return value


def seconds_since(text: str | None, now: datetime.datetime) -> float | None:
    """Seconds from the RFC 3339 time ``text`` to ``now`` (None when ``text`` is empty)."""
    if not text:
        return None
    return (now - datetime.datetime.fromisoformat(text)).total_seconds()


def kept_job_status(job: Mapping[str, Any] | None) -> dict[str, Any]:
    """What of ``jobStatus`` outlives a deployment (:data:`KEPT_JOB_STATUS`)."""
    return {key: job[key] for key in KEPT_JOB_STATUS if job and job.get(key) is not None}


def is_streaming(job: Mapping[str, Any] | None) -> bool:
    """Whether the FlinkJob's job was seen running streaming queries (``job-type: STREAMING``)."""
    return bool(job) and (job or {}).get("jobType") == "STREAMING"


def checkpoint_info(details: Mapping[str, Any], previous: Mapping[str, Any] | None, now: datetime.datetime) -> dict[str, Any] | None:
    """``jobStatus.checkpointInfo`` from a job's details (``streaming.queries``): each named query's last committed
    micro-batch and when, and the latest commit of all; ``previous`` when it was written less than
    :data:`CHECKPOINT_INFO_INTERVAL` ago (a status write per micro-batch would cost the API server a write every few
    seconds per job), unless it had no commit yet (the first one is written at once); None when the job runs no query."""
    queries = ((details.get("streaming") or {}).get("queries")) or []
    if not queries:
        return dict(previous) if previous else None
    written = seconds_since((previous or {}).get("updateTime"), now)
    first_commit = not (previous or {}).get("lastCommitTime") and any(q.get("lastCommitTime") for q in queries)
    if previous and written is not None and written < CHECKPOINT_INFO_INTERVAL and not first_commit:
        return dict(previous)
    entries = [
        {"name": q.get("name"), "committedBatchId": q.get("committedBatchId"), "lastCommitTime": from_epoch_ms(q.get("lastCommitTime"))}
        for q in queries
    ]
    commits = [e["lastCommitTime"] for e in entries if e["lastCommitTime"]]
    info: dict[str, Any] = {"queries": entries, "updateTime": timestamp(now)}
    if commits:
        info["lastCommitTime"] = max(commits)
    return info


def prune_history(
    history: Sequence[Mapping[str, Any]], keep: str | None, settings: StateSettings, now: datetime.datetime
) -> tuple[list[dict[str, Any]], list[str]]:
    """(the history kept, the locations to dispose of): at most ``history_max_count`` savepoints, none older than
    ``history_max_age``; the savepoint at ``keep`` (the last one, which a restore would use) is always kept.

    What the limits drop leaves the history; its data is disposed of only with ``dispose_on_delete``
    (``kubernetes.operator.savepoint.dispose-on-delete``), and then only of the savepoints the operator took for
    itself (UPGRADE, PERIODIC), as in the Flink Kubernetes Operator: a manual one, or any by default, stays on disk.
    """
    kept: list[dict[str, Any]] = []
    dispose: list[str] = []
    newest_first = sorted(history, key=lambda s: str(s.get("timeStamp") or ""), reverse=True)
    for entry in newest_first:
        age = seconds_since(entry.get("timeStamp"), now)
        too_old = settings.history_max_age is not None and age is not None and age > settings.history_max_age
        if entry.get("location") == keep or (len(kept) < settings.history_max_count and not too_old):
            kept.append(dict(entry))
        elif settings.dispose_on_delete and entry.get("triggerType") in (UPGRADE, PERIODIC):
            dispose.append(str(entry.get("location")))
    return list(reversed(kept)), dispose


def completed_savepoint(info: Mapping[str, Any], location: str, trigger: Mapping[str, Any], now: datetime.datetime) -> dict[str, Any]:
    """``savepointInfo`` once the pending ``trigger`` completed at ``location``."""
    savepoint = {"location": location, "timeStamp": timestamp(now), "triggerType": trigger.get("triggerType")}
    if trigger.get("triggerNonce") is not None:
        savepoint["triggerNonce"] = trigger["triggerNonce"]
    history = [*(info.get("savepointHistory") or []), savepoint]
    return {**info, "lastSavepoint": savepoint, "savepointHistory": history, "trigger": None}


def failed_savepoint(info: Mapping[str, Any], message: str, trigger: Mapping[str, Any], key: str, now: datetime.datetime) -> dict[str, Any]:
    """``savepointInfo`` once the pending ``trigger`` failed; ``key`` says what it was for (see ``plan._failure_key``)."""
    failure = {
        "triggerType": trigger.get("triggerType"),
        "triggerTimestamp": trigger.get("triggerTimestamp"),
        "failureTimestamp": timestamp(now),
        "message": message,
        "key": key,
    }
    return {**info, "lastFailure": failure, "trigger": None}


def restore_of(status: Mapping[str, Any], settings: StateSettings) -> Restore | None:
    """Where the next deployment starts from: the savepoint of the ``upgrade`` record (taken by an upgrade or a
    suspension, or ``initialSavepointPath``), or the JobID of the job it replaces in last-state mode; None: fresh."""
    upgrade = status.get("upgrade") or {}
    if upgrade.get("savepointPath"):
        return Restore(path=str(upgrade["savepointPath"]), allow_non_restored_state=settings.allow_non_restored_state)
    if upgrade.get("mode") == LAST_STATE and upgrade.get("jobId"):
        return Restore(job_id=str(upgrade["jobId"]))
    return None


def pending_trigger(status: Mapping[str, Any]) -> dict[str, Any]:
    """The savepoint trigger the status records as pending (``jobStatus.savepointInfo.trigger``); ``{}`` when none."""
    job = status.get("jobStatus") or {}
    return dict((job.get("savepointInfo") or {}).get("trigger") or {})


def restored_from(restore: Restore | None, settings: StateSettings) -> str | None:
    """``jobStatus.upgradeSavepointPath`` of a deployment that starts from ``restore``: the savepoint, or in last-state
    mode the checkpoint root it resumes (``<execution.checkpointing.dir>/<job-id>``); None for a fresh start."""
    if restore is None:
        return None
    if restore.path:
        return restore.path
    if restore.job_id and settings.checkpoint_directory:
        return f"{settings.checkpoint_directory.rstrip('/')}/{restore.job_id}"
    return None
