"""Smoke tests of the Kerberized test cluster: security is really on, and a ticket really opens it.

1. HDFS's RPC refuses a client without a ticket and serves one with a ticket, as its principal's user;
2. WebHDFS (HTTPS) and the ResourceManager's REST API refuse a request without SPNEGO, and
   simple authentication's ``user.name`` with it, and answer one with SPNEGO;
3. a YARN application submitted with a ticket runs to completion as that user;
4. HDFS delegation tokens live as the cluster's settings say, not Hadoop's defaults.

One cluster for the session (``kerberized_hadoop_cluster``); each test kinits into a cache of its own.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobcluster.backends.yarn.gateway import JvmGateway
from tests.infra.hadoop import shell_am
from tests.infra.hadoop.cluster import FS_SHELL
from tests.infra.hadoop.secure_cluster import KerberizedHadoopCluster, curl
from tests.infra.hadoop.secureconf import USERS_GROUP

pytestmark = [pytest.mark.hadoop, pytest.mark.kerberos]

REPO = Path(__file__).resolve().parents[3]
GET_GROUPS = "org.apache.hadoop.hdfs.tools.GetGroups"
"""``hdfs groups``: the groups the NameNode gives users."""
APP_TIMEOUT = 180.0
"""Seconds from submission to a terminal state; a healthy run takes ~10 s."""


@pytest.fixture
def alice(kerberized_hadoop_cluster: KerberizedHadoopCluster, tmp_path: Path) -> dict[str, str]:
    """A ticket of the client user (alice) in a cache of this test's own: its client environment."""
    return kerberized_hadoop_cluster.kinit(ccache=tmp_path / "alice.ccache")


def test_hdfs_rpc_needs_a_ticket(kerberized_hadoop_cluster: KerberizedHadoopCluster, alice: dict[str, str]) -> None:
    cluster = kerberized_hadoop_cluster

    refused = cluster.run_tool(FS_SHELL, "-ls", "/", env=cluster.no_ticket_env())
    # Hadoop 3.3's SASL client offers no mechanism at all without a TGT (nor a token), before any GSS call.
    assert refused.returncode != 0
    assert "Client cannot authenticate via:[TOKEN, KERBEROS]" in refused.stderr, refused.stderr[-3000:]

    touched = cluster.run_tool(FS_SHELL, "-touchz", "/user/alice/by-kerberos", env=alice)
    assert touched.returncode == 0, touched.stderr[-3000:]
    listed = cluster.run_tool(FS_SHELL, "-ls", "/user/alice", env=alice)
    assert listed.returncode == 0, listed.stderr[-3000:]
    # The file's owner is the principal's short name (auth_to_local), not this process's OS user.
    line = next(row for row in listed.stdout.splitlines() if row.endswith("/user/alice/by-kerberos"))
    assert line.split()[2] == "alice", listed.stdout
    # The NameNode's idea of the users' groups (what proxy-user rules by group match): the static ones.
    groups = cluster.run_tool(GET_GROUPS, "alice", "bob", env=alice)
    assert groups.returncode == 0, groups.stderr[-3000:]
    assert groups.stdout.split("\n")[:2] == [f"alice : {USERS_GROUP}", f"bob : {USERS_GROUP}"]


def test_webhdfs_needs_spnego(kerberized_hadoop_cluster: KerberizedHadoopCluster, alice: dict[str, str]) -> None:
    cluster = kerberized_hadoop_cluster
    url = f"{cluster.webhdfs_url}/webhdfs/v1/user?op=LISTSTATUS"
    assert url.startswith("https://localhost:")

    assert curl(url, None, negotiate=False, cacert=cluster.ca_cert)[0] == 401
    assert curl(f"{url}&user.name=alice", None, negotiate=False, cacert=cluster.ca_cert)[0] == 401
    assert curl(url, cluster.no_ticket_env(), cacert=cluster.ca_cert)[0] == 401

    status, body = curl(url, alice, cacert=cluster.ca_cert)
    assert status == 200, body
    homes = {entry["pathSuffix"]: entry["owner"] for entry in json.loads(body)["FileStatuses"]["FileStatus"]}
    assert homes == {user: user for user in cluster.settings.users}  # alice, bob, and the session's operator


def test_the_second_user_logs_in_from_its_keytab(kerberized_hadoop_cluster: KerberizedHadoopCluster, tmp_path: Path) -> None:
    cluster = kerberized_hadoop_cluster
    bob = cluster.kinit("bob", tmp_path / "bob.ccache", use_keytab=True)

    status, body = cluster.webhdfs("/", "GETHOMEDIRECTORY", bob)

    assert status == 200, body
    assert json.loads(body) == {"Path": "/user/bob"}


def test_resourcemanager_rest_needs_spnego(kerberized_hadoop_cluster: KerberizedHadoopCluster, alice: dict[str, str]) -> None:
    cluster = kerberized_hadoop_cluster
    url = f"{cluster.resourcemanager_web_url}/ws/v1/cluster/info"

    assert curl(url, None, negotiate=False)[0] == 401
    assert curl(f"{url}?user.name=alice", None, negotiate=False)[0] == 401

    status, body = curl(url, alice)
    assert status == 200, body
    assert json.loads(body)["clusterInfo"]["state"] == "STARTED"


@pytest.fixture
def alices_yarn_jvm(kerberized_hadoop_cluster: KerberizedHadoopCluster, alice: dict[str, str], tmp_path: Path) -> Iterator[JvmGateway]:
    """A py4j JVM on pyspark's Hadoop client jars, logged in from alice's ticket cache."""
    cluster = kerberized_hadoop_cluster
    gateway = JvmGateway(cluster.hadoop_conf_dir, java_options=cluster.client_java_options(), log_file=tmp_path / "gateway.log")
    # The JVM takes the ticket cache from its environment (KRB5CCNAME), as any Hadoop client does.
    with pytest.MonkeyPatch.context() as env:
        for key, value in alice.items():
            env.setenv(key, value)
        gateway.start()
    try:
        yield gateway
    finally:
        gateway.close()


def test_yarn_application_runs_as_the_ticket_holder(
    kerberized_hadoop_cluster: KerberizedHadoopCluster, alices_yarn_jvm: JvmGateway, tmp_path: Path
) -> None:
    cluster = kerberized_hadoop_cluster
    jvm = alices_yarn_jvm.jvm
    ugi = jvm.org.apache.hadoop.security.UserGroupInformation.getCurrentUser()
    assert ugi.getUserName() == cluster.principal("alice")
    assert ugi.getAuthenticationMethod().toString() == "KERBEROS"

    yarn = jvm.org.apache.hadoop.yarn.client.api.YarnClient.createYarnClient()
    yarn.init(jvm.org.apache.hadoop.yarn.conf.YarnConfiguration())
    yarn.start()
    try:
        marker = tmp_path / "MARKER"
        app_id = _submit_shell_am(alices_yarn_jvm, yarn, cluster, f"echo ok > {marker}")
        report = _wait_for_end(yarn, app_id, cluster)
    finally:
        yarn.stop()

    outcome = (report.getYarnApplicationState().toString(), report.getFinalApplicationStatus().toString())
    assert outcome == ("FINISHED", "SUCCEEDED"), f"{app_id}: {outcome}: {report.getDiagnostics()}\n{_am_logs(cluster, str(app_id))}"
    assert report.getUser() == "alice"
    assert marker.read_text() == "ok\n"


def _submit_shell_am(gateway: JvmGateway, yarn, cluster: KerberizedHadoopCluster, shell: str):
    """Submit an application whose ApplicationMaster (shell_am.py) runs ``shell``; its ApplicationId."""
    records = gateway.jvm.org.apache.hadoop.yarn.api.records
    app = yarn.createApplication()
    ctx = app.getApplicationSubmissionContext()
    ctx.setApplicationName("jobcluster-kerberos-smoke")
    ctx.setApplicationType("jobcluster-test")
    ctx.setQueue("default")
    ctx.setMaxAppAttempts(1)
    ctx.setResource(records.Resource.newInstance(512, 1))
    # bash -c "..." runs it (no escaping): no double quotes; shlex.quote uses single ones.
    command = f"{sys.executable} {shell_am.__file__} -- /bin/sh -c {shlex.quote(shell)} 1><LOG_DIR>/am.stdout 2><LOG_DIR>/am.stderr"
    env = {"HADOOP_CONF_DIR": str(cluster.hadoop_conf_dir), "PYTHONPATH": f"{REPO / 'operator'}:{REPO}"}
    ctx.setAMContainerSpec(records.ContainerLaunchContext.newInstance({}, env, [command], None, None, None))
    yarn.submitApplication(ctx)
    return ctx.getApplicationId()


def _wait_for_end(yarn, app_id, cluster: KerberizedHadoopCluster):
    deadline = time.monotonic() + APP_TIMEOUT
    while True:
        report = yarn.getApplicationReport(app_id)
        state = report.getYarnApplicationState().toString()
        if state in ("FINISHED", "FAILED", "KILLED"):
            return report
        if time.monotonic() > deadline:
            yarn.killApplication(app_id)
            pytest.fail(f"{app_id} still {state} after {APP_TIMEOUT:.0f} s\n{_am_logs(cluster, str(app_id))}")
        time.sleep(0.5)


def _am_logs(cluster: KerberizedHadoopCluster, app_id: str) -> str:
    out = [f"--- {f.name}\n{f.read_text(errors='replace')[-3000:]}" for f in sorted((cluster.log_dir / "userlogs" / app_id).glob("*/*"))]
    return "\n".join(out) or f"(no container logs under {cluster.log_dir / 'userlogs' / app_id})"


def test_delegation_tokens_live_as_configured(kerberized_hadoop_cluster: KerberizedHadoopCluster, alice: dict[str, str]) -> None:
    cluster = kerberized_hadoop_cluster
    status, body = cluster.webhdfs("/", "GETDELEGATIONTOKEN", alice, params={"renewer": "alice"})
    assert status == 200, body
    token = json.loads(body)["Token"]["urlString"]

    before_ms = time.time() * 1000
    status, body = cluster.webhdfs("/", "RENEWDELEGATIONTOKEN", alice, method="PUT", params={"token": token})
    assert status == 200, body
    expires_in_min = (json.loads(body)["long"] - before_ms) / 60_000
    assert expires_in_min == pytest.approx(cluster.settings.token_renew_interval_min, abs=1)

    status, body = cluster.webhdfs("/", "CANCELDELEGATIONTOKEN", alice, method="PUT", params={"token": token})
    assert status == 200, body
