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
``deployTime`` (when that deployment began), ``firstRunningTime`` (when its job was
first seen RUNNING: the startup deadline is met), ``ttlExpired`` and
``clusterAccess`` (what the target's hook keeps to reach that cluster once the
objects the spec names are gone, e.g. YARN's Hadoop site files: file name → text;
written as the deployment begins, dropped when it fails).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobcluster.client.operator_hook import ClusterRef, InvalidSpecError
from jobcluster.controller.clusters import JobClusters
from jobcluster.controller.flinkjob_status import Lifecycle, conditions, timestamp
from jobcluster.controller.job_config import job_configuration
from jobcluster.controller.plan import DELETE_RESOURCE, DEPLOY, REMOVE, REMOVE_RESULT, Facts, needs_observation, plan
from jobcluster.controller.programs import job_program
from jobcluster.controller.resource import TARGET_KUBERNETES, deployed_spec_hash, parse_spec
from jobcluster.errors import AlreadyExistsError, DeploymentError, JobClusterError

log = logging.getLogger(__name__)

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


class Reconciler:
    """Carries out ``plan.plan`` for FlinkJobs through ``clusters``; ``defaults``: the operator's default configuration."""

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
        if job.status.get("deployedSpec") == spec_hash and job.status.get("lifecycleState") == Lifecycle.FAILED:
            return await self._write(job, {}, write_status)  # refused already; an edit still advances observedGeneration
        await asyncio.to_thread(self.clusters.remove, job.cluster)
        post_event("Warning", error.reason, str(error))
        status = {
            "lifecycleState": Lifecycle.FAILED,
            "error": str(error),
            "failureReason": error.reason,
            "deployedSpec": spec_hash,
            "restUrl": "",
        }
        return await self._write(job, status, write_status)

    async def _deploy(
        self, job: FlinkJobRef, spec_hash: str, status: dict[str, Any], write_status: StatusWriter, post_event: EventPoster
    ) -> dict[str, Any]:
        """Deploy the spec's cluster; the status fields of the outcome (DEPLOYED, or FAILED with the reason)."""
        started = self._clock()
        spec = parse_spec(job.spec)
        # the spec is recorded before the long wait: an operator restarted meanwhile adopts this deployment
        # the cluster id is cleared: an adopting operator must not take the previous cluster's result for this one
        target = dataclasses.replace(job.cluster, target=spec.target, cluster_id="")
        target = dataclasses.replace(target, access=await asyncio.to_thread(self.clusters.access, target))
        starting = {
            **status,
            "deployedSpec": spec_hash,
            "deployedTarget": spec.target,
            "deployTime": timestamp(started),
            "error": "",
            "jobStatus": None,
            "clusterId": "",
            "firstRunningTime": "",
            "clusterAccess": _replacing(job.status.get("clusterAccess"), target.access),
        }
        await self._write(job, starting, write_status)
        try:
            with tempfile.TemporaryDirectory(prefix=f"flinkjob-{job.name}-") as scratch:
                program = await asyncio.to_thread(job_program, spec.job, job.name, Path(scratch))
                config = job_configuration(spec, job.name, job.namespace, job.uid, self.defaults, Path(scratch))
                deployed = await asyncio.to_thread(self.clusters.deploy, target, config, program)
        except AlreadyExistsError:  # the previous cluster's objects are still being collected: try again
            log.info("FlinkJob %s/%s: waiting for the previous job cluster to be gone", job.namespace, job.name)
            previous = {"deployedSpec": job.status.get("deployedSpec") or "", "deployedTarget": job.status.get("deployedTarget") or ""}
            return {"lifecycleState": Lifecycle.UPGRADING, **previous}
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
            "lifecycleState": Lifecycle.DEPLOYED,
            "deployedSpec": spec_hash,
            "deployTime": timestamp(started),
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
        return {
            "lifecycleState": Lifecycle.FAILED,
            "deployedSpec": spec_hash,
            "error": str(error),
            "failureReason": reason,
            "restUrl": "",
            "clusterAccess": None,  # a refused deployment leaves nothing to reach: the FlinkJob is deletable at once
        }

    async def _write(self, job: FlinkJobRef, update: Mapping[str, Any], write_status: StatusWriter) -> str:
        merged = {**job.status, **update}
        lifecycle = str(merged.get("lifecycleState") or Lifecycle.CREATED)
        job_state = (merged.get("jobStatus") or {}).get("state")
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
            ),
        }
        if document != {key: job.status.get(key) for key in document}:
            await write_status(document)
        return lifecycle


def _replacing(old: Mapping[str, Any] | None, new: Mapping[str, str]) -> dict[str, str | None]:
    """A JSON merge patch that turns the status map ``old`` into ``new`` (a patch merges maps: a key ``new``
    lacks is deleted by null)."""
    return {**dict.fromkeys(old or {}), **new}
