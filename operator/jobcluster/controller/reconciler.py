"""Reconciling one FlinkJob: compare its spec with what exists, act, and write a status that tells the truth.

Level-triggered: every call looks at the spec, the last status and the
cluster, whatever event caused it (create, update, resume after an operator
restart, or the periodic timer), so a missed event or a restarted operator
only delays, never loses, a transition.  ``plan.plan`` decides (pure, tested
without a cluster); :class:`Reconciler` observes, carries the plan out through
:class:`~jobcluster.controller.clusters.JobClusters` (the adapter of the
FlinkJob's target) off the event loop, and writes the status.

The status fields of the operator's own are described in ``flinkjob_status.py``.

A deployment (program fetch, packing, the wait for REST: minutes) runs as a task
of its own beside the reconciliations (``deployments.py``), so that a deletion or
an edit acts at once whatever it waits for. Threads: deployments run in a pool
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
from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from jobcluster.client.operator_hook import ClusterRef, InvalidSpecError
from jobcluster.controller.access_seal import AccessSeal
from jobcluster.controller.clusters import Deployed, JobClusters, Observation
from jobcluster.controller.deployment_status import deployed_status, failure_of, starting_status
from jobcluster.controller.deployments import InFlight, deploy_blocking, report, superseded_by
from jobcluster.controller.flinkjob_ref import FlinkJobRef
from jobcluster.controller.flinkjob_status import Lifecycle, compose, merge_patch, recorded, replacing
from jobcluster.controller.job_state import Restore, SavepointPoll, StateSettings, pending_trigger
from jobcluster.controller.plan import needs_observation, plan
from jobcluster.controller.plan_types import (
    DELETE_RESOURCE,
    DEPLOY,
    DISPOSE_SAVEPOINTS,
    REMOVE,
    REMOVE_RESULT,
    TRIGGER_SAVEPOINT,
    Facts,
    Plan,
)
from jobcluster.controller.reconciled_spec import RUNS, last_valid, never_valid, reconciled, refused, rolled_back, validated
from jobcluster.controller.resource import FlinkJobSpec, deployed_spec_hash
from jobcluster.controller.status_model import checked_patch
from jobcluster.errors import ClusterClientError, ClusterUnreachableError, JobClusterError

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
class FlinkJobIo:
    """How a reconciliation reaches one FlinkJob on the API server: read it, write its status (a merge patch), post
    an event (type, reason, message), delete it."""

    read: Reader
    write_status: StatusWriter
    post_event: EventPoster
    delete_resource: ResourceDeleter


class RemovalPending(JobClusterError):
    """A FlinkJob's deletion waits for a deployment of it still in flight; try the deletion again."""

    transient = True


class Reconciler:
    """Carries out ``plan.plan`` for FlinkJobs through ``clusters``; ``defaults``: the operator's default configuration;
    ``deploy_parallelism``: deployments at once (more wait for a thread; other work never does); ``excluded_namespaces``:
    namespaces whose FlinkJobs are refused (``NamespaceNotWatched``)."""

    def __init__(
        self,
        clusters: JobClusters,
        defaults: Mapping[str, str],
        clock: Callable[[], datetime.datetime] | None = None,
        on_deployed: Callable[[float], None] | None = None,
        deploy_parallelism: int = DEPLOY_PARALLELISM,
        excluded_namespaces: Iterable[str] = (),
        seal: AccessSeal | None = None,
    ) -> None:
        self.clusters = clusters
        self.seal = seal or AccessSeal()
        self.excluded_namespaces = frozenset(excluded_namespaces)
        self.defaults = dict(defaults)
        self._clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self._on_deployed = on_deployed
        self._locks: dict[str, asyncio.Lock] = {}
        self._known: dict[str, FlinkJobRef] = {}  # each FlinkJob as this reconciler last wrote it
        self._silent_since: dict[str, datetime.datetime] = {}  # when each cluster's REST API stopped answering
        self._deleted: set[str] = set()
        self._deploying: dict[str, InFlight] = {}  # the deployment in flight of each FlinkJob that has one
        self._deploys = ThreadPoolExecutor(deploy_parallelism, thread_name_prefix="flinkjob-deploy")
        self._platform = ThreadPoolExecutor(PLATFORM_PARALLELISM, thread_name_prefix="flinkjob-platform")
        self._removals = ThreadPoolExecutor(REMOVAL_PARALLELISM, thread_name_prefix="flinkjob-removal")

    async def close(self) -> None:
        """Stop taking work and wait for what is in flight: a deployment ends within its startup deadline and records
        its outcome (one still queued for a thread is dropped: its status says it began, and the next operator deploys
        it again)."""
        await asyncio.to_thread(self._shutdown_pools)
        await self.settled()

    def _shutdown_pools(self) -> None:
        for pool in (self._deploys, self._platform, self._removals):
            pool.shutdown(wait=True, cancel_futures=True)

    async def settled(self) -> None:
        """Wait until no deployment is in flight."""
        while self._deploying:
            await asyncio.gather(*(flight.task for flight in list(self._deploying.values()) if flight.task), return_exceptions=True)

    async def reconcile(
        self,
        uid: str,
        read: Reader,
        write_status: StatusWriter,
        post_event: EventPoster,
        delete_resource: ResourceDeleter,
        generation: int | None = None,
    ) -> str | None:
        """One reconciliation of FlinkJob ``uid``, serialized per FlinkJob; returns the lifecycle state it left. It
        never waits for a deployment: one it begins runs on as a task of its own (``deployments.py``), and while one
        is in flight a reconciliation only checks that its spec is still wanted.

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
                flight = self._deploying.get(uid)
                if flight is not None:
                    return await self._while_deploying(job, flight, post_event)
                return await self._reconcile(job, FlinkJobIo(read, write_status, post_event, delete_resource))
            except BaseException:
                self._known.pop(uid, None)  # a write may or may not have landed: read the next time
                raise

    async def delete(self, job: FlinkJobRef, write_status: StatusWriter) -> None:
        """Say DELETING in the status, remove the FlinkJob's cluster at once (a deployment in flight is superseded: the
        removal ends its wait), and again once that deployment is over (it may have made its cluster after the first
        removal); then forget the FlinkJob. A reconciliation that holds the FlinkJob's lock (a look at a lost
        JobManager) is not waited for.

        Raises:
            RemovalPending: a deployment is still in flight after :data:`DELETE_WAIT` seconds (its cluster was
                removed; what it starts is removed when the deletion is tried again).
            JobClusterError: the platform refuses or cannot be reached.
        """
        self._deleted.add(job.uid)
        if job.status.get("lifecycleState") != Lifecycle.DELETING:
            try:
                await self._write(self._latest(job), {"lifecycleState": Lifecycle.DELETING}, write_status)
            except Exception as exc:  # noqa: BLE001 - a failed status write never holds up a removal
                log.warning("FlinkJob %s/%s: DELETING not written: %s", job.namespace, job.name, exc)
        flight = self._deploying.get(job.uid)  # before the removal: one may end while it runs, having made its cluster
        if flight is not None:
            flight.superseded = True
        await self._remove(self._latest(job).cluster(self.seal))
        if flight is not None and flight.task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(flight.task), DELETE_WAIT)
            except TimeoutError:
                raise RemovalPending(f"FlinkJob {job.namespace}/{job.name}: a deployment is in flight; removed when it is over") from None
            await self._remove(self._latest(job).cluster(self.seal))  # what it made after the first removal, maybe on another target
        self.forget(job.uid)

    def known(self, namespace: str, name: str) -> FlinkJobRef | None:
        """FlinkJob ``namespace/name`` as this reconciler last wrote it; None when it has not (or not since an error)."""
        return next((job for job in self._known.values() if job.name == name and job.namespace == namespace), None)

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

    async def _reconcile(self, job: FlinkJobRef, io: FlinkJobIo) -> str:
        write_status, post_event = io.write_status, io.post_event
        now = self._clock()
        refusal: InvalidSpecError | None = None
        try:
            if job.namespace in self.excluded_namespaces:
                raise InvalidSpecError(
                    f"the operator does not run FlinkJobs of namespace {job.namespace} (its own, or excluded by its "
                    "--exclude-namespace): create it in another namespace",
                    reason="NamespaceNotWatched",
                )
            valid = validated(job.spec, self.defaults)
        except InvalidSpecError as exc:  # the job of the last valid spec, if one runs, goes on with that spec
            refusal, kept = exc, last_valid(job.status, self.defaults)
            if kept is None:
                return await self._refuse(job, exc, write_status, post_event)
            valid = kept
        rolled = rolled_back(job.status, valid, self.defaults) if refusal is None else None  # the last stable spec instead
        facts = Facts.of(rolled or valid, job.generation, job.status, now, deployed_spec_hash(valid.raw) if rolled else None)
        spec, state, spec_hash = (rolled or valid).spec, (rolled or valid).state, facts.spec_hash
        if needs_observation(facts):
            job_id = (job.status.get("jobStatus") or {}).get("jobId")
            pending = pending_trigger(job.status).get("triggerId")
            observation = await self._call(self.clusters.observe, job.cluster(self.seal), job_id, pending)
            facts = dataclasses.replace(facts, observation=observation, silent_for=self._silence(job.uid, observation, now))
        decided = plan(facts)
        if refusal is None:
            status = compose(reconciled(job.status, valid), decided.status)
        else:
            status = {**decided.status, **self._refused(job, refusal, post_event, kept=job.status.get("lifecycleState") in RUNS)}
        for action in decided.actions:
            if action == REMOVE:
                await self._remove(job.cluster(self.seal))
            elif action == REMOVE_RESULT:
                await self._remove(job.cluster(self.seal), result=True)
            elif action == DEPLOY:
                status.update(await self._start_deploy(job, spec, spec_hash, status, io, decided.restore, state))
            elif action == DELETE_RESOURCE:
                await io.delete_resource()
        if DISPOSE_SAVEPOINTS in decided.actions:  # before the write that forgets them (plan_types.DISPOSE_SAVEPOINTS)
            for failure in await self._call(self.clusters.dispose_savepoints, job.cluster(self.seal), decided.dispose):
                post_event("Warning", "SavepointDisposalFailed", f"{failure}; delete it with the tools of its file system")
        for kind, reason, message in decided.events:
            post_event(kind, reason, message)
        lifecycle = await self._write(job, status, write_status)
        if TRIGGER_SAVEPOINT in decided.actions:  # after the write that records it
            lifecycle = await self._trigger(self._latest(job), facts, decided, write_status, post_event)
        return lifecycle

    async def _trigger(self, job: FlinkJobRef, facts: Facts, decided: Plan, write_status: StatusWriter, post_event: EventPoster) -> str:
        """Send the plan's savepoint trigger (recorded in ``job``'s status). A cluster that refuses it has its refusal
        planned as the trigger's failure (the job runs on; an upgrade waiting for it does not proceed); one that does
        not answer is asked again at the next look, which says whether the trigger arrived."""
        assert decided.trigger is not None
        try:
            await self._call(self.clusters.trigger_savepoint, job.cluster(self.seal), decided.trigger)
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
        """A spec refused with no valid one to go on with (the operator's defaults refuse the last one too, or none was
        ever valid). A FlinkJob that got further than CREATED keeps its lifecycle and what it has, the refusal
        reported: a cluster that runs runs on, unobserved, until the spec is fixed; a suspension or an ended job's
        result stays. One that never got that far is FAILED with the reason, nothing deployed."""
        lifecycle = job.status.get("lifecycleState")
        status = self._refused(job, error, post_event, kept=lifecycle in RUNS)
        if lifecycle not in (None, Lifecycle.CREATED):
            return await self._write(job, status, write_status)
        await self._remove(job.cluster(self.seal))
        return await self._write(job, never_valid(job.spec, status), write_status)

    @staticmethod
    def _refused(job: FlinkJobRef, error: InvalidSpecError, post_event: EventPoster, kept: bool) -> dict[str, Any]:
        """The status fields of refusing ``job``'s spec; its Warning event, once per spec refused."""
        status = refused(job.spec, error, kept)
        if job.status.get("refusedSpec") != status["refusedSpec"]:
            post_event("Warning", error.reason, status["error"])
            log.warning("FlinkJob %s/%s: %s", job.namespace, job.name, status["error"])
        return status

    async def _start_deploy(
        self,
        job: FlinkJobRef,
        spec: FlinkJobSpec,
        spec_hash: str,
        status: dict[str, Any],
        io: FlinkJobIo,
        restore: Restore | None,
        state: StateSettings,
    ) -> dict[str, Any]:
        """Begin deploying the spec's cluster, its job started from ``restore`` (None: fresh): write the status it
        begins with and start its task (:class:`~jobcluster.controller.deployments.InFlight`), which writes the outcome.
        Returns the status fields to write now: the beginning, or the outcome when it failed before the task began."""
        started = self._clock()
        starting = starting_status(job, status, spec, spec_hash, state, restore, started)
        target = dataclasses.replace(job.cluster(self.seal), target=spec.target, cluster_id="")
        try:
            target = dataclasses.replace(target, access=await self._call(self.clusters.access, target))
        except JobClusterError as exc:
            outcome, events = failure_of(job, spec, spec_hash, starting, exc, started, self._clock())
            report(job, events, io.post_event)
            return outcome
        starting["clusterAccess"] = replacing(job.status.get("clusterAccess"), target.access)
        starting["clusterAccessSignature"] = self.seal.sign(job.uid, target.access) if target.access else None
        await self._write(job, starting, io.write_status)
        if job.uid in self._deleted:  # deleted while the beginning was written: the deletion removes what may run
            return starting
        flight = InFlight(spec_hash, target)
        flight.task = asyncio.create_task(self._deploy(job, spec, flight, restore, started, starting, io), name=f"deploy {job.uid}")
        self._deploying[job.uid] = flight
        return starting

    async def _deploy(
        self,
        job: FlinkJobRef,
        spec: FlinkJobSpec,
        flight: InFlight,
        restore: Restore | None,
        started: datetime.datetime,
        starting: dict[str, Any],
        io: FlinkJobIo,
    ) -> None:
        """The task of one deployment: deploy on a thread of the deployment pool, then record the outcome."""
        deployed: Deployed | None = None
        try:
            try:
                deployed = await asyncio.get_running_loop().run_in_executor(
                    self._deploys, functools.partial(deploy_blocking, self.clusters, self.defaults, job, spec, flight.target, restore)
                )
            except JobClusterError as exc:
                outcome, events = failure_of(job, spec, flight.spec_hash, starting, exc, started, self._clock())
            else:
                seconds = (self._clock() - started).total_seconds()
                outcome = deployed_status(starting, deployed, job.name, seconds)
                where = f"job cluster {deployed.cluster_id} serves REST at {deployed.rest_url}"
                events = [("Normal", "Deployed", f"{where} after {seconds:.1f} s; job {deployed.job_id}")]
                if self._on_deployed is not None:
                    self._on_deployed(seconds)
            await self._record_deployment(job.uid, flight, deployed, outcome, events, io)
        except asyncio.CancelledError:
            raise  # the operator stops: the status says the deployment began, and the next operator adopts it
        except Exception:  # a task's error has nobody to raise to: logged; the next look adopts the cluster or redeploys
            self._known.pop(job.uid, None)
            log.exception("FlinkJob %s/%s: the outcome of its deployment was not recorded", job.namespace, job.name)
        finally:
            if self._deploying.get(job.uid) is flight:
                del self._deploying[job.uid]

    async def _record_deployment(
        self,
        uid: str,
        flight: InFlight,
        deployed: Deployed | None,
        outcome: dict[str, Any],
        events: list[tuple[str, str, str]],
        io: FlinkJobIo,
    ) -> None:
        """Write a deployment's outcome and post its events, under the FlinkJob's lock; a superseded deployment's are
        dropped, and what it made is removed (a deletion removes it itself once the deployment is over)."""
        async with self._locks.setdefault(uid, asyncio.Lock()):
            if uid in self._deleted:
                return
            if flight.superseded:
                if deployed is not None:
                    await self._remove(flight.target)
                return
            job = self._known.get(uid) or await io.read()
            if job is not None and not job.deleting:
                report(job, events, io.post_event)
                await self._write(job, outcome, io.write_status)

    async def _while_deploying(self, job: FlinkJobRef, flight: InFlight, post_event: EventPoster) -> str:
        """A reconciliation while a deployment of the FlinkJob is in flight: nothing to do while its spec is still the
        one wanted; otherwise the deployment is superseded and its cluster removed, again at every look, since the
        deployment may make it after a removal. The next look after the deployment ended plans for the spec as it is."""
        why = superseded_by(job.spec, job.status, self.defaults, flight.spec_hash)
        if why is not None:
            if not flight.superseded:
                flight.superseded = True
                post_event("Normal", "DeploymentSuperseded", f"{why} while its job cluster started: removing that cluster")
                log.info("FlinkJob %s/%s: %s while its job cluster started", job.namespace, job.name, why)
            await self._remove(flight.target)
        return str(job.status.get("lifecycleState") or Lifecycle.CREATED)

    async def _write(self, job: FlinkJobRef, update: Mapping[str, Any], write_status: StatusWriter) -> str:
        document = recorded(job.status, update, job.generation, self._clock())
        checked_patch(document)
        written = merge_patch(job.status, document)  # what the server holds after the write
        if written != job.status:
            await write_status(document)
        self._known[job.uid] = dataclasses.replace(job, status=written)
        return str(document["lifecycleState"])
