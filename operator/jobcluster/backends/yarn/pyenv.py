"""The Python environment of the YARN containers: the client's own, packed in parts, uploaded once, cached by YARN.

The ApplicationMaster and the TaskExecutors run jobcluster and the user's
PySpark program, so their containers need a Python with jobcluster, pyspark
and whatever the program imports. By default the client ships the virtual
environment it runs in, with everything the user installed into it, the way
Spark documents for PySpark on YARN (``venv-pack``), but in three parts that
change at different rates (``pyenv_parts.py``): pyspark with its jars, the rest
of the environment (``environment``, so a container runs
``./environment/bin/python``), and jobcluster itself. Each part is an ARCHIVE
LocalResource named by its content, so a change of the user's packages ships
only the environment part again, an edit of jobcluster only jobcluster's, and
a new pyspark only pyspark's.

Three caches keep that cheap after the first job:

1. On the client: each part's archive is stored under
   ``$JOBCLUSTER_CACHE/python-envs/`` (default ``~/.cache/jobcluster``),
   named by a fingerprint of its content, and only packed when no archive of
   that fingerprint exists.
2. On HDFS: each archive is uploaded to ``<staging base>/.jobcluster/python/``
   under the same name, once; every later job registers the file that is
   already there (and marks it used: ``shared_files.py``, whose retention
   removes archives no job used for a while).
3. On the nodes: the files are registered PUBLIC when HDFS permissions allow
   it (world-readable, every ancestor world-executable; YARN's rule, see
   ``local_resources.py``), so each NodeManager downloads and unpacks them once
   for all applications (otherwise PRIVATE: once per user).

A fingerprint covers the content of every file of its part: a wheel-installed
file through the sha256 that pip recorded in its distribution's ``RECORD``,
every other file by hashing it, and the Python version (the environment part:
the interpreter's full version). Compiled ``__pycache__`` files are packed
but not fingerprinted (they derive from the sources).

The pyspark part is an uncompressed ``.tar``: its bytes are mostly jars,
compressed already, so gzip would cost time for little. The others are
``.tar.gz`` at :data:`COMPRESS_LEVEL`.

Limits, as for venv-pack itself: the archive links ``bin/python`` to the
client's interpreter, so every node needs the same Python at the same path
(a Python built into the same prefix on all machines, as cluster images
usually have); otherwise set ``python.executable`` to a Python installed
on the nodes, and nothing is shipped, or ship an interpreter with
``python.archives`` (``python_archives.py``), which then runs these parts. Only virtual environments (venv,
virtualenv) can be packed.

Editable installs: venv-pack refuses an environment with packages installed
in development mode (``pip install -e``), because their code lives outside
the environment. jobcluster itself is often installed that way while it is
developed; its part is packed from wherever its package directory is, and the
environment part is packed from a hard-linked copy of the environment without
the other parts and without the editable install's files. Any other editable
package is an error that says what to do.

Why one module of this size: packing, the client's cache and the upload are one
idea (the shipped environment), and each step needs the others' names and keys.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import sys
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import venv_pack

import jobcluster
from jobcluster.backends.yarn import pyenv_parts
from jobcluster.backends.yarn.config_options import PYTHON_EXECUTABLE
from jobcluster.backends.yarn.container_env import ENVIRONMENT_KEY, SKELETON_PYTHON
from jobcluster.backends.yarn.errors import PythonEnvironmentError
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor, LocalResourceType
from jobcluster.backends.yarn.pyenv_parts import JOBCLUSTER_KEY, PARTS_MODULE, PARTS_PTH, PYSPARK_KEY, PackagePart, Split
from jobcluster.backends.yarn.python_archives import PythonArchive, archive_members, archived_interpreter, check_interpreter, ship_archives
from jobcluster.backends.yarn.shared_files import is_complete, listing, shared_directory, shared_resources, upload_atomically
from jobcluster.backends.yarn.staging import HdfsPaths, hdfs_errors

CONTAINER_PYTHON = f"./{ENVIRONMENT_KEY}/bin/python"
"""The Python a container runs when the environment is shipped (relative to its working directory)."""

SHARED_DIR = "python"
"""Directory under ``<staging base>/.jobcluster/`` holding the shipped parts of every job."""

CACHED_ARCHIVES = 3
"""Packed archives of each part kept in the client's cache (the most recently used)."""

COMPRESS_LEVEL = 1
"""gzip level of the environment and jobcluster parts. Measured on the shared 2-core machine with the 656 MB
development venv packed whole: level 1 gives 386-405 MB in 38-54 s, level 4 (venv-pack's default) 393 MB in 83 s,
no compression 679 MB in 13 s; most of that was pyspark's jars, now an uncompressed part of their own."""

ARCHIVE_PREFIXES = ("python-env-", "pyspark-", "jobcluster-", "dist-")
"""How each kind of part's archive is named (then its name and version where it has them, and its fingerprint)."""

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
    container's working directory), the LocalResources that bring it and ``python.archives`` (empty when
    preinstalled), and ``archived``: the interpreter in an archive that runs the shipped environment
    (``container_env.python_skeleton``), or None."""

    executable: str
    resources: tuple[LocalResourceDescriptor, ...] = ()
    archived: str | None = None


@dataclass(frozen=True)
class PackedPart:
    """One part's archive in the client's cache: ``key`` in the container (``environment``,
    ``python-pyspark``, ``python-jobcluster``), ``path`` of the archive, its ``fingerprint``, and whether this
    call ``packed`` it (False: found in the cache) in ``seconds``."""

    key: str
    path: Path
    fingerprint: str
    packed: bool
    seconds: float

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class PackedEnvironment:
    """Every part of one environment, the environment part first."""

    parts: tuple[PackedPart, ...]

    @property
    def packed(self) -> tuple[str, ...]:
        """Keys of the parts packed by this call."""
        return tuple(p.key for p in self.parts if p.packed)

    def part(self, key: str) -> PackedPart | None:
        return next((p for p in self.parts if p.key == key), None)


@dataclass(frozen=True)
class ShippedEnvironment:
    """The parts on HDFS as LocalResources (the environment part first), the keys of those this call
    ``uploaded``, and the ``seconds`` it took."""

    resources: tuple[LocalResourceDescriptor, ...]
    uploaded: tuple[str, ...]
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
            f"YARN; run jobcluster from a venv, or set {PYTHON_EXECUTABLE.key} to a Python with jobcluster installed on every node."
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


def split_environment(prefix: Path, package: Path | None = None) -> Split:
    """The parts of the environment at ``prefix`` (``package``: jobcluster's package directory, default: the
    running one).

    Raises:
        PythonEnvironmentError: not a virtual environment, or another package than jobcluster is editable.
    """
    package = package or jobcluster_package_dir()
    sp = site_packages(prefix)
    parts = pyenv_parts.split(sp, package.name)
    foreign = {
        pth: dirs
        for pth, dirs in editable_paths(prefix).items()
        if pth.name not in parts.jobcluster and any(d != package.parent for d in dirs)
    }
    if foreign:
        listing = "; ".join(f"{pth.name}: {', '.join(map(str, dirs))}" for pth, dirs in foreign.items())
        raise PythonEnvironmentError(
            f"The environment {prefix} has packages installed in editable mode (pip install -e), which cannot be shipped to "
            f"YARN ({listing}); install them normally, or set {PYTHON_EXECUTABLE.key} to a Python prepared on every node."
        )
    return parts


# -- packing -------------------------------------------------------------------


def pack_environment(
    prefix: Path | None = None,
    cache: Path | None = None,
    compress_level: int = COMPRESS_LEVEL,
    progress: Progress = _no_progress,
) -> PackedEnvironment:
    """The archives of the parts of the environment at ``prefix`` (default: this one), each from the cache or
    packed now; no pyspark part when pyspark is not installed in it.

    Raises:
        PythonEnvironmentError: not a virtual environment, another editable package than jobcluster,
            or packing failed.
    """
    prefix = (prefix or current_prefix()).absolute()
    cache = cache or cache_dir()
    package = jobcluster_package_dir()
    parts = split_environment(prefix, package)
    started = time.monotonic()
    announced: list[str] = []

    def announce(key: str) -> None:
        if not announced:
            progress(f"Packing the parts of the Python environment {prefix} that are new, for the YARN containers ...")
        announced.append(key)

    packed = [
        _cached_or_packed(
            ENVIRONMENT_KEY,
            cache,
            lambda: pyenv_parts.environment_fingerprint(prefix, parts),
            lambda digest: f"python-env-{digest[:32]}.tar.gz",
            lambda target: _pack_venv(prefix, parts, cache, target, compress_level),
            announce,
        )
    ]
    version = pyenv_parts.pyspark_version(parts.site_packages)
    if version is not None:
        packed.append(
            _cached_or_packed(
                PYSPARK_KEY,
                cache,
                lambda: pyenv_parts.pyspark_fingerprint(parts),
                lambda digest: f"pyspark-{version}-{pyenv_parts.python_tag()}-{digest[:24]}.tar",
                lambda target: _pack_tree(target, [(parts.site_packages / e, e) for e in sorted(parts.pyspark)], None),
                announce,
            )
        )
    for package_part in parts.packages:
        packed.append(_package_part(parts, package_part, cache, compress_level, announce))
    editable = {e for e in parts.jobcluster if e.startswith("__editable__")}
    jobcluster_sources = [(package, package.name)] + [
        (parts.site_packages / e, e) for e in sorted(parts.jobcluster - editable - {package.name})
    ]
    packed.append(
        _cached_or_packed(
            JOBCLUSTER_KEY,
            cache,
            lambda: pyenv_parts.jobcluster_fingerprint(parts, package),
            lambda digest: f"jobcluster-{jobcluster.__version__}-{digest[:24]}.tar.gz",
            lambda target: _pack_tree(target, jobcluster_sources, compress_level),
            announce,
        )
    )
    result = PackedEnvironment(tuple(packed))
    if announced:
        size = sum(p.path.stat().st_size for p in packed if p.packed)
        progress(
            f"Packed {len(announced)} part(s) of the Python environment ({', '.join(announced)}): {size / (1 << 20):.0f} MiB "
            f"in {time.monotonic() - started:.0f} s, into {cache}"
        )
    return result


def _package_part(parts: Split, package: PackagePart, cache: Path, compress_level: int, announce: Callable[[str], None]) -> PackedPart:
    return _cached_or_packed(
        package.key,
        cache,
        lambda: pyenv_parts.package_fingerprint(parts, package),
        lambda digest: f"dist-{package.name.replace('-', '_')}-{package.version}-{pyenv_parts.python_tag()}-{digest[:24]}.tar.gz",
        lambda target: _pack_tree(target, [(parts.site_packages / e, e) for e in sorted(package.entries)], compress_level),
        announce,
    )


def _cached_or_packed(
    key: str,
    cache: Path,
    digest_of: Callable[[], str],
    name_of: Callable[[str], str],
    pack: Callable[[Path], None],
    announce: Callable[[str], None],
) -> PackedPart:
    """The part ``key`` from the cache when an archive of its fingerprint is there, else packed into it by ``pack``
    (through a temporary name: a concurrent client packing the same part is harmless), ``announce``d first."""
    started = time.monotonic()
    digest = digest_of()
    archive = cache / name_of(digest)
    if archive.is_file():
        _keep_recent(archive)
        return PackedPart(key, archive, digest, packed=False, seconds=time.monotonic() - started)
    cache.mkdir(parents=True, exist_ok=True)
    announce(key)
    partial = cache / f".{archive.name}.{uuid.uuid4().hex}.partial"
    try:
        pack(partial)
        os.chmod(partial, 0o644)
        os.replace(partial, archive)
    except venv_pack.VenvPackException as error:
        raise PythonEnvironmentError(f"venv-pack cannot pack the Python environment: {error}") from error
    except (OSError, tarfile.TarError) as error:
        raise PythonEnvironmentError(f"cannot pack the Python environment's part {key} into {archive}: {error}") from error
    finally:
        partial.unlink(missing_ok=True)
    seconds = time.monotonic() - started
    _keep_recent(archive)
    return PackedPart(key, archive, digest, packed=True, seconds=seconds)


def _pack_tree(target: Path, sources: list[tuple[Path, str]], compress_level: int | None) -> None:
    """A tar (gzip at ``compress_level``; None: uncompressed) of each (path, name in the archive) with
    everything below it, symlinks kept, readable by everyone (a PUBLIC archive is unpacked for all users)."""

    def readable(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mode |= 0o755 if info.isdir() or info.mode & 0o100 else 0o644
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    mode, options = ("w", {}) if compress_level is None else ("w:gz", {"compresslevel": compress_level})
    with tarfile.open(target, mode, **options) as archive:  # type: ignore[call-overload]
        for path, name in sources:
            archive.add(path, arcname=name, recursive=True, filter=readable)


def _pack_venv(prefix: Path, parts: Split, cache: Path, target: Path, compress_level: int) -> None:
    """venv-pack the environment part: a hard-linked copy of ``prefix`` without the other parts' entries of
    site-packages, with the ``.pth`` and module that link them."""
    with _environment_view(prefix, parts, cache) as view:
        venv_pack.pack(prefix=str(view), output=str(target), format="tar.gz", compress_level=compress_level, force=True)


def _keep_recent(archive: Path, keep: int = CACHED_ARCHIVES) -> None:
    """Mark ``archive`` used now and remove all but the ``keep`` most recently used archives of its kind
    (``python-env-``, ``pyspark-``, ``jobcluster-``, ``dist-<name>-``) from its cache.

    Every change to a part (a package installed, jobcluster upgraded)
    gives a new archive; the ones not used lately go.
    """
    os.utime(archive)
    kind = next((p for p in ARCHIVE_PREFIXES if archive.name.startswith(p)), None)
    if kind is None:
        return
    if kind == "dist-":  # one distribution's archives: dist-<name>-<version>-...
        kind = "-".join(archive.name.split("-")[:2]) + "-"
    archives = sorted(
        (a for a in archive.parent.glob(f"{kind}*") if not a.name.startswith(".")), key=lambda a: a.stat().st_mtime, reverse=True
    )
    for old in archives[keep:]:
        old.unlink(missing_ok=True)


@contextmanager
def _environment_view(prefix: Path, parts: Split, cache: Path) -> Iterator[Path]:
    """A hard-linked copy of ``prefix`` in which site-packages lacks the pyspark and jobcluster parts (and an
    editable jobcluster's ``.pth``) and has :data:`PARTS_PTH` and its module."""
    sp = str(parts.site_packages)

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if n in parts.excluded} if directory == sp else set()

    with tempfile.TemporaryDirectory(prefix="jobcluster-pyenv-", dir=_same_device_tmp(prefix, cache)) as tmp:
        view = Path(tmp) / prefix.name
        _link_tree(prefix, view, ignore)
        (site_packages(view) / PARTS_PTH).write_text(pyenv_parts.parts_pth_text())
        (site_packages(view) / f"{PARTS_MODULE}.py").write_text(pyenv_parts.parts_module_text())
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


def _link_tree(source: Path, target: Path, ignore: Callable[[str, list[str]], set[str]] | None = None) -> None:
    """Copy a tree with hard links (a copy when linking is not possible), keeping symlinks as symlinks."""

    def link_or_copy(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, copy_function=link_or_copy, ignore=ignore)


# -- shipping ------------------------------------------------------------------


def ship_environment(
    paths: HdfsPaths, staging_base: str, packed: PackedEnvironment, progress: Progress = _no_progress
) -> ShippedEnvironment:
    """Every part of ``packed`` on HDFS under ``<staging_base>/.jobcluster/python/``, each uploaded unless a file of
    the same name and size is there already; ARCHIVEs named by the parts' keys, PUBLIC where HDFS permissions allow
    (``shared_files.py``).

    Raises:
        StagingError: HDFS refused or is unreachable.
    """
    started = time.monotonic()
    directory = shared_directory(staging_base, SHARED_DIR)
    existing = listing(paths, directory)
    missing = [part for part in packed.parts if not is_complete(existing.get(part.name), part.path.stat().st_size)]
    if missing:
        size = sum(part.path.stat().st_size for part in missing)
        keys = ", ".join(part.key for part in missing)
        target = paths.qualify(directory)
        progress(f"Uploading {len(missing)} part(s) of the Python environment ({keys}; {size / (1 << 20):.0f} MiB) to {target} ...")
    uploaded = []
    for part in missing:
        remote = posixpath.join(directory, part.name)
        if part.name in existing:  # a file of that name but not of that size: an upload cut short before renames were atomic
            with hdfs_errors(f"cannot replace {paths.qualify(remote)}"):
                paths.client.delete(remote)
        upload_atomically(paths, part.path, remote)
        uploaded.append(part.key)
    resources = shared_resources(paths, directory, [(part.name, part.key) for part in packed.parts], LocalResourceType.ARCHIVE)
    seconds = time.monotonic() - started
    if uploaded:
        progress(f"Uploaded the Python environment's parts in {seconds:.0f} s")
    return ShippedEnvironment(resources, tuple(uploaded), seconds)


def container_python(
    python: str | None,
    paths: HdfsPaths,
    staging_base: str,
    progress: Progress = _no_progress,
    archives: tuple[PythonArchive, ...] = (),
) -> ContainerPython:
    """The containers' Python, with ``archives`` (``python.archives``) shipped in every case: ``python``
    (``python.executable``) when it is a Python on the nodes, nothing else shipped; else this client's environment,
    packed and uploaded as needed, run by ``python`` when it points into one of the archives (checked first when
    that archive is local: ``python_archives.check_interpreter``), else by the client's interpreter.

    Raises:
        YarnConfigurationError: ``python`` is relative but points into none of the archives.
        PythonEnvironmentError: the environment cannot be packed, or an archive read or lacks its interpreter.
        StagingError: HDFS refused or is unreachable.
    """
    archive = archived_interpreter(python, archives) if python else None
    if archive is not None and not archive.remote:
        assert python is not None
        check_interpreter(archive_members(archive.local_path), archive, python)
    shipped_archives = ship_archives(paths, staging_base, archives, progress)
    if python and archive is None:
        return ContainerPython(executable=python, resources=shipped_archives)
    packed = pack_environment(progress=progress)
    shipped = ship_environment(paths, staging_base, packed, progress=progress)
    resources = (*shipped.resources, *shipped_archives)
    if archive is None:
        return ContainerPython(executable=CONTAINER_PYTHON, resources=resources)
    return ContainerPython(executable=SKELETON_PYTHON, resources=resources, archived=python)
