"""`jobcluster run -t yarn-per-job` logging in from a keytab (security.kerberos.login.keytab / .principal, issue 42
rows 3 and 5) on the Kerberized test cluster, with no ticket cache at all:

1. a keytab the login cannot use (keys the KDC no longer takes, no key of the principal) is refused with what to do,
   before anything is staged or submitted;
2. the JobManager's DelegationTokenManager, one round in a JVM of its own: tokens from the keytab;
3. the FlinkJob operator's own login (``--kerberos-principal``, ``--kerberos-keytab``): a new ticket from the keytab
   once the first has ended.

A job deployed from a keytab, which only its ApplicationMaster gets, is test_kerberos_long_job.py's (one job cluster
for both).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hdfs import TokenClient

from jobcluster.backends.yarn.delegation_tokens import DelegationTokenManager, TokenRenewal, token_storage
from jobcluster.backends.yarn.gateway import JvmGateway
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.kerberos import token_renewer
from jobcluster.backends.yarn.tokens import read_token_storage
from tests.infra.hadoop.secure_cluster import KerberizedHadoopCluster
from tests.integration.hadoop.test_kerberos_job_cluster import (
    WAITS,
    alice,  # noqa: F401 - fixtures of this module too
    applications,
    cli,
    cli_env,  # noqa: F401
    hadoop_conf,  # noqa: F401
    hdfs,  # noqa: F401
    staged,
)

pytestmark = [pytest.mark.hadoop, pytest.mark.kerberos]


def keytab_options(keytab: Path, principal: str) -> tuple[str, ...]:
    return ("-D", f"security.kerberos.login.keytab={keytab}", "-D", f"security.kerberos.login.principal={principal}")


def test_keytabs_the_login_cannot_use_are_refused_before_anything_is_deployed(
    kerberized_hadoop_cluster: KerberizedHadoopCluster,
    cli_env: dict[str, str],  # noqa: F811
    hadoop_conf: HadoopConfiguration,  # noqa: F811
    hdfs,  # type: ignore[no-untyped-def]  # noqa: F811
    tmp_path: Path,
) -> None:
    cluster = kerberized_hadoop_cluster
    env = {**cli_env, **cluster.no_ticket_env()}
    before = applications(hadoop_conf)
    run = ("run", "-t", "yarn-per-job", str(WAITS), "1")

    # Exported, then the principal's keys changed (a password change): the file is a keytab of carol, and stale.
    cluster.kdc.add_principal("carol")
    stale_keytab = cluster.kdc.export_keytab(tmp_path / "carol.keytab", ["carol"])
    cluster.kdc.rekey("carol")
    stale = cli(env, *run[:3], *keytab_options(stale_keytab, cluster.principal("carol")), *run[3:])
    assert stale.returncode == 1, stale.stderr
    assert f"the KDC refused the keys of {cluster.principal('carol')} in the keytab {stale_keytab}" in stale.stderr, stale.stderr
    assert "export a new keytab" in stale.stderr

    other = cli(env, *run[:3], *keytab_options(cluster.keytab("alice"), cluster.principal("bob")), *run[3:])
    assert other.returncode == 1, other.stderr
    assert f"holds no key of {cluster.principal('bob')} (it holds: {cluster.principal('alice')})" in other.stderr, other.stderr

    for result in (stale, other):
        assert "Created YARN application" not in result.stderr
    assert applications(hadoop_conf) == before
    assert staged(hdfs) == []


def test_the_token_manager_obtains_tokens_from_the_keytab_in_a_jvm_that_holds_no_ticket(
    kerberized_hadoop_cluster: KerberizedHadoopCluster, tmp_path: Path
) -> None:
    """The ApplicationMaster's DelegationTokenManager, one round in a JVM like the ApplicationMaster's (no ticket cache,
    the realm from krb5.conf): a token of alice from her keytab, renewable by the ResourceManager, which works
    for a client that has nothing else; and the cluster's renewal interval learned (30 minutes in the session's cluster)."""
    cluster = kerberized_hadoop_cluster
    site = HadoopConfiguration.load(cluster.hadoop_conf_dir)
    renewal = TokenRenewal(cluster.principal("alice"), cluster.keytab("alice"), token_renewer(site), 0.75, 60.0)
    handed: list[Any] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KRB5CCNAME", str(tmp_path / "no-cache"))
        patch.delenv("HADOOP_TOKEN_FILE_LOCATION", raising=False)
        gateway = JvmGateway(cluster.hadoop_conf_dir, java_options=cluster.kdc.java_options(), log_file=tmp_path / "gateway.log").start()
    try:
        manager = DelegationTokenManager(renewal, lambda: (gateway.jvm, gateway.gateway), handed.append)
        before = int(time.time() * 1000)
        dates = manager.obtain_and_distribute()
        after = int(time.time() * 1000)
        jvm = gateway.jvm
        assert not jvm.org.apache.hadoop.security.UserGroupInformation.getCurrentUser().hasKerberosCredentials()
        [credentials] = handed
        tokens = read_token_storage(token_storage(jvm, credentials))
        [token] = tokens.values()
        assert token.kind == "HDFS_DELEGATION_TOKEN"
        identifier = credentials.getAllTokens().iterator().next().decodeIdentifier()
        # the owner as the NameNode took it; the renewer as auth_to_local names rm/localhost
        assert (str(identifier.getOwner()), str(identifier.getRenewer())) == (cluster.principal("alice"), "yarn")
        # The tokens are due one renewal interval after their issue: 30 minutes, learned from the NameNode.
        interval = 30 * 60_000
        assert len(dates) == 1 and before + interval - 5_000 <= dates[0] <= after + interval + 5_000, (before, dates, after)
        # They work for a client that has nothing else: WebHDFS as alice with the token alone.
        client = TokenClient(";".join(site.webhdfs_urls()), token.url_string())
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("REQUESTS_CA_BUNDLE", str(cluster.ca_cert))  # the cluster's HTTPS, as requests finds a CA
            assert client.status("/user/alice")["owner"] == "alice"
    finally:
        gateway.close()


OPERATOR_RELOGIN = """
import json, subprocess, sys, time
from pathlib import Path

import gssapi

from jobcluster.backends.yarn.kerberos import check_ticket
from jobcluster.controller.main import kerberos_login

kerberos_login(sys.argv[1], Path(sys.argv[2]))
first = gssapi.Credentials(usage="initiate").lifetime
time.sleep(float(sys.argv[3]))
principal = check_ticket()  # what each deployment of the operator asks first
print(json.dumps({"first": first, "principal": principal, "after": gssapi.Credentials(usage="initiate").lifetime,
                  "klist": subprocess.run(["klist"], capture_output=True, text=True).stdout}))
"""


@pytest.mark.token_expiry  # a minute's wait: with the other waits in the Kubernetes stream, which starts this cluster too
def test_the_operators_ticket_is_obtained_again_from_its_keytab_once_it_has_ended(
    kerberized_hadoop_cluster: KerberizedHadoopCluster, tmp_path: Path
) -> None:
    """``jobcluster operator --kerberos-principal --kerberos-keytab``'s login, in a process of its own whose krb5.conf
    asks for tickets of one minute: once its ticket has ended, the check a deployment makes finds a new one in the same
    credential cache, obtained from the keytab by GSS-API itself (MIT's client keytab): the cache the YARN client JVMs
    of the next deployment read."""
    cluster = kerberized_hadoop_cluster
    krb5 = tmp_path / "krb5.conf"
    krb5.write_text(re.sub(r"ticket_lifetime = \S+", "ticket_lifetime = 1m", cluster.krb5_conf.read_text()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRB5")} | {"KRB5_CONFIG": str(krb5)}
    argv = [sys.executable, "-c", OPERATOR_RELOGIN, "operator", str(cluster.keytab("operator")), "65"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert 0 < seen["first"] <= 60, seen  # the short ticket this test asked for
    assert seen["principal"] == cluster.principal("operator"), seen
    assert seen["after"] > 30, f"no new ticket after the first ended: {seen}"
    assert seen["klist"].count("krbtgt/") == 1 and "jobcluster-krb5-" in seen["klist"], seen["klist"]
