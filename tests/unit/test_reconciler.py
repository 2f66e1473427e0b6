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
import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jobcluster.client.descriptor import JobResult, PackagedProgram
from jobcluster.client.operator_hook import ClusterRef
from jobcluster.config.configuration import Configuration
from jobcluster.controller.clusters import Deployed, JobClusters, Observation
from jobcluster.controller.flinkjob_status import Lifecycle
from jobcluster.controller.reconciler import FlinkJobRef, Reconciler
from jobcluster.errors import AlreadyExistsError, DeploymentError

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

    def access(self, ref: ClusterRef) -> dict[str, str]:
        return dict(self.kept)

    def deploy(self, ref: ClusterRef, config: Configuration, program: PackagedProgram) -> Deployed:
        self.calls.append(("deploy", ref.name))
        self.deployed_configs.append(config)
        self.deployed_refs.append(ref)
        assert program.script.read_text() == "print(1)", "the inline program was written for the client"
        if self.gate is not None:
            asyncio.run_coroutine_threadsafe(self.gate.wait(), self.loop).result(5)
        if self.deploy_error is not None:
            raise self.deploy_error
        return Deployed("f" * 32, "http://10.0.0.9:8081", ref.name)

    def observe(self, ref: ClusterRef, job_id: str | None) -> Observation:
        self.calls.append(("observe", ref.name))
        return self.observation

    def remove(self, ref: ClusterRef) -> bool:
        self.calls.append(("remove", ref.name))
        return True

    def remove_result(self, ref: ClusterRef) -> None:
        self.calls.append(("remove-result", ref.name))


@dataclass
class FlinkJob:
    """One FlinkJob as the API server would keep it: status writes merge into it; events and deletion are recorded."""

    spec: dict[str, Any]
    status: dict[str, Any] = field(default_factory=dict)
    generation: int = 1
    writes: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    deleted: bool = False

    async def read(self) -> FlinkJobRef | None:
        if self.deleted:
            return None
        body = {
            "metadata": {"name": "wc", "namespace": "jobs", "uid": "u-1", "generation": self.generation},
            "spec": self.spec,
            "status": self.status,
        }
        return FlinkJobRef.of(body)

    async def write(self, document: dict[str, Any]) -> None:
        self.writes.append(document)
        self.status = {**self.status, **document}

    def post(self, kind: str, reason: str, message: str) -> None:
        self.events.append((kind, reason, message))

    async def delete(self) -> None:
        self.deleted = True


def reconcile(reconciler: Reconciler, job: FlinkJob) -> str | None:
    return asyncio.run(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete))


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


def test_a_cluster_whose_predecessor_is_still_collected_is_deployed_again_later():
    clusters = FakeClusters(deploy_error=AlreadyExistsError("the job cluster wc already exists"))
    job = FlinkJob(SPEC)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.UPGRADING
    assert job.status["deployedSpec"] == "", "the spec is not recorded as deployed: the next reconciliation tries again"
    clusters.deploy_error = None
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.DEPLOYED
    assert [c for c, _ in clusters.calls] == ["deploy", "deploy"]


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


def test_reconciliations_of_one_flinkjob_are_serialized_and_the_second_sees_the_firsts_status():
    async def scenario() -> tuple[FakeClusters, FlinkJob]:
        clusters, job = FakeClusters(), FlinkJob(SPEC)
        clusters.gate, clusters.loop = asyncio.Event(), asyncio.get_running_loop()  # type: ignore[attr-defined]
        reconciler = reconciler_of(clusters)
        first = asyncio.create_task(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete))
        await asyncio.sleep(0.1)  # the first holds the lock in its deployment
        second = asyncio.create_task(reconciler.reconcile("u-1", job.read, job.write, job.post, job.delete))
        await asyncio.sleep(0.1)
        assert not second.done()
        clusters.observation = Observation(exists=True, cluster_id="wc", job={"jid": "f" * 32, "state": "CREATED"})
        clusters.gate.set()
        await asyncio.gather(first, second)
        return clusters, job

    clusters, job = asyncio.run(scenario())
    assert [c for c, _ in clusters.calls] == ["deploy", "observe"], "the second found the deployment done and only looked"
    assert job.status["lifecycleState"] == Lifecycle.DEPLOYED


def test_a_flinkjob_moved_to_another_target_has_its_cluster_removed_where_it_runs():
    on_kubernetes, on_yarn = FakeClusters(), FakeClusters()
    clusters = JobClusters({"kubernetes-application": on_kubernetes, "yarn-per-job": on_yarn})
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


def test_what_reaches_the_cluster_is_kept_in_the_status_before_the_deployment_and_dropped_when_it_fails():
    site = {"core-site.xml": "<configuration>a</configuration>", "hdfs-site.xml": "<configuration/>"}
    clusters, job = FakeClusters(kept=site), FlinkJob({**SPEC, "target": "yarn-per-job", "hadoopConfigMap": "hadoop"})
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.DEPLOYED
    assert job.writes[0]["clusterAccess"] == site, "kept before the long wait: an operator restarted meanwhile has it"
    assert clusters.deployed_refs[0].access == site
    assert (job_ref := asyncio.run(job.read())) is not None and job_ref.cluster.access == site

    clusters.kept = {"core-site.xml": "<configuration>b</configuration>"}
    clusters.deploy_error = DeploymentError("the ResourceManager does not answer")
    job.spec = {**job.spec, "restartNonce": 1}
    clusters.observation = Observation(exists=False)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED
    starting = next(w for w in job.writes if "clusterAccess" in w and w is not job.writes[0])
    assert starting["clusterAccess"] == {"core-site.xml": "<configuration>b</configuration>", "hdfs-site.xml": None}, (
        "a merge patch deletes the file the new deployment lacks"
    )
    assert job.status["clusterAccess"] is None, "a failed deployment left nothing to reach"
    assert (job_ref := asyncio.run(job.read())) is not None and job_ref.cluster.access == {}
