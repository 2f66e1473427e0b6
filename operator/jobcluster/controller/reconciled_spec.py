"""The last valid spec of a FlinkJob, and what a refused edit of it leaves: the job runs on, the error is reported.

The Flink Kubernetes Operator keeps the spec it last reconciled in the status
(``lastReconciledSpec``); an edit it refuses (an invalid value, a savepoint mode
without its directory, a typo in a ``kubernetes.operator.*`` option, an
operator default that no longer holds) is reported in ``status.error`` while
the job of the last valid spec keeps running. Here the same: the status keeps
``lastReconciledSpec`` (the spec as JSON, recorded whenever a valid spec is
reconciled) and ``refusedSpec`` (the digest of the spec refused, so that its
Warning event is posted once); pure functions, used by the reconciler.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.controller.flinkjob_status import LEGACY_RECONCILIATION_KEYS, Lifecycle, reconciliation
from jobcluster.controller.job_state import StateSettings, state_settings
from jobcluster.controller.pod_policy import check_pod_templates, check_service_accounts
from jobcluster.controller.resource import FlinkJobSpec, deployed_spec_hash, parse_spec

#: Lifecycle states in which a cluster of the last valid spec runs or is being brought up: a refused edit keeps it.
RUNS = (Lifecycle.DEPLOYED, Lifecycle.STABLE, Lifecycle.UPGRADING, Lifecycle.ROLLING_BACK, Lifecycle.ROLLED_BACK)


@dataclass(frozen=True)
class ValidSpec:
    """A spec that passed every check: ``raw`` as the API server has it, ``spec`` parsed, ``state`` its state settings."""

    raw: Mapping[str, Any]
    spec: FlinkJobSpec
    state: StateSettings


def validated(raw: Mapping[str, Any], defaults: Mapping[str, str]) -> ValidSpec:
    """``raw`` parsed and checked against the operator's ``defaults`` (its pod templates
    and ServiceAccounts against the operator's policy, ``pod_policy``); InvalidSpecError when it cannot run."""
    spec = parse_spec(raw)
    check_pod_templates(spec, defaults)
    check_service_accounts(spec, defaults)
    return ValidSpec(raw, spec, state_settings(spec.job, spec.flink_configuration, defaults))


def spec_json(raw: Mapping[str, Any]) -> str:
    """The spec as the status records it (``reconciliationStatus.lastReconciledSpec``, ``.lastStableSpec``): JSON,
    keys sorted."""
    return json.dumps(raw, sort_keys=True, default=str)


def rolled_back(status: Mapping[str, Any], valid: ValidSpec, defaults: Mapping[str, str]) -> ValidSpec | None:
    """The spec to carry out instead of ``valid`` while it is rolled back: ``lastStableSpec``, as long as the spec
    is the one the ``rollback`` record names (an edit ends the rollback); None otherwise, or when the stable spec no
    longer passes the checks."""
    record, stable = status.get("rollback") or {}, reconciliation(status).get("lastStableSpec")
    if not record or not stable or record.get("spec") != deployed_spec_hash(valid.raw):
        return None
    try:
        return validated(json.loads(stable), defaults)
    except (InvalidSpecError, ValueError):
        return None


def spec_digest(raw: Mapping[str, Any]) -> str:
    """A digest of the whole spec (every field: an edit of a field that needs no redeployment changes it too)."""
    return hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:16]


def last_valid(status: Mapping[str, Any], defaults: Mapping[str, str]) -> ValidSpec | None:
    """The spec to go on with while the current one is refused: the ``lastReconciledSpec``, when it still passes the
    checks, whatever the lifecycle (a running job runs on, a suspended one stays suspended, an ended one keeps its
    result and its TTL); None when no valid spec is known."""
    recorded = reconciliation(status).get("lastReconciledSpec")
    if not recorded:
        return None
    try:
        return validated(json.loads(recorded), defaults)
    except (InvalidSpecError, ValueError):
        return None


def reconciled(status: Mapping[str, Any], valid: ValidSpec) -> dict[str, Any]:
    """The status fields of reconciling ``valid``, the spec as it is: recorded as the last valid one
    (``reconciliationStatus.lastReconciledSpec``; what an older operator kept at the top level moved there), and a
    refusal of an earlier edit cleared (the planner's own errors, written after these, win)."""
    record: dict[str, Any] = {}
    text, current = spec_json(valid.raw), reconciliation(status)
    nested: dict[str, Any] = {"lastReconciledSpec": text} if current.get("lastReconciledSpec") != text else {}
    if any(key in status for key in LEGACY_RECONCILIATION_KEYS):
        record.update(dict.fromkeys(LEGACY_RECONCILIATION_KEYS))
        nested = {**{key: current[key] for key in LEGACY_RECONCILIATION_KEYS if current.get(key)}, **nested}
    if nested:
        record["reconciliationStatus"] = nested
    if status.get("refusedSpec"):
        record.update(refusedSpec=None, error="", failureReason="")
    return record


def refused(raw: Mapping[str, Any], error: InvalidSpecError, kept: bool) -> dict[str, Any]:
    """The status fields of a refused spec: its digest, the error and its reason; ``kept``: a cluster of the last
    valid spec runs on (said in the error)."""
    message = f"{error}; the job of the last valid spec runs on (fix or revert the edit)" if kept else str(error)
    return {"refusedSpec": spec_digest(raw), "error": message, "failureReason": error.reason}


def never_valid(raw: Mapping[str, Any], refusal: Mapping[str, Any]) -> dict[str, Any]:
    """The status fields of a FlinkJob whose spec is refused before any of its specs was valid (``refusal``: the
    fields of :func:`refused`): FAILED, nothing deployed; the refused spec's digest recorded as deployed, so that
    only an edit deploys."""
    return {**refusal, "lifecycleState": Lifecycle.FAILED, "deployedSpec": deployed_spec_hash(raw), "restUrl": ""}
