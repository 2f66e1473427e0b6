"""`jobcluster run -t yarn-per-job` on the Kerberized test cluster: the client's ticket, HDFS delegation tokens in
the containers (issue 42, rows 2 and 5).

1. a login the cluster cannot take (no ticket, an expired one, one of a realm the cluster does not trust) is
   refused with what to run, before anything is staged or submitted;
2. a batch WordCount through YARN's Java client (``rpc``) stages over SPNEGO, and its ApplicationMaster and
   TaskExecutor containers, which have no ticket (``KRB5CCNAME`` points nowhere), read its input from and write its
   output to ``hdfs://`` with the client's delegation token alone;
3. through the ResourceManager's REST API (``rest``, SPNEGO): a detached job, ``list``, and ``list`` and ``cancel``
   through YARN's web proxy (SPNEGO too).

One Kerberized cluster for the session; alice (the client user) kinits once for the module.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobcluster.backends.yarn.errors import YarnClientError
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.kerberos import spnego_auth
from jobcluster.backends.yarn.rm_rest import ResourceManagerRest
from jobcluster.backends.yarn.staging import STAGING_ROOT, webhdfs_client
from tests.infra.hadoop.kdc import Kdc
from tests.infra.hadoop.secure_cluster import KerberizedHadoopCluster
from tests.integration.hadoop.test_wordcount_hdfs import count_words

pytestmark = [pytest.mark.hadoop, pytest.mark.kerberos]

REPO = Path(__file__).resolve().parents[3]
WORDCOUNT = REPO / "examples" / "wordcount.py"
WAITS = REPO / "tests" / "e2e" / "programs" / "waits.py"
JOB_TIMEOUT = 900.0
"""Seconds one CLI call may take; the first deployment of a session may pack and upload the environment."""
NO_CACHE = "/nonexistent/krb5cc"
"""The containers' KRB5CCNAME: a cache that is not there, so no process in them can hold a ticket."""
INPUT = b"Hello Kerberos, hello tokens\nno ticket in the containers, hello HDFS\n"


@pytest.fixture(scope="module")
def alice(kerberized_hadoop_cluster: KerberizedHadoopCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The client's environment: alice's ticket, the realm, the CA of the cluster's HTTPS (requests reads
    REQUESTS_CA_BUNDLE); also this process's while the module runs (the checks' own WebHDFS and REST clients)."""
    cluster = kerberized_hadoop_cluster
    login = cluster.kinit(ccache=tmp_path_factory.mktemp("alice") / "ccache")
    env = {**login, "REQUESTS_CA_BUNDLE": str(cluster.ca_cert)}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        yield env


@pytest.fixture(scope="module")
def cli_env(
    kerberized_hadoop_cluster: KerberizedHadoopCluster, alice: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")}
    return {
        **env,
        **alice,
        "HADOOP_CONF_DIR": str(kerberized_hadoop_cluster.hadoop_conf_dir),
        "JOBCLUSTER_HOME": str(tmp_path_factory.mktemp("home")),
    }


@pytest.fixture(scope="module")
def hadoop_conf(kerberized_hadoop_cluster: KerberizedHadoopCluster) -> HadoopConfiguration:
    return HadoopConfiguration.load(kerberized_hadoop_cluster.hadoop_conf_dir)


@pytest.fixture(scope="module")
def hdfs(hadoop_conf: HadoopConfiguration, alice: dict[str, str]):  # type: ignore[no-untyped-def]
    """WebHDFS as alice, over SPNEGO: jobcluster's own client."""
    return webhdfs_client(hadoop_conf)


def cli(env: dict[str, str], *args: str, timeout: float = JOB_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jobcluster", *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO)


def job_settings(alice: dict[str, str]) -> tuple[str, ...]:
    """The ApplicationMaster's Python reaches WebHDFS (HTTPS) to remove the staging directory: the same CA. The
    test's Python is on the node (this machine): nothing packed or shipped, which keeps the tests short (shipping
    over SPNEGO is staging like any other)."""
    return ("-D", f"containerized.master.env.REQUESTS_CA_BUNDLE={alice['REQUESTS_CA_BUNDLE']}", "-D", f"python.executable={sys.executable}")


def staged(hdfs) -> list[str]:  # type: ignore[no-untyped-def]
    root = f"/user/alice/{STAGING_ROOT}"
    return [n for n in (hdfs.list(root) if hdfs.status(root, strict=False) else []) if n.startswith("application_")]


def applications(hadoop_conf: HadoopConfiguration) -> list[str]:
    """Every jobcluster application YARN knows, in any state (the REST API over SPNEGO, as alice)."""
    with ResourceManagerRest(hadoop_conf.resourcemanager_webapp_url(), auth=spnego_auth()) as rest:
        states = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED")
        return sorted(r.application_id for r in rest.applications(["jobcluster"], states))


def application_id_in(text: str) -> str:
    match = re.search(r"application_\d+_\d+", text)
    assert match, f"no application id in:\n{text}"
    return match.group(0)


def test_logins_the_cluster_cannot_take_are_refused_before_anything_is_deployed(
    kerberized_hadoop_cluster: KerberizedHadoopCluster,
    cli_env: dict[str, str],
    hadoop_conf: HadoopConfiguration,
    hdfs,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    cluster = kerberized_hadoop_cluster
    before = applications(hadoop_conf)
    run = ("run", "-t", "yarn-per-job", str(WAITS), "1")

    no_ticket = cli({**cli_env, **cluster.no_ticket_env()}, *run)
    assert no_ticket.returncode == 1, no_ticket.stderr
    assert "no Kerberos ticket in " in no_ticket.stderr and "run kinit <principal>" in no_ticket.stderr, no_ticket.stderr
    assert "Created YARN application" not in no_ticket.stderr

    # A ticket that lived one second (kinit's own -l; the cluster's kinit takes minutes).
    expired_cache = tmp_path / "expired"
    subprocess.run(
        ["kinit", "-l", "1s", cluster.principal("alice")],
        input=cluster.password("alice"),
        env={**os.environ, **cluster.kdc.client_env(), "KRB5CCNAME": str(expired_cache)},
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    time.sleep(2)
    expired = cli({**cli_env, "KRB5CCNAME": str(expired_cache)}, *run)
    assert expired.returncode == 1, expired.stderr
    assert f"the Kerberos ticket in {expired_cache} has expired: run kinit" in expired.stderr, expired.stderr

    # A valid ticket of a realm the cluster does not trust: its own KDC, its own krb5.conf.
    other = Kdc(tmp_path / "other-kdc", krb5_conf=tmp_path / "other-krb5.conf", log_path=tmp_path / "other-kdc.log", realm="OTHER.TEST")
    other.start()
    try:
        other.add_principal("carol", password="carol-pw")
        foreign = cli({**cli_env, **other.kinit("carol", tmp_path / "carol", password="carol-pw")}, *run)
    finally:
        other.stop()
    assert foreign.returncode == 1, foreign.stderr
    assert "did not accept the client's Kerberos ticket (401)" in foreign.stderr, foreign.stderr
    assert "Created YARN application" not in foreign.stderr

    assert applications(hadoop_conf) == before
    assert staged(hdfs) == []


def test_wordcount_reads_and_writes_hdfs_with_delegation_tokens_only(
    kerberized_hadoop_cluster: KerberizedHadoopCluster,
    cli_env: dict[str, str],
    alice: dict[str, str],
    hdfs,  # type: ignore[no-untyped-def]
) -> None:
    cluster = kerberized_hadoop_cluster
    hdfs.write("/user/alice/wordcount-in/words.txt", data=INPUT, overwrite=True)
    fs = HadoopConfiguration.load(cluster.hadoop_conf_dir).default_fs
    no_ticket = ("-D", f"containerized.master.env.KRB5CCNAME={NO_CACHE}", "-D", f"containerized.taskmanager.env.KRB5CCNAME={NO_CACHE}")
    result = cli(
        cli_env,
        *("run", "-t", "yarn-per-job", "-p", "2", "-D", "jobcluster.yarn.resourcemanager.api=rpc", *no_ticket, *job_settings(alice)),
        *(str(WORDCOUNT), "--input", f"{fs}/user/alice/wordcount-in", "--output", f"{fs}/user/alice/wordcount-out"),
    )
    assert result.returncode == 0, result.stderr
    application = application_id_in(result.stderr)
    assert "Obtained an HDFS delegation token for" in result.stderr and "(renewer rm/localhost@JOBCLUSTER.TEST)" in result.stderr
    assert f"YARN application {application} FINISHED with final status SUCCEEDED" in result.stderr, result.stderr

    # Counted by Spark's executors from hdfs:// and written back there, as alice.
    parts = [n for n in hdfs.list("/user/alice/wordcount-out") if n.startswith("part-")]
    counts: Counter[str] = Counter()
    for name in parts:
        with hdfs.read(f"/user/alice/wordcount-out/{name}") as reader:
            for line in reader.read().decode().splitlines():
                word, count = line.rsplit("\t", 1)
                counts[word] = int(count)
    assert counts == count_words(INPUT)
    assert hdfs.status("/user/alice/wordcount-out")["owner"] == "alice"
    # The ApplicationMaster removed the staging directory with the token too.
    assert staged(hdfs) == []

    # Both containers ran with no ticket to be had, and with the tokens YARN gave them.
    scripts = sorted((cluster.log_dir / "userlogs" / application).glob("*/launch_container.sh"))
    assert len(scripts) >= 2, scripts
    for script in scripts:
        text = script.read_text()
        assert f'export KRB5CCNAME="{NO_CACHE}"' in text, script
        assert "HADOOP_TOKEN_FILE_LOCATION=" in text, script


def test_rest_api_detached_job_list_and_cancel(
    cli_env: dict[str, str],
    alice: dict[str, str],
    hadoop_conf: HadoopConfiguration,
    hdfs,  # type: ignore[no-untyped-def]
) -> None:
    rest = ("-t", "yarn-per-job", "-D", "jobcluster.yarn.resourcemanager.api=rest")
    result = cli(cli_env, "run", *rest, "-d", *job_settings(alice), str(WAITS), "300")
    assert result.returncode == 0, result.stderr
    application = application_id_in(result.stderr)
    job_id = re.search(r"JobID ([0-9a-f]{32})", result.stdout)
    assert job_id, result.stdout

    # the command the run printed to follow the job, as a user would paste it: it carries the REST API option
    follow = re.search(r"follow it:\s+jobcluster (list .*?)\s+\(or GET", result.stdout)
    assert follow and "-D jobcluster.yarn.resourcemanager.api=rest" in follow.group(1), result.stdout
    listed = cli(cli_env, *shlex.split(follow.group(1)))
    assert listed.returncode == 0 and job_id.group(1) in listed.stdout and application in listed.stdout, listed.stderr

    # Through YARN's web proxy, which asks for SPNEGO as the rest of the ResourceManager's web server does.
    proxied = (*rest, "-D", "jobcluster.yarn.jobmanager.rest-access=web-proxy")
    listed = cli(cli_env, "list", *proxied)
    assert listed.returncode == 0 and f"/proxy/{application}" in listed.stdout, listed.stderr
    assert "UNREACHABLE" not in listed.stdout, listed.stdout

    cancelled = cli(cli_env, "cancel", job_id.group(1), *proxied)
    assert cancelled.returncode == 0, cancelled.stderr
    deadline = time.monotonic() + 60
    while application in applications_active(hadoop_conf) and time.monotonic() < deadline:
        time.sleep(1)
    assert application not in applications_active(hadoop_conf)
    deadline = time.monotonic() + 30
    while staged(hdfs) and time.monotonic() < deadline:
        time.sleep(1)
    assert staged(hdfs) == []


def applications_active(hadoop_conf: HadoopConfiguration) -> list[str]:
    with ResourceManagerRest(hadoop_conf.resourcemanager_webapp_url(), auth=spnego_auth()) as rest:
        return [r.application_id for r in rest.applications(["jobcluster"])]


def test_rest_api_by_a_name_without_an_http_principal_is_refused_saying_which_principal_spnego_asked_for(
    hadoop_conf: HadoopConfiguration, alice: dict[str, str]
) -> None:
    """The ResourceManager's web port by its IP address: the KDC has no HTTP/127.0.0.1 (the test cluster's is
    HTTP/localhost), so SPNEGO gets no ticket and the answer stays 401. The error names the principal asked for,
    the ticket cache and what to change; by its host name the same ticket is taken."""
    by_name = hadoop_conf.resourcemanager_webapp_url()
    assert "//localhost:" in by_name, by_name
    by_address = by_name.replace("//localhost:", "//127.0.0.1:")
    with ResourceManagerRest(by_address, auth=spnego_auth()) as rest, pytest.raises(YarnClientError) as refused:
        rest.applications(["jobcluster"])
    message = str(refused.value)
    assert "answered 401: the server did not accept SPNEGO" in message, message
    assert "HTTP/127.0.0.1" in message and alice["KRB5CCNAME"] in message, message
    with ResourceManagerRest(by_name, auth=spnego_auth()) as rest:
        assert isinstance(rest.applications(["jobcluster"]), list)
