"""Shipping the packed Python environment to the real HDFS: uploaded once, reused, PUBLIC only where YARN allows it."""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobcluster.backends.yarn import pyenv
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.local_resources import LocalResourceType, LocalResourceVisibility
from jobcluster.backends.yarn.staging import HdfsPaths, webhdfs_client
from tests.infra.hadoop.cluster import HadoopCluster
from tests.unit.test_yarn_pyenv import make_venv

pytestmark = pytest.mark.hadoop


@pytest.fixture(scope="module")
def paths(hadoop_cluster: HadoopCluster) -> HdfsPaths:
    conf = HadoopConfiguration.load(hadoop_cluster.hadoop_conf_dir)
    return HdfsPaths(webhdfs_client(conf, timeout=30), conf.default_fs)


@pytest.fixture
def base(paths: HdfsPaths) -> Iterator[str]:
    """A fresh staging base, world-traversable like a typical /user/<name> directory."""
    path = f"/tmp/jc-pyenv-{uuid.uuid4().hex[:8]}"
    paths.ensure_directory(path, "755")
    yield path
    paths.client.delete(path, recursive=True)


@pytest.fixture
def packed(tmp_path: Path) -> pyenv.PackedEnvironment:
    return pyenv.pack_environment(make_venv(tmp_path / "venv"), tmp_path / "cache")


def test_uploaded_once_then_reused(paths: HdfsPaths, base: str, packed: pyenv.PackedEnvironment) -> None:
    messages: list[str] = []

    first = pyenv.ship_environment(paths, base, packed, progress=messages.append)
    second = pyenv.ship_environment(paths, base, packed, progress=messages.append)

    assert first.uploaded and not second.uploaded
    assert len(messages) == 2  # "Uploading ..." and "Uploaded ...", only the first time
    remote = f"{base}/.jobcluster/python/{packed.name}"
    status = paths.client.status(remote)
    assert first.resource == second.resource  # same file, same timestamp: NodeManagers keep their copy
    assert first.resource.path == paths.qualify(remote)
    assert first.resource.key == "environment"
    assert first.resource.type is LocalResourceType.ARCHIVE
    assert first.resource.size == packed.path.stat().st_size == status["length"]
    assert first.resource.modification_time == status["modificationTime"]
    assert status["permission"] == "644"
    assert paths.client.list(posixpath.dirname(remote)) == [packed.name]  # no partial upload left
    with paths.client.read(remote) as reader:
        assert reader.read() == packed.path.read_bytes()


def test_public_when_readable_through_traversable_directories(paths: HdfsPaths, base: str, packed: pyenv.PackedEnvironment) -> None:
    assert pyenv.ship_environment(paths, base, packed).resource.visibility is LocalResourceVisibility.PUBLIC


def test_private_when_an_ancestor_is_closed_to_others(paths: HdfsPaths, base: str, packed: pyenv.PackedEnvironment) -> None:
    paths.client.set_permission(base, "750")
    assert pyenv.ship_environment(paths, base, packed).resource.visibility is LocalResourceVisibility.PRIVATE


def test_a_truncated_upload_is_replaced(paths: HdfsPaths, base: str, packed: pyenv.PackedEnvironment) -> None:
    remote = f"{base}/.jobcluster/python/{packed.name}"
    paths.client.write(remote, data=b"partial", overwrite=True)

    shipped = pyenv.ship_environment(paths, base, packed)

    assert shipped.uploaded
    assert paths.client.status(remote)["length"] == packed.path.stat().st_size


def test_a_preinstalled_python_ships_nothing(paths: HdfsPaths, base: str) -> None:
    python = pyenv.container_python("/opt/python/bin/python3", paths, base)
    assert python == pyenv.ContainerPython(executable="/opt/python/bin/python3", resources=())
    assert paths.client.status(f"{base}/.jobcluster", strict=False) is None
