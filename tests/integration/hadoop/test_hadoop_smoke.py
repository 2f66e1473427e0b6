"""Smoke tests of the Hadoop test cluster: the pieces the YARN backend relies on.

1. HDFS over WebHDFS with the ``hdfs`` package (how jobcluster stages files);
2. YarnClient through py4j sees the NodeManager (how the descriptor talks to YARN);
3. an application whose ApplicationMaster container runs a shell command
   reaches FINISHED/SUCCEEDED: container launch works on this machine;
4. HDFS through HttpFS alone (a gateway in front of HDFS, as where clients
   reach neither the NameNode's HTTP port nor a DataNode).
"""

from __future__ import annotations

import getpass
import ipaddress
import shlex
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from hdfs import InsecureClient

from jobcluster.backends.yarn.gateway import JvmGateway
from tests.infra.hadoop import shell_am
from tests.infra.hadoop.cluster import HadoopCluster

pytestmark = pytest.mark.hadoop

REPO = Path(__file__).resolve().parents[3]
APP_TIMEOUT = 180.0
"""Seconds from submission to a terminal state; a healthy run takes ~10 s."""


@pytest.fixture(scope="module")
def yarn_client(yarn_jvm: JvmGateway) -> Iterator[object]:
    """A started ``org.apache.hadoop.yarn.client.api.YarnClient``."""
    jvm = yarn_jvm.jvm
    client = jvm.org.apache.hadoop.yarn.client.api.YarnClient.createYarnClient()
    client.init(jvm.org.apache.hadoop.yarn.conf.YarnConfiguration())
    client.start()
    try:
        yield client
    finally:
        client.stop()


def test_webhdfs_write_and_read(hadoop_cluster: HadoopCluster) -> None:
    client = InsecureClient(hadoop_cluster.webhdfs_url, user=getpass.getuser(), timeout=30)
    client.makedirs("/smoke")
    client.write("/smoke/hello.txt", data=b"hello, hdfs\n", overwrite=True)

    with client.read("/smoke/hello.txt") as reader:
        assert reader.read() == b"hello, hdfs\n"
    assert client.status("/smoke/hello.txt")["length"] == len(b"hello, hdfs\n")
    assert "hello.txt" in client.list("/smoke")


def test_yarn_client_lists_the_running_nodemanager(hadoop_cluster: HadoopCluster, yarn_jvm: JvmGateway, yarn_client: object) -> None:
    records = yarn_jvm.jvm.org.apache.hadoop.yarn.api.records
    running = yarn_jvm.gateway.new_array(records.NodeState, 1)
    running[0] = records.NodeState.RUNNING

    reports = list(yarn_client.getNodeReports(running))

    assert len(reports) == 1
    node = reports[0]
    assert node.getNodeState().toString() == "RUNNING"
    # The NodeManager binds 127.0.0.1 and names itself by that address's
    # reverse lookup ("localhost" here): either way, a loopback address.
    assert ipaddress.ip_address(socket.gethostbyname(node.getNodeId().getHost())).is_loopback
    assert node.getCapability().getMemorySize() == hadoop_cluster.resources.memory_mb
    assert node.getCapability().getVirtualCores() == hadoop_cluster.resources.vcores


def _am_logs(cluster: HadoopCluster, app_id: str) -> str:
    """The AM container's log files, for a failure message."""
    out = []
    for f in sorted((cluster.log_dir / "userlogs" / app_id).glob("*/*")):
        text = f.read_text(errors="replace")[-3000:]
        out.append(f"--- {f.name} ({f.parent.name})\n{text}")
    return "\n".join(out) or f"(no container logs under {cluster.log_dir / 'userlogs' / app_id})"


def test_application_master_container_runs_a_shell_command(
    hadoop_cluster: HadoopCluster, yarn_jvm: JvmGateway, yarn_client: object, tmp_path: Path
) -> None:
    marker = tmp_path / "MARKER"
    records = yarn_jvm.jvm.org.apache.hadoop.yarn.api.records

    app = yarn_client.createApplication()
    ctx = app.getApplicationSubmissionContext()
    app_id = ctx.getApplicationId()
    ctx.setApplicationName("jobcluster-hadoop-smoke")
    ctx.setApplicationType("jobcluster-test")
    ctx.setQueue("default")
    ctx.setMaxAppAttempts(1)
    ctx.setResource(records.Resource.newInstance(512, 1))
    # The NodeManager runs this with bash -c "..." (no escaping): the command
    # must not contain double quotes; shlex.quote uses single quotes.
    shell = f"echo ok > {marker}"
    command = f"{sys.executable} {shell_am.__file__} -- /bin/sh -c {shlex.quote(shell)} 1><LOG_DIR>/am.stdout 2><LOG_DIR>/am.stderr"
    env = {
        "HADOOP_CONF_DIR": str(hadoop_cluster.hadoop_conf_dir),
        "PYTHONPATH": f"{REPO / 'operator'}:{REPO}",
    }
    ctx.setAMContainerSpec(records.ContainerLaunchContext.newInstance({}, env, [command], None, None, None))

    yarn_client.submitApplication(ctx)

    deadline = time.monotonic() + APP_TIMEOUT
    while True:
        report = yarn_client.getApplicationReport(app_id)
        state = report.getYarnApplicationState().toString()
        if state in ("FINISHED", "FAILED", "KILLED"):
            break
        if time.monotonic() > deadline:
            yarn_client.killApplication(app_id)
            pytest.fail(f"{app_id} still {state} after {APP_TIMEOUT:.0f} s\n{_am_logs(hadoop_cluster, app_id.toString())}")
        time.sleep(0.5)

    final = report.getFinalApplicationStatus().toString()
    assert (state, final) == ("FINISHED", "SUCCEEDED"), (
        f"{app_id}: {state}/{final}: {report.getDiagnostics()}\n{_am_logs(hadoop_cluster, app_id.toString())}"
    )
    assert marker.read_text() == "ok\n"


def _recording_session(netlocs: set[str]) -> requests.Session:
    """A session that adds the ``host:port`` of every response to ``netlocs``:
    which servers a client really talked to, redirects included."""
    session = requests.Session()
    session.hooks["response"].append(lambda r, *args, **kwargs: netlocs.add(urlsplit(r.url).netloc))
    return session


def test_httpfs_serves_hdfs_on_its_own(hadoop_cluster: HadoopCluster) -> None:
    """The ``hdfs`` package's operations, every request and redirect to HttpFS's address only."""
    url = hadoop_cluster.start_httpfs()
    netlocs: set[str] = set()
    client = InsecureClient(url, user=getpass.getuser(), timeout=30, session=_recording_session(netlocs))
    data = b"".join(b"line %05d of the HttpFS smoke test\n" % i for i in range(400))  # ~14 KB

    client.makedirs("/httpfs-smoke/in")
    client.write("/httpfs-smoke/in/data.txt", data=data, overwrite=True)
    with client.read("/httpfs-smoke/in/data.txt") as reader:
        assert reader.read() == data
    assert client.list("/httpfs-smoke/in") == ["data.txt"]

    client.set_times("/httpfs-smoke/in/data.txt", access_time=1_700_000_000_000, modification_time=1_600_000_000_000)
    client.set_permission("/httpfs-smoke/in/data.txt", "640")
    status = client.status("/httpfs-smoke/in/data.txt")
    assert (status["length"], status["modificationTime"], status["permission"]) == (len(data), 1_600_000_000_000, "640")

    client.rename("/httpfs-smoke/in/data.txt", "/httpfs-smoke/data.txt")
    assert client.status("/httpfs-smoke/in/data.txt", strict=False) is None
    assert client.status("/httpfs-smoke/data.txt")["length"] == len(data)

    assert client.delete("/httpfs-smoke", recursive=True)
    assert client.status("/httpfs-smoke", strict=False) is None
    assert netlocs == {urlsplit(url).netloc}


def test_httpfs_create_redirects_to_httpfs_not_to_a_datanode(hadoop_cluster: HadoopCluster) -> None:
    """WebHDFS's two-step create sends the data to a DataNode; HttpFS's sends
    it to HttpFS again (data=true), which writes it to HDFS itself."""
    url = hadoop_cluster.start_httpfs()
    assert hadoop_cluster.ports is not None
    path = f"{url}/webhdfs/v1/httpfs-redirect.txt"
    user = getpass.getuser()

    first = requests.put(path, params={"op": "CREATE", "overwrite": "true", "user.name": user}, allow_redirects=False, timeout=30)

    assert first.status_code == 307, first.text
    location = urlsplit(first.headers["Location"])
    assert location.netloc == urlsplit(url).netloc
    assert location.port != hadoop_cluster.ports.datanode_http
    assert parse_qs(location.query)["data"] == ["true"]
    second = requests.put(first.headers["Location"], data=b"x" * 5000, headers={"Content-Type": "application/octet-stream"}, timeout=30)
    assert second.status_code == 201, second.text
    status = requests.get(path, params={"op": "GETFILESTATUS", "user.name": user}, timeout=30).json()["FileStatus"]
    assert status["length"] == 5000
    requests.delete(path, params={"op": "DELETE", "user.name": user}, timeout=30).raise_for_status()
