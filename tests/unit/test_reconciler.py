"""The Reconciler's actions, carried out against a fake cluster adapter: what it deploys, removes and writes, in order.

``plan`` (the decision) is tested in test_controller_plan.py; here the async
side runs: the per-FlinkJob lock, the status written before a deployment's long
wait, the outcome of a deployment the platform refuses, removal before an
upgrade, the resource deleted after its TTL. The adapter is replaced because a
deployment racing the garbage collector of the previous cluster cannot be
produced on demand; the real adapters run in tests/integration/k8s/test_operator_e2e.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from jobcluster.client.descriptor import JobResult, PackagedProgram
from jobcluster.client.operator_hook import ClusterRef, InvalidSpecError
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.controller.access_seal import AccessSeal
from jobcluster.controller.clusters import Deployed, JobClusters, Observation, UnsupportedTarget
from jobcluster.controller.flinkjob_ref import FlinkJobRef
from jobcluster.controller.flinkjob_status import Lifecycle, merge_patch
from jobcluster.controller.handlers import paced, reconcile_interval, settled
from jobcluster.controller.job_state import SavepointPoll, SavepointTrigger
from jobcluster.controller.main import NO_YARN
from jobcluster.controller.reconciler import Reconciler
from jobcluster.controller.resource import deployed_spec_hash
from jobcluster.controller.status_model import undeclared
from jobcluster.errors import (
    AlreadyExistsError,
    ClusterClientError,
    ClusterUnavailableError,
    ClusterUnreachableError,
    DeploymentError,
    PlatformUnavailableError,
)
from tests.support.fakes import until
from tests.support.operator_start import start_operator

NOW = datetime.datetime(2026, 11, 26, 12, 0, tzinfo=datetime.UTC)
SPEC = {"job": {"source": "print(1)", "parallelism": 2}, "startupDeadlineSeconds": 600}


@dataclass
class FakeClusters:
    """The cluster adapter: records calls; ``observation`` is what a look finds; ``deploy_error`` what a deploy raises."""

    observation: Observation = field(default_factory=lambda: Observation(exists=False))
    deploy_error: Exception | None = None
    calls: list[tuple[str, str]] = field(default_factory=list)
    deployed_configs: list[Configuration] = field(default_factory=list)
    gate: asyncio.Event | None = None  # a deploy waits for it (on its thread), to hold the FlinkJob's lock
    kept: dict[str, str] = field(default_factory=dict)  # what ``access`` gives
    deployed_refs: list[ClusterRef] = field(default_factory=list)
    polled: list[str | None] = field(default_factory=list)  # the trigger id each look asked about
    triggers: list[SavepointTrigger] = field(default_factory=list)
    trigger_error: Exception | None = None
    disposed: list[str] = field(default_factory=list)

    def access(self, ref: ClusterRef) -> dict[str, str]:
        return dict(self.kept)

    def deploy(self, ref: ClusterRef, config: Configuration, program: PackagedProgram) -> Deployed:
        self.calls.append(("deploy", ref.name))
        self.deployed_configs.append(config)
        self.deployed_refs.append(ref)
        assert program.script.read_text() == "print(1)", "the inline program was written for the client"
        if self.gate is not None:
            asyncio.run_coroutine_threadsafe(self.gate.wait(), self.loop).result(30)
        if self.deploy_error is not None:
            raise self.deploy_error
        return Deployed(config.get(options.PIPELINE_FIXED_JOB_ID) or "f" * 32, "http://10.0.0.9:8081", ref.name)

    def observe(self, ref: ClusterRef, job_id: str | None, trigger_id: str | None = None) -> Observation:
        self.calls.append(("observe", ref.name))
        self.polled.append(trigger_id)
        return self.observation

    def trigger_savepoint(self, ref: ClusterRef, trigger: SavepointTrigger) -> None:
        self.calls.append(("trigger-savepoint", ref.name))
        self.triggers.append(trigger)
        if self.trigger_error is not None:
            raise self.trigger_error

    def dispose_savepoints(self, ref: ClusterRef, locations: list[str]) -> list[str]:
        self.calls.append(("dispose-savepoints", ref.name))
        self.disposed.extend(locations)
        return [f"{location}: permission denied" for location in locations if "denied" in location]

    def remove(self, ref: ClusterRef) -> bool:
        self.calls.append(("remove", ref.name))
        return True

    def remove_result(self, ref: ClusterRef) -> None:
        self.calls.append(("remove-result", ref.name))


@dataclass
class FlinkJob:
    """One FlinkJob as the API server would keep it: status writes merge into it; events and deletion are recorded."""

    spec: dict[str, Any]
    uid: str = "u-1"
    status: dict[str, Any] = field(default_factory=dict)
    generation: int = 1
    writes: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    deleted: bool = False
    deleting: bool = False
    reads: int = 0

    async def read(self) -> FlinkJobRef | None:
        self.reads += 1
        if self.deleted:
            return None
        body = {
            "metadata": {
                "name": "wc",
                "namespace": "jobs",
                "uid": self.uid,
                "generation": self.generation,
                **({"deletionTimestamp": "2026-11-26T12:00:00Z"} if self.deleting else {}),
            },
            "spec": self.spec,
            "status": self.status,
        }
        return FlinkJobRef.of(body)

    async def write(self, document: dict[str, Any]) -> None:
        assert undeclared(document) == [], "every status field the operator writes is in the typed status (and the CRD)"
        self.writes.append(document)
        self.status = merge_patch(self.status, document)

    def post(self, kind: str, reason: str, message: str) -> None:
        self.events.append((kind, reason, message))

    async def delete(self) -> None:
        self.deleted = True


def reconcile(reconciler: Reconciler, job: FlinkJob, generation: int | None = None) -> str | None:
    """One reconciliation (of the event that saw ``generation``), and the deployment it began until it recorded its
    outcome: the lifecycle then."""

    async def settled() -> str | None:
        lifecycle = await reconciler.reconcile(job.uid, job.read, job.write, job.post, job.delete, generation=generation)
        if not reconciler._deploying:
            return lifecycle
        await reconciler.settled()
        return str(job.status["lifecycleState"])

    return asyncio.run(settled())


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += datetime.timedelta(seconds=seconds)


def reconciler_of(clusters: FakeClusters, clock: Callable[[], datetime.datetime] = lambda: NOW) -> Reconciler:
    return Reconciler(clusters, {"taskmanager.numberOfTaskSlots": "2"}, clock=clock)  # type: ignore[arg-type]


def test_a_new_flinkjob_records_its_spec_before_the_deployment_and_is_deployed():
    clusters, job = FakeClusters(), FlinkJob(SPEC)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.DEPLOYED
    assert clusters.calls == [("deploy", "wc")]
    first, last = job.writes[0], job.writes[-1]
    assert first["lifecycleState"] == Lifecycle.CREATED and first["deployedSpec"], "an operator restarted mid-deploy adopts it"
    assert last["clusterId"] == "wc" and last["restUrl"] == "http://10.0.0.9:8081"
    assert last["jobStatus"] == {"jobId": "f" * 32, "jobName": "wc", "state": "CREATED"}
    assert [reason for _, reason, _ in job.events] == ["Deployed"]
    assert clusters.deployed_configs[0].to_dict()["taskmanager.numberOfTaskSlots"] == "2", "the operator's defaults apply"


def test_a_refused_deployment_fails_the_flinkjob_with_the_platforms_words():
    clusters = FakeClusters(deploy_error=DeploymentError("namespace jobs does not exist"))
    job = FlinkJob(SPEC)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED
    assert job.status["failureReason"] == "DeploymentFailed" and job.status["error"] == "namespace jobs does not exist"
    assert job.events[-1][:2] == ("Warning", "DeploymentFailed")
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED
    assert clusters.calls == [("deploy", "wc")], "a failed spec is not deployed again until it changes"


def test_a_cluster_whose_predecessor_is_still_collected_is_deployed_again_after_a_backoff():
    clusters = FakeClusters(deploy_error=AlreadyExistsError("the job cluster wc already exists"))
    job = FlinkJob(SPEC)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.CREATED
    assert job.status["deployedSpec"] == "", "the spec is not recorded as deployed: a later reconciliation tries again"
    assert job.status["deployRetry"]["attempts"] == 1 and job.status["deployRetry"]["nextAttemptTime"] == "2026-11-26T12:00:05Z"
    assert job.events[-1][:2] == ("Warning", "ClusterExists") and "attempt 1 failed" in job.events[-1][2]
    clusters.deploy_error = None
    assert reconcile(reconciler_of(clusters, lambda: NOW + datetime.timedelta(seconds=3)), job) == Lifecycle.CREATED
    assert [c for c, _ in clusters.calls] == ["deploy"], "not before the attempt is due"
    assert reconcile(reconciler_of(clusters, lambda: NOW + datetime.timedelta(seconds=5)), job) == Lifecycle.DEPLOYED
    assert [c for c, _ in clusters.calls] == ["deploy", "observe", "deploy"], "the retry first looks for what the attempt left"
    assert "deployRetry" not in job.status and job.status["error"] == ""


def test_transient_failures_are_retried_with_a_doubling_delay_until_the_startup_deadline_then_fail():
    clusters = FakeClusters(deploy_error=PlatformUnavailableError("the Kubernetes API server at https://k8s is not reachable"))
    job, clock = FlinkJob({**SPEC, "startupDeadlineSeconds": 30}), Clock()
    reconciler = Reconciler(clusters, {}, clock=clock)  # type: ignore[arg-type]
    lifecycles = []
    for _ in range(12):
        lifecycles.append(reconcile(reconciler, job))
        clock.advance(5)
    deploys = [c for c, _ in clusters.calls].count("deploy")
    assert deploys == 3, "at 0, 5 and 15 s; the next (at 35 s) would begin past the 30 s deadline"
    assert lifecycles[-1] == Lifecycle.FAILED and job.status["failureReason"] == "DeploymentFailed"
    assert "not reachable" in job.status["error"] and "startupDeadlineSeconds" in job.status["error"]
    assert [reason for _, reason, _ in job.events] == ["DeploymentFailed"] * 3, "an Event for every attempt"
    assert job.status["terminationTime"] == "2026-11-26T12:00:15Z"


def test_a_flinkjob_whose_deployment_failed_is_cleaned_up_after_its_ttl():
    clusters = FakeClusters(deploy_error=DeploymentError("image pull refused"))
    job, clock = FlinkJob({**SPEC, "ttlSecondsAfterFinished": 60, "deleteAfterTtl": True}), Clock()
    assert reconcile(Reconciler(clusters, {}, clock=clock), job) == Lifecycle.FAILED  # type: ignore[arg-type]
    clock.advance(61)
    reconcile(Reconciler(clusters, {}, clock=clock), job)  # type: ignore[arg-type]
    assert job.deleted and job.status["ttlExpired"] is True


def test_a_jobmanager_that_stops_answering_makes_its_job_reconciling_until_it_answers_again():
    clusters, job, clock = FakeClusters(), FlinkJob(SPEC), Clock()
    reconciler = Reconciler(clusters, {}, clock=clock)  # type: ignore[arg-type]
    reconcile(reconciler, job)
    running = {"jid": "f" * 32, "state": "RUNNING", "start-time": 1}
    clusters.observation = Observation(exists=True, cluster_id="wc", rest_url="http://10.0.0.9:8081", job=running)
    assert reconcile(reconciler, job) == Lifecycle.STABLE
    clusters.observation = Observation(exists=True, cluster_id="wc", rest_url=None)
    for _ in range(4):
        clock.advance(10)
        reconcile(reconciler, job)
    assert job.status["lifecycleState"] == Lifecycle.DEPLOYED and job.status["jobStatus"]["state"] == "RECONCILING"
    assert "has not answered since 2026-11-26T12:00:10Z" in job.status["error"]
    assert {c["type"]: c["status"] for c in job.status["conditions"]}["Running"] == "False"
    assert [reason for _, reason, _ in job.events].count("JobManagerUnreachable") == 1
    clusters.observation = Observation(exists=True, cluster_id="wc", rest_url="http://10.0.0.9:8081", job=running)
    assert reconcile(reconciler, job) == Lifecycle.STABLE
    assert job.status["jobStatus"]["state"] == "RUNNING" and job.status["error"] == ""


def test_a_running_job_observed_again_unchanged_writes_nothing_and_reads_nothing():
    clusters, job = FakeClusters(), FlinkJob(SPEC)
    reconciler = reconciler_of(clusters)
    clusters.observation = Observation(exists=True, cluster_id="wc", job={"jid": "f" * 32, "state": "RUNNING", "duration": 5})
    for _ in range(2):
        asyncio.run(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete, generation=1))
    writes, reads = len(job.writes), job.reads
    clusters.observation.job = {"jid": "f" * 32, "state": "RUNNING", "duration": 9000}
    for _ in range(3):
        asyncio.run(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete, generation=1))
    assert (len(job.writes), job.reads) == (writes, reads), "the status is as written, and a running job's duration is not written"
    job.generation, job.spec = 2, {**SPEC, "startupDeadlineSeconds": 900}
    asyncio.run(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete, generation=2))
    assert job.reads == reads + 1, "a new generation is read from the API server"


def test_a_burst_of_deployments_stalls_neither_other_flinkjobs_nor_the_event_loops_threads():
    release = threading.Event()

    class SlowClusters(FakeClusters):
        def deploy(self, ref: ClusterRef, config: Configuration, program: PackagedProgram) -> Deployed:
            release.wait(30)
            return Deployed(config.get(options.PIPELINE_FIXED_JOB_ID) or "f" * 32, "http://10.0.0.9:8081", ref.name)

    async def scenario() -> float:
        clusters = SlowClusters()
        reconciler = reconciler_of(clusters)
        jobs = [FlinkJob(SPEC, uid=f"u-{n}") for n in range(24)]  # more than the loop's default threads (min(32, cpus + 4))
        burst = [asyncio.create_task(reconciler.reconcile(j.uid, j.read, j.write, j.post, j.delete)) for j in jobs]
        await asyncio.sleep(0.2)
        running = FlinkJob(SPEC, uid="u-running", status={"deployedSpec": deployed_spec_hash(SPEC), "lifecycleState": "STABLE"})
        clusters.observation = Observation(exists=True, cluster_id="wc", job={"jid": "f" * 32, "state": "RUNNING"})
        began = time.monotonic()
        await asyncio.wait_for(reconciler.reconcile("u-running", running.read, running.write, running.post, running.delete), 5)
        await asyncio.wait_for(asyncio.to_thread(time.sleep, 0), 5)  # the status reads and writes' threads
        took = time.monotonic() - began
        release.set()
        await asyncio.gather(*burst)
        await reconciler.settled()
        await reconciler.close()
        assert all(j.status["lifecycleState"] == Lifecycle.DEPLOYED for j in jobs), "each deployment recorded its outcome"
        return took

    assert asyncio.run(scenario()) < 2.0


def test_a_flinkjob_deleted_during_its_deployment_has_what_it_deployed_removed_afterwards():
    async def scenario() -> tuple[FakeClusters, str | None]:
        clusters, job = FakeClusters(), FlinkJob(SPEC)
        clusters.gate, clusters.loop = asyncio.Event(), asyncio.get_running_loop()  # type: ignore[attr-defined]
        reconciler = reconciler_of(clusters)
        deploying = asyncio.create_task(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete))
        await until(lambda: ("deploy", "wc") in clusters.calls, 10)
        job.deleting = True  # kubectl delete: the API server marks it, the finalizer keeps it
        deleting = asyncio.create_task(reconciler.delete(await job.read(), job.write))  # type: ignore[arg-type]
        await until(lambda: ("remove", "wc") in clusters.calls, 10)  # a TimeoutError: not removed at once
        queued = asyncio.create_task(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete, generation=1))
        await asyncio.sleep(0.1)  # a chance to act, which it must not take
        assert clusters.calls == [("deploy", "wc"), ("remove", "wc")], "what runs is removed at once, and only that"
        assert not deleting.done(), "the deletion waits for the deployment in flight"
        clusters.gate.set()
        _, _, after = await asyncio.gather(deploying, deleting, queued)
        return clusters, after

    clusters, after = asyncio.run(scenario())
    assert [c for c, _ in clusters.calls] == ["deploy", "remove", "remove"], "what the deployment made is removed too"
    assert after is None, "a reconciliation queued behind the deletion does nothing"


def test_a_changed_spec_removes_the_running_cluster_before_it_deploys_the_new_one():
    clusters, job = FakeClusters(), FlinkJob(SPEC)
    reconcile(reconciler_of(clusters), job)
    clusters.observation = Observation(exists=True, cluster_id="wc", job={"jid": "f" * 32, "state": "RUNNING"})
    job.spec = {**SPEC, "job": {**SPEC["job"], "parallelism": 4}}
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.UPGRADING
    clusters.observation = Observation(exists=False)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.DEPLOYED
    assert [c for c, _ in clusters.calls] == ["deploy", "observe", "remove", "observe", "deploy"]
    assert [reason for _, reason, _ in job.events] == ["Deployed", "Upgrading", "Deployed"]


def test_an_ended_job_past_its_ttl_leaves_nothing_and_its_resource_is_deleted():
    clusters, job = FakeClusters(), FlinkJob({**SPEC, "ttlSecondsAfterFinished": 60, "deleteAfterTtl": True})
    reconcile(reconciler_of(clusters), job)
    ended = JobResult(cluster_id="wc", job_id="f" * 32, state="FINISHED", end_time="2026-11-26T12:00:00+00:00", diagnostics="")
    clusters.observation = Observation(exists=False, result=ended)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FINISHED
    reconcile(reconciler_of(clusters, lambda: NOW + datetime.timedelta(seconds=61)), job)
    assert job.deleted and job.status["ttlExpired"] is True
    assert [c for c, _ in clusters.calls][-2:] == ["remove", "remove-result"]


def test_a_reconciliation_during_a_deployment_neither_waits_for_it_nor_deploys_again():
    async def scenario() -> tuple[FakeClusters, FlinkJob, list[str | None]]:
        clusters, job = FakeClusters(), FlinkJob(SPEC)
        clusters.gate, clusters.loop = asyncio.Event(), asyncio.get_running_loop()  # type: ignore[attr-defined]
        reconciler = reconciler_of(clusters)
        first = await asyncio.wait_for(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete), 2)
        second = await asyncio.wait_for(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete, generation=1), 2)
        clusters.observation = Observation(exists=True, cluster_id="wc", job={"jid": "f" * 32, "state": "CREATED"})
        clusters.gate.set()
        await reconciler.settled()
        third = await reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete, generation=1)
        return clusters, job, [first, second, third]

    clusters, job, lifecycles = asyncio.run(scenario())
    assert lifecycles == [Lifecycle.CREATED, Lifecycle.CREATED, Lifecycle.DEPLOYED], "the deployment's outcome is written by its task"
    assert [c for c, _ in clusters.calls] == ["deploy", "observe"], "the look during the deployment neither deployed nor observed"
    assert [reason for _, reason, _ in job.events] == ["Deployed"]


class StartingClusters(FakeClusters):
    """A JobManager that never answers: a deployment waits (on its thread) until its cluster is removed after it
    began, then fails as the real descriptors' waits do when their cluster goes (a removal before it began finds
    nothing to remove: the cluster is made after it); ``hang`` False deploys at once."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = True
        self.removals = 0
        self.removed = threading.Condition()
        self.started = threading.Event()

    def deploy(self, ref: ClusterRef, config: Configuration, program: PackagedProgram) -> Deployed:
        if not self.hang:
            return super().deploy(ref, config, program)
        with self.removed:
            self.calls.append(("deploy", ref.name))
            self.started.set()
            before = self.removals
            if not self.removed.wait_for(lambda: self.removals > before, 30):
                raise AssertionError("the starting cluster was never removed")
        raise DeploymentError(f"job cluster {ref.name} was deleted while it started")

    def remove(self, ref: ClusterRef) -> bool:
        with self.removed:
            self.removals += 1
            self.removed.notify_all()
        return super().remove(ref)

    async def deploying(self) -> None:
        """Until a deployment waits for its JobManager."""
        assert await asyncio.to_thread(self.started.wait, 5), "no deployment began"


@pytest.mark.parametrize("waiting", [True, False], ids=["waiting-for-its-jobmanager", "before-its-cluster-is-made"])
@pytest.mark.parametrize(
    ("edit", "after"),
    [
        ({"job": {**SPEC["job"], "parallelism": 4}}, Lifecycle.DEPLOYED),  # a corrective edit: the new spec is deployed
        ({"job": {**SPEC["job"], "state": "suspended"}}, Lifecycle.SUSPENDED),
    ],
)
def test_an_edit_during_a_deployment_that_never_answers_removes_its_cluster_at_once_and_acts(edit, after, waiting):
    async def scenario() -> tuple[StartingClusters, FlinkJob, float, str | None]:
        clusters, job = StartingClusters(), FlinkJob(SPEC)
        reconciler = reconciler_of(clusters)
        await asyncio.wait_for(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete), 2)
        if waiting:
            await asyncio.wait_for(clusters.deploying(), 5)
        job.spec, job.generation = {**SPEC, **edit}, 2
        began = time.monotonic()
        while reconciler._deploying:  # the timer's looks: a removal before the cluster was made is made again
            await asyncio.wait_for(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete, generation=2), 2)
            await asyncio.sleep(0.1)
        took = time.monotonic() - began
        clusters.hang = False
        # the next look: the cluster is gone, the spec as it is now is carried out
        await reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete, generation=2)
        await reconciler.settled()
        lifecycle = job.status["lifecycleState"]
        await reconciler.close()
        return clusters, job, took, lifecycle

    clusters, job, took, lifecycle = asyncio.run(scenario())
    assert took < 2.0, "the edit did not wait for the deployment"
    assert "remove" in [c for c, _ in clusters.calls][1:]
    assert lifecycle == after
    reasons = [reason for _, reason, _ in job.events]
    assert "DeploymentSuperseded" in reasons and "DeploymentFailed" not in reasons, "a superseded deployment's failure is not reported"
    assert job.status.get("failureReason", "") == ""


def test_a_deletion_during_a_deployment_that_never_answers_is_done_within_seconds():
    async def scenario() -> tuple[StartingClusters, float, FlinkJob]:
        clusters, job = StartingClusters(), FlinkJob(SPEC)
        reconciler = reconciler_of(clusters)
        await reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete)
        await asyncio.wait_for(clusters.deploying(), 5)
        job.deleting = True
        began = time.monotonic()
        await asyncio.wait_for(reconciler.delete(await job.read(), job.write), 5)  # type: ignore[arg-type]
        took = time.monotonic() - began
        assert not reconciler._deploying
        await reconciler.close()
        return clusters, took, job

    clusters, took, job = asyncio.run(scenario())
    assert took < 2.0
    assert job.status["lifecycleState"] == Lifecycle.DELETING, "the status says the FlinkJob is being deleted"
    assert {c["type"]: c["status"] for c in job.status["conditions"]}["Ready"] == "False"
    assert [c for c, _ in clusters.calls] == ["deploy", "remove", "remove"], "removed at once, and again once its deployment ended"


def test_a_flinkjob_moved_to_another_target_has_its_cluster_removed_where_it_runs():
    on_kubernetes, on_yarn = FakeClusters(), FakeClusters()
    clusters = JobClusters({"kubernetes-application": on_kubernetes, "yarn-application": on_yarn})  # reached as yarn-per-job too
    job = FlinkJob(SPEC)
    reconcile(Reconciler(clusters, {}, clock=lambda: NOW), job)
    assert job.status["deployedTarget"] == "kubernetes-application"
    on_kubernetes.observation = Observation(exists=True, cluster_id="wc", job={"jid": "f" * 32, "state": "RUNNING"})
    job.spec = {**SPEC, "target": "yarn-per-job", "hadoopConfigMap": "hadoop"}
    assert reconcile(Reconciler(clusters, {}, clock=lambda: NOW), job) == Lifecycle.UPGRADING
    on_kubernetes.observation = Observation(exists=False)
    assert reconcile(Reconciler(clusters, {}, clock=lambda: NOW), job) == Lifecycle.DEPLOYED
    assert [c for c, _ in on_kubernetes.calls] == ["deploy", "observe", "remove", "observe"]
    assert [c for c, _ in on_yarn.calls] == ["deploy"]
    assert job.status["deployedTarget"] == "yarn-per-job"


def test_an_invalid_spec_edited_again_has_its_generation_observed():
    clusters, job = FakeClusters(), FlinkJob({"job": {"parallelism": 2}})  # neither program nor source
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED
    assert job.status["observedGeneration"] == 1 and job.status["failureReason"] == "InvalidSpec"
    job.spec, job.generation = {**job.spec, "startupDeadlineSeconds": 60}, 2  # still invalid, same digest
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED
    assert job.status["observedGeneration"] == 2
    assert [c for c, _ in clusters.calls].count("deploy") == 0


@pytest.mark.parametrize(
    ("spec", "status", "quiet"),
    [
        ({"job": {"state": "suspended"}}, {"lifecycleState": "SUSPENDED"}, True),
        ({"job": {"state": "running"}}, {"lifecycleState": "SUSPENDED"}, False),  # resumed: the update event is on its way
        ({}, {"lifecycleState": "FINISHED"}, True),
        ({"ttlSecondsAfterFinished": 60}, {"lifecycleState": "FAILED"}, False),  # its TTL runs out later
        ({"flinkConfiguration": {"kubernetes.operator.jm-deployment.shutdown-ttl": "1 h"}}, {"lifecycleState": "FAILED"}, False),
        ({"ttlSecondsAfterFinished": 60}, {"lifecycleState": "FAILED", "ttlExpired": True}, True),
        ({}, {"lifecycleState": "STABLE"}, False),
        ({}, {"lifecycleState": "CREATED", "deployRetry": {"attempts": 1}}, False),
        ({}, {}, False),
    ],
)
def test_only_flinkjobs_that_wait_for_nothing_but_their_spec_go_without_a_timer(spec, status, quiet):
    assert settled(spec, status, {}) is quiet


@pytest.mark.parametrize(
    ("status", "is_paced"),
    [
        ({"lifecycleState": "STABLE"}, True),
        ({"lifecycleState": "ROLLED_BACK"}, True),
        ({"lifecycleState": "STABLE", "jobStatus": {"savepointInfo": {"trigger": {"triggerId": "t"}}}}, False),  # its outcome awaited
        ({"lifecycleState": "STABLE", "error": "the upgrade was not carried out"}, False),
        ({"lifecycleState": "DEPLOYED"}, False),
        ({"lifecycleState": "UPGRADING"}, False),
    ],
)
def test_only_running_jobs_with_nothing_in_progress_are_looked_at_at_the_reconcile_interval(status, is_paced):
    assert paced(status) is is_paced
    assert not (is_paced and settled({}, status, {})), "a paced FlinkJob still has a timer"


def test_the_reconcile_interval_is_the_operators_option():
    assert reconcile_interval({}) == 15.0
    assert reconcile_interval({"kubernetes.operator.reconcile.interval": "1 min"}) == 60.0


def test_the_operators_default_ttl_applies_to_flinkjobs_that_set_none_and_may_delete_them():
    defaults = {"kubernetes.operator.jm-deployment.shutdown-ttl": "10 min", "jobcluster.operator.delete-after-ttl": "true"}
    assert not settled({}, {"lifecycleState": "FINISHED"}, defaults), "an ended FlinkJob keeps its timer until the default TTL ran out"
    clusters, clock = FakeClusters(deploy_error=DeploymentError("image pull refused")), Clock()
    own, defaulted = FlinkJob({**SPEC, "ttlSecondsAfterFinished": 3600}, uid="u-own"), FlinkJob(SPEC, uid="u-default")
    for job in (own, defaulted):
        assert reconcile(Reconciler(clusters, defaults, clock=clock), job) == Lifecycle.FAILED  # type: ignore[arg-type]
    clock.advance(601)
    for job in (own, defaulted):
        reconcile(Reconciler(clusters, defaults, clock=clock), job)  # type: ignore[arg-type]
    assert defaulted.deleted and defaulted.status["ttlExpired"] is True
    assert not own.deleted and "ttlExpired" not in own.status, "the spec's own TTL wins"
    unchanged = deployed_spec_hash({**SPEC, "flinkConfiguration": {"jobcluster.operator.delete-after-ttl": "false"}})
    assert unchanged == deployed_spec_hash({**SPEC, "flinkConfiguration": {}}), "the operator's own options need no new cluster"


def test_a_program_url_the_operator_may_not_fetch_fails_the_flinkjob_with_what_to_do():
    clusters, job = FakeClusters(), FlinkJob({"job": {"program": "http://169.254.169.254/latest/meta-data/"}})
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED  # the operator's default: no URL is allowed
    assert job.status["failureReason"] == "ProgramUrlNotAllowed" and "--allow-program-url" in job.status["error"]
    assert job.events[-1][:2] == ("Warning", "ProgramUrlNotAllowed")
    assert clusters.calls == []


def test_a_hadoop_configmap_applied_after_the_flinkjob_is_found_at_a_later_attempt():
    missing = InvalidSpecError("spec.hadoopConfigMap 'hadoop' does not exist", reason="HadoopConfigurationMissing", transient=True)
    clusters, job, clock = FakeClusters(deploy_error=missing), FlinkJob(SPEC), Clock()
    assert reconcile(Reconciler(clusters, {}, clock=clock), job) == Lifecycle.CREATED  # type: ignore[arg-type]
    assert job.events[-1][:2] == ("Warning", "HadoopConfigurationMissing") and job.status["deployRetry"]["attempts"] == 1
    clusters.deploy_error = None  # kubectl create configmap hadoop ...
    clock.advance(5)
    assert reconcile(Reconciler(clusters, {}, clock=clock), job) == Lifecycle.DEPLOYED  # type: ignore[arg-type]


def test_what_reaches_the_cluster_is_kept_in_the_status_before_the_deployment_and_dropped_when_it_fails():
    site = {"core-site.xml": "<configuration>a</configuration>", "hdfs-site.xml": "<configuration/>"}
    clusters, job = FakeClusters(kept=site), FlinkJob({**SPEC, "target": "yarn-per-job", "hadoopConfigMap": "hadoop"})
    reconciler = reconciler_of(clusters)
    assert reconcile(reconciler, job) == Lifecycle.DEPLOYED
    assert job.writes[0]["clusterAccess"] == site, "kept before the long wait: an operator restarted meanwhile has it"
    assert clusters.deployed_refs[0].access == site
    assert (job_ref := asyncio.run(job.read())) is not None and job_ref.cluster(reconciler.seal).access == site

    clusters.kept = {"core-site.xml": "<configuration>b</configuration>"}
    clusters.deploy_error = DeploymentError("the ResourceManager does not answer")
    job.spec = {**job.spec, "restartNonce": 1}
    clusters.observation = Observation(exists=False)
    before = len(job.writes)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED
    starting = job.writes[before]
    assert starting["clusterAccess"] == {"core-site.xml": "<configuration>b</configuration>", "hdfs-site.xml": None}, (
        "a merge patch deletes the file the new deployment lacks"
    )
    assert "clusterAccess" not in job.status and "clusterAccessSignature" not in job.status, "a failed deployment left nothing to reach"
    assert (job_ref := asyncio.run(job.read())) is not None and job_ref.cluster(reconciler.seal).access == {}


def test_kept_cluster_access_counts_only_with_the_operators_own_signature():
    site = {"core-site.xml": "<configuration>a</configuration>"}
    clusters, job = FakeClusters(kept=site), FlinkJob({**SPEC, "target": "yarn-per-job", "hadoopConfigMap": "hadoop"})
    key = "k" * 32
    assert reconcile(Reconciler(clusters, {}, seal=AccessSeal(key)), job) == Lifecycle.DEPLOYED  # type: ignore[arg-type]
    assert len(job.status["clusterAccessSignature"]) == 64

    def kept(status: dict[str, Any], seal: AccessSeal) -> dict[str, str]:
        return FlinkJobRef.of({"metadata": {"name": "wc", "uid": job.uid}, "spec": job.spec, "status": status}).cluster(seal).access

    assert kept(job.status, AccessSeal(key)) == site, "another replica, or the operator restarted, with the same key"
    assert kept(job.status, AccessSeal("o" * 32)) == {}, "an operator of another key"
    assert kept(job.status, AccessSeal()) == {}, "an operator with no key signs with its own random one"
    tampered = {**job.status, "clusterAccess": {"core-site.xml": "<configuration>evil</configuration>"}}
    assert kept(tampered, AccessSeal(key)) == {}, "files written into the status by someone else"
    assert kept({**job.status, "clusterAccessSignature": None}, AccessSeal(key)) == {}, "unsigned (an older operator's)"
    other = FlinkJobRef.of({"metadata": {"name": "wc", "uid": "another"}, "spec": job.spec, "status": job.status})
    assert other.cluster(AccessSeal(key)).access == {}, "the signature of another FlinkJob's files"


STREAMING_CONFIG = {"execution.checkpointing.dir": "hdfs:///checkpoints", "execution.checkpointing.savepoint-dir": "hdfs:///savepoints"}


def streaming_job(clusters: FakeClusters, mode: str, **job: Any) -> FlinkJob:
    """A FlinkJob whose streaming job was deployed and runs, in upgrade mode ``mode``."""
    flinkjob = FlinkJob({**SPEC, "job": {**SPEC["job"], "upgradeMode": mode, **job}, "flinkConfiguration": STREAMING_CONFIG})
    reconcile(reconciler_of(clusters), flinkjob)
    clusters.observation = Observation(exists=True, cluster_id="wc", job=job_details("RUNNING"))
    assert reconcile(reconciler_of(clusters), flinkjob) == Lifecycle.STABLE
    return flinkjob


def asked_for_a_savepoint(job: FlinkJob, nonce: int = 1) -> FlinkJob:
    """``job`` with ``savepointTriggerNonce`` set to ``nonce`` (a changed nonce asks for a savepoint)."""
    job.spec = {**job.spec, "job": {**job.spec["job"], "savepointTriggerNonce": nonce}}
    return job


def job_details(state: str, job_id: str = "f" * 32) -> dict[str, Any]:
    return {"jid": job_id, "name": "wc", "state": state, "start-time": 1, "job-type": "STREAMING"}


def test_a_savepoint_upgrade_is_recorded_before_each_step_and_the_new_job_starts_from_its_savepoint():
    clusters = FakeClusters()
    job = streaming_job(clusters, "savepoint")
    seen_at_trigger: list[dict[str, Any]] = []
    clusters.trigger_savepoint = lambda ref, trigger: seen_at_trigger.append(job.status)  # type: ignore[method-assign]
    job.spec = {**job.spec, "job": {**job.spec["job"], "parallelism": 3}}
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.UPGRADING
    pending = seen_at_trigger[0]["jobStatus"]["savepointInfo"]["trigger"]
    assert pending["triggerType"] == "UPGRADE" and pending["stop"], "the trigger is in the status before it is sent"
    trigger_id = pending["triggerId"]

    location = "hdfs:///savepoints/savepoint-ffffff-0123456789ab"
    clusters.observation = Observation(
        exists=True, cluster_id="wc", job=job_details("FINISHED"), savepoint=SavepointPoll(trigger_id, "COMPLETED", location=location)
    )
    reconcile(reconciler_of(clusters), job)
    assert clusters.polled[-1] == trigger_id, "each look asks about the pending trigger"
    assert job.status["upgrade"]["savepointPath"] == location and "remove" not in [c for c, _ in clusters.calls]
    reconcile(reconciler_of(clusters), job)
    assert clusters.calls[-1] == ("remove", "wc"), "the old cluster goes once the path is recorded"
    clusters.observation = Observation(exists=False)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.DEPLOYED
    config = clusters.deployed_configs[-1]
    assert (config.get(options.SAVEPOINT_PATH), config.get(options.PARALLELISM_DEFAULT)) == (location, 3)
    status = job.status["jobStatus"]
    assert status["upgradeSavepointPath"] == location and status["savepointInfo"]["lastSavepoint"]["location"] == location
    assert status["state"] == "CREATED" and "endTime" not in status, "the old run's fields are gone, its savepoints kept"


def test_a_last_state_upgrade_keeps_the_jobid_so_the_new_job_resumes_its_checkpoints():
    clusters = FakeClusters()
    job = streaming_job(clusters, "last-state")
    job.spec = {**job.spec, "job": {**job.spec["job"], "parallelism": 3}}
    reconcile(reconciler_of(clusters), job)
    assert clusters.calls[-1] == ("remove", "wc") and not clusters.triggers, "no savepoint: it goes on from its checkpoints"
    clusters.observation = Observation(exists=False)
    reconcile(reconciler_of(clusters), job)
    assert clusters.deployed_configs[-1].get(options.PIPELINE_FIXED_JOB_ID) == "f" * 32
    assert job.status["jobStatus"]["upgradeSavepointPath"] == "hdfs:///checkpoints/" + "f" * 32


def test_a_savepoint_the_cluster_refuses_is_recorded_as_failed_and_the_job_runs_on():
    clusters = FakeClusters(trigger_error=ClusterClientError("POST /jobs/x/savepoints failed with 409: the job is not running"))
    job = asked_for_a_savepoint(streaming_job(clusters, "stateless"))
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.STABLE
    info = job.status["jobStatus"]["savepointInfo"]
    assert "trigger" not in info and "409" in info["lastFailure"]["message"] and info["lastTriggerNonce"] == 1
    assert [reason for _, reason, _ in job.events][-2:] == ["SavepointTriggered", "SavepointFailed"]
    reconcile(reconciler_of(clusters), job)
    assert len(clusters.triggers) == 1, "a nonce that failed is not tried again until it changes"


def test_a_savepoint_whose_trigger_did_not_arrive_is_sent_again_with_the_same_id():
    clusters = FakeClusters(trigger_error=ClusterUnreachableError("connection refused"))
    job = asked_for_a_savepoint(streaming_job(clusters, "stateless"))
    reconcile(reconciler_of(clusters), job)
    pending = job.status["jobStatus"]["savepointInfo"]["trigger"]
    clusters.trigger_error = None
    clusters.observation = dataclasses.replace(clusters.observation, savepoint=SavepointPoll(pending["triggerId"], "UNKNOWN"))
    reconcile(reconciler_of(clusters), job)
    assert [t.trigger_id for t in clusters.triggers] == [pending["triggerId"]] * 2


def test_savepoints_past_the_history_limit_are_disposed_of_and_a_failed_disposal_is_reported():
    clusters = FakeClusters()
    job = streaming_job(clusters, "stateless")
    limits = {"kubernetes.operator.savepoint.history.max.count": "1", "kubernetes.operator.savepoint.dispose-on-delete": "true"}
    job.spec = {**job.spec, "flinkConfiguration": {**STREAMING_CONFIG, **limits}}
    history = [
        {"location": f"hdfs:///savepoints/sp-{i}-denied", "timeStamp": f"2026-11-26T11:0{i}:00Z", "triggerType": "PERIODIC"}
        for i in range(3)
    ]
    job.status["jobStatus"]["savepointInfo"] = {"savepointHistory": history, "lastSavepoint": history[-1]}
    disposed_at_write: list[list[str]] = []
    write = job.write

    async def recording_write(document: dict[str, Any]) -> None:
        disposed_at_write.append(list(clusters.disposed))
        await write(document)

    job.write = recording_write  # type: ignore[method-assign]
    reconcile(reconciler_of(clusters), job)
    assert clusters.disposed == [history[1]["location"], history[0]["location"]]
    assert disposed_at_write[0] == clusters.disposed, "disposed of before the write that drops them: none forgotten undisposed"
    assert job.status["jobStatus"]["savepointInfo"]["savepointHistory"] == [history[-1]]
    assert [reason for _, reason, _ in job.events].count("SavepointDisposalFailed") == 2


def test_a_new_flinkjob_starts_from_its_initial_savepoint_and_a_mode_without_its_directory_is_refused():
    clusters = FakeClusters()
    job = FlinkJob(
        {
            **SPEC,
            "job": {**SPEC["job"], "initialSavepointPath": "hdfs:///savepoints/sp-1", "allowNonRestoredState": True},
            "flinkConfiguration": STREAMING_CONFIG,
        }
    )
    reconcile(reconciler_of(clusters), job)
    config = clusters.deployed_configs[-1]
    assert (config.get(options.SAVEPOINT_PATH), config.get(options.SAVEPOINT_IGNORE_UNCLAIMED_STATE)) == ("hdfs:///savepoints/sp-1", True)
    assert job.status["jobStatus"]["upgradeSavepointPath"] == "hdfs:///savepoints/sp-1"

    refused = FlinkJob({**SPEC, "job": {**SPEC["job"], "upgradeMode": "savepoint"}})
    assert reconcile(reconciler_of(clusters), refused) == Lifecycle.FAILED
    assert refused.status["failureReason"] == "SavepointDirectoryMissing" and len(clusters.deployed_configs) == 1


def _conditions(job: FlinkJob) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in job.status["conditions"]}


def _stable(clusters: FakeClusters, spec: dict[str, Any], defaults: dict[str, str] | None = None) -> tuple[FlinkJob, Reconciler]:
    """A FlinkJob of ``spec`` deployed and seen RUNNING."""
    job, reconciler = FlinkJob(spec), Reconciler(clusters, defaults or {}, clock=lambda: NOW)  # type: ignore[arg-type]
    reconcile(reconciler, job)
    clusters.observation = Observation(
        exists=True, cluster_id="wc", rest_url="http://10.0.0.9:8081", job={"jid": "f" * 32, "state": "RUNNING"}
    )
    assert reconcile(reconciler, job) == Lifecycle.STABLE
    return job, reconciler


@pytest.mark.parametrize(
    "edit",
    [
        {"job": {**SPEC["job"], "upgradeMode": "savepoint"}},  # a mode without its directory: needs no new cluster
        {"job": {**SPEC["job"], "parallelism": 4, "upgradeMode": "last-state"}},  # a new cluster's edit, refused
        {"flinkConfiguration": {"kubernetes.operator.savepoint.history.max.age": "one day"}},  # an operator option's typo
    ],
)
def test_a_refused_edit_of_a_running_flinkjob_keeps_its_job_running_and_reports_until_it_is_fixed(edit):
    clusters = FakeClusters()
    job, reconciler = _stable(clusters, SPEC)
    job.spec, job.generation = {**SPEC, **edit}, 2
    for _ in range(3):  # the timer's looks
        assert reconcile(reconciler, job) == Lifecycle.STABLE
    assert "remove" not in [c for c, _ in clusters.calls] and [c for c, _ in clusters.calls].count("deploy") == 1
    assert [c for c, _ in clusters.calls][-1] == "observe", "the job of the last valid spec is still watched"
    reason = job.status["failureReason"]
    assert reason in ("SavepointDirectoryMissing", "CheckpointDirectoryMissing", "InvalidSpec") and job.status["observedGeneration"] == 2
    assert "the job of the last valid spec runs on" in job.status["error"]
    assert _conditions(job) == {
        "Ready": ("False", reason),
        "Running": ("True", "Running"),
        "Succeeded": ("False", "Running"),
        "Failed": ("False", "NotFailed"),
    }
    assert [r for _, r, _ in job.events].count(reason) == 1, "one Warning per refused spec, not one per look"

    job.spec, job.generation = SPEC, 3  # reverted
    assert reconcile(reconciler, job) == Lifecycle.STABLE
    assert (job.status["error"], job.status["failureReason"], job.status.get("refusedSpec")) == ("", "", None)
    assert _conditions(job)["Ready"] == ("True", "Stable")
    assert "remove" not in [c for c, _ in clusters.calls]


def test_a_valid_edit_after_a_refused_one_upgrades_from_the_job_that_ran_on():
    clusters = FakeClusters()
    job, reconciler = _stable(clusters, SPEC)
    job.spec, job.generation = {**SPEC, "job": {"parallelism": 4}}, 2  # neither program nor source
    assert reconcile(reconciler, job) == Lifecycle.STABLE
    job.spec, job.generation = {**SPEC, "job": {**SPEC["job"], "parallelism": 4}}, 3
    assert reconcile(reconciler, job) == Lifecycle.UPGRADING
    assert [c for c, _ in clusters.calls][-1] == "remove", "a stateless upgrade: the old cluster goes once the new spec is valid"
    assert job.status.get("refusedSpec") is None and job.status["error"] == ""


def test_operator_defaults_that_refuse_every_spec_leave_running_jobs_running(tmp_path):
    """An administrator's typo in the operator's defaultConfiguration refuses the last valid spec too: the job runs on.
    The operator refuses to start with such defaults in the first place (a chart's install or upgrade fails)."""
    started = start_operator(tmp_path, "kubernetes.operator.savepoint.history.max.age: one day\n")
    assert started.returncode == 2, started.stderr
    assert "kubernetes.operator.savepoint.history.max.age: duration 'one day' does not start with a number" in started.stderr
    clusters = FakeClusters()
    job, _ = _stable(clusters, SPEC)
    broken = Reconciler(clusters, {"kubernetes.operator.savepoint.history.max.age": "one day"}, clock=lambda: NOW)  # type: ignore[arg-type]
    assert reconcile(broken, job) == Lifecycle.STABLE
    assert "remove" not in [c for c, _ in clusters.calls]
    assert job.status["failureReason"] == "InvalidSpec" and _conditions(job)["Ready"][0] == "False"


def test_a_flinkjob_refused_before_it_ever_ran_fails_and_deploys_nothing():
    clusters, job = FakeClusters(), FlinkJob({**SPEC, "job": {**SPEC["job"], "upgradeMode": "savepoint"}})
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED
    assert job.status["failureReason"] == "SavepointDirectoryMissing" and _conditions(job)["Failed"] == (
        "True",
        "SavepointDirectoryMissing",
    )
    assert [c for c, _ in clusters.calls] == ["remove"] and "deploy" not in [c for c, _ in clusters.calls]


def test_the_status_one_reconciler_caches_across_an_upgrade_is_the_servers_and_keeps_no_field_of_the_old_run():
    """One long-lived reconciler, each step from its cache (as the timer runs them): the server's ``jobStatus`` of the
    new run has no end of the old one, which an operator restarted later would take for the FlinkJob's end (and its
    TTL would delete the FlinkJob at once)."""
    clusters = FakeClusters()
    job = streaming_job(clusters, "savepoint")
    job.spec, job.generation = (
        {**job.spec, "job": {**job.spec["job"], "parallelism": 3}, "ttlSecondsAfterFinished": 3600, "deleteAfterTtl": True},
        2,
    )
    reconciler = reconciler_of(clusters)

    def step() -> str | None:
        return reconcile(reconciler, job, generation=job.generation)

    assert step() == Lifecycle.UPGRADING
    trigger_id = job.status["jobStatus"]["savepointInfo"]["trigger"]["triggerId"]
    ended = {**job_details("FINISHED"), "end-time": 1_700_000_000_000, "duration": 5000}
    location = "hdfs:///savepoints/savepoint-ffffff-0123456789ab"
    clusters.observation = Observation(
        exists=True, cluster_id="wc", job=ended, savepoint=SavepointPoll(trigger_id, "COMPLETED", location=location)
    )
    step()
    step()
    assert clusters.calls[-1] == ("remove", "wc")
    clusters.observation = Observation(exists=False)
    assert step() == Lifecycle.DEPLOYED
    assert reconciler._known[job.uid].status == job.status, "the cache is what the server holds"
    assert not {"endTime", "duration"} & set(job.status["jobStatus"]), job.status["jobStatus"]


def test_an_upgrade_whose_savepoint_fails_is_not_ready_while_the_old_spec_runs_on():
    """Argo CD and Flux read Ready with observedGeneration: a rollout that did not happen must not look done."""
    clusters = FakeClusters(trigger_error=ClusterClientError("POST /jobs/x/stop failed with 409: the job is not running"))
    job = streaming_job(clusters, "savepoint")
    assert _conditions(job)["Ready"] == ("True", "Stable")
    job.spec, job.generation = {**job.spec, "job": {**job.spec["job"], "parallelism": 3}}, 2
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.STABLE
    assert "the upgrade was not carried out" in job.status["error"] and job.status["observedGeneration"] == 2
    ready = next(c for c in job.status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and "the upgrade was not carried out" in ready["message"] and ready["observedGeneration"] == 2
    assert _conditions(job)["Running"] == ("True", "Running") and _conditions(job)["Failed"][0] == "False"
    assert "remove" not in [c for c, _ in clusters.calls], "the old spec's job runs on"


def test_a_last_state_upgrade_to_another_checkpoint_directory_keeps_the_job_running_and_says_why():
    clusters = FakeClusters()
    job = streaming_job(clusters, "last-state")
    moved = {**STREAMING_CONFIG, "execution.checkpointing.dir": "hdfs:///elsewhere"}
    job.spec, job.generation = {**job.spec, "job": {**job.spec["job"], "parallelism": 3}, "flinkConfiguration": moved}, 2
    for _ in range(2):
        assert reconcile(reconciler_of(clusters), job) == Lifecycle.STABLE
    assert "remove" not in [c for c, _ in clusters.calls], "the job runs on: its state is not dropped for the edit"
    assert job.status["failureReason"] == "CheckpointDirectoryChanged" and "hdfs:///checkpoints" in job.status["error"]
    assert _conditions(job)["Ready"] == ("False", "CheckpointDirectoryChanged")
    assert [r for _, r, _ in job.events].count("CheckpointDirectoryChanged") == 1

    job.spec, job.generation = {**job.spec, "flinkConfiguration": STREAMING_CONFIG}, 3  # the directory reverted
    reconcile(reconciler_of(clusters), job)
    assert clusters.calls[-1] == ("remove", "wc") and job.status["upgrade"]["checkpointDirectory"] == "hdfs:///checkpoints"
    clusters.observation = Observation(exists=False)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.DEPLOYED
    assert clusters.deployed_configs[-1].get(options.PIPELINE_FIXED_JOB_ID) == "f" * 32


def test_a_suspended_last_state_job_resumed_with_another_checkpoint_directory_fails_and_deploys_nothing():
    clusters = FakeClusters()
    job = streaming_job(clusters, "last-state")
    job.spec = {**job.spec, "job": {**job.spec["job"], "state": "suspended"}}
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.SUSPENDED
    clusters.observation = Observation(exists=False)
    moved = {**STREAMING_CONFIG, "execution.checkpointing.dir": "hdfs:///elsewhere"}
    job.spec = {**job.spec, "job": {**job.spec["job"], "state": "running"}, "flinkConfiguration": moved}
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED
    assert job.status["failureReason"] == "CheckpointDirectoryChanged" and [c for c, _ in clusters.calls].count("deploy") == 1


def test_a_deployment_that_fails_in_an_unexpected_way_fails_the_flinkjob_once_and_is_not_redeployed():
    clusters, job = FakeClusters(deploy_error=OSError(28, "No space left on device")), FlinkJob(SPEC)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED
    assert job.status["failureReason"] == "DeploymentFailed" and "OSError: [Errno 28] No space left on device" in job.status["error"]
    for _ in range(2):
        assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED
    assert [c for c, _ in clusters.calls].count("deploy") == 1


def test_a_new_run_after_an_expired_ttl_has_a_ttl_of_its_own():
    clusters, job = FakeClusters(), FlinkJob({**SPEC, "ttlSecondsAfterFinished": 60})
    job.status = {"lifecycleState": "FINISHED", "deployedSpec": deployed_spec_hash(job.spec), "ttlExpired": True}
    job.spec = {**job.spec, "restartNonce": 1}
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.DEPLOYED
    assert "ttlExpired" not in job.status


def test_a_busy_jobmanager_gets_the_same_savepoint_trigger_again_instead_of_failing_it():
    clusters = FakeClusters(trigger_error=ClusterUnavailableError("POST /jobs/x/savepoints failed with 503: busy"))
    job = asked_for_a_savepoint(streaming_job(clusters, "stateless"))
    reconcile(reconciler_of(clusters), job)
    pending = job.status["jobStatus"]["savepointInfo"]["trigger"]
    assert "lastFailure" not in job.status["jobStatus"]["savepointInfo"], "a 503 is not a refusal"
    clusters.trigger_error = None
    clusters.observation = dataclasses.replace(clusters.observation, savepoint=SavepointPoll(pending["triggerId"], "UNKNOWN"))
    reconcile(reconciler_of(clusters), job)
    assert [t.trigger_id for t in clusters.triggers] == [pending["triggerId"]] * 2


def test_looks_at_lost_jobmanagers_never_hold_up_the_removal_of_another_flinkjob():
    """Every thread of the platform pool waits on a JobManager that does not answer; a deletion still removes at once."""
    release = threading.Event()

    class LostClusters(FakeClusters):
        def observe(self, ref: ClusterRef, job_id: str | None, trigger_id: str | None = None) -> Observation:
            release.wait(30)  # a lost node: the look times out only after a while
            return Observation(exists=False)

    async def scenario() -> list[tuple[str, str]]:
        clusters = LostClusters()
        reconciler = reconciler_of(clusters)
        status = {"deployedSpec": deployed_spec_hash(SPEC), "lifecycleState": "STABLE", "clusterId": "wc"}
        lost = [FlinkJob(SPEC, uid=f"u-{n}", status=dict(status)) for n in range(20)]  # more than the platform pool's threads
        looks = [asyncio.create_task(reconciler.reconcile(j.uid, j.read, j.write, j.post, j.delete)) for j in lost]
        await asyncio.sleep(0.2)
        deleted = FlinkJob(SPEC, uid="u-deleted", status=dict(status), deleting=True)
        try:
            await asyncio.wait_for(reconciler.delete(await deleted.read(), deleted.write), 10)  # type: ignore[arg-type]
            return list(clusters.calls)
        finally:
            release.set()
            await asyncio.gather(*looks)
            await reconciler.close()

    assert ("remove", "wc") in asyncio.run(scenario())


def test_a_savepoint_nonce_the_flinkjob_was_created_with_triggers_nothing_and_a_changed_one_does():
    """As the Flink Kubernetes Operator: only a change of savepointTriggerNonce asks for a savepoint."""
    clusters = FakeClusters()
    job = streaming_job(clusters, "stateless", savepointTriggerNonce=3)
    reconcile(reconciler_of(clusters), job)
    assert clusters.triggers == [] and job.status["jobStatus"]["savepointInfo"]["lastTriggerNonce"] == 3
    job.spec = {**job.spec, "job": {**job.spec["job"], "savepointTriggerNonce": 4}}
    reconcile(reconciler_of(clusters), job)
    assert [t.trigger_type for t in clusters.triggers] == ["MANUAL"]


def test_a_manual_savepoint_pending_at_a_stateless_upgrade_is_abandoned_not_sent_to_the_new_cluster():
    clusters = FakeClusters()
    job = asked_for_a_savepoint(streaming_job(clusters, "stateless"))
    reconcile(reconciler_of(clusters), job)
    trigger_id = job.status["jobStatus"]["savepointInfo"]["trigger"]["triggerId"]
    job.spec = {**job.spec, "job": {**job.spec["job"], "parallelism": 3}}
    clusters.observation = dataclasses.replace(clusters.observation, savepoint=SavepointPoll(trigger_id, "IN_PROGRESS"))
    reconcile(reconciler_of(clusters), job)
    assert clusters.calls[-1] == ("remove", "wc")
    info = job.status["jobStatus"]["savepointInfo"]
    assert "trigger" not in info and f"the savepoint {trigger_id} was abandoned" in info["lastFailure"]["message"]
    clusters.observation = Observation(exists=False)
    reconcile(reconciler_of(clusters), job)
    clusters.observation = Observation(exists=True, cluster_id="wc", job=job_details("RUNNING"))
    reconcile(reconciler_of(clusters), job)
    assert [t.trigger_id for t in clusters.triggers] == [trigger_id], "sent once, to the cluster it was for"


def test_while_it_upgrades_the_servers_status_shows_no_job_and_no_taskmanagers_of_the_old_run():
    """Maps are written whole (keys of the old run nulled), since the API server merges a status patch into them."""
    clusters = FakeClusters()
    job, reconciler = _stable(clusters, SPEC)
    clusters.observation = dataclasses.replace(
        clusters.observation, task_managers=[{"slotsNumber": 2, "memoryConfiguration": {"totalProcessMemory": 1 << 30}}]
    )
    reconcile(reconciler, job)
    assert job.status["taskManagers"] == {"count": 1, "slotsPerTaskManager": 2, "processMemory": "1024Mi"}
    clusters.observation = dataclasses.replace(clusters.observation, task_managers=[])
    reconcile(reconciler, job)
    assert job.status["taskManagers"] == {"count": 0}, "no TaskManager: none of the old ones' figures stay"
    job.spec, job.generation = {**SPEC, "restartNonce": 2}, 2
    assert reconcile(reconciler, job) == Lifecycle.UPGRADING
    assert "state" not in job.status.get("jobStatus", {}) and _conditions(job)["Running"][0] == "False"


def test_a_new_savepoint_redeploy_nonce_redeploys_from_the_initial_savepoint_without_taking_one():
    clusters = FakeClusters()
    job = streaming_job(clusters, "savepoint")
    chosen = "hdfs:///savepoints/chosen"
    job.spec = {**job.spec, "job": {**job.spec["job"], "savepointRedeployNonce": 1, "initialSavepointPath": chosen}}
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.UPGRADING
    clusters.observation = Observation(exists=False)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.DEPLOYED
    assert clusters.triggers == [], "no savepoint of the job that ran was taken"
    assert clusters.deployed_configs[-1].get(options.SAVEPOINT_PATH) == chosen
    assert job.status["savepointRedeployNonce"] == 1 and job.status["jobStatus"]["upgradeSavepointPath"] == chosen
    assert [c for c, _ in clusters.calls][-3:] == ["remove", "observe", "deploy"]


ROLLBACK = {"kubernetes.operator.deployment.rollback.enabled": "true", "kubernetes.operator.deployment.readiness.timeout": "60 s"}


def parallelism_deployed(clusters: FakeClusters) -> str:
    return clusters.deployed_configs[-1].to_dict()["parallelism.default"]


def test_an_upgrade_that_does_not_run_in_time_is_rolled_back_to_the_last_stable_spec_until_the_spec_changes():
    clusters, job, clock = FakeClusters(), FlinkJob(SPEC), Clock()
    reconciler = Reconciler(clusters, ROLLBACK, clock=clock)  # type: ignore[arg-type]
    reconcile(reconciler, job)
    clusters.observation = Observation(exists=True, cluster_id="wc", job={"jid": "f" * 32, "state": "RUNNING"})
    assert reconcile(reconciler, job) == Lifecycle.STABLE
    assert json.loads(job.status["reconciliationStatus"]["lastStableSpec"]) == SPEC
    upgraded = {**SPEC, "job": {**SPEC["job"], "parallelism": 4}}
    job.spec, job.generation = upgraded, 2
    assert reconcile(reconciler, job) == Lifecycle.UPGRADING
    clusters.observation = Observation(exists=False)
    assert reconcile(reconciler, job) == Lifecycle.DEPLOYED and parallelism_deployed(clusters) == "4"
    clusters.observation = Observation(exists=True, cluster_id="wc", job={"jid": "f" * 32, "state": "CREATED"})  # never runs
    clock.advance(30)
    assert reconcile(reconciler, job) == Lifecycle.DEPLOYED, "within the readiness timeout"
    clock.advance(31)
    assert reconcile(reconciler, job) == Lifecycle.ROLLING_BACK
    assert clusters.calls[-1] == ("remove", "wc") and job.status["rollback"]["spec"] == deployed_spec_hash(upgraded)
    assert job.events[-1][:2] == ("Warning", "RollingBack") and "did not run within 60 s" in job.events[-1][2]
    clusters.observation = Observation(exists=False)
    assert reconcile(reconciler, job) == Lifecycle.ROLLING_BACK and parallelism_deployed(clusters) == "2", "the stable spec again"
    clusters.observation = Observation(exists=True, cluster_id="wc", job={"jid": "f" * 32, "state": "RUNNING"})
    assert reconcile(reconciler, job) == Lifecycle.ROLLED_BACK
    assert _conditions(job)["Ready"] == ("False", "RolledBack") and _conditions(job)["Running"][0] == "True"
    deploys = len(clusters.deployed_configs)
    clock.advance(600)
    assert reconcile(reconciler, job) == Lifecycle.ROLLED_BACK and len(clusters.deployed_configs) == deploys, "it stays rolled back"
    assert job.spec == upgraded, "the user's spec is never changed"

    job.spec, job.generation = {**SPEC, "job": {**SPEC["job"], "parallelism": 3}}, 3  # an edit ends the rollback
    assert reconcile(reconciler, job) == Lifecycle.UPGRADING and "rollback" not in job.status
    clusters.observation = Observation(exists=False)
    reconcile(reconciler, job)
    assert parallelism_deployed(clusters) == "3"


def test_a_failed_deployment_of_an_upgrade_is_rolled_back_and_a_failed_rollback_is_not_rolled_back_again():
    clusters, job, clock = FakeClusters(), FlinkJob(SPEC), Clock()
    reconciler = Reconciler(clusters, ROLLBACK, clock=clock)  # type: ignore[arg-type]
    reconcile(reconciler, job)
    clusters.observation = Observation(exists=True, cluster_id="wc", job={"jid": "f" * 32, "state": "RUNNING"})
    reconcile(reconciler, job)
    job.spec, job.generation = {**SPEC, "image": "localhost/nope:1"}, 2
    reconcile(reconciler, job)
    clusters.observation, clusters.deploy_error = Observation(exists=False), DeploymentError("ErrImagePull: localhost/nope:1")
    assert reconcile(reconciler, job) == Lifecycle.FAILED
    assert not settled(job.spec, job.status, ROLLBACK), "a failed upgrade keeps its timer: it is rolled back at the next look"
    assert settled(job.spec, job.status, {}), "without rollback it waits for an edit"
    assert reconcile(reconciler, job) == Lifecycle.ROLLING_BACK
    assert reconcile(reconciler, job) == Lifecycle.FAILED, "the stable spec's deployment failed too"
    assert reconcile(reconciler, job) == Lifecycle.FAILED and settled(job.spec, job.status, ROLLBACK), "no rollback of a rollback"


@pytest.mark.parametrize("suspended_first", [False, True])
def test_a_finished_flinkjob_edited_in_a_way_that_is_refused_keeps_its_result_and_its_ttl(suspended_first):
    """A job that FINISHED, then (suspended or not) an edit the operator refuses: neither FAILED nor its kept cluster
    removed for it; its TTL still runs, and the reverted spec finds the result as it was."""
    clusters, job = FakeClusters(), FlinkJob({**SPEC, "ttlSecondsAfterFinished": 60})
    reconcile(reconciler_of(clusters), job)
    ended = {**job_details("FINISHED"), "end-time": int(NOW.timestamp() * 1000), "duration": 5000}
    clusters.observation = Observation(exists=True, cluster_id="wc", job=ended)  # its JobManager kept for the result
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FINISHED
    valid = {**SPEC, "ttlSecondsAfterFinished": 60, "job": {**SPEC["job"], "state": "suspended" if suspended_first else "running"}}
    job.spec, job.generation = valid, 2
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FINISHED
    job.spec, job.generation = {**valid, "job": {**valid["job"], "upgradeMode": "savepoint"}}, 3
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FINISHED, "nothing failed: the edit is refused"
    assert job.status["failureReason"] == "SavepointDirectoryMissing" and _conditions(job)["Ready"][0] == "False"
    assert "runs on" not in job.status["error"], "nothing runs"
    assert "remove" not in [c for c, _ in clusters.calls] and [c for c, _ in clusters.calls].count("deploy") == 1
    assert job.status["jobStatus"]["jobId"] == "f" * 32
    job.spec, job.generation = valid, 4  # reverted
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FINISHED and not job.status.get("refusedSpec")
    assert [c for c, _ in clusters.calls].count("deploy") == 1, "the ended job is not run again"
    job.spec, job.generation = {**valid, "job": {**valid["job"], "upgradeMode": "savepoint"}}, 5
    reconcile(reconciler_of(clusters, lambda: NOW + datetime.timedelta(seconds=61)), job)
    assert job.status["ttlExpired"] is True and [c for c, _ in clusters.calls][-2:] == ["remove", "remove-result"], "the TTL ran"


def test_a_suspended_flinkjob_edited_in_a_way_that_is_refused_stays_suspended_and_says_why():
    clusters, job = FakeClusters(), FlinkJob(SPEC)
    reconcile(reconciler_of(clusters), job)
    job.spec, job.generation = {**SPEC, "job": {**SPEC["job"], "state": "suspended"}}, 2
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.SUSPENDED
    job.spec, job.generation = {**job.spec, "job": {**job.spec["job"], "upgradeMode": "savepoint"}}, 3
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.SUSPENDED, "not FAILED: nothing runs, and nothing failed"
    assert job.status["failureReason"] == "SavepointDirectoryMissing" and _conditions(job)["Ready"][0] == "False"
    job.spec, job.generation = {**SPEC, "job": {**SPEC["job"], "state": "suspended"}}, 4  # reverted
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.SUSPENDED
    assert _conditions(job)["Ready"] == ("True", "Suspended") and not job.status.get("refusedSpec")


def test_an_older_operators_top_level_specs_are_read_and_moved_under_reconciliation_status():
    """Before reconciliationStatus (the Flink Kubernetes Operator's shape) the last reconciled and stable specs were
    top-level status fields: a FlinkJob stored so goes on from them, and they move at its next valid spec."""
    clusters = FakeClusters()
    job, reconciler = _stable(clusters, SPEC)
    recorded = job.status.pop("reconciliationStatus")
    job.status.update(recorded)  # as an older operator left it
    job.spec, job.generation = {**SPEC, "job": {**SPEC["job"], "upgradeMode": "savepoint"}}, 2  # refused
    assert reconcile(reconciler, job) == Lifecycle.STABLE, "the last valid spec, read from the old field, runs on"
    assert "remove" not in [c for c, _ in clusters.calls]
    job.spec, job.generation = SPEC, 3  # reverted: a valid spec is reconciled
    assert reconcile(reconciler, job) == Lifecycle.STABLE
    assert job.status["reconciliationStatus"] == recorded
    assert not {"lastReconciledSpec", "lastStableSpec"} & set(job.status), "moved, not copied"


def test_an_operator_without_yarn_support_fails_a_yarn_flinkjob_at_once_and_never_lets_a_yarn_cluster_go_silently():
    """The operator image has no Spark and no Java: a yarn-application FlinkJob fails with TargetNotSupported and
    the way out; one deployed by an earlier operator (on the job image) keeps its finalizer, as its application may run."""
    kubernetes_clusters = FakeClusters()
    clusters = JobClusters(
        {"kubernetes-application": kubernetes_clusters, "yarn-application": UnsupportedTarget("yarn-application", NO_YARN)}
    )
    job = FlinkJob({**SPEC, "target": "yarn-application", "hadoopConfigMap": "hadoop"})
    assert reconcile(Reconciler(clusters, {}), job) == Lifecycle.FAILED
    assert job.status["failureReason"] == "TargetNotSupported" and "yarn.hadoopUsers" in job.status["error"]
    assert kubernetes_clusters.calls == [] and "clusterAccess" not in job.status

    deployed = FlinkJob(
        {**SPEC, "target": "yarn-application"}, status={"clusterId": "application_1_0001", "deployedTarget": "yarn-application"}
    )
    reconciler = Reconciler(clusters, {})
    with pytest.raises(DeploymentError, match="cannot be removed: this operator runs without Spark and Java"):
        asyncio.run(reconciler.delete(asyncio.run(deployed.read()), deployed.write))  # type: ignore[arg-type]
