"""The operator under random faults: a seeded run of FlinkJob changes and faults, then what must hold.

FlinkJobs on Kubernetes (long jobs, and one that finishes) and one on YARN are created,
changed (``restartNonce``, ``execution.checkpointing.dir``), switched between upgrade modes, edited in a way the operator
refuses (savepoint mode with no savepoint directory) and fixed again, suspended, resumed and
deleted at random, while the operator
process is killed (also right inside a deployment), JobManager and TaskManager pods are
deleted and the API server is paused (SIGSTOP: it stops answering, as when partitioned).
Then, with the operator running, every FlinkJob must settle and agree with what runs:

- a running FlinkJob is STABLE, its job RUNNING on the JobManager its status names, with one
  cluster (one JobManager Deployment, or one running YARN application);
- a suspended one has no cluster; one that had FINISHED keeps its result and job id;
- one whose last edit was refused runs on: the job that ran at the edit, never removed for it,
  with the refusal in its status (``refusedSpec``, ``Ready`` False);
- a deleted one is gone and left nothing: no pod, Deployment, Service, ConfigMap or Secret, no
  running YARN application, no staging directory;
- no spec was deployed more often than it was asked for (``Deployed`` events against the
  changes that deploy, plus the ``Redeploying`` of a deployment the operator lost when killed):
  a mode switch, a refused edit and its fix deploy nothing.

The run is reproducible from its seed, printed first:

    JOBCLUSTER_FAULT_SEED=1234 JOBCLUSTER_FAULT_STEPS=60 .venv/bin/python -m pytest tests/integration/k8s/test_operator_faults.py

``JOBCLUSTER_FAULT_STEPS`` (default 10) sets its length: short in ``make test``, long by hand.
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import kubernetes
import pytest
import requests

from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.staging import HdfsPaths, webhdfs_client
from tests.integration.k8s.flinkjobs import (
    TIMEOUT,
    WAITS,
    apply,
    cluster_objects,
    events_of,
    flinkjob,
    get,
    operator_namespace,
    running_operator,
)
from tests.integration.k8s.waiting import wait_for

pytestmark = [pytest.mark.k8s, pytest.mark.hadoop]

STEPS = int(os.environ.get("JOBCLUSTER_FAULT_STEPS", "10"))
LONG_JOBS = 2  # FlinkJobs on Kubernetes that run for the whole test, at most at once
SETTLE_TIMEOUT = 600.0  # seconds for every FlinkJob to settle after the last fault
# What the test checks is that the FlinkJobs end true, not how fast: while `make test` runs the other stream's
# Spark jobs on the same 2 cores, a job cluster deployed after a fault has been seen to take more than the
# default 300 s to start, so the FlinkJobs get longer.
STARTUP_DEADLINE = 600
# three job clusters at once on the test node's 2 cores: small CPU requests, limits high enough to start in time
SMALL = {
    "taskmanager.numberOfTaskSlots": "1",
    "kubernetes.jobmanager.cpu.amount": "0.1",
    "kubernetes.jobmanager.cpu.limit-factor": "10",
    "kubernetes.taskmanager.cpu.amount": "0.2",
    "kubernetes.taskmanager.cpu.limit-factor": "5",
    # the random JobManager pod deletions are faults the clusters must survive, however many hit one of them
    "jobcluster.kubernetes.jobmanager.attempts": "1000",
}
#: Where the jobs checkpoint (what last-state mode asks for): a change between the two is a change of the job's
#: configuration, which deploys a new cluster (the jobs are batch jobs, whose state no mode carries)
CHECKPOINT_DIRS = ("/tmp/jobcluster-fault-test-checkpoints", "/tmp/jobcluster-fault-test-checkpoints-2")


@dataclass
class Model:
    """What the test asked of one FlinkJob: its desired state, and how many deployments that may cause."""

    name: str
    target: str = "kubernetes-application"
    state: str = "running"
    nonce: int = 0
    exists: bool = True
    deploys: int = 1  # deployments asked for: its creation, each resume, each new restartNonce while running
    uid: str = ""
    finished_job: str = ""  # the job id of a job that FINISHED before the faults
    mode: str = "stateless"  # spec.job.upgradeMode of the last valid spec
    refused: str | None = None  # while its last edit is refused: the job id that ran at the edit ("" when none was settled)
    checkpoints: str = CHECKPOINT_DIRS[0]  # execution.checkpointing.dir

    def spec(self, namespace: str, seconds: int = 900) -> dict:
        job = {"program": f"local://{WAITS}", "args": [str(seconds)], "state": self.state, "upgradeMode": self.mode}
        extra = {"target": self.target, "hadoopConfigMap": "hadoop-conf"} if self.target == "yarn-per-job" else {}
        if self.target == "yarn-per-job":
            job = {"source": WAITS.read_text(), "args": [str(seconds)], "state": self.state}
        configuration = {**SMALL, "execution.checkpointing.dir": self.checkpoints}
        return flinkjob(
            self.name,
            namespace,
            job,
            restartNonce=self.nonce,
            flinkConfiguration=configuration,
            startupDeadlineSeconds=STARTUP_DEADLINE,
            **extra,
        )


@dataclass
class Run:
    """One seeded run: the models, the log of what was done, and the means to do it."""

    rng: random.Random
    k8s_cluster: object
    k8s_api: object
    namespace: str
    operator: object
    yarn_url: str
    hdfs: HdfsPaths
    models: dict[str, Model] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    created: int = 0

    def do(self, what: str) -> None:
        self.log.append(what)
        print(f"[fault test] {what}", flush=True)

    def patch(self, model: Model, spec: dict) -> None:
        self.k8s_cluster.kubectl("patch", "flinkjob", "-n", self.namespace, model.name, "--type", "merge", "-p", json.dumps({"spec": spec}))

    def alive(self, target: str | None = None, finished: bool | None = None) -> list[Model]:
        return [
            m
            for m in self.models.values()
            if m.exists and (target is None or m.target == target) and (finished is None or bool(m.finished_job) == finished)
        ]

    # -- changes
    def add(self, model: Model, seconds: int = 900) -> Model:
        self.models[model.name] = model
        apply(self.k8s_cluster, model.spec(self.namespace, seconds))
        model.uid = get(self.k8s_api, self.namespace, model.name)["metadata"]["uid"]
        self.do(f"create {model.name} on {model.target}")
        return model

    def create(self) -> None:
        self.created += 1
        self.add(Model(f"long-{self.created}"))

    def restart(self, model: Model) -> None:
        model.nonce += 1
        model.deploys += model.state == "running"
        self.patch(model, {"restartNonce": model.nonce})
        self.do(f"restartNonce {model.nonce} of {model.name}")

    def suspend_or_resume(self, model: Model) -> None:
        resumed = model.state == "suspended"
        model.state = "running" if resumed else "suspended"
        model.deploys += resumed and not model.finished_job
        self.patch(model, {"job": {"state": model.state}})
        self.do(f"{model.state} {model.name}")

    def move_checkpoints(self, model: Model) -> None:
        model.checkpoints = CHECKPOINT_DIRS[1 - CHECKPOINT_DIRS.index(model.checkpoints)]
        model.deploys += model.state == "running"
        self.patch(model, {"flinkConfiguration": {"execution.checkpointing.dir": model.checkpoints}})
        self.do(f"execution.checkpointing.dir {model.checkpoints} of {model.name}")

    def switch_mode(self, model: Model) -> None:
        model.mode = "last-state" if model.mode == "stateless" else "stateless"
        self.patch(model, {"job": {"upgradeMode": model.mode}})
        self.do(f"upgradeMode {model.mode} of {model.name}")

    def refuse(self, model: Model) -> None:
        """An edit the operator refuses (savepoint mode, and no savepoint directory anywhere): its job must run on."""
        status = get(self.k8s_api, self.namespace, model.name).get("status") or {}
        settled = status.get("lifecycleState") == "STABLE" and model.state == "running"
        model.refused = (status.get("jobStatus") or {}).get("jobId", "") if settled else ""
        self.patch(model, {"job": {"upgradeMode": "savepoint"}})
        self.do(f"refused edit of {model.name}")

    def fix(self, model: Model) -> None:
        model.refused = None
        self.patch(model, {"job": {"upgradeMode": model.mode}})
        self.do(f"fixed {model.name}")

    def delete(self, model: Model) -> None:
        model.exists = False
        self.k8s_cluster.kubectl("delete", "flinkjob", "-n", self.namespace, model.name, "--wait=false")
        self.do(f"delete {model.name}")

    # -- faults
    def kill_operator(self, inside_deploy: bool) -> None:
        long = self.alive("kubernetes-application", finished=False)
        if inside_deploy and long:
            model = self.rng.choice(long)
            if model.state == "suspended":
                self.suspend_or_resume(model)
            else:
                self.restart(model)
            time.sleep(self.rng.uniform(0.5, 4.0))  # the operator is removing or deploying
        self.operator.kill()
        self.do("operator killed" + (" inside a deployment" if inside_deploy else ""))
        time.sleep(self.rng.uniform(0, 3))
        self.operator.start()

    def delete_pod(self, component: str) -> None:
        core = kubernetes.client.CoreV1Api(self.k8s_api)
        pods = core.list_namespaced_pod(self.namespace, label_selector=f"component={component}", _request_timeout=TIMEOUT).items
        if pods:
            pod = self.rng.choice(sorted(pods, key=lambda p: p.metadata.name))
            core.delete_namespaced_pod(pod.metadata.name, self.namespace, _request_timeout=TIMEOUT)
            self.do(f"deleted pod {pod.metadata.name}")

    def pause_api_server(self) -> None:
        seconds = self.rng.uniform(2, 6)
        server = self.k8s_cluster.daemon("kube-apiserver")
        server.suspend()
        try:
            time.sleep(seconds)
        finally:
            server.resume()
        self.do(f"API server paused for {seconds:.1f} s")

    def step(self) -> None:
        long = self.alive("kubernetes-application", finished=False)
        choices = ["change", "change", "mode", "checkpoints", "refuse", "kill", "kill-in-deploy", "jm-pod", "tm-pod", "api-server"]
        if len(long) < LONG_JOBS:
            choices.append("create")
        if long:
            choices.append("delete")
        choice = self.rng.choice(choices)
        changeable = [m for m in self.alive() if m.target != "yarn-per-job" or self.rng.random() < 0.3]
        if choice == "create":
            self.create()
        elif choice in ("change", "mode", "checkpoints", "refuse") and changeable:
            model = self.rng.choice(changeable)
            if model.refused is not None:  # a refused spec is fixed before anything else is asked of it
                self.fix(model)
            elif choice == "mode":
                self.switch_mode(model)
            elif choice == "checkpoints" and not model.finished_job:  # a finished job would run again
                self.move_checkpoints(model)
            elif choice == "refuse":
                self.refuse(model)
            elif model.finished_job or self.rng.random() < 0.5:
                self.suspend_or_resume(model)
            else:
                self.restart(model)
        elif choice == "delete":
            self.delete(self.rng.choice(long))
        elif choice in ("kill", "kill-in-deploy"):
            self.kill_operator(inside_deploy=choice == "kill-in-deploy")
        elif choice in ("jm-pod", "tm-pod"):
            self.delete_pod("jobmanager" if choice == "jm-pod" else "taskmanager")
        elif choice == "api-server":
            self.pause_api_server()
        time.sleep(self.rng.uniform(0, 5))

    # -- what must hold
    def yarn_applications(self, uid: str, running: bool = True) -> list[dict]:
        """The YARN applications tagged with the FlinkJob's uid (only those that have not ended, when ``running``)."""
        query = {"applicationTags": f"flinkjob-uid:{uid}"}
        if running:
            query["states"] = "NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING"
        apps = requests.get(f"{self.yarn_url}/ws/v1/cluster/apps", params=query, timeout=10).json().get("apps") or {}
        return apps.get("app") or []

    def yarn_left(self, model: Model) -> list[str]:
        """What a deleted FlinkJob on YARN left: applications still running, staging directories on HDFS."""
        if model.target != "yarn-per-job" or not model.uid:
            return []
        left = [f"application {a['id']}" for a in self.yarn_applications(model.uid)]
        for app in self.yarn_applications(model.uid, running=False):
            for home in self.hdfs.client.list("/user"):
                staging = f"/user/{home}/.jobcluster/{app['id']}"
                if self.hdfs.client.status(staging, strict=False) is not None:
                    left.append(f"staging {staging}")
        return left

    def settled(self, model: Model) -> str | None:
        """None when the FlinkJob agrees with what runs; else what does not (yet)."""
        try:
            document = get(self.k8s_api, self.namespace, model.name)
        except kubernetes.client.ApiException as exc:
            if exc.status != 404:
                raise
            document = None
        if not model.exists:
            if document is not None:
                return "not deleted yet"
            left = cluster_objects(self.k8s_api, self.namespace, model.name) + self.yarn_left(model)
            return f"left {left}" if left else None
        assert document is not None
        status = document.get("status") or {}
        if status.get("observedGeneration") != document["metadata"]["generation"]:
            return f"generation {document['metadata']['generation']} not observed"
        running = [o for o in cluster_objects(self.k8s_api, self.namespace, model.name) if o.startswith("deployment/")]
        if model.target == "yarn-per-job":
            running = [a["id"] for a in self.yarn_applications(document["metadata"]["uid"])]
        lifecycle, job = status.get("lifecycleState"), status.get("jobStatus") or {}
        if model.finished_job:
            ok = lifecycle == "FINISHED" and job.get("jobId") == model.finished_job and not running
            return None if ok else f"a finished job must keep its result: {lifecycle} {job} {running}"
        if model.state == "suspended":
            return None if lifecycle == "SUSPENDED" and not running else f"suspended: {lifecycle} {running}"
        if lifecycle != "STABLE" or job.get("state") != "RUNNING" or len(running) != 1:
            return f"running: {lifecycle} {job.get('state')} {running} {status.get('error', '')}"
        ready = next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), {})
        if model.refused is not None:
            if model.refused and job.get("jobId") != model.refused:
                return f"the job {model.refused} that ran at the refused edit is gone: {job.get('jobId')} runs"
            if not status.get("refusedSpec") or ready.get("status") != "False":
                return f"the refusal is not in the status: {status.get('refusedSpec')} {ready}"
        elif ready.get("status") != "True":
            return f"not Ready: {ready}"
        try:  # a JobManager pod just replaced: the status names the old one until a look finds the new one
            answer = requests.get(f"{status['restUrl']}/jobs/{job['jobId']}", timeout=5)
        except requests.RequestException as exc:
            return f"the JobManager at {status['restUrl']} does not answer: {exc}"
        return None if answer.ok and answer.json()["state"] == "RUNNING" else f"the JobManager says {answer.text[:200]}"

    def deploy_counts(self, model: Model) -> tuple[int, int]:
        events = events_of(self.k8s_api, self.namespace, model.name)
        return sum(e.startswith("Normal Deployed") for e in events), sum(e.startswith("Normal Redeploying") for e in events)


@pytest.fixture(scope="module")
def namespace(k8s_cluster, k8s_api):
    with operator_namespace(k8s_cluster, k8s_api, prefix="faults") as name:
        yield name


@pytest.mark.timeout(1500)  # the steps, then up to SETTLE_TIMEOUT, then the deletions
def test_random_changes_and_faults_leave_every_flinkjob_true_and_nothing_orphaned(
    k8s_cluster, k8s_api, k8s_image, hadoop_cluster, namespace, tmp_path
):
    seed = int(os.environ.get("JOBCLUSTER_FAULT_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"\n[fault test] seed {seed}, {STEPS} steps: JOBCLUSTER_FAULT_SEED={seed} JOBCLUSTER_FAULT_STEPS={STEPS} replays it", flush=True)
    hadoop = HadoopConfiguration.load(hadoop_cluster.hadoop_conf_dir)
    k8s_cluster.kubectl("create", "configmap", "hadoop-conf", "-n", namespace, f"--from-file={hadoop_cluster.hadoop_conf_dir}")
    with running_operator(k8s_cluster, k8s_image, namespace, tmp_path) as operator:
        run = Run(
            random.Random(seed),
            k8s_cluster,
            k8s_api,
            namespace,
            operator,
            hadoop.resourcemanager_webapp_url().rstrip("/"),
            HdfsPaths(webhdfs_client(hadoop), hadoop.default_fs),
        )
        # one job that finishes before the faults begin, so that they can try to take its result
        finishing = run.add(Model("finishes"), seconds=2)
        run.add(Model("on-yarn", target="yarn-per-job"))
        for _ in range(LONG_JOBS):
            run.create()

        def ended() -> dict:
            status = get(k8s_api, namespace, "finishes").get("status") or {}
            assert status.get("lifecycleState") != "FAILED", status
            return status if status.get("lifecycleState") == "FINISHED" else {}

        try:
            finished = wait_for(ended, timeout=300, what="the short job FINISHED")
            finishing.finished_job = finished["jobStatus"]["jobId"]
            for _ in range(STEPS):
                run.step()
            if operator.process is None or operator.process.poll() is not None:
                operator.start()
            settle(run, seed)
        except BaseException:
            leave_nothing(run)
            raise
        for model in run.models.values():
            if model.exists:
                deployed, redeployed = run.deploy_counts(model)
                assert deployed <= model.deploys + redeployed, f"seed {seed}: {model.name} deployed {deployed} times for {model}"
        for model in run.alive():  # and every one deleted leaves nothing, running or not
            run.delete(model)
        settle(run, seed)
        print(f"[fault test] seed {seed}: every FlinkJob settled after {len(run.log)} steps: {run.log}")


def leave_nothing(run: Run) -> None:
    """After a failure, every FlinkJob deleted through a running operator (best effort, bounded): a YARN application
    left running would starve the tests that come after this one of containers."""
    operator = run.operator
    try:
        if operator.process is None or operator.process.poll() is not None:  # type: ignore[attr-defined]
            operator.start()  # type: ignore[attr-defined]
        for model in run.alive():
            run.delete(model)
        wait_for(lambda: all(run.settled(m) is None for m in run.models.values()), timeout=180, interval=3, what="nothing left")
    except Exception as exc:  # noqa: BLE001 - the failure that brought us here is the one to report
        print(f"[fault test] after the failure: {exc}", flush=True)


def settle(run: Run, seed: int) -> None:
    """Wait until every FlinkJob agrees with what runs; AssertionError with the seed, what disagrees and the steps."""

    def disagreements() -> dict[str, str]:
        found = {name: run.settled(model) for name, model in run.models.items()}
        return {name: why for name, why in found.items() if why}

    try:
        wait_for(lambda: not disagreements(), timeout=SETTLE_TIMEOUT, interval=3, what="every FlinkJob settled")
    except AssertionError:
        unsettled = disagreements()
        evidence = "\n".join(what_runs(run, name) for name in unsettled)
        raise AssertionError(f"seed {seed}: not settled: {unsettled}\nsteps: {run.log}\n{evidence}") from None


EVIDENCE_LINES = 40  # lines of each log a failure shows: the test's directories do not outlive the next test sessions


def what_runs(run: Run, name: str) -> str:
    """What a FlinkJob that did not settle has running, for the failure's message: its pods, the last lines of its
    JobManager's log, and the operator's last lines about it."""
    kubectl = run.k8s_cluster.kubectl  # type: ignore[attr-defined]
    pods = kubectl("get", "pods", "-n", run.namespace, "-o", "wide", "-l", f"app={name}", check=False)
    job_manager = kubectl("logs", "-n", run.namespace, f"deployment/{name}", f"--tail={EVIDENCE_LINES}", check=False, timeout=30)
    operator_log = Path(run.operator.log).read_text(errors="replace").splitlines()  # type: ignore[attr-defined]
    about = [line for line in operator_log if name in line][-EVIDENCE_LINES:]
    return "\n".join(
        [
            f"--- {name}: pods\n{pods.stdout}{pods.stderr}",
            f"--- {name}: the JobManager's last {EVIDENCE_LINES} lines\n{job_manager.stdout}{job_manager.stderr}",
            f"--- {name}: the operator's last lines about it",
            *about,
        ]
    )
