"""Hadoop proxy users without a cluster: how a refusal is recognised and explained, which user is impersonated,
what each client sends, and which applications a descriptor acting as a user counts as its own. The real
impersonation (the NameNode's and the ResourceManager's rules): tests/integration/hadoop/test_kerberos_proxy_users.py."""

from __future__ import annotations

import pytest
import requests

from jobcluster.backends.yarn.descriptor import YarnClusterDescriptor
from jobcluster.backends.yarn.kerberos import KerberosLoginError, SpnegoWebHdfsClient
from jobcluster.backends.yarn.proxy_users import (
    ProxyUserRefusedError,
    proxy_user_of,
    proxy_user_to_act_as,
    refusal_message,
    refused,
    short_name,
)
from jobcluster.backends.yarn.rm_rest import report_of
from jobcluster.backends.yarn.yarn_client import ApplicationReport
from jobcluster.config.loader import load_configuration
from tests.unit.test_yarn_hadoop_conf import conf

# Hadoop's refusal as the test cluster's NameNode (WebHDFS: the real user by its short name) and ResourceManager (RPC:
# by its principal, inside Java's exception text) gave it when the operator asked to act as carol.
NAMENODE_REFUSAL = "User: operator is not allowed to impersonate carol"
RPC_REFUSAL = (
    "cannot reach: org.apache.hadoop.security.authorize.AuthorizationException: "
    "User: operator@JOBCLUSTER.TEST is not allowed to impersonate carol"
)


def test_hadoops_refusal_to_impersonate_becomes_the_settings_to_add():
    error = refused(NAMENODE_REFUSAL, "The NameNode at https://nn:9871")

    assert isinstance(error, ProxyUserRefusedError)
    message = str(error)
    assert message.startswith("The NameNode at https://nn:9871 does not let operator act as Hadoop user carol (it says: User:")
    for key in ("hadoop.proxyuser.operator.hosts", "hadoop.proxyuser.operator.groups", "hadoop.proxyuser.operator.users (carol)"):
        assert key in message
    assert "-refreshSuperUserGroupsConfiguration" in message and message.endswith("Nothing was deployed")


def test_a_refusal_naming_a_principal_names_the_settings_of_its_short_name():
    error = refused(RPC_REFUSAL, "The ResourceManager at rm:8032")

    assert error is not None and "hadoop.proxyuser.operator.groups" in str(error)
    assert "does not let operator@JOBCLUSTER.TEST act as Hadoop user carol" in str(error)
    assert "hadoop.proxyuser.op.hosts" in refusal_message("op/gw.example.com@EXAMPLE.COM", "carol", "x")


@pytest.mark.parametrize(
    "text",
    ["Permission denied: user=alice, access=WRITE", "User: operator is not allowed to do that", "", "impersonate"],
)
def test_other_answers_are_no_refusal_to_impersonate(text):
    assert refused(text, "The NameNode") is None


def test_short_names_follow_hadoops_default_rule():
    assert short_name("operator@EXAMPLE.COM") == short_name("operator/gw.example.com@EXAMPLE.COM") == short_name("operator") == "operator"


def test_acting_as_the_tickets_own_user_needs_no_impersonation():
    assert proxy_user_of("alice", "operator@EXAMPLE.COM") == "alice"
    assert proxy_user_of("operator", "operator@EXAMPLE.COM") is None
    assert proxy_user_of("operator", "operator/gw.example.com@EXAMPLE.COM") is None


def test_webhdfs_acts_as_the_proxy_user_on_every_request():
    auth = requests.auth.HTTPBasicAuth("unused", "unused")  # SPNEGO needs a ticket; what is sent does not

    acting = SpnegoWebHdfsClient("https://nn:9871", 5.0, auth=auth, proxy_user="alice")
    itself = SpnegoWebHdfsClient("https://nn:9871", 5.0, auth=auth)

    assert acting.doas() == {"doas": "alice"}
    assert acting._proxy == "alice"  # the hdfs package adds doas to each of its operations from it
    assert itself.doas() == {} and itself._proxy is None


def test_the_rest_apis_reports_carry_the_applications_user():
    report = report_of({"id": "application_1_0001", "user": "bob", "state": "RUNNING"})

    assert report.user == "bob"
    assert report_of({"id": "application_1_0002"}).user == ""


def _report(user: str) -> ApplicationReport:
    return ApplicationReport("application_1_0001", "job", "jobcluster", "default", "RUNNING", "UNDEFINED", "", "h", 1, "", user=user)


def test_a_descriptor_acting_as_a_user_counts_only_that_users_applications_as_its_own(tmp_path):
    config = load_configuration(None, {"env.hadoop.conf.dir": str(tmp_path)})

    alice = YarnClusterDescriptor(config, hadoop_user="alice")
    itself = YarnClusterDescriptor(config)

    assert alice._mine(_report("alice")) and not alice._mine(_report("bob"))
    assert itself._mine(_report("bob"))  # no user given: YARN's view, unfiltered


def test_only_a_kerberized_cluster_impersonates_and_only_with_a_ticket(tmp_path, monkeypatch):
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'no-such-cache'}")
    (tmp_path / "plain").mkdir()
    (tmp_path / "kerberized").mkdir()
    plain = conf(tmp_path / "plain", core={"fs.defaultFS": "hdfs://nn:8020"})
    kerberized = conf(tmp_path / "kerberized", core={"fs.defaultFS": "hdfs://nn:8020", "hadoop.security.authentication": "kerberos"})
    config = load_configuration(None, {"env.hadoop.conf.dir": str(kerberized.conf_dir)})
    descriptor = YarnClusterDescriptor(config, hadoop_user="team-a")

    assert descriptor._proxy_user(plain) is None  # without Kerberos the user is named (user.name)
    with pytest.raises(KerberosLoginError, match=r"no Kerberos ticket in FILE:.*no-such-cache: run kinit"):
        descriptor._proxy_user(kerberized)
    # Before anything is reached: the ticket is what the whole deployment rests on.
    with pytest.raises(KerberosLoginError, match=r"no Kerberos ticket"):
        descriptor.list_clusters()


def test_hadoop_proxy_user_names_the_user_when_none_is_given(tmp_path):
    no_ticket = {"KRB5CCNAME": f"FILE:{tmp_path / 'no-such-cache'}"}

    assert proxy_user_to_act_as(None, no_ticket) is None  # nothing to act as: no ticket is asked for here
    with pytest.raises(KerberosLoginError, match=r"no Kerberos ticket"):
        proxy_user_to_act_as(None, {**no_ticket, "HADOOP_PROXY_USER": "alice"})
    with pytest.raises(KerberosLoginError, match=r"no Kerberos ticket"):
        proxy_user_to_act_as("bob", no_ticket)
