"""A streaming job on ``yarn-per-job`` outlives its HDFS delegation tokens (issue 42, row 3): with a keytab login, the
JobManager obtains new ones in time and every process of the job uses them.

On a Kerberized cluster whose tokens live two minutes at most (renewed by the minute), a stateful word count from Kafka
keeps its checkpoint (offsets and commits from the Spark driver, state from the executors) and its savepoints on HDFS:

1. deployed from alice's keytab, with no ticket anywhere (client or containers), it counts a first part;
2. it sits idle past the client's token's maximum lifetime (Hadoop's client drops idle NameNode connections after
   10 s, so every later call logs in to the NameNode again with whatever token it holds), and a TaskExecutor's
   container is killed then (its replacement is localized and started with the tokens the launch gives it);
3. it counts a second part exactly, on the new tokens, and is stopped with a savepoint on HDFS; its ApplicationMaster
   removes its staging directory with a new token too;
4. a new job restored from that savepoint counts a third part exactly and is stopped with a savepoint again.

Were the tokens not renewed, the second part's micro-batch could neither log its offsets nor write its state (the
NameNode refuses an expired token) and the counts would not come.
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import jobcluster
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.kerberos import spnego_auth
from jobcluster.backends.yarn.rm_rest import ResourceManagerRest
from jobcluster.backends.yarn.staging import webhdfs_client
from tests.infra.hadoop.secure_cluster import KerberizedHadoopCluster
from tests.infra.kafka.cluster import KafkaCluster
from tests.integration.conftest import SHORT_TOKENS
from tests.integration.hadoop.test_yarn_job_cluster import application_id_in, cli, container_process, job_id_in, wait_for
from tests.support.streaming import PROGRAM, lines, local_batches, wait_for_counts, word_counts

pytestmark = [pytest.mark.hadoop, pytest.mark.kerberos, pytest.mark.kafka, pytest.mark.token_expiry]

COUNT_TIMEOUT = 300.0
YARN = ("-t", "yarn-per-job")
MAX_LIFETIME = SHORT_TOKENS.token_max_lifetime_min * 60.0
"""Seconds after its issue that the client's token is dead, however often YARN renewed it."""


@pytest.fixture(scope="module")
def alice_ticket(short_token_hadoop_cluster: KerberizedHadoopCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """This process's own checks (WebHDFS, the ResourceManager's REST API) as alice, from a ticket; the jobs have none."""
    cluster = short_token_hadoop_cluster
    login = cluster.kinit(ccache=tmp_path_factory.mktemp("alice") / "ccache")
    with pytest.MonkeyPatch.context() as patch:
        for key, value in {**login, "REQUESTS_CA_BUNDLE": str(cluster.ca_cert)}.items():
            patch.setenv(key, value)
        yield


def _final_status(hadoop_conf: HadoopConfiguration, application: str) -> str | None:
    with ResourceManagerRest(hadoop_conf.resourcemanager_webapp_url(), auth=spnego_auth()) as rest:
        report = rest.application(application)
    return report.final_status if report is not None and report.is_terminal else None


def _savepoint(result) -> str:  # type: ignore[no-untyped-def]
    assert result.returncode == 0, result.stderr
    match = re.search(r"Savepoint completed\. Path: (\S+)", result.stdout)
    assert match, result.stdout
    return match.group(1)


def _logs_of(cluster: KerberizedHadoopCluster, application: str, container_suffix: str) -> str:
    """Everything the container ``..._<container_suffix>`` of ``application`` logged (its NodeManager log directory)."""
    directories = list((cluster.log_dir / "userlogs" / application).glob(f"*_{container_suffix}"))
    return "".join(p.read_text(errors="replace") for d in directories for p in sorted(d.rglob("*")) if p.is_file())


def test_a_streaming_job_outlives_its_delegation_tokens_then_stops_with_a_savepoint_and_restores_exactly(
    short_token_hadoop_cluster: KerberizedHadoopCluster,
    alice_ticket: None,
    kafka_cluster: KafkaCluster,
    spark_kafka_jars: list[Path],
    tmp_path: Path,
) -> None:
    cluster = short_token_hadoop_cluster
    hadoop_conf = HadoopConfiguration.load(cluster.hadoop_conf_dir)
    hdfs = webhdfs_client(hadoop_conf)
    root = f"/user/alice/long-{uuid.uuid4().hex[:8]}"
    fs = hadoop_conf.default_fs
    operator_dir = str(Path(jobcluster.__file__).resolve().parents[1])  # the containers run this jobcluster, too
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "KRB5CCNAME")},
        **cluster.no_ticket_env(),
        "HADOOP_CONF_DIR": str(cluster.hadoop_conf_dir),
        "JOBCLUSTER_HOME": str(tmp_path / "home"),
    }
    no_ticket = str(tmp_path / "no-ticket")
    login = (
        "-D",
        f"security.kerberos.login.keytab={cluster.keytab('alice')}",
        "-D",
        f"security.kerberos.login.principal={cluster.principal('alice')}",
    )
    containers = [
        f"{role}.{key}={value}"
        for role in ("containerized.master.env", "containerized.taskmanager.env")
        for key, value in (
            ("KRB5CCNAME", no_ticket),
            ("KRB5_CONFIG", str(cluster.krb5_conf)),  # the test realm: the nodes' /etc/krb5.conf does not know it
            ("PYTHONPATH", operator_dir),
            ("REQUESTS_CA_BUNDLE", str(cluster.ca_cert)),
        )
    ]
    common = [
        *YARN,
        *login,
        *(arg for setting in containers for arg in ("-D", setting)),
        "-D",
        f"jobcluster.yarn.python={sys.executable}",
        "-D",
        f"execution.checkpointing.dir={fs}{root}/checkpoints",
        "-D",
        f"execution.checkpointing.savepoint-dir={fs}{root}/savepoints",
        "-D",
        "taskmanager.numberOfTaskSlots=1",
        "--jars",
        ",".join(str(j) for j in spark_kafka_jars),
    ]
    topic = f"words-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, partitions=2)
    produced: list[str] = []
    out = tmp_path / "out"

    def produce(part: list[str]) -> Counter[str]:
        kafka_cluster.produce(topic, [(None, line) for line in part])
        produced.extend(part)
        return word_counts(produced)

    def program() -> list[str]:
        return [
            str(PROGRAM),
            "--kafka",
            kafka_cluster.bootstrap_servers,
            "--topic",
            topic,
            "--output",
            f"file://{out}",
            "--per-batch",
            "40",
        ]

    expected = produce(lines(0, 40))
    issued = time.monotonic()  # the client's token is obtained after this
    started = cli(env, "run", "-d", "-p", "2", *common, *program())
    assert started.returncode == 0, started.stderr
    assert "Shipping the keytab" in started.stderr, started.stderr
    first, job = application_id_in(started.stderr), job_id_in(started.stdout)
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "the first part")
    # The keytab went to the ApplicationMaster only: staged alice's and 600, localized into its container alone.
    status = hdfs.status(f"/user/alice/.jobcluster/{first}/krb5.keytab")
    assert (status["owner"], status["permission"], int(status["length"])) == ("alice", "600", cluster.keytab("alice").stat().st_size)
    scripts = sorted((cluster.log_dir / "userlogs" / first).glob("*/launch_container.sh"))
    assert len(scripts) >= 2, scripts  # the ApplicationMaster's and a TaskExecutor's at least
    assert {s.parent.name for s in scripts if '"krb5.keytab"' in s.read_text()} == {f"container_{first[len('application_') :]}_01_000001"}

    # Idle until the client's token is dead, then a TaskExecutor's container lost: its replacement starts on new tokens.
    time.sleep(max(0.0, issued + MAX_LIFETIME + 15 - time.monotonic()))
    container_process(first, "01_000002", "jobcluster.runtime.taskexecutor").kill()
    expected = produce(lines(1, 40))
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "the second part, after the client's token expired")
    wait_for(lambda: _logs_of(cluster, first, "01_000004"), "the replacement TaskExecutor's container", timeout=120)

    stopped = _savepoint(cli(env, "stop", *YARN, *login, job))
    assert stopped.startswith(f"{fs}{root}/savepoints/savepoint-{job[:6]}-"), stopped
    assert hdfs.status(f"{root}/savepoints/{stopped.rsplit('/', 1)[1]}/_metadata", strict=False) is not None
    assert wait_for(lambda: _final_status(hadoop_conf, first), f"{first} to end", timeout=120) == "SUCCEEDED"
    # Its ApplicationMaster removed its staging directory through WebHDFS, on a token newer than the client's.
    wait_for(lambda: not hdfs.status(f"/user/alice/.jobcluster/{first}", strict=False), f"{first}'s staging directory removed", 60)
    # The JobManager obtained tokens at its start and again in time, and the running Spark driver was handed them.
    jobmanager = _logs_of(cluster, first, "01_000001")
    assert jobmanager.count("new delegation tokens obtained and handed on") >= 2, jobmanager[-3000:]
    assert "Updating delegation tokens for current user" in jobmanager, jobmanager[-3000:]  # Spark's driver, told
    assert "cannot obtain new delegation tokens" not in jobmanager

    # Restored from the stop's savepoint (a new application, with the client's new tokens), counted exactly again.
    expected = produce(lines(2, 40))
    restored = cli(env, "run", "-d", "-p", "1", "-s", stopped, *common, *program())
    assert restored.returncode == 0, restored.stderr
    second, restored_job = application_id_in(restored.stderr), job_id_in(restored.stdout)
    wait_for_counts(local_batches(out), expected, COUNT_TIMEOUT, "the third part, restored from the savepoint")
    last = _savepoint(cli(env, "stop", *YARN, *login, restored_job))
    assert last.startswith(f"{fs}{root}/savepoints/savepoint-{restored_job[:6]}-"), last
    assert wait_for(lambda: _final_status(hadoop_conf, second), f"{second} to end", timeout=120) == "SUCCEEDED"
    hdfs.delete(root, recursive=True)
