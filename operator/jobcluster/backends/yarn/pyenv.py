"""The Python environment of the YARN containers: the client's own, packed once, uploaded once, cached by YARN.

The ApplicationMaster and the TaskExecutors run jobcluster and the user's
PySpark program, so their containers need a Python with jobcluster, pyspark
and whatever the program imports. By default the client ships the virtual
environment it runs in, with everything the user installed into it, the way
Spark documents for PySpark on YARN: packed with ``venv-pack`` into a
``.tar.gz`` and registered as an ARCHIVE LocalResource named
``environment``, so a container runs ``./environment/bin/python``.

Three caches keep that cheap after the first job:

1. On the client: the archive is stored under
   ``$JOBCLUSTER_CACHE/python-envs/`` (default ``~/.cache/jobcluster``),
   named by a fingerprint of the environment's content, and only packed when
   no archive of that fingerprint exists.
2. On HDFS: the archive is uploaded to ``<staging base>/.jobcluster/python/``
   under the same name, once; every later job registers the file that is
   already there.
3. On the nodes: the file is registered PUBLIC when HDFS permissions allow it
   (world-readable, every ancestor world-executable; YARN's rule, see
   ``local_resources.py``), so each NodeManager downloads and unpacks it once
   for all applications (otherwise PRIVATE: once per user).

The fingerprint covers the interpreter version and the content of every file
that is packed: a wheel-installed file through the sha256 that pip recorded
in its distribution's ``RECORD``, every other file by hashing it. Compiled
``__pycache__`` files are packed but not fingerprinted (they derive from the
sources).

Limits, as for venv-pack itself: the archive links ``bin/python`` to the
client's interpreter, so every node needs the same Python at the same path
(a Python built into the same prefix on all machines, as cluster images
usually have); otherwise set ``jobcluster.yarn.python`` to a Python installed
on the nodes, and nothing is shipped. Only virtual environments (venv,
virtualenv) can be packed.

Editable installs: venv-pack refuses an environment with packages installed
in development mode (``pip install -e``), because their code lives outside
the environment. jobcluster itself is often installed that way while it is
developed; then the packer works on a hard-linked copy of the environment
in which jobcluster's package directory sits in ``site-packages`` like a
normal install. Any other editable package is an error that says what to do.

Why one module of this size: packing, the client's cache and the upload are one
idea (the shipped environment), and each step needs the others' names and keys.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import venv_pack

import jobcluster
from jobcluster.backends.yarn.config_options import YARN_PYTHON
from jobcluster.backends.yarn.errors import PythonEnvironmentError
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor, LocalResourceType
from jobcluster.backends.yarn.shared_files import is_complete, shared_directory, shared_resource, upload_atomically
from jobcluster.backends.yarn.staging import HdfsPaths, hdfs_errors

ENVIRONMENT_KEY = "environment"
"""The archive's name in a container's working directory."""

CONTAINER_PYTHON = f"./{ENVIRONMENT_KEY}/bin/python"
"""The Python a container runs when the environment is shipped (relative to its working directory)."""

SHARED_DIR = "python"
"""Directory under ``<staging base>/.jobcluster/`` holding the shipped environments of every job."""

CACHED_ARCHIVES = 3
"""Packed environments kept in the client's cache (the most recently used)."""

COMPRESS_LEVEL = 1
"""gzip level of the archive. Most of a PySpark environment is jars, which are compressed already. Measured on
the shared 2-core machine with the 656 MB development venv: level 1 gives 386-405 MB in 38-54 s, level 4
(venv-pack's default) 393 MB in 83 s, no compression 679 MB in 13 s."""

FINGERPRINT_VERSION = "jobcluster-pyenv-1"

Progress = Callable[[str], None]


def _no_progress(_message: str) -> None:
    pass


def cache_dir(environ: dict[str, str] | None = None) -> Path:
    """``$JOBCLUSTER_CACHE/python-envs`` (default ``~/.cache/jobcluster/python-envs``)."""
    env = os.environ if environ is None else environ
    base = env.get("JOBCLUSTER_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "jobcluster")
    return Path(base) / "python-envs"


@dataclass(frozen=True)
class ContainerPython:
    """How the containers get their Python: ``executable`` (a path on the node, or relative to the
    container's working directory) and the LocalResources that bring it (empty when preinstalled)."""

    executable: str
    resources: tuple[LocalResourceDescriptor, ...] = ()


@dataclass(frozen=True)
class PackedEnvironment:
    """A packed environment in the client's cache: ``path`` of the archive, its ``fingerprint``,
    and whether this call ``packed`` it (False: found in the cache) in ``seconds``."""

    path: Path
    fingerprint: str
    packed: bool
    seconds: float

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class ShippedEnvironment:
    """The archive on HDFS as a LocalResource, and whether this call ``uploaded`` it (in ``seconds``)."""

    resource: LocalResourceDescriptor
    uploaded: bool
    seconds: float


# -- the local environment -----------------------------------------------------


def current_prefix() -> Path:
    """The virtual environment this Python runs in.

    Raises:
        PythonEnvironmentError: this Python is not a virtual environment.
    """
    if sys.prefix == sys.base_prefix:
        raise PythonEnvironmentError(
            f"jobcluster runs in the Python at {sys.prefix}, which is not a virtual environment, so it cannot be shipped to "
            f"YARN; run jobcluster from a venv, or set {YARN_PYTHON.key} to a Python with jobcluster installed on every node."
        )
    return Path(sys.prefix)


def site_packages(prefix: Path) -> Path:
    """``lib/pythonX.Y/site-packages`` of a POSIX virtual environment."""
    candidates = sorted(prefix.glob("lib/python*/site-packages"))
    if len(candidates) != 1:
        raise PythonEnvironmentError(f"{prefix} does not look like a virtual environment (no single lib/python*/site-packages)")
    return candidates[0]


def editable_paths(prefix: Path) -> dict[Path, list[Path]]:
    """Directories outside ``prefix`` that ``.pth`` files of its site-packages add to ``sys.path``
    (editable installs), by ``.pth`` file; venv-pack's own test for editable packages."""
    result: dict[Path, list[Path]] = {}
    root = prefix.resolve()
    for pth in sorted(site_packages(prefix).glob("*.pth")):
        for line in pth.read_text(errors="replace").splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "import ", "import\t")):
                continue
            location = (pth.parent / line).resolve()
            if not location.is_relative_to(root):
                result.setdefault(pth, []).append(location)
    return result


def jobcluster_package_dir() -> Path:
    """The directory of the running jobcluster package."""
    return Path(jobcluster.__file__).resolve().parent


def fingerprint(prefix: Path, extra_package: Path | None = None) -> str:
    """A hex digest of what would be packed: see the module docstring."""
    digest = hashlib.sha256()
    digest.update(f"{FINGERPRINT_VERSION}\0{sys.version}\0{sys.platform}\0".encode())
    covered = _recorded_files(prefix)
    for relative, path in _files(prefix):
        if relative.endswith(".dist-info/RECORD") or relative not in covered:
            _hash_file(digest, relative, path)
    if extra_package is not None:
        for relative, path in _files(extra_package):
            _hash_file(digest, f"+{extra_package.name}/{relative}", path)
    return digest.hexdigest()


def _files(root: Path) -> list[tuple[str, Path]]:
    """Every file and symlink below ``root`` except compiled bytecode, as (posix relative path, path), sorted."""
    entries: list[tuple[str, Path]] = []
    top = str(root)
    for directory, dirs, files in os.walk(top):
        relative = directory[len(top) + 1 :]
        prefix = f"{relative}/" if relative else ""
        links = [d for d in dirs if os.path.islink(os.path.join(directory, d))]
        dirs[:] = [d for d in dirs if d != "__pycache__" and d not in links]
        entries.extend((prefix + name, Path(directory, name)) for name in (*files, *links))
    return sorted(entries)


def _recorded_files(prefix: Path) -> set[str]:
    """Prefix-relative paths whose sha256 pip recorded in a ``RECORD`` (their RECORD is hashed instead)."""
    sp = site_packages(prefix)
    sp_relative = sp.relative_to(prefix).as_posix()
    covered: set[str] = set()
    for record in sp.glob("*.dist-info/RECORD"):
        for line in record.read_text(errors="replace").splitlines():
            # RECORD is CSV (path,hash,size); paths with commas are quoted, and simply stay uncovered.
            path, _, rest = line.partition(",")
            if rest.startswith("sha256="):
                covered.add(posixpath.normpath(f"{sp_relative}/{path}"))
    return covered


def _hash_file(digest: Any, relative: str, path: Path) -> None:
    digest.update(relative.encode() + b"\0")
    if path.is_symlink():
        digest.update(b"->" + os.readlink(path).encode() + b"\0")
        return
    with open(path, "rb") as f:
        digest.update(hashlib.file_digest(f, "sha256").digest())


# -- packing -------------------------------------------------------------------


def pack_environment(
    prefix: Path | None = None,
    cache: Path | None = None,
    compress_level: int = COMPRESS_LEVEL,
    progress: Progress = _no_progress,
) -> PackedEnvironment:
    """The archive of the environment at ``prefix`` (default: this one), from the cache or packed now.

    Raises:
        PythonEnvironmentError: not a virtual environment, another editable package than jobcluster,
            or venv-pack failed.
    """
    prefix = (prefix or current_prefix()).absolute()
    cache = cache or cache_dir()
    package = jobcluster_package_dir()
    inside = package.is_relative_to(prefix.resolve())
    extra = None if inside else package
    foreign = {pth: dirs for pth, dirs in editable_paths(prefix).items() if any(d != package.parent for d in dirs)}
    if foreign:
        listing = "; ".join(f"{pth.name}: {', '.join(map(str, dirs))}" for pth, dirs in foreign.items())
        raise PythonEnvironmentError(
            f"The environment {prefix} has packages installed in editable mode (pip install -e), which cannot be shipped to "
            f"YARN ({listing}); install them normally, or set {YARN_PYTHON.key} to a Python prepared on every node."
        )
    started = time.monotonic()
    digest = fingerprint(prefix, extra)
    archive = cache / f"python-env-{digest[:32]}.tar.gz"
    if archive.is_file():
        _keep_recent(archive)
        return PackedEnvironment(archive, digest, packed=False, seconds=time.monotonic() - started)
    cache.mkdir(parents=True, exist_ok=True)
    progress(f"Packing the Python environment {prefix} for the YARN containers (once per environment) ...")
    partial = cache / f".{archive.name}.{uuid.uuid4().hex}.partial"
    try:
        with _packable_view(prefix, extra, cache) as view:
            venv_pack.pack(prefix=str(view), output=str(partial), format="tar.gz", compress_level=compress_level, force=True)
        os.chmod(partial, 0o644)
        os.replace(partial, archive)  # atomic: a concurrent client packing the same environment is harmless
    except venv_pack.VenvPackException as error:
        raise PythonEnvironmentError(f"venv-pack cannot pack {prefix}: {error}") from error
    except OSError as error:
        raise PythonEnvironmentError(f"cannot pack {prefix} into {archive}: {error}") from error
    finally:
        partial.unlink(missing_ok=True)
    seconds = time.monotonic() - started
    progress(f"Packed the Python environment: {archive.stat().st_size / (1 << 20):.0f} MiB in {seconds:.0f} s ({archive})")
    _keep_recent(archive)
    return PackedEnvironment(archive, digest, packed=True, seconds=seconds)


def _keep_recent(archive: Path, keep: int = CACHED_ARCHIVES) -> None:
    """Mark ``archive`` used now and remove all but the ``keep`` most recently used archives of its cache.

    Every change to the environment (a package installed, jobcluster upgraded)
    gives a new archive of a few hundred MiB; the ones not used lately go.
    """
    os.utime(archive)
    archives = sorted(archive.parent.glob("python-env-*.tar.gz"), key=lambda a: a.stat().st_mtime, reverse=True)
    for old in archives[keep:]:
        old.unlink(missing_ok=True)


@contextmanager
def _packable_view(prefix: Path, package: Path | None, cache: Path) -> Iterator[Path]:
    """``prefix`` itself, or, when jobcluster lives outside it (editable), a hard-linked copy of it in
    which the package sits in site-packages and the ``.pth`` that pointed at its source is gone."""
    if package is None:
        yield prefix
        return
    with tempfile.TemporaryDirectory(prefix="jobcluster-pyenv-", dir=_same_device_tmp(prefix, cache)) as tmp:
        view = Path(tmp) / prefix.name
        _link_tree(prefix, view)
        sp = site_packages(view)
        for pth, dirs in editable_paths(prefix).items():
            if dirs == [package.parent]:
                (sp / pth.name).unlink()
        target = sp / package.name
        if target.exists() or target.is_symlink():
            raise PythonEnvironmentError(f"{prefix} has both an installed and an editable {package.name}; uninstall one of them")
        _link_tree(package, target)
        yield view


def _same_device_tmp(prefix: Path, cache: Path) -> str | None:
    """A directory for the view on the environment's file system, so its files can be hard-linked."""
    for candidate in (cache, prefix.parent):
        try:
            candidate.mkdir(parents=True, exist_ok=True)
            if os.stat(candidate).st_dev == os.stat(prefix).st_dev and os.access(candidate, os.W_OK):
                return str(candidate)
        except OSError:
            continue
    return None


def _link_tree(source: Path, target: Path) -> None:
    """Copy a tree with hard links (a copy when linking is not possible), keeping symlinks as symlinks."""

    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, copy_function=link_or_copy)


# -- shipping ------------------------------------------------------------------


def ship_environment(
    paths: HdfsPaths, staging_base: str, packed: PackedEnvironment, progress: Progress = _no_progress
) -> ShippedEnvironment:
    """The packed environment on HDFS under ``<staging_base>/.jobcluster/python/``, uploaded unless a file of the
    same name and size is there already; described as an ARCHIVE, PUBLIC where HDFS permissions allow
    (``shared_files.py``).

    Raises:
        StagingError: HDFS refused or is unreachable.
    """
    started = time.monotonic()
    directory = shared_directory(staging_base, SHARED_DIR)
    remote = posixpath.join(directory, packed.name)
    size = packed.path.stat().st_size
    with hdfs_errors(f"cannot read the status of {paths.qualify(remote)}"):
        existing = paths.client.status(remote, strict=False)
    uploaded = not is_complete(existing, size)
    if uploaded:
        progress(f"Uploading the Python environment ({size / (1 << 20):.0f} MiB) to {paths.qualify(directory)} (once per environment) ...")
        if existing is not None:  # a file of that name but not of that size: an upload cut short before renames were atomic
            with hdfs_errors(f"cannot replace {paths.qualify(remote)}"):
                paths.client.delete(remote)
        upload_atomically(paths, packed.path, remote)
    resource = shared_resource(paths, remote, ENVIRONMENT_KEY, LocalResourceType.ARCHIVE)
    seconds = time.monotonic() - started
    if uploaded:
        progress(f"Uploaded the Python environment in {seconds:.0f} s")
    return ShippedEnvironment(resource, uploaded, seconds)


def container_python(
    python: str | None,
    paths: HdfsPaths,
    staging_base: str,
    progress: Progress = _no_progress,
) -> ContainerPython:
    """The containers' Python: ``python`` (``jobcluster.yarn.python``) when set, nothing shipped; else this
    client's environment, packed and uploaded as needed.

    Raises:
        PythonEnvironmentError: the environment cannot be packed.
        StagingError: HDFS refused or is unreachable.
    """
    if python:
        return ContainerPython(executable=python)
    packed = pack_environment(progress=progress)
    shipped = ship_environment(paths, staging_base, packed, progress=progress)
    return ContainerPython(executable=CONTAINER_PYTHON, resources=(shipped.resource,))
