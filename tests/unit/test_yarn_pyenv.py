"""Packing the Python environment for YARN in parts: the split, fingerprints per part, the cache, parts that run together.

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

from jobcluster.backends.yarn import pyenv, pyenv_parts
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


def add_distribution(venv: Path, name: str, version: str, modules: dict[str, str]) -> None:
    """Install a fake wheel ``name`` into ``venv``: its package files and a dist-info whose RECORD lists them
    with their sha256, as pip writes it."""
    import base64
    import hashlib

    sp = site(venv)
    info = sp / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = [f"{name}-{version}.dist-info/METADATA,,", f"{name}-{version}.dist-info/RECORD,,"]
    for relative, text in modules.items():
        path = sp / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        sha = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        lines.append(f"{relative},sha256={sha},{len(text)}")
    (info / "RECORD").write_text("\n".join(lines) + "\n")


def add_egg_info_distribution(venv: Path, name: str, version: str, modules: dict[str, str]) -> None:
    """Install ``name`` as a legacy ``setup.py install`` does (pip with an sdist and no ``wheel``): an ``.egg-info``
    whose ``installed-files.txt`` lists the files relative to itself, and whose SOURCES.txt names the source tree."""
    sp = site(venv)
    info = sp / f"{name}-{version}.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "SOURCES.txt").write_text(f"setup.py\nlib/{name}.jar\n" + "".join(f"{r}\n" for r in modules))
    for relative, text in modules.items():
        (sp / relative).parent.mkdir(parents=True, exist_ok=True)
        (sp / relative).write_text(text)
    listed = [f"../{relative}" for relative in modules] + ["PKG-INFO", "SOURCES.txt", f"../../../../bin/{name}-tool"]
    (info / "installed-files.txt").write_text("\n".join(listed) + "\n")


def add_pyspark(venv: Path, version: str = "3.5.7", egg_info: bool = False) -> None:
    """pyspark and py4j as wheels install them, or pyspark from its sdist by a legacy install (``egg_info``)."""
    install = add_egg_info_distribution if egg_info else add_distribution
    install(venv, "pyspark", version, {"pyspark/__init__.py": f"__version__ = {version!r}\n", "pyspark/jars/a.jar": "jar"})
    add_distribution(venv, "py4j", "0.10.9.7", {"py4j/__init__.py": "\n"})


def fingerprints(venv: Path) -> dict[str, str]:
    parts = pyenv.split_environment(venv)
    return {
        "environment": pyenv_parts.environment_fingerprint(venv, parts),
        "pyspark": pyenv_parts.pyspark_fingerprint(parts),
        "jobcluster": pyenv_parts.jobcluster_fingerprint(parts, pyenv.jobcluster_package_dir()),
    }


def test_fingerprint_follows_content_not_timestamps(venv: Path):
    before = fingerprints(venv)["environment"]
    module = site(venv) / "numpyish" / "__init__.py"
    module.touch()
    assert fingerprints(venv)["environment"] == before  # same content
    (site(venv) / "numpyish" / "__pycache__").mkdir()
    (site(venv) / "numpyish" / "__pycache__" / "x.pyc").write_bytes(b"compiled")
    assert fingerprints(venv)["environment"] == before  # bytecode is derived
    module.write_text("VALUE = 43\n")
    assert fingerprints(venv)["environment"] != before


def test_fingerprint_uses_the_hashes_pip_recorded(venv: Path):
    info = site(venv) / "numpyish-1.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("numpyish/__init__.py,sha256=AAAA,11\nnumpyish-1.0.dist-info/RECORD,,\n")
    before = fingerprints(venv)["environment"]
    # A recorded file is represented by its RECORD line: the RECORD changing changes the fingerprint.
    (info / "RECORD").write_text("numpyish/__init__.py,sha256=BBBB,11\nnumpyish-1.0.dist-info/RECORD,,\n")
    assert fingerprints(venv)["environment"] != before


@pytest.mark.parametrize("egg_info", [False, True], ids=["wheel", "legacy sdist install"])
def test_the_split_puts_pyspark_and_py4j_in_their_own_part(venv: Path, egg_info: bool):
    add_pyspark(venv, egg_info=egg_info)
    add_distribution(venv, "requests", "2.0", {"requests/__init__.py": "\n"})
    parts = pyenv.split_environment(venv)
    metadata = "pyspark-3.5.7.egg-info" if egg_info else "pyspark-3.5.7.dist-info"
    assert parts.pyspark == {"pyspark", metadata, "py4j", "py4j-0.10.9.7.dist-info"}
    assert parts.jobcluster == set()  # this venv does not install jobcluster: the running one is shipped
    assert pyenv_parts.pyspark_version(site(venv)) == "3.5.7"


def test_an_editable_jobcluster_is_its_own_part_not_the_environments(venv: Path, tmp_path: Path):
    add_distribution(venv, "jobcluster", "0.1.0", {})
    (site(venv) / "__editable__.jobcluster-0.1.0.pth").write_text(f"{pyenv.jobcluster_package_dir().parent}\n")
    parts = pyenv.split_environment(venv)
    assert parts.jobcluster == {"jobcluster-0.1.0.dist-info", "__editable__.jobcluster-0.1.0.pth"}


def test_a_user_package_added_changes_only_the_environment_part(venv: Path):
    add_pyspark(venv)
    before = fingerprints(venv)
    add_distribution(venv, "mylib", "1.0", {"mylib/__init__.py": "X = 1\n"})
    after = fingerprints(venv)
    assert after["environment"] != before["environment"]
    assert after["pyspark"] == before["pyspark"] and after["jobcluster"] == before["jobcluster"]


def test_a_new_pyspark_changes_only_the_pyspark_part(venv: Path, tmp_path: Path):
    add_pyspark(venv)
    before = fingerprints(venv)
    other = make_venv(tmp_path / "other")
    add_pyspark(other, "3.5.8")
    assert fingerprints(other)["pyspark"] != before["pyspark"]
    # the same venv with pyspark's files changed in place: the environment part stays
    (site(venv) / "pyspark" / "jars" / "b.jar").write_text("new jar")
    assert fingerprints(venv)["pyspark"] != before["pyspark"]
    assert fingerprints(venv)["environment"] == before["environment"]


def big(name: str, records: int = pyenv_parts.PACKAGE_PART_MIN_RECORDS) -> dict[str, str]:
    return {f"{name}/m{i}.py": f"I = {i}\n" for i in range(records)}


def test_a_large_distribution_gets_a_part_of_its_own(venv: Path):
    add_distribution(venv, "Big_Lib", "2.0", big("biglib"))
    add_distribution(venv, "smalllib", "1.0", {"smalllib/__init__.py": "\n"})
    add_distribution(venv, "withpth", "1.0", {**big("withpth"), "withpth.pth": "import os\n"})
    add_distribution(venv, "nsa", "1.0", big("ns/a"))
    add_distribution(venv, "nsb", "1.0", {"ns/b/__init__.py": "\n"})  # shares the top-level name ns
    parts = pyenv.split_environment(venv)
    assert parts.packages == (pyenv_parts.PackagePart("big-lib", "2.0", frozenset({"biglib", "Big_Lib-2.0.dist-info"})),)
    assert parts.packages[0].key == "python-packages/big-lib"


def test_a_large_package_added_is_a_new_part_and_the_environment_stays(venv: Path):
    add_pyspark(venv)
    before = fingerprints(venv)
    add_distribution(venv, "biglib", "1.0", big("biglib"))
    after = fingerprints(venv)
    assert after == before  # the other parts: unchanged
    parts = pyenv.split_environment(venv)
    first = pyenv_parts.package_fingerprint(parts, parts.packages[0])
    (site(venv) / "biglib" / "extra.py").write_text("X = 1\n")  # a file pip did not record: hashed itself
    assert pyenv_parts.package_fingerprint(parts, parts.packages[0]) != first
    assert fingerprints(venv) == before


def test_editable_paths_outside_the_environment(venv: Path, tmp_path: Path):
    (site(venv) / "inside.pth").write_text(f"{site(venv) / 'numpyish'}\n# comment\nimport os\n")
    (site(venv) / "__editable__.mylib-1.0.pth").write_text(f"{tmp_path / 'src'}\n")
    assert pyenv.editable_paths(venv) == {site(venv) / "__editable__.mylib-1.0.pth": [(tmp_path / "src").resolve()]}


def test_pack_caches_each_part_by_fingerprint(venv: Path, tmp_path: Path):
    add_pyspark(venv)
    cache = tmp_path / "cache"
    messages: list[str] = []

    first = pyenv.pack_environment(venv, cache, progress=messages.append)
    second = pyenv.pack_environment(venv, cache, progress=messages.append)

    assert first.packed == ("environment", "python-pyspark", "python-jobcluster") and second.packed == ()
    assert [p.path for p in second.parts] == [p.path for p in first.parts]
    environment, spark, own = first.parts
    assert environment.name == f"python-env-{environment.fingerprint[:32]}.tar.gz"
    assert spark.name == f"pyspark-3.5.7-{pyenv_parts.python_tag()}-{spark.fingerprint[:24]}.tar"
    assert own.name.startswith("jobcluster-") and own.name.endswith(".tar.gz")
    assert len(messages) == 2 and "(environment, python-pyspark, python-jobcluster)" in messages[1], messages  # once
    assert sorted(p.name for p in cache.iterdir()) == sorted(p.name for p in first.parts)  # no partial files or views left

    (site(venv) / "numpyish" / "extra.py").write_text("X = 1\n")
    third = pyenv.pack_environment(venv, cache)
    assert third.packed == ("environment",)


def test_the_cache_keeps_the_most_recently_used_archives_of_each_part(tmp_path: Path):
    cache = tmp_path / "cache"
    cache.mkdir()
    archives = [cache / f"python-env-{i}.tar.gz" for i in range(5)]
    for age, archive in enumerate(archives):
        archive.write_bytes(b"x")
        os.utime(archive, (1_000_000 + age, 1_000_000 + age))  # python-env-4 is the newest
    other = cache / "pyspark-3.5.7-py3.11-0.tar"
    other.write_bytes(b"x")
    os.utime(other, (1, 1))
    pyenv._keep_recent(archives[0], keep=3)  # used now: the newest of all
    assert sorted(p.name for p in cache.iterdir()) == [
        "pyspark-3.5.7-py3.11-0.tar",  # another part: not counted against the environment's
        "python-env-0.tar.gz",
        "python-env-3.tar.gz",
        "python-env-4.tar.gz",
    ]


def unpack_in_container(packed: pyenv.PackedEnvironment, container: Path) -> dict[str, list[str]]:
    """What a NodeManager does: unpack each part elsewhere and link it into the working directory under its key."""
    names = {}
    for part in packed.parts:
        target = container.parent / "filecache" / part.name
        target.mkdir(parents=True)
        with tarfile.open(part.path) as tar:
            names[part.key] = tar.getnames()
            tar.extractall(target, filter="tar")
        (container / part.key).parent.mkdir(parents=True, exist_ok=True)  # YARN makes a key's directories
        (container / part.key).symlink_to(target)
    return names


@pytest.mark.parametrize("egg_info", [False, True], ids=["wheel", "legacy sdist install"])
def test_the_parts_run_together_from_the_environments_python(venv: Path, tmp_path: Path, egg_info: bool):
    """jobcluster is not installed in this venv (here it lives in the source tree, editable): its part carries
    the package, and the environment's Python finds it, and pyspark and py4j, in the sibling parts, from any
    directory; also where pyspark came from its sdist (the image's venv, which the operator ships)."""
    add_pyspark(venv, egg_info=egg_info)
    add_distribution(venv, "biglib", "1.0", {**big("biglib"), "biglib/__init__.py": "VALUE = 'big'\n"})
    packed = pyenv.pack_environment(venv, tmp_path / "cache")
    assert [p.key for p in packed.parts] == ["environment", "python-pyspark", "python-packages/biglib", "python-jobcluster"]
    container = tmp_path / "container"
    container.mkdir()
    names = unpack_in_container(packed, container)
    assert f"lib/{PY}/site-packages/numpyish/__init__.py" in names["environment"]
    assert not any(n.split("/")[-1].startswith(("pyspark", "py4j", "jobcluster")) for n in names["environment"])
    assert "jobcluster/__init__.py" in names["python-jobcluster"]
    assert "pyspark/jars/a.jar" in names["python-pyspark"]

    out = subprocess.run(
        [
            str(container / "environment" / "bin" / "python"),
            "-c",
            "import sys, jobcluster, numpyish, pyspark, py4j, biglib; print(sys.prefix); print(jobcluster.__file__); "
            "print(pyspark.__file__); print(numpyish.VALUE); print(biglib.__file__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,  # not the container's directory: Spark starts Python workers elsewhere
        env={"PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    assert out[0] == str(container / "environment")
    assert out[1] == str(container / "python-jobcluster" / "jobcluster" / "__init__.py")
    assert out[2] == str(container / "python-pyspark" / "pyspark" / "__init__.py")
    assert out[3] == "42"
    assert out[4] == str(container / "python-packages" / "biglib" / "biglib" / "__init__.py")


def test_an_editable_package_besides_jobcluster_is_refused(venv: Path, tmp_path: Path):
    (tmp_path / "src").mkdir()
    (site(venv) / "__editable__.mylib-1.0.pth").write_text(f"{tmp_path / 'src'}\n")
    with pytest.raises(PythonEnvironmentError, match=r"editable mode.*python\.executable") as info:
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
