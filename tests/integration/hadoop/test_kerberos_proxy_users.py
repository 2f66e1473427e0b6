"""The FlinkJob operator's per-namespace Hadoop users on the Kerberized test cluster: one process, logged in from the
operator's keytab as ``jobcluster operator --kerberos-principal --kerberos-keytab`` logs in, deploys, lists and kills
as alice and as bob through Hadoop's proxy users (issue 42, rows 4 and 5).

The session's cluster lets the ``operator`` principal impersonate the group ``users`` (alice, bob) from any host,
and nobody else impersonate anyone (``KERBEROS_SETTINGS`` in the conftest).

1. A refused impersonation (the operator as carol, who is in no allowed group; bob, who is no proxy user, as
   alice) is ``ProxyUserRefusedError`` naming the ``hadoop.proxyuser.*`` settings, from the NameNode (WebHDFS
   ``doas``), from the ResourceManager's REST API (``doAs``) and RPC (a proxy UGI), before anything is staged or
   submitted: no application, no staged file.
2. alice's job through YARN's RPC client and bob's through the REST API, deployed from the same process: each
   application runs as its user, each staging directory is its user's (0700) and holds its REST token, which the
   operator's own identity cannot read; each user's descriptor lists, retrieves and kills only its own
   application. alice's job finishes (its ApplicationMaster removes her staging directory with her delegation
   token), bob's is killed by bob's descriptor.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hdfs.util import HdfsError

from jobcluster.backends.yarn.descriptor import YarnClusterDescriptor
from jobcluster.backends.yarn.errors import YarnClientError
from jobcluster.backends.yarn.gateway import JvmGateway
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.kerberos import spnego_auth, token_renewer
from jobcluster.backends.yarn.proxy_users import ProxyUserRefusedError
from jobcluster.backends.yarn.rm_rest import ResourceManagerRest
from jobcluster.backends.yarn.savepoint_files import webhdfs_file_system
from jobcluster.backends.yarn.staging import STAGING_ROOT, webhdfs_client
from jobcluster.backends.yarn.yarn_client import TERMINAL_STATES, YarnClient, act_as
from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.client.executor import PipelineExecutor
from jobcluster.client.program import build_job_graph, packaged_program
from jobcluster.config.loader import load_configuration
from jobcluster.controller.main import kerberos_login
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from tests.infra.hadoop.secure_cluster import KerberizedHadoopCluster
from tests.integration.conftest import OPERATOR_USER

pytestmark = [pytest.mark.hadoop, pytest.mark.kerberos]

REPO = Path(__file__).resolve().parents[3]
WAITS = REPO / "tests" / "e2e" / "programs" / "waits.py"
STATES = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED")


@pytest.fixture(scope="module")
def operator_login(
    kerberized_hadoop_cluster: KerberizedHadoopCluster,
) -> Iterator[dict[str, str]]:
    """This process as the operator: logged in from its keytab as ``jobcluster operator --kerberos-principal
    --kerberos-keytab`` logs in (its ticket in a private cache the keytab refreshes), the realm, the CA of the cluster's
    HTTPS; the environment is this process's again afterwards."""
    cluster = kerberized_hadoop_cluster
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KRB5_CONFIG", str(cluster.krb5_conf))
        patch.setenv("REQUESTS_CA_BUNDLE", str(cluster.ca_cert))
        for set_by_the_login in ("KRB5CCNAME", "KRB5_CLIENT_KTNAME"):
            patch.setenv(set_by_the_login, "")  # restored (or removed) when the module ends
        patch.delenv("HADOOP_CONF_DIR", raising=False)
        patch.delenv("YARN_CONF_DIR", raising=False)
        kerberos_login(OPERATOR_USER, cluster.keytab(OPERATOR_USER))
        yield {name: os.environ[name] for name in ("KRB5_CONFIG", "KRB5CCNAME", "REQUESTS_CA_BUNDLE")}


@pytest.fixture(scope="module")
def hadoop_conf(kerberized_hadoop_cluster: KerberizedHadoopCluster) -> HadoopConfiguration:
    return HadoopConfiguration.load(kerberized_hadoop_cluster.hadoop_conf_dir)


def config_for(cluster: KerberizedHadoopCluster, api: str) -> dict[str, str]:
    """A yarn-application job's settings, as the operator gives them: the node's Python (nothing shipped), the CA for
    the ApplicationMaster's WebHDFS client."""
    return {
        "execution.target": "yarn-application",
        "execution.attached": "false",
        "env.hadoop.conf.dir": str(cluster.hadoop_conf_dir),
        "jobcluster.yarn.resourcemanager.api": api,
        "python.executable": sys.executable,
        "containerized.master.env.REQUESTS_CA_BUNDLE": str(cluster.ca_cert),
    }


def descriptor_for(cluster: KerberizedHadoopCluster, user: str | None, api: str) -> YarnClusterDescriptor:
    return YarnClusterDescriptor(load_configuration(None, config_for(cluster, api)), hadoop_user=user)


def all_applications(hadoop_conf: HadoopConfiguration) -> dict[str, str]:
    """Every application YARN knows, in any state, with its user: the REST API as the operator itself (the test
    cluster has no YARN ACLs, so it sees everyone's)."""
    with ResourceManagerRest(hadoop_conf.resourcemanager_webapp_url(), auth=spnego_auth()) as rest:
        return {r.application_id: r.user for r in rest.applications((), STATES)}


def file_status(cluster: KerberizedHadoopCluster, path: str) -> dict[str, object] | None:
    """``path``'s WebHDFS FileStatus as the superuser; None when it does not exist."""
    status, body = cluster.webhdfs(path, "GETFILESTATUS")
    if status == 404:
        return None
    assert status == 200, body
    document: dict[str, object] = json.loads(body)["FileStatus"]
    return document


def test_an_impersonation_the_cluster_refuses_is_named_before_anything_is_deployed(
    kerberized_hadoop_cluster: KerberizedHadoopCluster,
    operator_login: dict[str, str],
    hadoop_conf: HadoopConfiguration,
    tmp_path: Path,
) -> None:
    cluster = kerberized_hadoop_cluster
    before = all_applications(hadoop_conf)

    # The operator may act as the group users only: carol is in none.
    config = load_configuration(None, config_for(cluster, "rpc"))
    descriptor = YarnClusterDescriptor(config, hadoop_user="carol")
    program = packaged_program(str(WAITS), ["1"])
    graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
    with pytest.raises(ProxyUserRefusedError) as refused:
        PipelineExecutor(descriptor).execute(graph, program, config)
    message = str(refused.value)
    assert "The NameNode at https://localhost:" in message, message
    # Hadoop names the real user by its short name: the one its hadoop.proxyuser.<name>.* keys take.
    assert "does not let operator act as Hadoop user carol (it says: User: operator is not allowed to impersonate carol)" in message
    assert "hadoop.proxyuser.operator.hosts" in message and "hadoop.proxyuser.operator.groups" in message, message
    assert "hadoop.proxyuser.operator.users (carol)" in message and "Nothing was deployed" in message, message
    with pytest.raises(ProxyUserRefusedError, match=r"hadoop\.proxyuser\.operator\.groups"):
        descriptor.list_clusters()

    # The ResourceManager decides by the same rules on its own, over REST (doAs) and RPC (a proxy UGI).
    rm_web = hadoop_conf.resourcemanager_webapp_url()
    with (
        ResourceManagerRest(rm_web, auth=spnego_auth(), do_as="carol") as rest,
        pytest.raises(ProxyUserRefusedError, match=r"^The ResourceManager at http://localhost:\d+ does not let operator"),
    ):
        rest.check_access()
    with JvmGateway(cluster.hadoop_conf_dir, java_options=cluster.client_java_options(), log_file=tmp_path / "gateway.log") as gateway:
        act_as(gateway, "carol", proxy=True)
        with (
            YarnClient(gateway, hadoop_conf.resourcemanager_address()) as yarn,
            pytest.raises(ProxyUserRefusedError, match=r"^The ResourceManager at .* hadoop\.proxyuser\.operator\.hosts") as by_rpc,
        ):
            yarn.check_access()
    # Over RPC Hadoop names the real user by its principal.
    assert f"User: {cluster.principal(OPERATOR_USER)} is not allowed to impersonate carol" in str(by_rpc.value), by_rpc.value

    # bob's ticket is no proxy user at all: acting as alice is refused, naming bob's settings.
    with pytest.MonkeyPatch.context() as patch:
        for key, value in cluster.kinit("bob", tmp_path / "bob.ccache").items():
            patch.setenv(key, value)
        bob_as_alice = descriptor_for(cluster, "alice", "rest")
        with pytest.raises(ProxyUserRefusedError, match=r"hadoop\.proxyuser\.bob\.hosts"):
            bob_as_alice.list_clusters()
        # Acting as the ticket's own user takes no rule: no impersonation is asked for.
        assert descriptor_for(cluster, "bob", "rest").list_clusters() == []

    # HADOOP_PROXY_USER, as Hadoop's clients and Flink's take it, for a client given no user (the CLI).
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HADOOP_PROXY_USER", "carol")
        with pytest.raises(ProxyUserRefusedError, match=r"does not let operator act as Hadoop user carol"):
            descriptor_for(cluster, None, "rpc").list_clusters()
        patch.setenv("HADOOP_PROXY_USER", "alice")
        assert descriptor_for(cluster, None, "rest").list_clusters() == []
        # The client JVM inherits the variable, and logs in as a proxy user of the ticket itself: acting from its real user.
        assert descriptor_for(cluster, None, "rpc").list_clusters() == []
        files = webhdfs_file_system(
            f"{hadoop_conf.default_fs}/user/alice/savepoints", load_configuration(None, config_for(cluster, "rest"))
        )
        assert files is not None and files.client.resolve("") == "/user/alice"

    # The delegation token a job of alice's runs on is alice's (WebHDFS records no real user in it), for YARN to renew.
    token = webhdfs_client(hadoop_conf, proxy_user="alice").delegation_token(token_renewer(hadoop_conf))
    owner, renewer, real = _identifier_users(token.identifier)
    assert (owner, renewer) == ("alice", "yarn"), (owner, renewer, real)

    assert all_applications(hadoop_conf) == before
    assert file_status(cluster, "/user/carol") is None


def _identifier_users(identifier: bytes) -> tuple[str, str, str]:
    """Owner, renewer and real user of an HDFS delegation token's identifier (Hadoop's
    ``AbstractDelegationTokenIdentifier``: a version byte, then three Texts; names this short have a one-byte length)."""
    users, pos = [], 1
    for _ in range(3):
        length = identifier[pos]
        users.append(identifier[pos + 1 : pos + 1 + length].decode())
        pos += 1 + length
    return users[0], users[1], users[2]


def _deploy(descriptor: YarnClusterDescriptor, args: list[str]) -> RestClusterClient:
    config = descriptor.config
    program = packaged_program(str(WAITS), args)
    graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
    client = PipelineExecutor(descriptor).execute(graph, program, config).cluster_client
    assert isinstance(client, RestClusterClient)
    return client


def _wait_for_end(hadoop_conf: HadoopConfiguration, application: str, timeout: float = 180.0) -> str:
    deadline = time.monotonic() + timeout
    with ResourceManagerRest(hadoop_conf.resourcemanager_webapp_url(), auth=spnego_auth()) as rest:
        while True:
            report = rest.report(application)
            if report.state in TERMINAL_STATES:
                return f"{report.state}/{report.final_status}"
            assert time.monotonic() < deadline, f"{application} still {report.state}"
            time.sleep(1)


def test_two_namespaces_users_deploy_list_and_kill_through_one_operator_ticket(
    kerberized_hadoop_cluster: KerberizedHadoopCluster,
    operator_login: dict[str, str],
    hadoop_conf: HadoopConfiguration,
    tmp_path: Path,
) -> None:
    cluster = kerberized_hadoop_cluster
    gate = tmp_path / "alice-may-finish"
    alice = descriptor_for(cluster, "alice", "rpc")
    bob = descriptor_for(cluster, "bob", "rest")
    alices = _deploy(alice, ["600", str(gate)])
    try:
        bobs = _deploy(bob, ["600"])
        try:
            users = all_applications(hadoop_conf)
            assert users[alices.cluster_id] == "alice" and users[bobs.cluster_id] == "bob", users

            # Each staging directory is its user's alone, and the operator's own identity cannot look inside.
            for user, client in (("alice", alices), ("bob", bobs)):
                staging = f"/user/{user}/{STAGING_ROOT}/{client.cluster_id}"
                status = file_status(cluster, staging)
                assert status is not None and (status["owner"], status["permission"]) == (user, "700"), status
                with pytest.raises(HdfsError, match="Permission denied"):
                    webhdfs_client(hadoop_conf).list(staging)

            # Each user's descriptor sees and kills its own application only.
            listed = {h.cluster_id: h for h in alice.list_clusters()}
            assert alices.cluster_id in listed and bobs.cluster_id not in listed, listed
            assert listed[alices.cluster_id].rest_token  # read from her staging directory, as alice
            assert [h.cluster_id for h in bob.list_clusters()] == [bobs.cluster_id]
            assert alice.retrieve(bobs.cluster_id) is None
            handle = bob.retrieve(bobs.cluster_id)
            assert handle is not None and handle.rest_token, handle
            with pytest.raises(YarnClientError, match=rf"{bobs.cluster_id} runs as Hadoop user bob, not alice: not killed"):
                alice.kill_cluster(bobs.cluster_id)
            assert all_applications(hadoop_conf)[bobs.cluster_id] == "bob"
            assert bob.retrieve(bobs.cluster_id) is not None

            bob.kill_cluster(bobs.cluster_id)
            assert _wait_for_end(hadoop_conf, bobs.cluster_id).startswith("KILLED")
            assert file_status(cluster, f"/user/bob/{STAGING_ROOT}/{bobs.cluster_id}") is None
            # An application YARN does not know (any more) is nobody's to refuse: nothing to kill, as before.
            bob.kill_cluster(bobs.cluster_id.rsplit("_", 1)[0] + "_9999")
        finally:
            bobs.close()

        gate.touch()
        assert _wait_for_end(hadoop_conf, alices.cluster_id) == "FINISHED/SUCCEEDED"
        # Her ApplicationMaster removed her staging directory with her delegation token.
        deadline = time.monotonic() + 30
        while file_status(cluster, f"/user/alice/{STAGING_ROOT}/{alices.cluster_id}") is not None:
            assert time.monotonic() < deadline, "alice's staging directory is still there"
            time.sleep(1)
    finally:
        gate.touch()
        alices.close()
