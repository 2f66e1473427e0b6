"""Rollback to the last stable spec, as the Flink Kubernetes Operator does it: pure, called by ``plan.py``.

With ``kubernetes.operator.deployment.rollback.enabled`` (off by default), an
upgraded job that does not run within ``kubernetes.operator.deployment.readiness.timeout``
(5 min; or the startup deadline, if shorter), or fails before it ever ran, is
rolled back: :func:`rollback` removes its cluster and records ``status.rollback``
(the digest of the spec rolled back from, why, when). While that record names the
spec as it is, the reconciler carries out ``status.lastStableSpec`` instead (the
spec whose job last ran: ``reconciled_spec.rolled_back``), restored from what the
upgrade kept (its savepoint, or in last-state the old job's checkpoints). An edit
of the spec ends the rollback.

The lifecycle says so with the Flink Kubernetes Operator's names: ROLLING_BACK
while the stable spec's cluster is brought back, ROLLED_BACK while it runs. The
rest of the planner knows only the states of an upgrade: :func:`as_upgrade`
reads the two as UPGRADING and STABLE, :func:`named` writes them back.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from jobcluster.controller.flinkjob_status import Lifecycle, reconciliation, replacing, timestamp
from jobcluster.controller.job_state import READINESS_TIMEOUT, ROLLBACK_ENABLED, kept_job_status, seconds_since
from jobcluster.controller.plan_types import REMOVE, Facts, Plan
from jobcluster.controller.resource import deployed_spec_hash
from jobcluster.controller.savepoint_plan import abandoning

#: The lifecycle of an upgrade, as it is named while a rollback is in effect; and back.
_ROLLBACK_NAMES: dict[str, str] = {
    Lifecycle.CREATED: Lifecycle.ROLLING_BACK,
    Lifecycle.UPGRADING: Lifecycle.ROLLING_BACK,
    Lifecycle.DEPLOYED: Lifecycle.ROLLING_BACK,
    Lifecycle.STABLE: Lifecycle.ROLLED_BACK,
}
_UPGRADE_NAMES: dict[str, str] = {Lifecycle.ROLLING_BACK: Lifecycle.UPGRADING, Lifecycle.ROLLED_BACK: Lifecycle.STABLE}


def as_upgrade(facts: Facts) -> Facts:
    """``facts`` with a rollback's lifecycle state read as the upgrade's it is (ROLLING_BACK: UPGRADING,
    ROLLED_BACK: STABLE)."""
    lifecycle = facts.status.get("lifecycleState")
    if lifecycle not in _UPGRADE_NAMES:
        return facts
    return dataclasses.replace(facts, status={**facts.status, "lifecycleState": _UPGRADE_NAMES[lifecycle]})


def named(facts: Facts, decided: Plan) -> Plan:
    """``decided`` (planned from :func:`as_upgrade` of ``facts``) with the lifecycle named as a rollback's while one
    is in effect, and the ``rollback`` record dropped once the spec is edited (the rollback has ended)."""
    stored = str(facts.status.get("lifecycleState") or "")
    lifecycle = str(decided.status.get("lifecycleState") or _UPGRADE_NAMES.get(stored, stored))
    if facts.status.get("rollback") and facts.rollback_of is None and "rollback" not in decided.status:
        decided.status["rollback"] = None
        decided.status["lifecycleState"] = lifecycle
    elif facts.rollback_of is not None or decided.status.get("rollback"):
        decided.status["lifecycleState"] = _ROLLBACK_NAMES.get(lifecycle, lifecycle)
    return decided


def rollback_due(facts: Facts, failed: bool = False, started: bool = False) -> str | None:
    """Why the job of the current deployment is rolled back: an upgrade (its spec is not the last stable one) whose job
    ``failed`` before it ever ran, or did not run (``started``) within the readiness timeout; None when it is not
    (rollback off, a rollback in effect already, no stable spec, or the job runs)."""
    applicable = (
        facts.state.rollback_enabled
        and facts.rollback_of is None
        and facts.stable_hash is not None
        and facts.stable_hash != facts.spec_hash
        and facts.status.get("deployedSpec") == facts.spec_hash
        and not facts.status.get("firstRunningTime")
    )
    if not applicable or started:
        return None
    if failed:
        return "the upgraded job failed before it ran"
    limit = min(facts.state.readiness_timeout, facts.startup_deadline)
    deployed_for = seconds_since(facts.status.get("deployTime"), facts.now)
    if deployed_for is not None and deployed_for > limit:
        return f"the upgraded job did not run within {limit:.0f} s ({READINESS_TIMEOUT}, or startupDeadlineSeconds)"
    return None


def rollback(facts: Facts, why: str, ended: Plan | None = None) -> Plan:
    """The first step of a rollback (``why``): the upgraded job's cluster removed, the ``rollback`` record written;
    ``ended``: the plan of the job's end, whose events come first."""
    message = f"{why}: rolling back to the last stable spec ({ROLLBACK_ENABLED})"
    job = (ended.status if ended else {}).get("jobStatus") or facts.status.get("jobStatus") or {}
    kept = kept_job_status(job)
    abandoned = abandoning(facts, kept)
    status: dict[str, Any] = {
        "lifecycleState": Lifecycle.UPGRADING,
        "jobStatus": replacing(facts.status.get("jobStatus"), kept),
        "rollback": {"spec": facts.spec_hash, "reason": why, "time": timestamp(facts.now)},
        "error": message,
        "failureReason": "",
        "restUrl": "",
    }
    events = [*(ended.events if ended else []), *abandoned, ("Warning", "RollingBack", message)]
    return Plan(actions=[REMOVE], status=status, events=events)


def may_roll_back(spec: Mapping[str, Any], status: Mapping[str, Any], defaults: Mapping[str, str]) -> bool:
    """Whether a FlinkJob whose deployment FAILED may still be rolled back (its handler keeps looking at it): rollback
    is on in its configuration or the operator's ``defaults``, no rollback is in effect, and what failed is not the
    last stable spec."""
    enabled = str({**defaults, **(spec.get("flinkConfiguration") or {})}.get(ROLLBACK_ENABLED, "false")).strip().lower() == "true"
    stable = reconciliation(status).get("lastStableSpec")
    if not enabled or not stable or status.get("rollback"):
        return False
    try:
        return deployed_spec_hash(json.loads(stable)) != status.get("deployedSpec")
    except ValueError:
        return False
