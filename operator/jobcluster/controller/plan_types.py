"""What a plan of ``plan.py`` decides on (:class:`Facts`) and what it decides (:class:`Plan`, its actions)."""

from __future__ import annotations

import datetime
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobcluster.controller.clusters import Observation
from jobcluster.controller.flinkjob_status import reconciliation
from jobcluster.controller.job_state import Restore, SavepointTrigger, StateSettings
from jobcluster.controller.reconciled_spec import ValidSpec, spec_json
from jobcluster.controller.resource import deployed_spec_hash

ERROR_LIMIT = 2000  # characters of a failure cause kept in the status (its end: where Python puts the error)

#: Actions a plan can ask for, in the order they are carried out.
REMOVE, DEPLOY, REMOVE_RESULT, DELETE_RESOURCE = "remove", "deploy", "remove-result", "delete-resource"
#: A trigger is sent only once the plan's status records it (an operator killed after the write sends the same trigger,
#: with the same id, again); savepoints are disposed of before the write that drops them from the history (an operator
#: killed between the two finds them still listed, and disposes of them again), so none is forgotten undisposed.
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
    spec_json: str = ""  # the spec carried out, as JSON: recorded as lastStableSpec once its job runs
    stable_hash: str | None = None  # the digest of lastStableSpec (None: no job of the FlinkJob ran yet)
    rollback_of: str | None = None  # the digest of the spec rolled back from, while lastStableSpec is carried out instead

    @classmethod
    def of(
        cls, valid: ValidSpec, generation: int | None, status: Mapping[str, Any], now: datetime.datetime, rollback_of: str | None = None
    ) -> Facts:
        """The facts of a FlinkJob whose spec (the one to carry out) is ``valid``, before any observation; with a new
        trigger id (32 hex digits, as Flink's). ``rollback_of``: ``valid`` is the last stable spec, carried out
        instead of the spec of that digest (``reconciled_spec.rolled_back``)."""
        spec = valid.spec
        stable = reconciliation(status).get("lastStableSpec")
        return cls(
            generation=generation,
            spec_hash=deployed_spec_hash(valid.raw),
            desired=spec.job.state,
            startup_deadline=float(spec.startup_deadline_seconds),
            active_deadline=float(spec.active_deadline_seconds) if spec.active_deadline_seconds else None,
            ttl=float(spec.ttl_seconds_after_finished) if spec.ttl_seconds_after_finished is not None else valid.state.shutdown_ttl,
            delete_after_ttl=spec.delete_after_ttl if spec.delete_after_ttl is not None else valid.state.delete_after_ttl,
            status=status,
            observation=None,
            now=now,
            state=valid.state,
            trigger_id=uuid.uuid4().hex,
            spec_json=spec_json(valid.raw),
            stable_hash=deployed_spec_hash(json.loads(stable)) if stable else None,
            rollback_of=rollback_of,
        )
