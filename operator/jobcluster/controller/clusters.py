"""The operator's view of a FlinkJob's job cluster, whatever its target: deploy, observe, remove.

Every target goes through its ClusterDescriptor alone (deploy, ``retrieve``,
``job_result``, ``pending_reason``, ``kill_cluster``, ``remove_job_result``), in
this process, with no CLI subprocess per job: :class:`DescriptorClusters` does it
the same way for each. What an operator must know of a target is small and lives
in an ``OperatorHook`` per target, in the target's folder
(``backends/<name>/operator_hook.py``): how to build the descriptor for a FlinkJob,
what its cluster must carry, which cluster ids are the FlinkJob's, and what to keep in
the FlinkJob's status to reach its cluster later (``access``). :class:`JobClusters` picks
the target of each FlinkJob, so the reconciler never branches on it. The job's
state comes from the cluster's own REST API (:func:`observe_job`).

Removal never lets a cluster that may run go silently: when the target cannot be
reached, or how to reach it is lost, it raises, and the FlinkJob keeps its
finalizer until a later attempt succeeds. Only a FlinkJob that deployed nothing
(no cluster id, nothing kept) is let go when its cluster cannot be looked for.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from jobcluster.client.cluster_client import RestClusterClient, SavepointStatus
from jobcluster.client.connectors import with_s3a_connector
from jobcluster.client.descriptor import ClusterHandle, JobResult, PackagedProgram
from jobcluster.client.executor import PipelineExecutor
from jobcluster.client.operator_hook import ClusterRef, InvalidSpecError, OperatorHook
from jobcluster.client.program import build_job_graph
from jobcluster.config.configuration import Configuration
from jobcluster.config.targets import canonical
from jobcluster.controller.job_state import SavepointPoll, SavepointTrigger
from jobcluster.errors import ClusterClientError, DeploymentError, IllegalConfigurationError, JobClusterError, NotFoundError
from jobcluster.jobgraph.job_status import TERMINAL_JOB_STATES
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.spark.checkpoints import SavepointError

log = logging.getLogger(__name__)

REST_TIMEOUT = 5.0  # seconds for one REST call of an observation
DISPOSAL_TIMEOUT = 60.0  # seconds one savepoint's disposal may take (a delete of its files)


@dataclass(frozen=True)
class Deployed:
    """A job cluster just deployed: its JobID, where its REST API answers, and its cluster id."""

    job_id: str
    rest_url: str
    cluster_id: str


@dataclass
class Observation:
    """What one look at a FlinkJob's cluster found.

    ``exists``: the cluster runs (its JobManager Deployment, or its YARN application,
    is there); ``cluster_id``: its id as found; ``job``: ``GET /jobs/{id}`` when REST
    answered; ``task_managers``: ``GET /taskmanagers``; ``result``: how the job ended,
    once the cluster is gone; ``failure_cause``: the end of the execution result's
    cause, fetched once the job is terminal (which also lets the attached cluster
    shut down); ``pending``: why the cluster cannot get its containers, if known;
    ``savepoint``: what the cluster says of the pending savepoint trigger asked about.
    """

    exists: bool
    cluster_id: str = ""
    rest_url: str | None = None
    job: dict[str, Any] | None = None
    task_managers: list[dict[str, Any]] = field(default_factory=list)
    result: JobResult | None = None
    failure_cause: str | None = None
    pending: str | None = None
    savepoint: SavepointPoll | None = None


class TargetClusters(Protocol):
    """The job clusters of one target (an adapter over its ClusterDescriptor); blocking calls."""

    def access(self, ref: ClusterRef) -> dict[str, str]:
        """What to keep in the FlinkJob's status to reach the cluster about to be deployed once the objects its
        spec names are gone (``ref.access`` later); ``{}`` when nothing is needed or the spec is refused.

        Raises:
            JobClusterError: the platform refuses or cannot be reached.
        """

    def deploy(self, ref: ClusterRef, config: Configuration, program: PackagedProgram) -> Deployed:
        """Deploy the job of ``program`` under ``config``; returns once its JobManager serves REST.

        Raises:
            JobClusterError: the JobGraph, configuration or deployment is refused (nothing is left behind).
        """

    def observe(self, ref: ClusterRef, job_id: str | None, trigger_id: str | None = None) -> Observation:
        """A look at the cluster (see :class:`Observation`), with the state of savepoint ``trigger_id`` when given.

        Raises:
            DeploymentError: the platform refuses or cannot be reached.
        """

    def trigger_savepoint(self, ref: ClusterRef, trigger: SavepointTrigger) -> None:
        """Send ``trigger`` (with its own trigger id: sending it again is the same operation) to the cluster's REST API.

        Raises:
            ClusterClientError: the cluster refused it (e.g. the job is not running), or its REST API does not
                answer (then whether it arrived is unknown: the next look says).
        """

    def dispose_savepoints(self, ref: ClusterRef, locations: list[str]) -> list[str]:
        """Have the running cluster dispose of the savepoints at ``locations`` (its job reaches their storage);
        returns a message for each one that could not be disposed of."""

    def remove(self, ref: ClusterRef) -> bool:
        """Remove the cluster and everything of it; False when there was none.

        Raises:
            DeploymentError: the platform refuses or cannot be reached.
        """

    def remove_result(self, ref: ClusterRef) -> None:
        """Delete what an ended cluster left for the FlinkJob (its result record), if anything.

        Raises:
            DeploymentError: the platform refuses or cannot be reached.
        """


class JobClusters:
    """Dispatches each call to the adapter of the FlinkJob's target (``by_target``: target name → adapter; a target's
    other name, ``yarn-per-job``, reaches the same adapter)."""

    def __init__(self, by_target: Mapping[str, TargetClusters]) -> None:
        self.by_target = dict(by_target)

    def _of(self, ref: ClusterRef) -> TargetClusters:
        return self.by_target.get(canonical(ref.target)) or _NOTHING_DEPLOYED

    def access(self, ref: ClusterRef) -> dict[str, str]:
        return self._of(ref).access(ref)

    def deploy(self, ref: ClusterRef, config: Configuration, program: PackagedProgram) -> Deployed:
        return self._of(ref).deploy(ref, config, program)

    def observe(self, ref: ClusterRef, job_id: str | None, trigger_id: str | None = None) -> Observation:
        return self._of(ref).observe(ref, job_id, trigger_id)

    def trigger_savepoint(self, ref: ClusterRef, trigger: SavepointTrigger) -> None:
        self._of(ref).trigger_savepoint(ref, trigger)

    def dispose_savepoints(self, ref: ClusterRef, locations: list[str]) -> list[str]:
        return self._of(ref).dispose_savepoints(ref, locations)

    def remove(self, ref: ClusterRef) -> bool:
        return self._of(ref).remove(ref)

    def remove_result(self, ref: ClusterRef) -> None:
        self._of(ref).remove_result(ref)


class DescriptorClusters:
    """The job clusters of one target's FlinkJobs, through the target's ClusterDescriptor alone; a :class:`TargetClusters`.

    A cluster whose job was RUNNING at the last look is asked again through its REST API alone: while the
    job still runs, a look costs the platform (the API server, the ResourceManager) nothing; any other
    answer, or none, is followed by the full look.
    """

    def __init__(self, hook: OperatorHook) -> None:
        self.hook = hook
        self._running: dict[str, ClusterHandle] = {}  # by FlinkJob uid: the cluster whose job was RUNNING at the last look
        self._lock = threading.Lock()

    def access(self, ref: ClusterRef) -> dict[str, str]:
        """The hook's :meth:`~jobcluster.client.operator_hook.OperatorHook.access`; ``{}`` for a spec the hook
        refuses (the deployment that follows is refused the same way, and says why).

        Raises:
            JobClusterError: the platform refuses or cannot be reached.
        """
        try:
            return dict(self.hook.access(ref))
        except InvalidSpecError:
            return {}

    def deploy(self, ref: ClusterRef, config: Configuration, program: PackagedProgram) -> Deployed:
        """Deploy the job of ``program`` under ``config``; returns once its JobManager serves REST.

        Raises:
            JobClusterError: the JobGraph, configuration or deployment is refused (nothing is left behind).
        """
        self._forget(ref)
        config = self.hook.prepare(ref, config)
        descriptor = self.hook.descriptor(ref, config)
        earlier = self.hook.cluster_id(ref, descriptor)
        if earlier:
            descriptor.remove_job_result(earlier)  # a result an earlier run left is not this run's
        program = with_s3a_connector(program, config, descriptor.runs_client_spark)
        graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
        client = PipelineExecutor(descriptor).execute(graph, program, config).cluster_client
        try:
            return Deployed(graph.job_id, client.rest_url, client.cluster_id)
        finally:
            client.close()

    def observe(self, ref: ClusterRef, job_id: str | None, trigger_id: str | None = None) -> Observation:
        """A look at the FlinkJob's cluster: its REST API and pending workers while it runs, its result once it is gone;
        the state of savepoint ``trigger_id`` of the job when given.

        Raises:
            JobClusterError: the platform refuses or cannot be reached.
        """
        with self._lock:
            known = self._running.pop(ref.uid, None)
        if known is not None and ref.cluster_id in ("", known.cluster_id):
            seen = observe_job(Observation(exists=True, cluster_id=known.cluster_id, rest_url=known.rest_url), known, job_id, trigger_id)
            if _running(seen):
                self._remember(ref, known)
            # an ended job's look is complete too: its result and a stop's savepoint read, the cluster may go at once
            if _running(seen) or (seen.job is not None and seen.job.get("state") in TERMINAL_JOB_STATES):
                return seen
        descriptor = self.hook.descriptor(ref)
        cluster_id = self.hook.cluster_id(ref, descriptor)
        if not cluster_id:
            return Observation(exists=False)
        handle = descriptor.retrieve(cluster_id)
        if handle is None:
            return Observation(exists=False, cluster_id=cluster_id, result=descriptor.job_result(cluster_id))
        pending = descriptor.pending_reason(cluster_id)
        # the cluster's own job id when the status has none yet: a deployment adopted after the operator restarted
        seen = observe_job(
            Observation(exists=True, cluster_id=cluster_id, rest_url=handle.rest_url, pending=pending),
            handle,
            job_id or handle.job_id,
            trigger_id,
        )
        if _running(seen):
            self._remember(ref, handle)
        return seen

    def trigger_savepoint(self, ref: ClusterRef, trigger: SavepointTrigger) -> None:
        """See :meth:`TargetClusters.trigger_savepoint`.

        Raises:
            ClusterClientError: the cluster refused the trigger, does not run, or does not answer.
        """
        with self._client(ref) as client:
            client.trigger_savepoint(trigger.job_id, trigger.directory, trigger.stop, trigger_id=trigger.trigger_id)

    def dispose_savepoints(self, ref: ClusterRef, locations: list[str]) -> list[str]:
        """See :meth:`TargetClusters.dispose_savepoints`; each disposal waits up to :data:`DISPOSAL_TIMEOUT` seconds."""
        failures = []
        try:
            with self._client(ref) as client:
                for location in locations:
                    try:
                        client.dispose_savepoint(location, DISPOSAL_TIMEOUT)
                    except (ClusterClientError, SavepointError) as exc:
                        failures.append(f"{location}: {exc}")
        except ClusterClientError as exc:
            failures.extend(f"{location}: {exc}" for location in locations[len(failures) :])
        return failures

    @contextlib.contextmanager
    def _client(self, ref: ClusterRef) -> Iterator[RestClusterClient]:
        """A REST client of the FlinkJob's running cluster (the one of the last look while its job runs).

        Raises:
            ClusterClientError: no cluster of the FlinkJob serves REST.
        """
        with self._lock:
            handle = self._running.get(ref.uid)
        if handle is None:
            descriptor = self.hook.descriptor(ref)
            cluster_id = self.hook.cluster_id(ref, descriptor)
            handle = descriptor.retrieve(cluster_id) if cluster_id else None
        if handle is None or handle.rest_url is None:
            raise ClusterClientError(f"no job cluster of FlinkJob {ref.namespace}/{ref.name} serves REST")
        client = RestClusterClient(
            handle.rest_url, handle.cluster_id, timeout=REST_TIMEOUT, token=handle.rest_token, via_proxy=handle.via_proxy
        )
        try:
            yield client
        finally:
            client.close()

    def _remember(self, ref: ClusterRef, handle: ClusterHandle) -> None:
        with self._lock:
            self._running[ref.uid] = handle

    def _forget(self, ref: ClusterRef) -> None:
        with self._lock:
            self._running.pop(ref.uid, None)

    def remove(self, ref: ClusterRef) -> bool:
        """Stop every cluster of the FlinkJob that has not ended; False when there was none, or when the FlinkJob
        deployed nothing (``ref`` has no cluster id and nothing kept) and its target cannot be looked at.

        Raises:
            ClusterAccessLostError: the FlinkJob deployed a cluster and what the target needs to reach it is gone
                (the ConfigMap the spec names, and nothing was kept).
            JobClusterError: the platform refuses or cannot be reached, and a cluster may run.
        """
        self._forget(ref)
        try:
            return self._remove(ref)
        except JobClusterError as exc:
            if ref.cluster_id or ref.access:
                raise
            # a failed deployment leaves nothing behind and keeps nothing: no cluster can be left running
            log.warning("FlinkJob %s/%s deployed nothing; its clusters were not looked for: %s", ref.namespace, ref.name, exc)
            return False

    def _remove(self, ref: ClusterRef) -> bool:
        try:
            descriptor = self.hook.descriptor(ref)
        except InvalidSpecError as exc:
            raise ClusterAccessLostError(
                f"cannot reach the job cluster {ref.cluster_id or '(being deployed)'} of FlinkJob {ref.namespace}/{ref.name}: {exc}"
            ) from exc
        removed = False
        for cluster_id in self.hook.running(ref, descriptor):
            log.info("removing job cluster %s of FlinkJob %s/%s", cluster_id, ref.namespace, ref.name)
            try:
                descriptor.kill_cluster(cluster_id)
                removed = True
            except NotFoundError:
                pass  # it ended meanwhile
        return removed

    def remove_result(self, ref: ClusterRef) -> None:
        """Delete the result record an ended cluster left for the FlinkJob, where the target keeps one.

        Raises:
            JobClusterError: the platform refuses or cannot be reached.
        """
        descriptor = self.hook.descriptor(ref)
        cluster_id = self.hook.cluster_id(ref, descriptor)
        if cluster_id:
            descriptor.remove_job_result(cluster_id)


def _running(observation: Observation) -> bool:
    return observation.job is not None and observation.job.get("state") == "RUNNING"


class ClusterAccessLostError(DeploymentError):
    """A FlinkJob's cluster may run, but what its target needs to reach it is gone (and nothing of it was kept)."""


class _NothingDeployed:
    """The clusters of a target no adapter serves (a spec the reconciler refused: nothing was deployed there)."""

    def access(self, ref: ClusterRef) -> dict[str, str]:
        return {}

    def deploy(self, ref: ClusterRef, config: Configuration, program: PackagedProgram) -> Deployed:
        raise IllegalConfigurationError(f"unknown target {ref.target!r}")

    def observe(self, ref: ClusterRef, job_id: str | None, trigger_id: str | None = None) -> Observation:
        return Observation(exists=False)

    def trigger_savepoint(self, ref: ClusterRef, trigger: SavepointTrigger) -> None:
        raise ClusterClientError(f"FlinkJob {ref.namespace}/{ref.name} has no job cluster on target {ref.target!r}")

    def dispose_savepoints(self, ref: ClusterRef, locations: list[str]) -> list[str]:
        return [f"{location}: no job cluster runs to dispose of it" for location in locations]

    def remove(self, ref: ClusterRef) -> bool:
        return False

    def remove_result(self, ref: ClusterRef) -> None:
        return None


_NOTHING_DEPLOYED: TargetClusters = _NothingDeployed()


class UnsupportedTarget:
    """A target this operator cannot serve (``why``: e.g. its image has no YARN client): a FlinkJob of it fails at
    once with reason ``TargetNotSupported``, and a cluster an earlier operator deployed there is never let go
    silently: looking at it, or removing it, raises, so its FlinkJob keeps its finalizer."""

    def __init__(self, target: str, why: str) -> None:
        self.target = target
        self.why = why

    def access(self, ref: ClusterRef) -> dict[str, str]:
        raise InvalidSpecError(f"target {self.target}: {self.why}", reason="TargetNotSupported")

    def deploy(self, ref: ClusterRef, config: Configuration, program: PackagedProgram) -> Deployed:
        raise InvalidSpecError(f"target {self.target}: {self.why}", reason="TargetNotSupported")

    def observe(self, ref: ClusterRef, job_id: str | None, trigger_id: str | None = None) -> Observation:
        raise DeploymentError(f"FlinkJob {ref.namespace}/{ref.name}'s cluster on {self.target} cannot be reached: {self.why}")

    def trigger_savepoint(self, ref: ClusterRef, trigger: SavepointTrigger) -> None:
        raise ClusterClientError(f"FlinkJob {ref.namespace}/{ref.name}'s cluster on {self.target} cannot be reached: {self.why}")

    def dispose_savepoints(self, ref: ClusterRef, locations: list[str]) -> list[str]:
        return [f"{location}: {self.why}" for location in locations]

    def remove(self, ref: ClusterRef) -> bool:
        raise DeploymentError(f"FlinkJob {ref.namespace}/{ref.name}'s cluster on {self.target} cannot be removed: {self.why}")

    def remove_result(self, ref: ClusterRef) -> None:
        return None


def observe_job(observation: Observation, handle: ClusterHandle, job_id: str | None, trigger_id: str | None = None) -> Observation:
    """Fill ``observation`` with what the cluster of ``handle`` says about job ``job_id`` and its savepoint
    ``trigger_id`` (nothing when it does not serve REST yet or does not answer)."""
    if handle.rest_url is None or not job_id:
        return observation
    client = RestClusterClient(
        handle.rest_url, handle.cluster_id, timeout=REST_TIMEOUT, token=handle.rest_token, via_proxy=handle.via_proxy
    )
    try:
        observation.job = client.job_details(job_id)
        observation.task_managers = client.task_managers()
        if observation.job["state"] in TERMINAL_JOB_STATES:
            result = client.execution_result(job_id)
            cause = (result or {}).get("failure-cause") or {}
            observation.failure_cause = cause.get("stack-trace")
        if trigger_id:
            observation.savepoint = _poll(trigger_id, client.savepoint_status(job_id, trigger_id))
    except ClusterClientError as exc:
        log.debug("job cluster %s does not answer: %s", handle.cluster_id, exc)
    finally:
        client.close()
    return observation


def _poll(trigger_id: str, status: SavepointStatus) -> SavepointPoll:
    if status.state == "COMPLETED" and status.failure is not None:
        return SavepointPoll(trigger_id, "FAILED", failure=status.failure)
    return SavepointPoll(trigger_id, status.state, location=status.location)
