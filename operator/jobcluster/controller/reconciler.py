"""Reconciling one FlinkJob: compare its spec with what exists, act, and write a status that tells the truth.

Level-triggered: every call looks at the spec, the last status and the
cluster, whatever event caused it (create, update, resume after an operator
restart, or the periodic timer), so a missed event or a restarted operator
only delays, never loses, a transition.  ``plan.plan`` decides (pure, tested
without a cluster); :class:`Reconciler` observes, carries the plan out through
:class:`~jobcluster.controller.clusters.JobClusters` (the adapter of the
FlinkJob's target) off the event loop, and writes the status.

Status fields of the operator's own (beyond those the CRD documents):
``deployedSpec`` (the digest of the spec whose cluster runs or ran, see
``resource.deployed_spec_hash``), ``deployedTarget`` (the target it runs or ran
on: a spec that changes its target has the old cluster removed where it is),
``deployedCheckpointDirectory`` (where its job checkpoints: a last-state
upgrade resumes from there, see ``plan._checkpoints_moved``),
``deployTime`` (when that deployment began), ``firstRunningTime`` (when its job was
first seen RUNNING: the startup deadline is met), ``deployRetry`` (a deployment
that failed transiently: its attempts and when the next one is due, see
``plan.deploy_retry``), ``terminationTime`` (when the FlinkJob reached FINISHED or
FAILED, by whatever path: the TTL counts from it), ``ttlExpired`` and
``clusterAccess`` (what the target's hook keeps to reach that cluster once the
objects the spec names are gone, e.g. YARN's Hadoop site files: file name → text;
written as the deployment begins, dropped when it fails).

Threads: deployments (program fetch, packing, the wait for REST) run in a pool
of their own, and so do looks at and removals of clusters, so that a burst of
deployments never stalls the status reads and writes, observations or deletions
of other FlinkJobs.  At rest, a reconciliation costs no API call: the FlinkJob
is the one this reconciler last wrote (while its generation is the same), and
the cluster adapter asks the JobManager before the platform.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
import logging
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobcluster.client.operator_hook import ClusterRef, InvalidSpecError
from jobcluster.controller.clusters import Deployed, JobClusters, Observation
from jobcluster.controller.flinkjob_status import Lifecycle, conditions, merge_patch, replacing, timestamp
from jobcluster.controller.job_config import job_configuration
from jobcluster.controller.job_state import (
    Restore,
    SavepointPoll,
    StateSettings,
    kept_job_status,
    pending_trigger,
    restored_from,
)
from jobcluster.controller.plan import (
    DELETE_RESOURCE,
    DEPLOY,
    DISPOSE_SAVEPOINTS,
    REMOVE,
    REMOVE_RESULT,
    TRIGGER_SAVEPOINT,
    Facts,
    Plan,
    deploy_retry,
    needs_observation,
    plan,
)
from jobcluster.controller.programs import job_program
from jobcluster.controller.reconciled_spec import RUNS, last_valid, reconciled, refused, validated
from jobcluster.controller.resource import TARGET_KUBERNETES, FlinkJobSpec, deployed_spec_hash
from jobcluster.errors import AlreadyExistsError, ClusterClientError, ClusterUnreachableError, DeploymentError, JobClusterError

log = logging.getLogger(__name__)

DEPLOY_PARALLELISM = 16  # deployments at once: each holds a thread until its JobManager serves REST (minutes)
PLATFORM_PARALLELISM = 16  # looks at clusters and savepoint calls at once (seconds each; ~10 s for one that is gone)
REMOVAL_PARALLELISM = 8  # removals of clusters at once, in a pool of their own: looks at lost clusters never hold them up
DELETE_WAIT = 20.0  # seconds a deletion waits for a deployment of the FlinkJob in flight before it is tried again

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
        """Where this FlinkJob's cluster is (from the raw spec and status: valid or not, a cluster may exist); on the
        target it was last deployed to, which the spec may since have changed."""
        return ClusterRef(
            target=str(self.status.get("deployedTarget") or self.spec.get("target") or TARGET_KUBERNETES),
            namespace=self.namespace,
            name=self.name,
            uid=self.uid,
            cluster_id=str(self.status.get("clusterId") or ""),
            hadoop_config_map=self.spec.get("hadoopConfigMap"),
            access={str(k): str(v) for k, v in (self.status.get("clusterAccess") or {}).items() if v is not None},
        )


def _reason_of(error: JobClusterError) -> str:
    """The CamelCase reason of a deployment's failure that carries none of its own."""
    if isinstance(error, AlreadyExistsError):
        return "ClusterExists"
    return "DeploymentFailed" if isinstance(error, DeploymentError) else "InvalidSpec"


class RemovalPending(JobClusterError):
    """A FlinkJob's deletion waits for a deployment of it still in flight; try the deletion again."""

    transient = True


class Reconciler:
    """Carries out ``plan.plan`` for FlinkJobs through ``clusters``; ``defaults``: the operator's default configuration;
    ``deploy_parallelism``: deployments at once (more wait for a thread; other work never does)."""

    def __init__(
        self,
        clusters: JobClusters,
        defaults: Mapping[str, str],
        clock: Callable[[], datetime.datetime] | None = None,
        on_deployed: Callable[[float], None] | None = None,
        deploy_parallelism: int = DEPLOY_PARALLELISM,
    ) -> None:
        self.clusters = clusters
        self.defaults = dict(defaults)
        self._clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self._on_deployed = on_deployed
        self._locks: dict[str, asyncio.Lock] = {}
        self._known: dict[str, FlinkJobRef] = {}  # each FlinkJob as this reconciler last wrote it
        self._silent_since: dict[str, datetime.datetime] = {}  # when each cluster's REST API stopped answering
        self._deleted: set[str] = set()
        self._deploys = ThreadPoolExecutor(deploy_parallelism, thread_name_prefix="flinkjob-deploy")
        self._platform = ThreadPoolExecutor(PLATFORM_PARALLELISM, thread_name_prefix="flinkjob-platform")
        self._removals = ThreadPoolExecutor(REMOVAL_PARALLELISM, thread_name_prefix="flinkjob-removal")

    def close(self) -> None:
        """Stop taking work and wait for what is in flight (a deployment ends within its startup deadline)."""
        for pool in (self._deploys, self._platform, self._removals):
            pool.shutdown(wait=True, cancel_futures=True)

    async def reconcile(
        self,
        uid: str,
        read: Reader,
        write_status: StatusWriter,
        post_event: EventPoster,
        delete_resource: ResourceDeleter,
        generation: int | None = None,
    ) -> str | None:
        """One reconciliation of FlinkJob ``uid``, serialized per FlinkJob; returns the lifecycle state it left.

        ``read()`` gives the FlinkJob as the API server has it now (None once it is gone). It is
        called after the lock is taken (a reconciliation that waited may have changed the status
        that the event which started this one carried), unless ``generation`` (the spec's, as the
        event saw it) is the one this reconciler last wrote the status of: this operator is the
        status' only writer, so what it wrote is what the API server has.
        """
        lock = self._locks.setdefault(uid, asyncio.Lock())
        async with lock:
            if uid in self._deleted:
                return None
            job = self._known.get(uid)
            if job is None or generation is None or job.generation != generation:
                job = await read()
            if job is None or job.deleting:
                return None
            try:
                return await self._reconcile(job, write_status, post_event, delete_resource)
            except BaseException:
                self._known.pop(uid, None)  # a write may or may not have landed: read the next time
                raise

    async def delete(self, job: FlinkJobRef) -> None:
        """Remove the FlinkJob's cluster at once, and again once a deployment of it in flight is over (it may
        have started one after the first removal); then forget the FlinkJob.

        Raises:
            RemovalPending: a deployment is still in flight after :data:`DELETE_WAIT` seconds (its cluster was
                removed; what it starts is removed when the deletion is tried again).
            JobClusterError: the platform refuses or cannot be reached.
        """
        self._deleted.add(job.uid)
        lock = self._locks.setdefault(job.uid, asyncio.Lock())
        in_flight = lock.locked()  # before the removal: a deployment may end while it runs, having made what it made
        await self._remove(self._latest(job).cluster)
        try:
            async with asyncio.timeout(DELETE_WAIT):
                await lock.acquire()
        except TimeoutError:
            raise RemovalPending(f"FlinkJob {job.namespace}/{job.name}: a deployment is in flight; removing it when it is over") from None
        try:
            if in_flight:  # what it deployed after the first removal, maybe on another target
                await self._remove(self._latest(job).cluster)
        finally:
            lock.release()
        self.forget(job.uid)

    def _latest(self, job: FlinkJobRef) -> FlinkJobRef:
        """``job``, or the newer state this reconciler wrote of it (a deployment in flight records its target first)."""
        return self._known.get(job.uid) or job

    def forget(self, uid: str) -> None:
        """Drop what is kept for a deleted FlinkJob."""
        self._locks.pop(uid, None)
        self._known.pop(uid, None)
        self._silent_since.pop(uid, None)
        self._deleted.discard(uid)

    async def _call(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` on a thread of the platform pool."""
        return await asyncio.get_running_loop().run_in_executor(self._platform, functools.partial(function, *args))

    async def _remove(self, ref: ClusterRef, result: bool = False) -> None:
        """Remove the cluster at ``ref`` (``result``: what it left of its result) on a thread of the removal pool."""
        function = self.clusters.remove_result if result else self.clusters.remove
        await asyncio.get_running_loop().run_in_executor(self._removals, function, ref)

    async def _reconcile(
        self, job: FlinkJobRef, write_status: StatusWriter, post_event: EventPoster, delete_resource: ResourceDeleter
    ) -> str:
        now = self._clock()
        refusal: InvalidSpecError | None = None
        try:
            valid = validated(job.spec, self.defaults)
        except InvalidSpecError as exc:  # the job of the last valid spec, if one runs, goes on with that spec
            refusal, kept = exc, last_valid(job.status, self.defaults)
            if kept is None:
                return await self._refuse(job, exc, write_status, post_event)
            valid = kept
        spec, state, spec_hash = valid.spec, valid.state, deployed_spec_hash(valid.raw)
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
            state=state,
            trigger_id=uuid.uuid4().hex,  # Flink's trigger ids are 32 hex digits too
        )
        if needs_observation(facts):
            job_id = (job.status.get("jobStatus") or {}).get("jobId")
            pending = pending_trigger(job.status).get("triggerId")
            observation = await self._call(self.clusters.observe, job.cluster, job_id, pending)
            facts = dataclasses.replace(facts, observation=observation, silent_for=self._silence(job.uid, observation, now))
        decided = plan(facts)
        if refusal is None:
            status = {**reconciled(job.status, valid), **decided.status}
        else:
            status = {**decided.status, **self._refused(job, refusal, post_event, kept=True)}
        for action in decided.actions:
            if action == REMOVE:
                await self._remove(job.cluster)
            elif action == REMOVE_RESULT:
                await self._remove(job.cluster, result=True)
            elif action == DEPLOY:
                status.update(await self._deploy(job, spec, spec_hash, status, write_status, post_event, decided.restore, state))
            elif action == DELETE_RESOURCE:
                await delete_resource()
        for kind, reason, message in decided.events:
            post_event(kind, reason, message)
        lifecycle = await self._write(job, status, write_status)
        # savepoint actions follow the write that records them: an operator killed after it repeats or finishes them
        if TRIGGER_SAVEPOINT in decided.actions:
            lifecycle = await self._trigger(self._latest(job), facts, decided, write_status, post_event)
        if DISPOSE_SAVEPOINTS in decided.actions:
            for failure in await self._call(self.clusters.dispose_savepoints, job.cluster, decided.dispose):
                post_event("Warning", "SavepointDisposalFailed", f"{failure}; delete it with the tools of its file system")
        return lifecycle

    async def _trigger(self, job: FlinkJobRef, facts: Facts, decided: Plan, write_status: StatusWriter, post_event: EventPoster) -> str:
        """Send the plan's savepoint trigger (recorded in ``job``'s status). A cluster that refuses it has its refusal
        planned as the trigger's failure (the job runs on; an upgrade waiting for it does not proceed); one that does
        not answer is asked again at the next look, which says whether the trigger arrived."""
        assert decided.trigger is not None
        try:
            await self._call(self.clusters.trigger_savepoint, job.cluster, decided.trigger)
        except ClusterUnreachableError as exc:
            log.info("FlinkJob %s/%s: savepoint trigger %s not sent: %s", job.namespace, job.name, decided.trigger.trigger_id, exc)
            return str(job.status.get("lifecycleState") or Lifecycle.CREATED)
        except ClusterClientError as exc:
            refused = SavepointPoll(decided.trigger.trigger_id, "FAILED", failure=f"the job cluster refused it: {exc}")
            observation = dataclasses.replace(facts.observation or Observation(exists=True), savepoint=refused)
            outcome = plan(dataclasses.replace(facts, status=job.status, observation=observation))
            for kind, reason, message in outcome.events:
                post_event(kind, reason, message)
            return await self._write(job, outcome.status, write_status)
        return str(job.status.get("lifecycleState") or Lifecycle.CREATED)

    def _silence(self, uid: str, observation: Observation, now: datetime.datetime) -> float | None:
        """Seconds the running cluster's REST API has not answered (None when it answered this time)."""
        if not observation.exists or observation.job is not None:
            self._silent_since.pop(uid, None)
            return None
        return (now - self._silent_since.setdefault(uid, now)).total_seconds()

    async def _refuse(self, job: FlinkJobRef, error: InvalidSpecError, write_status: StatusWriter, post_event: EventPoster) -> str:
        """A spec refused with no valid one to go on with: FAILED with the reason, nothing deployed (the result of an
        ended cluster is removed). A cluster that runs is never removed for it (its spec is not known, or the operator's
        defaults refuse that too): it runs on, unobserved, until the spec is fixed."""
        runs = job.status.get("lifecycleState") in RUNS
        status = self._refused(job, error, post_event, kept=runs)
        if runs:
            return await self._write(job, status, write_status)
        if job.status.get("refusedSpec") == status["refusedSpec"] and job.status.get("lifecycleState") == Lifecycle.FAILED:
            return await self._write(job, {}, write_status)  # refused already; an edit still advances observedGeneration
        await self._remove(job.cluster)
        failed = {**status, "lifecycleState": Lifecycle.FAILED, "deployedSpec": deployed_spec_hash(job.spec), "restUrl": ""}
        return await self._write(job, failed, write_status)

    @staticmethod
    def _refused(job: FlinkJobRef, error: InvalidSpecError, post_event: EventPoster, kept: bool) -> dict[str, Any]:
        """The status fields of refusing ``job``'s spec; its Warning event, once per spec refused."""
        status = refused(job.spec, error, kept)
        if job.status.get("refusedSpec") != status["refusedSpec"]:
            post_event("Warning", error.reason, status["error"])
            log.warning("FlinkJob %s/%s: %s", job.namespace, job.name, status["error"])
        return status

    async def _deploy(
        self,
        job: FlinkJobRef,
        spec: FlinkJobSpec,
        spec_hash: str,
        status: dict[str, Any],
        write_status: StatusWriter,
        post_event: EventPoster,
        restore: Restore | None = None,
        state: StateSettings | None = None,
    ) -> dict[str, Any]:
        """Deploy the spec's cluster, its job started from ``restore`` (None: fresh); the status fields of the outcome:
        DEPLOYED; FAILED with the reason; or, after a transient failure, the previous spec's fields and when to try again
        (FAILED once that is past the startup deadline). What of ``jobStatus`` describes the job's state across
        deployments (its savepoints, ``job_state.KEPT_JOB_STATUS``) is kept."""
        started = self._clock()
        previous = status["jobStatus"] if "jobStatus" in status else job.status.get("jobStatus")
        kept = {**kept_job_status(previous), "upgradeSavepointPath": restored_from(restore, state or StateSettings())}
        # a merge patch: what the new job does not keep of the previous job's status is deleted (null)
        kept = replacing(job.status.get("jobStatus"), {key: value for key, value in kept.items() if value is not None})
        # the spec is recorded before the long wait: an operator restarted meanwhile adopts this deployment
        # the cluster id is cleared: an adopting operator must not take the previous cluster's result for this one
        starting = {
            **status,
            "deployedSpec": spec_hash,
            "deployedTarget": spec.target,
            "deployedCheckpointDirectory": (state.checkpoint_directory if state else None) or "",
            "ttlExpired": None,  # a new run has its own TTL
            "deployTime": timestamp(started),
            "error": "",
            "jobStatus": kept,
            "clusterId": "",
            "firstRunningTime": "",
            "terminationTime": "",
        }
        target = dataclasses.replace(job.cluster, target=spec.target, cluster_id="")
        try:
            target = dataclasses.replace(target, access=await self._call(self.clusters.access, target))
            starting["clusterAccess"] = replacing(job.status.get("clusterAccess"), target.access)
            await self._write(job, starting, write_status)
            deployed = await asyncio.get_running_loop().run_in_executor(
                self._deploys, functools.partial(self._deploy_blocking, job, spec, target, restore)
            )
        except JobClusterError as exc:
            reason = getattr(exc, "reason", None) or _reason_of(exc)
            retry = (
                deploy_retry(job.status, spec_hash, started, self._clock(), float(spec.startup_deadline_seconds)) if exc.transient else None
            )
            if retry is None:
                return {**starting, **self._deploy_failed(job, spec_hash, exc, reason, post_event, retried=exc.transient)}
            return {**starting, **self._deploy_retried(job, starting, exc, reason, retry, post_event)}
        seconds = (self._clock() - started).total_seconds()
        if self._on_deployed is not None:
            self._on_deployed(seconds)
        post_event(
            "Normal",
            "Deployed",
            f"job cluster {deployed.cluster_id} serves REST at {deployed.rest_url} after {seconds:.1f} s; job {deployed.job_id}",
        )
        return {
            **starting,
            "lifecycleState": Lifecycle.DEPLOYED,
            "clusterId": deployed.cluster_id,
            "restUrl": deployed.rest_url,
            "jobStatus": {**kept, "jobId": deployed.job_id, "jobName": job.name, "state": "CREATED"},
            "failureReason": "",
            "deploySeconds": round(seconds, 1),
            "deployRetry": None,
        }

    def _deploy_blocking(self, job: FlinkJobRef, spec: FlinkJobSpec, target: ClusterRef, restore: Restore | None) -> Deployed:
        """Fetch the program, build the configuration and deploy (on a thread of the deployment pool).

        An error that is not one of ours (a bug, the operator's own disk full) is a permanent DeploymentError: the
        FlinkJob fails with it, never redeploys for ever."""
        try:
            with tempfile.TemporaryDirectory(prefix=f"flinkjob-{job.name}-") as scratch:
                program = job_program(spec.job, job.name, Path(scratch))
                config = job_configuration(spec, job.name, job.namespace, job.uid, self.defaults, Path(scratch), restore)
                return self.clusters.deploy(target, config, program)
        except JobClusterError:
            raise
        except Exception as exc:
            log.exception("FlinkJob %s/%s: the deployment failed unexpectedly", job.namespace, job.name)
            raise DeploymentError(f"the deployment failed unexpectedly: {type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _deploy_retried(
        job: FlinkJobRef, starting: Mapping[str, Any], error: JobClusterError, reason: str, retry: dict[str, Any], post_event: EventPoster
    ) -> dict[str, Any]:
        """Nothing of the failed attempt runs (a descriptor leaves nothing behind): the status goes back to the previous
        spec's, so the plan deploys again once ``retry['nextAttemptTime']`` has come."""
        message = f"attempt {retry['attempts']} failed: {error}; trying again at {retry['nextAttemptTime']}"
        post_event("Warning", reason, message)
        log.info("FlinkJob %s/%s: %s", job.namespace, job.name, message)
        return {
            "lifecycleState": starting.get("lifecycleState") or Lifecycle.CREATED,
            "deployedSpec": job.status.get("deployedSpec") or "",
            "deployedTarget": job.status.get("deployedTarget") or "",
            "deployTime": job.status.get("deployTime") or "",
            "error": message,
            "deployRetry": retry,
            "clusterAccess": None,  # nothing of the attempt runs
        }

    @staticmethod
    def _deploy_failed(
        job: FlinkJobRef, spec_hash: str, error: Exception, reason: str, post_event: EventPoster, retried: bool = False
    ) -> dict[str, Any]:
        message = f"{error} (gave up: the next attempt would begin past startupDeadlineSeconds)" if retried else str(error)
        post_event("Warning", reason, message)
        log.warning("FlinkJob %s/%s: %s", job.namespace, job.name, message)
        return {
            "lifecycleState": Lifecycle.FAILED,
            "deployedSpec": spec_hash,
            "error": message,
            "failureReason": reason,
            "restUrl": "",
            "deployRetry": None,
            "clusterAccess": None,  # a refused deployment leaves nothing to reach: the FlinkJob is deletable at once
        }

    async def _write(self, job: FlinkJobRef, update: Mapping[str, Any], write_status: StatusWriter) -> str:
        merged = merge_patch(job.status, update)
        lifecycle = str(merged.get("lifecycleState") or Lifecycle.CREATED)
        job_state = (merged.get("jobStatus") or {}).get("state")
        ended = lifecycle in (Lifecycle.FINISHED, Lifecycle.FAILED)
        if ended and not merged.get("terminationTime"):  # the TTL counts from it, whatever ended the FlinkJob
            update = {**update, "terminationTime": (merged.get("jobStatus") or {}).get("endTime") or timestamp(self._clock())}
        document = {
            **update,
            "lifecycleState": lifecycle,
            "observedGeneration": job.generation,
            "conditions": conditions(
                lifecycle,
                job_state,
                merged.get("failureReason") or None,
                str(merged.get("error") or ""),
                job.generation,
                merged.get("conditions") or [],
                self._clock(),
                refused=bool(merged.get("refusedSpec")),
            ),
        }
        written = merge_patch(job.status, document)  # what the server holds after the write
        if written != job.status:
            await write_status(document)
        self._known[job.uid] = dataclasses.replace(job, status=written)
        return lifecycle
