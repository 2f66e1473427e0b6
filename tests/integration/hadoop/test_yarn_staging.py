"""HDFS staging against the real NameNode of the test cluster: layout, mode 700, LocalResources read back, removal."""

from __future__ import annotations

import posixpath
import socket
import time
import uuid
from pathlib import Path

import pytest

from jobcluster.backends.yarn.errors import StagingError, YarnConfigurationError
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.local_resources import LocalResourceType, LocalResourceVisibility
from jobcluster.backends.yarn.staging import HdfsPaths, StagingDirectory, hadoop_user, webhdfs_client
from tests.infra.hadoop.cluster import HadoopCluster

pytestmark = pytest.mark.hadoop


@pytest.fixture(scope="module")
def hadoop_conf(hadoop_cluster: HadoopCluster) -> HadoopConfiguration:
    return HadoopConfiguration.load(hadoop_cluster.hadoop_conf_dir)


@pytest.fixture(scope="module")
def paths(hadoop_conf: HadoopConfiguration) -> HdfsPaths:
    return HdfsPaths(webhdfs_client(hadoop_conf, timeout=30), hadoop_conf.default_fs)


def app_id() -> str:
    """A fresh application id (staging only needs it to be unique)."""
    return f"application_{int(time.time() * 1000)}_{uuid.uuid4().int % 10000:04d}"


def test_the_client_configuration_leads_to_this_hdfs(hadoop_cluster: HadoopCluster, hadoop_conf: HadoopConfiguration) -> None:
    assert hadoop_conf.default_fs == hadoop_cluster.fs_default_fs.rstrip("/")
    assert hadoop_conf.webhdfs_urls() == [hadoop_cluster.webhdfs_url]
    assert hadoop_conf.resourcemanager_address() == hadoop_cluster.resourcemanager_address


def test_stage_in_the_home_directory_mode_700_and_read_back(paths: HdfsPaths, tmp_path: Path) -> None:
    program = tmp_path / "wordcount.py"
    program.write_text("print('hello')\n" * 100)
    application = app_id()

    staging = StagingDirectory.create(paths, None, application)
    try:
        home = f"/user/{hadoop_user()}"
        assert staging.path == f"{home}/.jobcluster/{application}"
        assert staging.uri == f"{paths.default_fs}{home}/.jobcluster/{application}"
        assert paths.client.status(staging.path)["permission"] == "700"
        assert paths.client.status(posixpath.dirname(staging.path))["permission"] == "755"

        resource = staging.upload(program)
        graph = staging.write("job.graph", b'{"job_id": "x"}')
        pyfile = staging.upload(program, key="py-files/helper.py")

        status = paths.client.status(f"{staging.path}/wordcount.py")
        assert resource.key == "wordcount.py"
        assert resource.path == f"{staging.uri}/wordcount.py"
        assert resource.size == program.stat().st_size == status["length"]
        assert resource.modification_time == status["modificationTime"]
        assert abs(resource.modification_time / 1000 - time.time()) < 120  # HDFS's clock, not the local file's mtime
        assert resource.type is LocalResourceType.FILE
        assert resource.visibility is LocalResourceVisibility.APPLICATION
        assert (graph.key, graph.size) == ("job.graph", len(b'{"job_id": "x"}'))
        assert pyfile.path == f"{staging.uri}/py-files/helper.py"
        with paths.client.read(f"{staging.path}/py-files/helper.py") as reader:
            assert reader.read() == program.read_bytes()
    finally:
        assert staging.remove() is True
    assert not staging.exists()
    assert staging.remove() is False
    with pytest.raises(StagingError, match="does not exist"):
        staging.remove(missing_ok=False)


@pytest.mark.parametrize("form", ["absolute", "uri", "uri-without-authority", "relative"])
def test_the_staging_directory_option(paths: HdfsPaths, form: str) -> None:
    base = f"/tmp/jc-staging-{uuid.uuid4().hex[:8]}"
    option = {
        "absolute": base,
        "uri": f"{paths.default_fs}{base}",
        "uri-without-authority": f"hdfs://{base}",
        "relative": base.lstrip("/"),
    }[form]
    expected_base = base if form != "relative" else f"/user/{hadoop_user()}/{base.lstrip('/')}"

    staging = StagingDirectory.create(paths, option, app_id())
    try:
        assert staging.path.startswith(f"{expected_base}/.jobcluster/application_")
        assert paths.client.status(staging.path)["permission"] == "700"
    finally:
        staging.remove()
        paths.client.delete(expected_base, recursive=True)


def test_a_staging_directory_on_another_file_system_is_refused(paths: HdfsPaths) -> None:
    with pytest.raises(YarnConfigurationError, match=r"yarn\.staging-directory"):
        StagingDirectory.create(paths, "hdfs://elsewhere:8020/tmp", app_id())


def test_the_directory_removes_itself_when_staging_fails(paths: HdfsPaths, tmp_path: Path) -> None:
    application = app_id()
    staging = StagingDirectory.create(paths, None, application)
    staging.write("config.yaml", b"a: 1\n")
    with pytest.raises(StagingError, match="cannot upload"), staging:
        staging.upload(tmp_path / "missing.py")
    assert paths.client.status(staging.path, strict=False) is None


def test_an_unreachable_namenode_is_a_staging_error_soon(hadoop_conf: HadoopConfiguration) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    from hdfs import InsecureClient

    dead = HdfsPaths(InsecureClient(f"http://127.0.0.1:{port}", user="nobody", timeout=5), hadoop_conf.default_fs)
    started = time.monotonic()
    with pytest.raises(StagingError, match="WebHDFS is not reachable"):
        StagingDirectory.create(dead, None, app_id())
    assert time.monotonic() - started < 30
