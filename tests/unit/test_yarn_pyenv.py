"""Packing the Python environment for YARN containers: fingerprint, client cache, editable installs, a runnable archive.

The environments here are small but real virtual environments (pyvenv.cfg, bin/python linked to this
interpreter's base), so venv-pack packs them exactly as it packs a user's, and the unpacked archive runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from jobcluster.backends.yarn import pyenv
from jobcluster.backends.yarn.errors import PythonEnvironmentError

PY = f"python{sys.version_info.major}.{sys.version_info.minor}"


def make_venv(root: Path) -> Path:
    """A minimal venv: what ``python -m venv --without-pip`` writes, without starting a process."""
    base = Path(sys.base_prefix)
    (root / "bin").mkdir(parents=True)
    (root / "lib" / PY / "site-packages").mkdir(parents=True)
    (root / "bin" / PY).symlink_to(base / "bin" / PY)
    (root / "bin" / "python").symlink_to(PY)
    (root / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\ninclude-system-site-packages = false\nversion = {sys.version.split()[0]}\n")
    sp = root / "lib" / PY / "site-packages"
    (sp / "numpyish").mkdir()
    (sp / "numpyish" / "__init__.py").write_text("VALUE = 42\n")
    return root


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    return make_venv(tmp_path / "venv")


def site(venv: Path) -> Path:
    return venv / "lib" / PY / "site-packages"


def test_fingerprint_follows_content_not_timestamps(venv: Path):
    before = pyenv.fingerprint(venv)
    module = site(venv) / "numpyish" / "__init__.py"
    module.touch()
    assert pyenv.fingerprint(venv) == before  # same content
    (site(venv) / "numpyish" / "__pycache__").mkdir()
    (site(venv) / "numpyish" / "__pycache__" / "x.pyc").write_bytes(b"compiled")
    assert pyenv.fingerprint(venv) == before  # bytecode is derived
    module.write_text("VALUE = 43\n")
    assert pyenv.fingerprint(venv) != before


def test_fingerprint_uses_the_hashes_pip_recorded(venv: Path):
    info = site(venv) / "numpyish-1.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("numpyish/__init__.py,sha256=AAAA,11\nnumpyish-1.0.dist-info/RECORD,,\n")
    before = pyenv.fingerprint(venv)
    # A recorded file is represented by its RECORD line: the RECORD changing changes the fingerprint.
    (info / "RECORD").write_text("numpyish/__init__.py,sha256=BBBB,11\nnumpyish-1.0.dist-info/RECORD,,\n")
    assert pyenv.fingerprint(venv) != before


def test_editable_paths_outside_the_environment(venv: Path, tmp_path: Path):
    (site(venv) / "inside.pth").write_text(f"{site(venv) / 'numpyish'}\n# comment\nimport os\n")
    (site(venv) / "__editable__.mylib-1.0.pth").write_text(f"{tmp_path / 'src'}\n")
    assert pyenv.editable_paths(venv) == {site(venv) / "__editable__.mylib-1.0.pth": [(tmp_path / "src").resolve()]}


def test_pack_caches_by_fingerprint(venv: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    messages: list[str] = []

    first = pyenv.pack_environment(venv, cache, progress=messages.append)
    second = pyenv.pack_environment(venv, cache, progress=messages.append)

    assert first.packed and not second.packed
    assert second.path == first.path and first.path.parent == cache
    assert first.path.name == f"python-env-{first.fingerprint[:32]}.tar.gz"
    assert len(messages) == 2  # "Packing ..." and "Packed ...", only the first time
    assert [p.name for p in cache.iterdir()] == [first.path.name]  # no partial files or views left

    (site(venv) / "numpyish" / "extra.py").write_text("X = 1\n")
    third = pyenv.pack_environment(venv, cache)
    assert third.packed and third.path != first.path


def test_the_cache_keeps_the_most_recently_used_archives(tmp_path: Path):
    cache = tmp_path / "cache"
    cache.mkdir()
    archives = [cache / f"python-env-{i}.tar.gz" for i in range(5)]
    for age, archive in enumerate(archives):
        archive.write_bytes(b"x")
        os.utime(archive, (1_000_000 + age, 1_000_000 + age))  # python-env-4 is the newest
    pyenv._keep_recent(archives[0], keep=3)  # used now: the newest of all
    assert sorted(p.name for p in cache.iterdir()) == ["python-env-0.tar.gz", "python-env-3.tar.gz", "python-env-4.tar.gz"]


def test_the_archive_runs_with_jobcluster_inside_it(venv: Path, tmp_path: Path):
    """jobcluster is not installed in this venv (here it lives in the source tree, editable): the archive
    carries its package in site-packages, and the unpacked environment imports it from there."""
    packed = pyenv.pack_environment(venv, tmp_path / "cache")
    unpacked = tmp_path / "container" / "environment"
    unpacked.mkdir(parents=True)
    with tarfile.open(packed.path) as tar:
        names = tar.getnames()
        tar.extractall(unpacked, filter="tar")
    assert f"lib/{PY}/site-packages/jobcluster/__init__.py" in names
    assert f"lib/{PY}/site-packages/numpyish/__init__.py" in names
    assert not any(n.endswith(".pth") and "__editable__" in n for n in names)

    out = subprocess.run(
        [
            str(unpacked / "bin" / "python"),
            "-c",
            "import sys, jobcluster, numpyish; print(sys.prefix); print(jobcluster.__file__); print(numpyish.VALUE)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path / "container",
        env={"PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    assert out[0] == str(unpacked)
    assert out[1].startswith(str(unpacked / "lib" / PY / "site-packages" / "jobcluster"))
    assert out[2] == "42"


def test_an_editable_package_besides_jobcluster_is_refused(venv: Path, tmp_path: Path):
    (tmp_path / "src").mkdir()
    (site(venv) / "__editable__.mylib-1.0.pth").write_text(f"{tmp_path / 'src'}\n")
    with pytest.raises(PythonEnvironmentError, match=r"editable mode.*jobcluster\.yarn\.python") as info:
        pyenv.pack_environment(venv, tmp_path / "cache")
    assert "__editable__.mylib-1.0.pth" in str(info.value)


def test_not_a_virtual_environment_is_refused(tmp_path: Path):
    plain = tmp_path / "plain"
    (plain / "lib").mkdir(parents=True)
    with pytest.raises(PythonEnvironmentError, match="virtual environment"):
        pyenv.pack_environment(plain, tmp_path / "cache")


def test_cache_dir_honours_jobcluster_cache():
    assert pyenv.cache_dir({"JOBCLUSTER_CACHE": "/var/cache/jc"}) == Path("/var/cache/jc/python-envs")
    assert pyenv.cache_dir({}).parts[-3:] == (".cache", "jobcluster", "python-envs")
