"""Object storage on ``kubernetes-application``: checkpoints and savepoints on ``s3a://``, no shared volume.

The image carries Hadoop's S3A connector in Spark's jars; the credentials come
from a Secret of the job's namespace (Flink's ``kubernetes.env.secretKeyRef``),
never from the configuration. A streaming word count reads text files from a
bucket of the S3 test server (tests/infra/s3, on the node's address) and writes
its counts there; it is stopped with a savepoint onto S3, its pods go, more
files arrive, and a second job cluster restored from that savepoint counts every
word exactly once. Nothing is mounted into the pods.
"""

from __future__ import annotations

import re
import uuid

import kubernetes
import pytest

from tests.infra.s3.server import ACCESS_KEY, SECRET_KEY
from tests.integration.k8s.test_kubernetes_e2e import TIMEOUT, assert_namespace_empty, cluster_options, job_namespace, jobcluster, list_json
from tests.integration.k8s.waiting import wait_for
from tests.support.streaming import PROGRAM, lines, s3_batches, wait_for_counts, word_counts

pytestmark = [pytest.mark.k8s, pytest.mark.s3]

COUNT_TIMEOUT = 300  # seconds for a job to count what was put (pods and JVMs start on a busy 2-core node)


@pytest.fixture
def namespace(k8s_cluster, k8s_api):
    yield from job_namespace(k8s_cluster, k8s_api, "s3")


def test_a_streaming_job_with_its_state_on_s3_is_stopped_and_restored_exactly(k8s_cluster, k8s_api, k8s_image, namespace, s3_server):
    core = kubernetes.client.CoreV1Api(k8s_api)
    core.create_namespaced_secret(
        namespace,
        {"metadata": {"name": "s3-credentials"}, "stringData": {"access-key": ACCESS_KEY, "secret-key": SECRET_KEY}},
        _request_timeout=TIMEOUT,
    )
    bucket = f"k8s-{uuid.uuid4().hex[:8]}"
    root = s3_server.create_bucket(bucket)
    parts = [lines(seed, 12) for seed in range(2)]
    for i, line in enumerate(parts[0]):
        s3_server.put_text(bucket, f"in/part0-{i:03}.txt", line + "\n")
    env = k8s_cluster.env()
    run_id = uuid.uuid4().hex[:6]

    def run(cluster: str, *args: str) -> tuple[str, str]:
        cluster_id = f"s3-{run_id}-{cluster}"
        options = {
            **s3_server.hadoop_options(),
            "execution.checkpointing.dir": f"{root}/checkpoints",
            "execution.checkpointing.savepoint-dir": f"{root}/savepoints",
            "kubernetes.env.secretKeyRef": "env:AWS_ACCESS_KEY_ID,secret:s3-credentials,key:access-key;"
            "env:AWS_SECRET_ACCESS_KEY,secret:s3-credentials,key:secret-key",
        }
        result = jobcluster(
            env, "run", "-d", "-t", "kubernetes-application", *cluster_options(namespace, k8s_image, cluster_id, options), *args,
            str(PROGRAM), "--input-dir", f"{root}/in", "--output", f"{root}/out", "--per-batch", "4",
        )  # fmt: skip
        assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}"
        assert "S3A connector" not in result.stderr, "the image's Spark has it: nothing is fetched or shipped"
        return re.search(r"JobID ([0-9a-f]{32})", result.stdout).group(1), cluster_id

    def gone(cluster_id: str) -> None:
        wait_for(lambda: not list_json(k8s_api, namespace, "pods", f"app={cluster_id}"), timeout=180, what=f"the pods of {cluster_id} gone")

    read = s3_batches(s3_server, bucket, "out")
    job, cluster_a = run("a")
    wait_for_counts(read, word_counts(parts[0]), COUNT_TIMEOUT, "the first job")
    config_maps = list_json(k8s_api, namespace, "configmaps", f"app={cluster_a}")
    assert config_maps and all(SECRET_KEY not in str(cm.get("data")) for cm in config_maps), "the secret key is in no ConfigMap"
    pods = list_json(k8s_api, namespace, "pods", f"app={cluster_a}")
    shared = [v["name"] for p in pods for v in p["spec"].get("volumes") or [] if "hostPath" in v or "persistentVolumeClaim" in v]
    assert pods and shared == [], f"no volume shared between the pods: {shared}"

    stopped = jobcluster(env, "stop", "-t", "kubernetes-application", "-D", f"kubernetes.namespace={namespace}", job)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    savepoint = re.search(r"Savepoint completed\. Path: (\S+)", stopped.stdout).group(1)
    assert savepoint.startswith(f"{root}/savepoints/savepoint-{job[:6]}-"), savepoint
    assert any(k.endswith("/_metadata") for k in s3_server.keys(bucket, savepoint.removeprefix(f"{root}/")))
    gone(cluster_a)

    for i, line in enumerate(parts[1]):
        s3_server.put_text(bucket, f"in/part1-{i:03}.txt", line + "\n")
    restored, cluster_b = run("b", "-s", savepoint)
    wait_for_counts(read, word_counts(parts[0] + parts[1]), COUNT_TIMEOUT, "the job restored from the savepoint on S3")
    cancelled = jobcluster(env, "cancel", "-t", "kubernetes-application", "-D", f"kubernetes.namespace={namespace}", restored)
    assert cancelled.returncode == 0, cancelled.stderr
    gone(cluster_b)
    assert_namespace_empty(k8s_api, namespace)
