"""A streaming FlinkJob's life under the operator, counted exactly against a real Kafka topic.

One FlinkJob runs the stateful word count of tests/support/streaming.py from a
Kafka topic through the operator's whole state-keeping lifecycle, each step
checked to have every record counted exactly once (none lost, none twice):

- periodic savepoints (``kubernetes.operator.periodic.savepoint.interval``)
  pruned to ``kubernetes.operator.savepoint.history.max.count``, their
  directories deleted; then a manual one by ``savepointTriggerNonce``; neither
  changes the running cluster;
- an upgrade in ``savepoint`` mode to another parallelism, with the operator
  killed once the savepoint's path is recorded and started again: one
  savepoint, one new cluster, restored from it;
- the JobManager pod deleted, then an upgrade in ``last-state`` mode: the new
  cluster keeps the JobID and resumes its checkpoints;
- the JobManager Deployment deleted from outside: the operator deploys it
  again (``kubernetes.operator.jm-deployment-recovery.enabled``), the same
  JobID resuming its checkpoints;
- a suspension (stop-with-savepoint, nothing left running) and, meanwhile, a
  second FlinkJob started from that savepoint by ``initialSavepointPath``;
  then the first resumed from its own savepoint.

The checkpoints, savepoints and the counts' output are directories of this
machine that the FlinkJobs' pod template mounts at the same paths (the test
node is this machine), as a user would mount a shared volume.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes
import pytest
import requests

from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.staging import HdfsPaths, webhdfs_client
from tests.infra.kafka.cluster import KafkaCluster
from tests.integration.k8s.flinkjobs import (
    PROGRAMS,
    TIMEOUT,
    apply,
    cluster_objects,
    events_of,
    flinkjob,
    get,
    operator_namespace,
    pods,
    running_operator,
)
from tests.integration.k8s.pods import host_path_pod, open_to_containers
from tests.integration.k8s.waiting import wait_for
from tests.support.streaming import PROGRAM, Steps, lines, local_batches, wait_for_counts, word_counts

pytestmark = [pytest.mark.k8s, pytest.mark.kafka]

COUNT_TIMEOUT = 300  # seconds for a job to count what was produced (a new cluster's pods and JVMs on a busy 2-core node)
STATE_TIMEOUT = 420  # seconds for the FlinkJob to reach a state that takes a savepoint and a new cluster


@pytest.fixture
def namespace(k8s_cluster, k8s_api):
    with operator_namespace(k8s_cluster, k8s_api, prefix="opstream") as name:
        yield name


class Topic:
    """A Kafka topic of words, and the counts of everything produced to it so far."""

    def __init__(self, kafka_cluster: KafkaCluster) -> None:
        self.kafka, self.name, self.produced = kafka_cluster, f"words-{uuid.uuid4().hex[:8]}", []
        kafka_cluster.create_topic(self.name, partitions=2)

    def produce(self, seed: int) -> Counter[str]:
        """Produce 60 lines (the same for the same seed); the counts the job must reach."""
        part = lines(seed, 60)
        self.kafka.produce(self.name, [(None, line) for line in part])
        self.produced.extend(part)
        return word_counts(self.produced)


@dataclass
class FlinkJobs:
    """The FlinkJobs of a namespace, as a user sees and edits them (``kubectl patch``)."""

    k8s_cluster: Any
    k8s_api: Any
    namespace: str

    def status(self, name: str = "wc") -> dict:
        return get(self.k8s_api, self.namespace, name).get("status") or {}

    def savepoints(self, name: str = "wc") -> dict:
        return (self.status(name).get("jobStatus") or {}).get("savepointInfo") or {}

    def patch(self, change: dict, name: str = "wc") -> None:
        self.k8s_cluster.kubectl("patch", "flinkjob", name, "-n", self.namespace, "--type=merge", "-p", json.dumps({"spec": change}))

    def stable(self, name: str = "wc", other_than: str | None = None) -> dict:
        """The status once the FlinkJob's job runs on a cluster deployed after ``other_than`` (a deployTime)."""

        def ready() -> dict | None:
            now = self.status(name)
            running = now.get("lifecycleState") == "STABLE" and now.get("deployTime") != other_than
            return now if running and not now.get("upgrade") else None

        return wait_for(ready, timeout=STATE_TIMEOUT, interval=1, what=f"FlinkJob {name} STABLE on a new cluster")

    def suspended(self, name: str = "wc") -> dict:
        def ready() -> dict | None:
            now = self.status(name)
            return now if now.get("lifecycleState") == "SUSPENDED" else None

        return wait_for(ready, timeout=STATE_TIMEOUT, interval=1, what=f"FlinkJob {name} SUSPENDED")


@contextlib.contextmanager
def _explained(k8s_cluster, k8s_api, namespace: str) -> Iterator[None]:
    """On a failure, print the FlinkJobs and their events: the status tells which step of the lifecycle stopped."""
    try:
        yield
    except BaseException:
        print(k8s_cluster.kubectl("get", "flinkjobs", "-n", namespace, "-o", "yaml", check=False).stdout)
        for name in ("wc", "wc-copy"):
            print(f"events of {name}:", *events_of(k8s_api, namespace, name), sep="\n  ")
        raise


def on_disk(uri: str) -> Path:
    """The path on this machine of a savepoint's location (a ``file:`` URI or a path: the pods mount it at the same path)."""
    return Path(uri.removeprefix("file:"))


def _dir(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


@pytest.mark.timeout(2400)
def test_a_streaming_flinkjob_keeps_its_state_through_savepoints_upgrades_a_killed_operator_and_suspension(
    k8s_cluster, k8s_api, k8s_image, namespace, tmp_path, kafka_cluster: KafkaCluster, spark_kafka_jars: list[Path]
):
    state, out, jars_dir = _dir(tmp_path / "state"), _dir(tmp_path / "out"), _dir(tmp_path / "jars")
    jars = [f"local://{shutil.copy(jar, jars_dir)}" for jar in spark_kafka_jars]
    open_to_containers(jars_dir)
    mounts = host_path_pod([PROGRAMS, jars_dir, state, out], writable=[state, out])
    words = Topic(kafka_cluster)
    jobs = FlinkJobs(k8s_cluster, k8s_api, namespace)
    status, patch, stable, savepoints, produce = jobs.status, jobs.patch, jobs.stable, jobs.savepoints, words.produce

    def document(name: str, output: Path, template: dict = mounts, **job: object) -> dict:
        program = {
            "program": f"local://{PROGRAM}",
            "args": ["--kafka", kafka_cluster.pod_bootstrap_servers, "--topic", words.name, "--output", str(output), "--per-batch", "20"],
            "jars": jars,
            "parallelism": 2,
            "upgradeMode": "savepoint",
            **job,
        }
        configuration = {
            "taskmanager.numberOfTaskSlots": "2",
            "execution.checkpointing.dir": f"{state}/checkpoints",
            "execution.checkpointing.savepoint-dir": f"{state}/savepoints",
            "kubernetes.operator.periodic.savepoint.interval": "10 s",
            "kubernetes.operator.savepoint.history.max.count": "2",
            "kubernetes.operator.savepoint.dispose-on-delete": "true",
        }
        return flinkjob(name, namespace, program, flinkConfiguration=configuration, startupDeadlineSeconds=STATE_TIMEOUT, **pods(template))

    step = Steps()

    with running_operator(k8s_cluster, k8s_image, namespace, tmp_path) as operator, _explained(k8s_cluster, k8s_api, namespace):
        expected = produce(0)
        apply(k8s_cluster, document("wc", out))
        first = stable()
        wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "the first deployment")
        step("deployed, counted")

        # Periodic savepoints, pruned to the last two; the disposed ones are deleted from the volume.
        def disposed() -> list[Path]:
            messages = [e for e in events_of(k8s_api, namespace, "wc") if "SavepointsDisposed" in e]
            return [on_disk(uri) for m in messages for uri in m.split("disposing of ", 1)[1].split(", ")]

        gone = wait_for(disposed, timeout=STATE_TIMEOUT, interval=2, what="a periodic savepoint disposed of by the history limit")
        history = savepoints()["savepointHistory"]
        assert len(history) <= 2 and {e["triggerType"] for e in history} == {"PERIODIC"}, history
        assert all((on_disk(e["location"]) / "_metadata").is_file() for e in history), history
        wait_for(lambda: not any(path.exists() for path in gone), timeout=60, what=f"{gone} deleted")
        # the operator's own options need no new cluster: periodic savepoints off, then a manual one by the nonce
        patch({"flinkConfiguration": {"kubernetes.operator.periodic.savepoint.interval": "0"}, "job": {"savepointTriggerNonce": 1}})
        manual = wait_for(
            lambda: (savepoints().get("lastSavepoint") or {}).get("triggerType") == "MANUAL" and savepoints(),
            timeout=STATE_TIMEOUT,
            what="the manual savepoint",
        )
        assert manual["lastSavepoint"]["triggerNonce"] == 1 and (on_disk(manual["lastSavepoint"]["location"]) / "_metadata").is_file()
        assert status()["deployTime"] == first["deployTime"] and status()["jobStatus"]["jobId"] == first["jobStatus"]["jobId"]
        (query,) = status()["jobStatus"]["checkpointInfo"]["queries"]
        assert query["name"] == "wordcount" and query["committedBatchId"] >= 0 and query["lastCommitTime"], query
        columns = k8s_cluster.kubectl("get", "flinkjob", "wc", "-n", namespace).stdout.splitlines()
        assert "LAST SAVEPOINT" in columns[0] and columns[1].split()[-2].endswith("s"), columns
        step("periodic pruned, manual")

        # An upgrade in savepoint mode to parallelism 1; the operator killed once the savepoint is recorded.
        expected = produce(1)
        wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "before the upgrade")
        patch({"job": {"parallelism": 1}})
        recorded = wait_for(lambda: (status().get("upgrade") or {}).get("savepointPath"), timeout=STATE_TIMEOUT, interval=0.1,
                            what="the upgrade's savepoint recorded")  # fmt: skip
        operator.kill()
        step("upgrade savepoint, operator killed")
        expected = produce(2)
        operator.start()
        upgraded = stable(other_than=first["deployTime"])
        wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "upgraded from a savepoint to parallelism 1")
        assert upgraded["jobStatus"]["upgradeSavepointPath"] == recorded
        assert upgraded["jobStatus"]["jobId"] != first["jobStatus"]["jobId"] and upgraded["taskManagers"]["count"] == 1
        kinds = [e["triggerType"] for e in upgraded["jobStatus"]["savepointInfo"]["savepointHistory"]]
        assert kinds.count("UPGRADE") == 1, f"one savepoint for the upgrade, the operator's restart included: {kinds}"
        triggered = [e for e in events_of(k8s_api, namespace, "wc") if "SavepointTriggered: stop-with-savepoint" in e]
        assert len(triggered) == 1, triggered
        step("upgraded, counted")

        # The JobManager pod deleted, then an upgrade in last-state mode: the same JobID resumes its checkpoints.
        core = kubernetes.client.CoreV1Api(k8s_api)
        (jm,) = core.list_namespaced_pod(namespace, label_selector="app=wc,component=jobmanager", _request_timeout=TIMEOUT).items
        core.delete_namespaced_pod(jm.metadata.name, namespace, grace_period_seconds=0, _request_timeout=TIMEOUT)
        patch({"job": {"upgradeMode": "last-state", "parallelism": 2}})
        expected = produce(3)
        last_state = stable(other_than=upgraded["deployTime"])
        wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "upgraded in last-state mode after the JobManager pod was deleted")
        job_id = upgraded["jobStatus"]["jobId"]
        assert (
            last_state["jobStatus"]["jobId"] == job_id
            and last_state["jobStatus"]["upgradeSavepointPath"] == f"{state}/checkpoints/{job_id}"
        )
        step("JobManager pod deleted, last-state upgrade, counted")

        # The JobManager Deployment deleted from outside: deployed again, the same JobID resuming its checkpoints.
        kubernetes.client.AppsV1Api(k8s_api).delete_namespaced_deployment("wc", namespace, _request_timeout=TIMEOUT)
        expected = produce(10)
        recovered = stable(other_than=last_state["deployTime"])
        wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "recovered after its JobManager Deployment was deleted")
        assert recovered["jobStatus"]["jobId"] == job_id, "the recovered job resumes its checkpoints under the same JobID"
        assert any(e.startswith("Warning ClusterRecovering") for e in events_of(k8s_api, namespace, "wc"))
        last_state = recovered
        step("JobManager Deployment deleted, recovered, counted")

        # Suspended with a savepoint: nothing runs; then a second FlinkJob starts from that savepoint ...
        patch({"job": {"upgradeMode": "savepoint", "state": "suspended"}})
        suspended = jobs.suspended()
        wait_for(lambda: cluster_objects(k8s_api, namespace, "wc") in ([], ["configmap/wc-job-result"]), timeout=180,
                 what="the suspended cluster gone")  # fmt: skip
        from_suspension = suspended["upgrade"]["savepointPath"]
        assert suspended["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"] == from_suspension
        expected = produce(4)
        copy = _dir(tmp_path / "copy")
        open_to_containers(copy, writable=True)
        template = host_path_pod([PROGRAMS, jars_dir, state, out, copy], writable=[state, out, copy])
        second = document("wc-copy", copy, template, initialSavepointPath=from_suspension, parallelism=1)
        apply(k8s_cluster, second)
        # ... and, at the same time, the first resumed from its own savepoint, what arrived meanwhile included
        patch({"job": {"state": "running"}})
        started_copy = stable("wc-copy")
        assert started_copy["jobStatus"]["upgradeSavepointPath"] == from_suspension
        copied = wait_for_counts(local_batches(copy), expected, COUNT_TIMEOUT, "a new FlinkJob from the suspension's savepoint")
        assert sum(copied.values()) > sum(word_counts(lines(4, 60)).values()), "it started from the savepoint's state, not empty"
        resumed = stable(other_than=last_state["deployTime"])
        wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "resumed from the suspension's savepoint")
        assert resumed["jobStatus"]["upgradeSavepointPath"] == from_suspension
        k8s_cluster.kubectl("delete", "flinkjob", "wc-copy", "-n", namespace, timeout=120)
        step("suspended; a copy by initialSavepointPath and the resumed job counted")

        reasons = {e.split(":")[0] for e in events_of(k8s_api, namespace, "wc")}
        assert {"Normal SavepointTriggered", "Normal SavepointCompleted", "Normal SavepointsDisposed", "Normal Suspended"} <= reasons
        k8s_cluster.kubectl("delete", "flinkjob", "wc", "-n", namespace, timeout=120)
        wait_for(lambda: cluster_objects(k8s_api, namespace, "wc") == [], timeout=120, what="nothing of wc")
    print(step.summary("the streaming FlinkJob's life"))


@pytest.mark.hadoop
@pytest.mark.timeout(1500)
def test_a_streaming_flinkjob_on_yarn_is_upgraded_and_suspended_with_savepoints_on_hdfs(
    k8s_cluster, k8s_api, k8s_image, hadoop_cluster, namespace, tmp_path, kafka_cluster: KafkaCluster, spark_kafka_jars: list[Path]
):
    """The upgrade and the suspension on ``yarn-per-job``: savepoints on HDFS, each step counted exactly, YARN's view checked."""
    hadoop = HadoopConfiguration.load(hadoop_cluster.hadoop_conf_dir)
    hdfs = HdfsPaths(webhdfs_client(hadoop, timeout=30), hadoop.default_fs)
    k8s_cluster.kubectl("create", "configmap", "hadoop-conf", "-n", namespace, f"--from-file={hadoop_cluster.hadoop_conf_dir}")
    base = f"/tmp/flinkjob-{uuid.uuid4().hex[:8]}"
    out, words, jobs = tmp_path / "out", Topic(kafka_cluster), FlinkJobs(k8s_cluster, k8s_api, namespace)
    program = {
        "source": PROGRAM.read_text(),
        "args": ["--kafka", kafka_cluster.bootstrap_servers, "--topic", words.name, "--output", f"file://{out}", "--per-batch", "20"],
        "jars": [f"local://{jar}" for jar in spark_kafka_jars],  # the NodeManager runs its containers on this machine
        "parallelism": 2,
        "upgradeMode": "savepoint",
    }
    configuration = {
        "taskmanager.numberOfTaskSlots": "2",
        "jobcluster.yarn.python": sys.executable,  # the node's Python has PySpark: nothing is packed
        "execution.checkpointing.dir": hdfs.qualify(f"{base}/checkpoints"),
        "execution.checkpointing.savepoint-dir": hdfs.qualify(f"{base}/savepoints"),
    }
    document = flinkjob(
        "wc", namespace, program, target="yarn-per-job", hadoopConfigMap="hadoop-conf", flinkConfiguration=configuration,
        startupDeadlineSeconds=STATE_TIMEOUT,
    )  # fmt: skip

    def applications(running: bool = True) -> list[dict]:
        """YARN's own list of the FlinkJob's applications (tagged with its uid); those that have not ended, when ``running``."""
        query = {"applicationTags": f"flinkjob-uid:{uid}"}
        if running:
            query["states"] = "NEW,NEW_SAVING,SUBMITTED,ACCEPTED,RUNNING"
        url = f"{hadoop.resourcemanager_webapp_url().rstrip('/')}/ws/v1/cluster/apps"
        return (requests.get(url, params=query, timeout=10).json().get("apps") or {}).get("app") or []

    try:
        with running_operator(k8s_cluster, k8s_image, namespace, tmp_path), _explained(k8s_cluster, k8s_api, namespace):
            expected = words.produce(0)
            apply(k8s_cluster, document)
            uid = get(k8s_api, namespace, "wc")["metadata"]["uid"]
            first = jobs.stable()
            wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "the first deployment on YARN")

            jobs.patch({"job": {"parallelism": 1}})
            expected = words.produce(1)
            upgraded = jobs.stable(other_than=first["deployTime"])
            wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "upgraded on YARN from a savepoint on HDFS")
            savepoint = upgraded["jobStatus"]["upgradeSavepointPath"]
            assert savepoint.startswith(hdfs.qualify(f"{base}/savepoints/savepoint-")), savepoint
            assert hdfs.client.status(f"{urlsplit(savepoint).path}/_metadata", strict=False) is not None
            assert [a["finalStatus"] for a in applications(running=False)].count("SUCCEEDED") == 1, "the stop ended the first"

            jobs.patch({"job": {"state": "suspended"}})
            suspended = jobs.suspended()
            wait_for(lambda: not applications(), timeout=120, what="no application of the FlinkJob running on YARN")
            expected = words.produce(2)
            jobs.patch({"job": {"state": "running"}})
            resumed = jobs.stable(other_than=upgraded["deployTime"])
            assert resumed["jobStatus"]["upgradeSavepointPath"] == suspended["upgrade"]["savepointPath"]
            wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "resumed on YARN from the suspension's savepoint")
            assert len(applications(running=False)) == 3 and len(applications()) == 1

            k8s_cluster.kubectl("delete", "flinkjob", "wc", "-n", namespace, timeout=120)
            wait_for(lambda: not applications(), timeout=120, what="nothing of the FlinkJob running on YARN")
    finally:
        hdfs.client.delete(base, recursive=True)
