"""The YARN client side against the real ResourceManager: create, check, submit with staged LocalResources,
follow the report, kill, and clean up on failure.

The ApplicationMaster here is the test cluster's minimal one (tests/infra/hadoop/shell_am.py: register, run
a command, unregister), shipped as a staged file; the command runs the Python environment shipped as a
PUBLIC archive. So these tests prove what the real entrypoint will rely on: staged files and the packed
environment are localized into the container, and the application's states are seen as they happen.
"""

from __future__ import annotations

import re
import shlex
import shutil
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobcluster.backends.yarn import pyenv
from jobcluster.backends.yarn.container_requests import ContainerResource
from jobcluster.backends.yarn.driver import without_amrm_token
from jobcluster.backends.yarn.errors import YarnClientError
from jobcluster.backends.yarn.gateway import JvmGateway
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.local_resources import LocalResourceVisibility
from jobcluster.backends.yarn.options import yarn_options
from jobcluster.backends.yarn.staging import HdfsPaths, StagingDirectory, webhdfs_client
from jobcluster.backends.yarn.submission import submit_application_master
from jobcluster.backends.yarn.tokens import AMRM_TOKEN, HDFS_DELEGATION_TOKEN
from jobcluster.backends.yarn.validation import check_cluster_specification
from jobcluster.backends.yarn.yarn_client import ApplicationMasterSpec, ApplicationReport, NewApplication, YarnClient
from jobcluster.client.descriptor import ClusterSpecification
from jobcluster.config.configuration import Configuration
from tests.infra.hadoop import shell_am
from tests.infra.hadoop.cluster import HadoopCluster
from tests.unit.test_yarn_pyenv import make_venv

pytestmark = pytest.mark.hadoop

APP_TIMEOUT = 180.0
"""Seconds for an application to get where a test waits for it; a healthy run takes ~10 s."""

TEST_TYPE = "jobcluster-test"


@pytest.fixture(scope="module")
def hadoop_conf(hadoop_cluster: HadoopCluster) -> HadoopConfiguration:
    return HadoopConfiguration.load(hadoop_cluster.hadoop_conf_dir)


@pytest.fixture(scope="module")
def paths(hadoop_conf: HadoopConfiguration) -> HdfsPaths:
    return HdfsPaths(webhdfs_client(hadoop_conf, timeout=30), hadoop_conf.default_fs)


@pytest.fixture(scope="module")
def yarn(yarn_jvm: JvmGateway, hadoop_conf: HadoopConfiguration) -> Iterator[YarnClient]:
    with YarnClient(yarn_jvm, hadoop_conf.resourcemanager_address()) as client:
        yield client


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory, paths: HdfsPaths) -> pyenv.ShippedEnvironment:
    """A small packed venv on HDFS in its parts (the environment, jobcluster), as the client ships its own."""
    tmp = tmp_path_factory.mktemp("pyenv")
    packed = pyenv.pack_environment(make_venv(tmp / "venv"), tmp / "cache")
    return pyenv.ship_environment(paths, paths.staging_base(None), packed)


@pytest.fixture
def no_leftovers(yarn: YarnClient, paths: HdfsPaths) -> Iterator[None]:
    """After the test: no application of the test type still active, no staging directory left."""
    yield
    active = [r.application_id for r in yarn.applications([TEST_TYPE])]
    for application_id in active:
        yarn.kill(application_id)
    root = f"{paths.staging_base(None)}/.jobcluster"
    staged = [
        name for name in (paths.client.list(root) if paths.client.status(root, strict=False) else []) if name.startswith("application_")
    ]
    assert active == [], f"applications left active: {active}"
    assert staged == [], f"staging directories left: {staged}"


def shell_am_spec(
    hadoop_cluster: HadoopCluster, staging: StagingDirectory, environment, command: str, extra_resources=(), **overrides
) -> ApplicationMasterSpec:
    """The minimal AM, staged as a file, running ``command`` (a shell line) between register and unregister."""
    am = staging.upload(shell_am.__file__, key="shell_am.py")
    options = yarn_options(Configuration({"yarn.application.type": TEST_TYPE, "yarn.tags": "Smoke"}), "jobcluster-client-test", "ab" * 16)
    fields = {
        "name": options.application_name,
        "application_type": options.application_type,
        "resource": ContainerResource(512, options.am_vcores),
        # The NodeManager runs this with bash -c and no escaping: no double quotes (shlex.quote uses single ones).
        "command": f"{sys.executable} shell_am.py --timeout 150 -- /bin/sh -c {shlex.quote(command)} 1><LOG_DIR>/am.out 2><LOG_DIR>/am.err",
        "environment": {"HADOOP_CONF_DIR": str(hadoop_cluster.hadoop_conf_dir)},
        "local_resources": (am, *environment.resources, *extra_resources),
        "queue": options.queue,
        "tags": options.tags,
        "attempts": options.attempts,
    }
    fields.update(overrides)
    return ApplicationMasterSpec(**fields)


def am_logs(cluster: HadoopCluster, application_id: str) -> str:
    out = []
    for f in sorted((cluster.log_dir / "userlogs" / application_id).glob("*/*")):
        out.append(f"--- {f.parent.name}/{f.name}\n{f.read_text(errors='replace')[-3000:]}")
    return "\n".join(out) or "(no container logs)"


def test_new_application_and_what_the_resourcemanager_reports(hadoop_cluster: HadoopCluster, yarn: YarnClient) -> None:
    application = yarn.create_application()

    assert re.fullmatch(r"application_\d+_\d{4,}", application.application_id)
    node = hadoop_cluster.resources
    assert application.maximum == ContainerResource(node.memory_mb, node.vcores)
    cluster = yarn.cluster_resources(application.maximum)
    assert [(n.memory_mib, n.vcores) for n in cluster.nodes] == [(node.memory_mb, node.vcores)]
    assert "default" in cluster.queues
    assert cluster.minimum_allocation_mb == 256

    # The shipped sizes fit this cluster; only the JobManager's 1600 MB is off the 256 MB grid.
    result = check_cluster_specification(
        ClusterSpecification(1600, 2560, 2), am_vcores=1, task_manager_vcores=2, queue="default", cluster=cluster
    )
    assert result.warnings == []
    assert len(result.notes) == 1


def test_application_master_with_staged_files_and_the_shipped_environment_finishes(
    hadoop_cluster: HadoopCluster, yarn: YarnClient, paths: HdfsPaths, environment, no_leftovers: None
) -> None:
    assert {r.visibility for r in environment.resources} == {LocalResourceVisibility.PUBLIC}
    probe = (
        "import sys, jobcluster, numpyish\n"
        "assert numpyish.VALUE == 42\n"
        "assert '/python-jobcluster/jobcluster/' in jobcluster.__file__, jobcluster.__file__\n"
        "print('shipped python', sys.version.split()[0], jobcluster.__file__)\n"
    )
    states: list[str] = []

    def build(application: NewApplication, staging: StagingDirectory) -> ApplicationMasterSpec:
        script = staging.write("probe.py", probe.encode())
        return shell_am_spec(
            hadoop_cluster, staging, environment, "./environment/bin/python probe.py && sleep 1", extra_resources=(script,)
        )

    submitted = submit_application_master(
        yarn,
        paths,
        None,
        build,
        until=lambda r: r.is_terminal,
        on_change=lambda r: states.append(r.state),
        timeout=APP_TIMEOUT,
    )
    report = submitted.report
    try:
        assert (report.state, report.final_status) == ("FINISHED", "SUCCEEDED"), (
            f"{report}\n{am_logs(hadoop_cluster, report.application_id)}"
        )
        assert states[-1] == "FINISHED"
        assert "RUNNING" in states and "ACCEPTED" in states
        assert states.index("ACCEPTED") < states.index("RUNNING") < states.index("FINISHED")
        assert report.name == "jobcluster-client-test"
        assert report.application_type == TEST_TYPE
        assert report.queue == "default"
        assert report.tags == tuple(sorted(("smoke", "jobcluster-job-id:" + "ab" * 16)))
        out = next((hadoop_cluster.log_dir / "userlogs" / report.application_id).glob("*/am.out")).read_text()
        assert "shipped python" in out and "/python-jobcluster/jobcluster/" in out  # the jobcluster part, linked beside
    finally:
        submitted.staging.remove()  # the ApplicationMaster's job in the real flow


def test_kill_a_running_application(
    hadoop_cluster: HadoopCluster, yarn: YarnClient, paths: HdfsPaths, environment, no_leftovers: None
) -> None:
    submitted = submit_application_master(
        yarn,
        paths,
        None,
        lambda app, staging: shell_am_spec(hadoop_cluster, staging, environment, "sleep 120"),
        timeout=APP_TIMEOUT,
    )
    try:
        assert submitted.report.state == "RUNNING"
        assert submitted.report.host  # the AM registered

        yarn.kill(submitted.report.application_id)

        report = yarn.follow(submitted.report.application_id, timeout=60)
        assert (report.state, report.final_status) == ("KILLED", "KILLED")
    finally:
        submitted.staging.remove()


def test_a_failing_deployment_is_killed_and_unstaged(
    hadoop_cluster: HadoopCluster, yarn: YarnClient, paths: HdfsPaths, environment, no_leftovers: None
) -> None:
    seen: dict[str, StagingDirectory] = {}

    def build(application: NewApplication, staging: StagingDirectory) -> ApplicationMasterSpec:
        seen["staging"] = staging
        return shell_am_spec(hadoop_cluster, staging, environment, "true", queue="no-such-queue")

    # The CapacityScheduler refuses an unknown queue at submission; YARN's message names it.
    with pytest.raises(YarnClientError, match=r"cannot submit application_\d+_\d+: .*unknown queue: no-such-queue"):
        submit_application_master(yarn, paths, None, build, timeout=APP_TIMEOUT)

    assert not seen["staging"].exists()
    assert seen["staging"].application_id not in [r.application_id for r in yarn.applications([TEST_TYPE])]


def test_an_interrupted_deployment_is_killed_and_unstaged(
    hadoop_cluster: HadoopCluster, yarn: YarnClient, paths: HdfsPaths, environment, no_leftovers: None
) -> None:
    seen: dict[str, str] = {}

    def interrupt(report: ApplicationReport) -> None:
        seen["id"] = report.application_id
        if report.state == "ACCEPTED":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        submit_application_master(
            yarn,
            paths,
            None,
            lambda app, staging: shell_am_spec(hadoop_cluster, staging, environment, "sleep 120"),
            on_change=interrupt,
            timeout=APP_TIMEOUT,
        )

    assert yarn.follow(seen["id"], timeout=60).state == "KILLED"


def test_an_unreachable_resourcemanager_is_a_clear_error_within_30_s(hadoop_cluster: HadoopCluster, tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    shutil.copytree(hadoop_cluster.hadoop_conf_dir, conf_dir)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"  # closed below: nothing listens there
    yarn_site = conf_dir / "yarn-site.xml"
    yarn_site.write_text(yarn_site.read_text().replace(hadoop_cluster.resourcemanager_address, dead))
    conf = HadoopConfiguration.load(conf_dir)
    assert conf.resourcemanager_address() == dead

    with JvmGateway(conf_dir, log_file=tmp_path / "gateway.log") as gateway:
        started = time.monotonic()
        with (
            pytest.raises(YarnClientError, match=rf"ResourceManager at {re.escape(dead)}: cannot create an application"),
            YarnClient(gateway, conf.resourcemanager_address()) as client,
        ):
            client.create_application()
        elapsed = time.monotonic() - started
    assert elapsed < 30, f"took {elapsed:.0f} s"


@pytest.mark.spark35
def test_task_executors_get_every_token_and_secret_but_the_amrm_token(yarn_jvm: JvmGateway) -> None:
    jvm = yarn_jvm.jvm
    text, token_class = jvm.org.apache.hadoop.io.Text, jvm.org.apache.hadoop.security.token.Token
    credentials = jvm.org.apache.hadoop.security.Credentials()
    for alias, kind in [("am", AMRM_TOKEN), ("hdfs", HDFS_DELEGATION_TOKEN)]:
        credentials.addToken(text(alias), token_class(b"id-" + alias.encode(), b"pw", text(kind), text("127.0.0.1:8020")))
    credentials.addSecretKey(text("key"), b"secret")

    passed = without_amrm_token(jvm, credentials)

    assert [str(a.toString()) for a in passed.getTokenMap().keySet()] == ["hdfs"]
    assert bytes(passed.getToken(text("hdfs")).getIdentifier()) == b"id-hdfs"
    assert bytes(passed.getSecretKey(text("key"))) == b"secret"
    assert credentials.numberOfTokens() == 2, "the ApplicationMaster keeps its own"
