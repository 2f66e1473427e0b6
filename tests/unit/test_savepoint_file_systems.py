"""Where the client reads a savepoint before deploying: the rules on any file system (client/savepoints.py), and
the yarn-per-job target's side (backends/yarn/savepoint_files.py, YarnClusterDescriptor): which URIs go through WebHDFS."""

from __future__ import annotations

import pytest

from jobcluster.backends.yarn.descriptor import YarnClusterDescriptor
from jobcluster.backends.yarn.errors import YarnConfigurationError
from jobcluster.backends.yarn.savepoint_files import WebHdfsFileSystem, hdfs_path_of, webhdfs_file_system
from jobcluster.client.savepoints import EntryKind, dispose_savepoint, read_savepoint
from jobcluster.config.configuration import Configuration
from jobcluster.spark.checkpoints import SavepointError, SavepointMetadata
from tests.unit.test_yarn_hadoop_conf import site

JOB = "b36a7e8190b1466587f0b1cd682b5df9"
METADATA = SavepointMetadata(job_id=JOB, job_name="wc", created=1, queries={})


class MemoryFileSystem:
    """A file system of directories and files held in a dict: path -> text (None for a directory)."""

    def __init__(self, entries: dict[str, str | None], failing: bool = False) -> None:
        self.entries = entries
        self.failing = failing

    def kind(self, uri: str) -> EntryKind | None:
        if self.failing:
            raise OSError("connection refused")
        if uri not in self.entries:
            return None
        return "directory" if self.entries[uri] is None else "file"

    def read_text(self, uri: str) -> str:
        text = self.entries[uri]
        assert text is not None
        return text

    def delete(self, uri: str) -> None:
        for path in [p for p in self.entries if p == uri or p.startswith(uri + "/")]:
            del self.entries[path]


SP = "hdfs://nn:8020/sp/savepoint-b36a7e-000000000000"


def test_a_savepoint_is_read_by_the_same_rules_on_any_file_system():
    files = MemoryFileSystem({SP: None, f"{SP}/_metadata": METADATA.to_json(), "hdfs://nn:8020/cp": None, "hdfs://nn:8020/f": "x"})
    assert read_savepoint(SP, files) == METADATA
    with pytest.raises(SavepointError, match=r"^savepoint hdfs://nn:8020/missing does not exist$"):
        read_savepoint("hdfs://nn:8020/missing", files)
    for not_one in ("hdfs://nn:8020/cp", "hdfs://nn:8020/f"):
        with pytest.raises(SavepointError, match=rf"^{not_one} is not a savepoint: it has no _metadata file"):
            read_savepoint(not_one, files)
    with pytest.raises(SavepointError, match="cannot read savepoint hdfs://nn:8020/cp: connection refused"):
        read_savepoint("hdfs://nn:8020/cp", MemoryFileSystem({}, failing=True))


def test_only_a_savepoint_is_disposed():
    files = MemoryFileSystem({SP: None, f"{SP}/_metadata": METADATA.to_json(), f"{SP}/wordcount": None, "hdfs://nn:8020/cp": None})
    with pytest.raises(SavepointError, match="not a savepoint"):
        dispose_savepoint("hdfs://nn:8020/cp", files)
    dispose_savepoint(SP, files)
    assert list(files.entries) == ["hdfs://nn:8020/cp"]


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("hdfs://nn:8020/sp/savepoint-1", "/sp/savepoint-1"),
        ("hdfs:///sp/savepoint-1", "/sp/savepoint-1"),  # no authority: the default file system, as Hadoop reads it
        ("hdfs://nn:8020", "/"),
        ("hdfs://other:8020/sp", None),
        ("hdfs://nn:9000/sp", None),
        ("s3a://bucket/sp", None),
        ("/sp/savepoint-1", None),
    ],
)
def test_only_uris_on_the_configured_hdfs_are_read_through_webhdfs(uri, path):
    assert hdfs_path_of(uri, "hdfs://nn:8020") == path


def _conf_dir(tmp_path, default_fs: str):
    (tmp_path / "core-site.xml").write_text(site({"fs.defaultFS": default_fs}))
    return tmp_path


def test_webhdfs_is_used_for_the_configured_hdfs_only(tmp_path):
    conf = _conf_dir(tmp_path, "hdfs://nn:8020")
    files = webhdfs_file_system("hdfs://nn:8020/sp", Configuration(), {"HADOOP_CONF_DIR": str(conf)})
    assert isinstance(files, WebHdfsFileSystem) and files.default_fs == "hdfs://nn:8020"
    assert webhdfs_file_system("hdfs://other:8020/sp", Configuration(), {"HADOOP_CONF_DIR": str(conf)}) is None
    assert webhdfs_file_system("hdfs://nn:8020/sp", Configuration(), {}) is None, "no Hadoop configuration: left to the driver"
    configured = Configuration({"env.hadoop.conf.dir": str(conf)})
    assert webhdfs_file_system("hdfs://nn:8020/sp", configured, {}) is not None
    with pytest.raises(YarnConfigurationError, match="is not a directory"):
        webhdfs_file_system("hdfs://nn:8020/sp", Configuration(), {"HADOOP_CONF_DIR": str(tmp_path / "nope")})


def test_the_yarn_descriptor_leaves_a_savepoint_it_cannot_reach_to_the_driver(tmp_path, monkeypatch):
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    descriptor = YarnClusterDescriptor(Configuration())
    assert descriptor.read_savepoint("hdfs://nn:8020/sp") is None, "no Hadoop configuration"
    with pytest.raises(SavepointError, match="cannot reach hdfs://nn:8020/sp from this machine"):
        descriptor.dispose_savepoint("hdfs://nn:8020/sp")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(_conf_dir(tmp_path, "hdfs://nn:8020")))
    assert descriptor.read_savepoint("hdfs://other:8020/sp") is None, "another HDFS"
    assert descriptor.read_savepoint(str(tmp_path)) is None, "a path of the cluster's nodes, not the client's"
