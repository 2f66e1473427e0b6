"""Reconciling one FlinkJob: compare its spec with what exists, act, and write a status that tells the truth.

Level-triggered: every call looks at the spec, the last status and the
cluster, whatever event caused it (create, update, resume after an operator
restart, or the periodic timer), so a missed event or a restarted operator
only delays, never loses, a transition.  :func:`plan` decides (pure, tested
without a cluster); :class:`Reconciler` observes, carries the plan out through
:class:`~jobcluster.controller.clusters.JobClusters` (the adapter of the
FlinkJob's target) off the event loop, and writes the status.

Status fields of the operator's own (beyond those the CRD documents):
``deployedSpec`` (the digest of the spec whose cluster runs or ran, see
``resource.deployed_spec_hash``), ``deployTime`` (when that deployment began)
and ``ttlExpired``.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobcluster.controller import status as st
from jobcluster.controller.clusters import ClusterRef, JobClusters, Observation
from jobcluster.controller.job_config import job_configuration
from jobcluster.controller.programs import job_program
from jobcluster.controller.resource import TARGET_KUBERNETES, InvalidSpecError, deployed_spec_hash, parse_spec
from jobcluster.errors import AlreadyExistsError, DeploymentError, JobClusterError
from jobcluster.jobgraph.job_status import TERMINAL_JOB_STATES

log = logging.getLogger(__name__)

ERROR_LIMIT = 2000  # characters of a failure cause kept in the status (its end: where Python puts the error)

#: Actions a plan can ask for, in the order they are carried out.
REMOVE, DEPLOY, REMOVE_RESULT, DELETE_RESOURCE = "remove", "deploy", "remove-result", "delete-resource"


@dataclass
class Plan:
    """What to do: ``actions`` (of REMOVE, DEPLOY, REMOVE_RESULT, DELETE_RESOURCE), the status fields to
    write, and ``events`` as (type, reason, message)."""

    actions: list[str] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)


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
        return lifecycle != st.SUSPENDED
    if deployed != facts.spec_hash:
        return bool(deployed) and lifecycle != st.SUSPENDED
    return lifecycle in (st.CREATED, st.DEPLOYED, st.STABLE, st.UPGRADING)


def _deploy_interrupted(facts: Facts) -> bool:
    """Whether a deployment of the current spec began and never recorded its outcome: the operator that ran it
    went away (the one that deploys holds the FlinkJob's lock until it writes DEPLOYED or FAILED)."""
    return facts.status.get("deployedSpec") == facts.spec_hash and facts.status.get("lifecycleState") in (st.CREATED, st.UPGRADING)


def plan(facts: Facts) -> Plan:
    """The next step for one FlinkJob (see the module docstring and ``status.py``'s lifecycle)."""
    if facts.desired == "suspended":
        return _plan_suspended(facts)
    lifecycle = facts.status.get("lifecycleState")
    if facts.status.get("deployedSpec") != facts.spec_hash:
        return _plan_new_spec(facts)
    if lifecycle in (st.FINISHED, st.FAILED):
        return _plan_ended(facts)
    return _plan_observed(facts)


def _plan_suspended(facts: Facts) -> Plan:
    if facts.status.get("lifecycleState") == st.SUSPENDED:
        return Plan()
    job = {**(facts.status.get("jobStatus") or {}), "state": "SUSPENDED"}
    return Plan(
        actions=[REMOVE],
        status={"lifecycleState": st.SUSPENDED, "jobStatus": job, "deployedSpec": "", "restUrl": "", "error": ""},
        events=[("Normal", "Suspended", "job.state is suspended: the job cluster is removed")],
    )


def _plan_new_spec(facts: Facts) -> Plan:
    """A spec never deployed: remove what runs for an older spec first (UPGRADING), then deploy."""
    obs = facts.observation
    previous = facts.status.get("deployedSpec")
    if obs is not None and obs.exists and previous:
        return Plan(
            actions=[REMOVE],
            status={"lifecycleState": st.UPGRADING, "jobStatus": None},
            events=[("Normal", "Upgrading", "the spec changed: removing the job cluster of the previous spec")],
        )
    upgrading = bool(previous) or facts.status.get("lifecycleState") in (st.UPGRADING, st.FINISHED, st.FAILED)
    return Plan(actions=[DEPLOY], status={"lifecycleState": st.UPGRADING if upgrading else st.CREATED})


def _plan_ended(facts: Facts) -> Plan:
    job = facts.status.get("jobStatus") or {}
    if facts.ttl is None or facts.status.get("ttlExpired"):
        return Plan()
    since_end = _seconds_since(job.get("endTime"), facts.now)
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
    job = {**old_job, **st.job_status_of(obs.job)} if obs.job is not None else old_job
    state = job.get("state")
    update: dict[str, Any] = {"jobStatus": job, "restUrl": obs.rest_url or facts.status.get("restUrl", "")}
    if obs.cluster_id:
        update["clusterId"] = obs.cluster_id
    if obs.job is not None:
        update["taskManagers"] = st.task_managers_of(obs.task_managers)
    if state in TERMINAL_JOB_STATES and obs.job is not None:
        return _ended(update, state, obs.failure_cause)
    lifecycle = st.STABLE if state == "RUNNING" else st.DEPLOYED
    update["lifecycleState"] = lifecycle
    events = []
    if lifecycle == st.STABLE and facts.status.get("lifecycleState") != st.STABLE:
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
        update.update(lifecycleState=st.FAILED, error=message, failureReason=reason)
        return Plan(actions=[REMOVE], status=update, events=[("Warning", reason, message)])
    return Plan(status=update, events=events)


def _deadline_passed(facts: Facts, job: Mapping[str, Any], obs: Observation) -> tuple[str, str] | None:
    state = job.get("state")
    deployed_for = _seconds_since(facts.status.get("deployTime"), facts.now)
    if state != "RUNNING" and deployed_for is not None and deployed_for > facts.startup_deadline:
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
        return _ended({"jobStatus": job, "restUrl": ""}, record.state, record.diagnostics or None)
    if _deploy_interrupted(facts):
        lifecycle = facts.status["lifecycleState"]
        message = f"the deployment begun at {facts.status.get('deployTime')} did not finish (the operator restarted): deploying again"
        return Plan(actions=[DEPLOY], status={"lifecycleState": lifecycle}, events=[("Normal", "Redeploying", message)])
    message = "the job cluster is gone and left no result (its Deployment was deleted from outside?)"
    job["state"] = job.get("state") if job.get("state") in TERMINAL_JOB_STATES else "FAILED"
    return Plan(
        status={"jobStatus": job, "lifecycleState": st.FAILED, "error": message, "failureReason": "ClusterLost", "restUrl": ""},
        events=[("Warning", "ClusterLost", message)],
    )


def _before(end_time: str | None, deploy_time: str | None) -> bool:
    """Whether a job ended before a deployment began (both RFC 3339; False when either is unknown)."""
    if not end_time or not deploy_time:
        return False
    return datetime.datetime.fromisoformat(end_time) < datetime.datetime.fromisoformat(deploy_time)


def _ended(update: dict[str, Any], state: str, cause: str | None) -> Plan:
    lifecycle, reason = st.lifecycle_of_terminal_job(state)
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


# -- carrying a plan out ----------------------------------------------------------------------------------

StatusWriter = Callable[[dict[str, Any]], Awaitable[None]]
EventPoster = Callable[[str, str, str], None]
ResourceDeleter = Callable[[], Awaitable[None]]
Reader = Callable[[], Awaitable["FlinkJobRef | None"]]


@dataclass(frozen=True)
class FlinkJobRef:
    """The FlinkJob being reconciled: name, namespace, uid, generation, spec and status as the API server has
    them; ``deleting`` once it is marked for deletion."""

    name: str
    namespace: str
    uid: str
    generation: int | None
    spec: Mapping[str, Any]
    status: Mapping[str, Any]
    deleting: bool = False

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> FlinkJobRef:
        """The reference of a FlinkJob object (as JSON from the API server)."""
        metadata = body.get("metadata") or {}
        return cls(
            name=metadata["name"],
            namespace=metadata.get("namespace") or "default",
            uid=metadata.get("uid") or "",
            generation=metadata.get("generation"),
            spec=body.get("spec") or {},
            status=body.get("status") or {},
            deleting=bool(metadata.get("deletionTimestamp")),
        )

    @property
    def cluster(self) -> ClusterRef:
        """Where this FlinkJob's cluster is (from the raw spec and status: valid or not, a cluster may exist)."""
        return ClusterRef(
            target=str(self.spec.get("target") or TARGET_KUBERNETES),
            namespace=self.namespace,
            name=self.name,
            uid=self.uid,
            cluster_id=str(self.status.get("clusterId") or ""),
            hadoop_config_map=self.spec.get("hadoopConfigMap"),
        )


class Reconciler:
    """Carries out :func:`plan` for FlinkJobs through ``clusters``; ``defaults``: the operator's default configuration."""

    def __init__(
        self,
        clusters: JobClusters,
        defaults: Mapping[str, str],
        clock: Callable[[], datetime.datetime] | None = None,
        on_deployed: Callable[[float], None] | None = None,
    ) -> None:
        self.clusters = clusters
        self.defaults = dict(defaults)
        self._clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self._on_deployed = on_deployed
        self._locks: dict[str, asyncio.Lock] = {}

    async def reconcile(
        self, uid: str, read: Reader, write_status: StatusWriter, post_event: EventPoster, delete_resource: ResourceDeleter
    ) -> str | None:
        """One reconciliation of FlinkJob ``uid``, serialized per FlinkJob; returns the lifecycle state it left.

        ``read()`` gives the FlinkJob as the API server has it now (None once it is gone): read
        after the lock is taken, because a reconciliation that waited may have changed the status
        that the event which started this one carried.
        """
        lock = self._locks.setdefault(uid, asyncio.Lock())
        async with lock:
            job = await read()
            if job is None or job.deleting:
                return None
            return await self._reconcile(job, write_status, post_event, delete_resource)

    def forget(self, uid: str) -> None:
        """Drop what is kept for a deleted FlinkJob."""
        self._locks.pop(uid, None)

    async def _reconcile(
        self, job: FlinkJobRef, write_status: StatusWriter, post_event: EventPoster, delete_resource: ResourceDeleter
    ) -> str:
        now = self._clock()
        spec_hash = deployed_spec_hash(job.spec)
        try:
            spec = parse_spec(job.spec)
        except InvalidSpecError as exc:
            return await self._refuse(job, spec_hash, exc, write_status, post_event)
        facts = Facts(
            generation=job.generation,
            spec_hash=spec_hash,
            desired=spec.job.state,
            startup_deadline=float(spec.startup_deadline_seconds),
            active_deadline=float(spec.active_deadline_seconds) if spec.active_deadline_seconds else None,
            ttl=float(spec.ttl_seconds_after_finished) if spec.ttl_seconds_after_finished is not None else None,
            delete_after_ttl=spec.delete_after_ttl,
            status=job.status,
            observation=None,
            now=now,
        )
        if needs_observation(facts):
            job_id = (job.status.get("jobStatus") or {}).get("jobId")
            observation = await asyncio.to_thread(self.clusters.observe, job.cluster, job_id)
            facts = Facts(**{**facts.__dict__, "observation": observation})
        decided = plan(facts)
        status = {**decided.status}
        for action in decided.actions:
            if action == REMOVE:
                await asyncio.to_thread(self.clusters.remove, job.cluster)
            elif action == REMOVE_RESULT:
                await asyncio.to_thread(self.clusters.remove_result, job.cluster)
            elif action == DEPLOY:
                status.update(await self._deploy(job, spec_hash, status, write_status, post_event))
            elif action == DELETE_RESOURCE:
                await delete_resource()
        for kind, reason, message in decided.events:
            post_event(kind, reason, message)
        return await self._write(job, status, write_status)

    async def _refuse(
        self, job: FlinkJobRef, spec_hash: str, error: InvalidSpecError, write_status: StatusWriter, post_event: EventPoster
    ) -> str:
        """An invalid spec: FAILED with the reason, nothing deployed (a cluster of an older spec is removed)."""
        if job.status.get("deployedSpec") == spec_hash and job.status.get("lifecycleState") == st.FAILED:
            return st.FAILED
        await asyncio.to_thread(self.clusters.remove, job.cluster)
        post_event("Warning", error.reason, str(error))
        status = {"lifecycleState": st.FAILED, "error": str(error), "failureReason": error.reason, "deployedSpec": spec_hash, "restUrl": ""}
        return await self._write(job, status, write_status)

    async def _deploy(
        self, job: FlinkJobRef, spec_hash: str, status: dict[str, Any], write_status: StatusWriter, post_event: EventPoster
    ) -> dict[str, Any]:
        """Deploy the spec's cluster; the status fields of the outcome (DEPLOYED, or FAILED with the reason)."""
        started = self._clock()
        # the spec is recorded before the long wait: an operator restarted meanwhile adopts this deployment
        # the cluster id is cleared: an adopting operator must not take the previous cluster's result for this one
        starting = {
            **status,
            "deployedSpec": spec_hash,
            "deployTime": st.timestamp(started),
            "error": "",
            "jobStatus": None,
            "clusterId": "",
        }
        await self._write(job, starting, write_status)
        spec = parse_spec(job.spec)
        try:
            with tempfile.TemporaryDirectory(prefix=f"flinkjob-{job.name}-") as scratch:
                program = await asyncio.to_thread(job_program, spec.job, job.name, Path(scratch))
                config = job_configuration(spec, job.name, job.namespace, job.uid, self.defaults, Path(scratch))
                deployed = await asyncio.to_thread(self.clusters.deploy, job.cluster, config, program)
        except AlreadyExistsError:  # the previous cluster's objects are still being collected: try again
            log.info("FlinkJob %s/%s: waiting for the previous job cluster to be gone", job.namespace, job.name)
            return {"lifecycleState": st.UPGRADING, "deployedSpec": job.status.get("deployedSpec") or ""}
        except DeploymentError as exc:
            return self._deploy_failed(job, spec_hash, exc, "DeploymentFailed", post_event)
        except InvalidSpecError as exc:
            return self._deploy_failed(job, spec_hash, exc, exc.reason, post_event)
        except JobClusterError as exc:
            return self._deploy_failed(job, spec_hash, exc, "InvalidSpec", post_event)
        seconds = (self._clock() - started).total_seconds()
        if self._on_deployed is not None:
            self._on_deployed(seconds)
        post_event(
            "Normal",
            "Deployed",
            f"job cluster {deployed.cluster_id} serves REST at {deployed.rest_url} after {seconds:.1f} s; job {deployed.job_id}",
        )
        return {
            "lifecycleState": st.DEPLOYED,
            "deployedSpec": spec_hash,
            "deployTime": st.timestamp(started),
            "clusterId": deployed.cluster_id,
            "restUrl": deployed.rest_url,
            "jobStatus": {"jobId": deployed.job_id, "jobName": job.name, "state": "CREATED"},
            "error": "",
            "failureReason": "",
            "deploySeconds": round(seconds, 1),
        }

    @staticmethod
    def _deploy_failed(job: FlinkJobRef, spec_hash: str, error: Exception, reason: str, post_event: EventPoster) -> dict[str, Any]:
        post_event("Warning", reason, str(error))
        log.warning("FlinkJob %s/%s: %s", job.namespace, job.name, error)
        return {"lifecycleState": st.FAILED, "deployedSpec": spec_hash, "error": str(error), "failureReason": reason, "restUrl": ""}

    async def _write(self, job: FlinkJobRef, update: Mapping[str, Any], write_status: StatusWriter) -> str:
        merged = {**job.status, **update}
        lifecycle = str(merged.get("lifecycleState") or st.CREATED)
        job_state = (merged.get("jobStatus") or {}).get("state")
        document = {
            **update,
            "lifecycleState": lifecycle,
            "observedGeneration": job.generation,
            "conditions": st.conditions(
                lifecycle,
                job_state,
                merged.get("failureReason") or None,
                str(merged.get("error") or ""),
                job.generation,
                merged.get("conditions") or [],
                self._clock(),
            ),
        }
        if document != {key: job.status.get(key) for key in document}:
            await write_status(document)
        return lifecycle
