"""A FlinkJob's status: lifecycle states, the job status from the cluster, and standard conditions.

Pure functions from what was observed to the status document; nothing here
talks to an API.  The lifecycle (Flink Kubernetes Operator's names):

    CREATED ──deploy──▶ DEPLOYED ──job RUNNING──▶ STABLE ──job FINISHED──▶ FINISHED
       │                   │                        │
       │                   └──────── job FAILED / CANCELED, deadline, cluster lost ──▶ FAILED
       └── invalid spec ──▶ FAILED (fixing the spec deploys)
    DEPLOYED, STABLE, UPGRADING ── refused edit ──▶ the same, not Ready (the last valid spec runs on)
    any ──job.state: suspended──▶ SUSPENDED ──running──▶ DEPLOYED ...
    any ──changed job/configuration/resources/image/restartNonce──▶ UPGRADING ──▶ DEPLOYED ...
    UPGRADING, DEPLOYED ──upgraded job not STABLE within the readiness timeout, or FAILED──▶ ROLLING_BACK
        ──the last stable spec's job runs──▶ ROLLED_BACK ──spec changed──▶ UPGRADING ...   (rollback enabled)
    any ──kubectl delete──▶ DELETING

Conditions (``kubectl wait --for=condition=X``): ``Running`` (the job runs),
``Succeeded`` (the job FINISHED), ``Failed`` (lifecycle FAILED, with the
reason), ``Ready`` (the resource is where its spec wants it: job running,
suspended, or finished, with no error standing).  ``lastTransitionTime`` changes only when a
condition's status does.

Status fields of the operator's own (beyond those the CRD documents):
``deployedSpec`` (the digest of the spec whose cluster runs or ran, see
``resource.deployed_spec_hash``), ``deployedTarget`` (the target it runs or ran
on: a spec that changes its target has the old cluster removed where it is),
``deployedCheckpointDirectory`` (where its job checkpoints: a last-state
upgrade resumes from there, see ``savepoint_plan.checkpoints_moved``),
``deployTime`` (when that deployment began), ``firstRunningTime`` (when its job was
first seen RUNNING: the startup deadline is met), ``deployRetry`` (a deployment
that failed transiently: its attempts and when the next one is due, see
``plan.deploy_retry``), ``terminationTime`` (when the FlinkJob reached FINISHED or
FAILED, by whatever path: the TTL counts from it), ``ttlExpired`` and
``clusterAccess`` (what the target's hook keeps to reach that cluster once the
objects the spec names are gone, e.g. YARN's Hadoop site files: file name → text;
written as the deployment begins, dropped when it fails).
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping, Sequence
from typing import Any


class Lifecycle(enum.StrEnum):
    """``status.lifecycleState`` (the Flink Kubernetes Operator's ``ResourceLifecycleState``)."""

    CREATED = "CREATED"
    DEPLOYED = "DEPLOYED"
    STABLE = "STABLE"
    SUSPENDED = "SUSPENDED"
    UPGRADING = "UPGRADING"
    FAILED = "FAILED"
    FINISHED = "FINISHED"
    DELETING = "DELETING"
    ROLLING_BACK = "ROLLING_BACK"
    ROLLED_BACK = "ROLLED_BACK"


CONDITION_TYPES = ("Ready", "Running", "Succeeded", "Failed")


def merge_patch(target: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``target`` after the JSON merge patch ``patch``, as the API server applies a status patch (RFC 7386: maps merge
    key by key, a null deletes, anything else replaces)."""
    result = dict(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, Mapping):
            previous = result.get(key)
            result[key] = merge_patch(previous if isinstance(previous, Mapping) else {}, value)
        else:
            result[key] = value
    return result


def replacing(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch that turns the status map ``old`` into ``new``: a patch merges maps, so a key ``new`` lacks
    is deleted by null (a partial map would leave the server's other keys, of a run that is over, in place)."""
    return {**dict.fromkeys(old or {}), **new}


#: ``status.reconciliationStatus``'s keys an operator before it wrote at the status's top level (moved at the next write).
LEGACY_RECONCILIATION_KEYS = ("lastReconciledSpec", "lastStableSpec")


def reconciliation(status: Mapping[str, Any]) -> dict[str, Any]:
    """``status.reconciliationStatus`` (the Flink Kubernetes Operator's: ``lastReconciledSpec``, ``lastStableSpec``),
    with what an older operator kept at the top level of ``status`` where the map has nothing."""
    legacy = {key: status[key] for key in LEGACY_RECONCILIATION_KEYS if status.get(key)}
    return {**legacy, **(status.get("reconciliationStatus") or {})}


def compose(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """One JSON merge patch that does what ``first`` then ``second`` do, where ``first`` deletes no map ``second``
    writes into (maps are composed key by key)."""
    result = dict(first)
    for key, value in second.items():
        before = result.get(key)
        result[key] = compose(before, value) if isinstance(value, Mapping) and isinstance(before, Mapping) else value
    return result


def timestamp(now: datetime.datetime) -> str:
    """RFC 3339, UTC, whole seconds (the API server's form)."""
    return now.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def from_epoch_ms(value: Any) -> str | None:
    """An RFC 3339 time of Flink's epoch milliseconds; None for -1/absent."""
    if not isinstance(value, int | float) or value <= 0:
        return None
    return timestamp(datetime.datetime.fromtimestamp(value / 1000, datetime.UTC))


def duration_text(seconds: float) -> str:
    """``1h2m3s`` / ``2m3s`` / ``42s``."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def job_status_of(details: Mapping[str, Any]) -> dict[str, Any]:
    """``status.jobStatus`` from the cluster's ``GET /jobs/{id}`` (Flink's body)."""
    status: dict[str, Any] = {"jobId": details["jid"], "jobName": details.get("name", ""), "state": details["state"]}
    if details.get("job-type"):
        status["jobType"] = details["job-type"]  # STREAMING: its state is carried across deployments (job_state.py)
    start, end = from_epoch_ms(details.get("start-time")), from_epoch_ms(details.get("end-time"))
    if start:
        status["startTime"] = start
    if end:
        status["endTime"] = end
    duration = details.get("duration")
    if end and isinstance(duration, int | float) and duration >= 0:  # while it runs it grows: a status write per look
        status["duration"] = duration_text(duration / 1000)
    return status


def task_managers_of(task_managers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``status.taskManagers`` from the cluster's ``GET /taskmanagers`` items."""
    if not task_managers:
        return {"count": 0}
    first = task_managers[0]
    memory = (first.get("memoryConfiguration") or {}).get("totalProcessMemory")
    status: dict[str, Any] = {"count": len(task_managers), "slotsPerTaskManager": first.get("slotsNumber", 0)}
    if memory:
        status["processMemory"] = f"{int(memory) >> 20}Mi"
    return status


def lifecycle_of_terminal_job(state: str) -> tuple[str, str | None]:
    """(lifecycle, failure reason) of a job that ended in ``state``."""
    if state == "FINISHED":
        return Lifecycle.FINISHED, None
    return Lifecycle.FAILED, "JobCanceled" if state == "CANCELED" else "JobFailed"


def _camel(text: str) -> str:
    return "".join(part.capitalize() for part in text.replace("-", "_").split("_")) or "Unknown"


def conditions(
    lifecycle: str,
    job_state: str | None,
    failure_reason: str | None,
    error: str,
    generation: int | None,
    previous: Sequence[Mapping[str, Any]],
    now: datetime.datetime,
    refused: bool = False,
) -> list[dict[str, Any]]:
    """The four conditions for this state; each keeps its ``lastTransitionTime`` while its status stays.

    ``refused``: the spec is refused while the job of the last valid one runs on. Then, and whenever an ``error``
    stands (an upgrade or suspension whose savepoint failed, so the old spec runs on), the resource is not where
    its spec wants it: not Ready, with the reason and the error; not Failed (the job runs)."""
    job_text = f"job {job_state}" if job_state else "no job yet"
    refused = refused or bool(error)
    ready = lifecycle in (Lifecycle.STABLE, Lifecycle.SUSPENDED, Lifecycle.FINISHED) and not refused
    failed = lifecycle == Lifecycle.FAILED
    wanted = {
        "Ready": (
            ready,
            _camel(lifecycle) if ready else (failure_reason or _camel(lifecycle)),
            f"{lifecycle}: {job_text}" + (f": {error}" if (failed or refused) and error else ""),
        ),
        "Running": (job_state == "RUNNING", _camel(job_state or lifecycle), f"Job status {job_state or 'unknown'}"),
        "Succeeded": (
            job_state == "FINISHED" and lifecycle == Lifecycle.FINISHED,
            _camel(job_state or lifecycle),
            f"Job status {job_state or 'unknown'}",
        ),
        "Failed": (failed, (failure_reason or "Failed") if failed else "NotFailed", error if failed else ""),
    }
    before = {c.get("type"): c for c in previous}
    stamp = timestamp(now)
    result = []
    for kind in CONDITION_TYPES:
        value, reason, message = wanted[kind]
        status = "True" if value else "False"
        old = before.get(kind) or {}
        condition: dict[str, Any] = {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": old.get("lastTransitionTime", stamp) if old.get("status") == status else stamp,
        }
        if generation is not None:
            condition["observedGeneration"] = generation
        result.append(condition)
    return result


def recorded(status: Mapping[str, Any], update: Mapping[str, Any], generation: int | None, now: datetime.datetime) -> dict[str, Any]:
    """The status patch a reconciliation writes: ``update`` (the plan's fields, a JSON merge patch over ``status``)
    with what follows from the status it makes: the lifecycle (CREATED when none yet), ``observedGeneration``, the
    conditions, and ``terminationTime`` once FINISHED or FAILED (the TTL counts from it, whatever ended the FlinkJob:
    the job's end, else now)."""
    merged = merge_patch(status, update)
    lifecycle = str(merged.get("lifecycleState") or Lifecycle.CREATED)
    job = merged.get("jobStatus") or {}
    document = dict(update)
    if lifecycle in (Lifecycle.FINISHED, Lifecycle.FAILED) and not merged.get("terminationTime"):
        document["terminationTime"] = job.get("endTime") or timestamp(now)
    document["lifecycleState"] = lifecycle
    document["observedGeneration"] = generation
    document["conditions"] = conditions(
        lifecycle,
        job.get("state"),
        merged.get("failureReason") or None,
        str(merged.get("error") or ""),
        generation,
        merged.get("conditions") or [],
        now,
        refused=bool(merged.get("refusedSpec")),
    )
    return document
