"""Shipping the packed Python environment's parts to the real HDFS: each uploaded once, reused, PUBLIC only where YARN allows it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobcluster.backends.yarn import pyenv, shared_retention
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.local_resources import LocalResourceType, LocalResourceVisibility
from jobcluster.backends.yarn.staging import HdfsPaths, webhdfs_client
from tests.infra.hadoop.cluster import HadoopCluster
from tests.unit.test_yarn_pyenv import PY, make_venv

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

    assert first.uploaded == ("environment", "python-jobcluster") and second.uploaded == ()
    assert len(messages) == 2  # "Uploading ..." and "Uploaded ...", only the first time
    assert first.resources == second.resources  # same files, same timestamps: NodeManagers keep their copies
    directory = f"{base}/.jobcluster/python"
    assert sorted(paths.client.list(directory)) == sorted(p.name for p in packed.parts)  # no partial upload left
    for part, resource in zip(packed.parts, first.resources, strict=True):
        remote = f"{directory}/{part.name}"
        status = paths.client.status(remote)
        assert resource.path == paths.qualify(remote)
        assert resource.key == part.key
        assert resource.type is LocalResourceType.ARCHIVE
        assert resource.size == part.path.stat().st_size == status["length"]
        assert resource.modification_time == status["modificationTime"]
        assert status["permission"] == "644"
        with paths.client.read(remote) as reader:
            assert reader.read() == part.path.read_bytes()


def test_a_changed_part_alone_is_uploaded_again(paths: HdfsPaths, base: str, tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    first = pyenv.ship_environment(paths, base, pyenv.pack_environment(venv, tmp_path / "cache"))
    (venv / "lib" / PY / "site-packages" / "mylib.py").write_text("X = 1\n")  # the user installs something

    second = pyenv.ship_environment(paths, base, pyenv.pack_environment(venv, tmp_path / "cache"))

    assert second.uploaded == ("environment",)
    assert second.resources[0] != first.resources[0] and second.resources[1:] == first.resources[1:]
    assert len(paths.client.list(f"{base}/.jobcluster/python")) == 3  # both environments, one jobcluster


def test_public_when_readable_through_traversable_directories(paths: HdfsPaths, base: str, packed: pyenv.PackedEnvironment) -> None:
    resources = pyenv.ship_environment(paths, base, packed).resources
    assert {r.visibility for r in resources} == {LocalResourceVisibility.PUBLIC}


def test_private_when_an_ancestor_is_closed_to_others(paths: HdfsPaths, base: str, packed: pyenv.PackedEnvironment) -> None:
    paths.client.set_permission(base, "750")
    resources = pyenv.ship_environment(paths, base, packed).resources
    assert {r.visibility for r in resources} == {LocalResourceVisibility.PRIVATE}


def test_a_truncated_upload_is_replaced(paths: HdfsPaths, base: str, packed: pyenv.PackedEnvironment) -> None:
    part = packed.parts[0]
    remote = f"{base}/.jobcluster/python/{part.name}"
    paths.client.write(remote, data=b"partial", overwrite=True)

    shipped = pyenv.ship_environment(paths, base, packed)

    assert "environment" in shipped.uploaded
    assert paths.client.status(remote)["length"] == part.path.stat().st_size


def test_a_preinstalled_python_ships_nothing(paths: HdfsPaths, base: str) -> None:
    python = pyenv.container_python("/opt/python/bin/python3", paths, base)
    assert python == pyenv.ContainerPython(executable="/opt/python/bin/python3", resources=())
    assert paths.client.status(f"{base}/.jobcluster", strict=False) is None


def test_registering_marks_use_and_retention_keeps_what_an_active_application_may_use(
    paths: HdfsPaths, base: str, packed: pyenv.PackedEnvironment
) -> None:
    shipped = pyenv.ship_environment(paths, base, packed)
    now_ms = int(time.time() * 1000)
    (environment, jobcluster_part) = shared_retention.shared_files(paths, base)
    assert abs(environment.last_used - now_ms) < 60_000 and abs(jobcluster_part.last_used - now_ms) < 60_000
    modification_times = {paths.client.status(f.path)["modificationTime"] for f in (environment, jobcluster_part)}
    assert modification_times == {r.modification_time for r in shipped.resources}  # YARN's timestamp untouched

    later = now_ms + 10 * 86_400_000  # ten days on, with no job using them since
    an_application_started_before_they_were_used = now_ms - 60_000
    assert shared_retention.prune_shared_files(paths, base, 7 * 86_400.0, an_application_started_before_they_were_used, later) == []
    removed = shared_retention.prune_shared_files(paths, base, 7 * 86_400.0, None, later)
    assert sorted(removed) == sorted(r.path for r in shipped.resources)
    assert paths.client.list(f"{base}/.jobcluster/python") == []
