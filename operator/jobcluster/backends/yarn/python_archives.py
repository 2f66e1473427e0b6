"""PyFlink's ``python.archives`` on YARN: archives unpacked into every container, one of which may bring the Python.

A node that lacks the client's Python (a laptop's pyenv or conda, macOS,
another Debian) cannot run the shipped environment, whose ``bin/python`` links
to the client's interpreter (``pyenv.py``). PyFlink's answer, kept here with its
keys and format: ``python.archives`` ships archives, each unpacked into every
container's working directory under a name, and ``python.executable`` may name
an interpreter inside one of them by a relative path::

    -D python.archives=cpython-3.11.tar.gz#python -D python.executable=python/bin/python3.11

Then the containers run that interpreter with the client's environment: the
environment's parts are still shipped (jobcluster, pyspark, whatever the user
installed), and each container's launch line first makes a virtual
environment's skeleton in its working directory (``container_env.py``), whose
``home`` is the archive's interpreter and whose ``lib`` is the shipped
environment's. So the archive needs only a relocatable CPython of the client's
``X.Y`` (its interpreter and standard library, such as python-build-standalone's
``install_only`` builds); its own site-packages are not used.

Each entry is ``path[#name]`` (comma-separated): a local file (a path or a
``file://`` URI), uploaded once under a name that says its content and shared by
later jobs like the environment's parts (``shared_files.py``); or a file of the
cluster's default file system (``hdfs://...``), registered where it is. Without
``#name`` the archive's file name is its name, as in PyFlink. YARN unpacks
``.tar.gz``, ``.tgz``, ``.tar``, ``.zip`` and ``.jar``; a tar keeps the
interpreter's symbolic links and modes, so it is the format to use.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from jobcluster.backends.yarn.config_options import PYTHON_ARCHIVES, PYTHON_EXECUTABLE
from jobcluster.backends.yarn.container_env import ENVIRONMENT_KEY
from jobcluster.backends.yarn.dashboard_files import DASHBOARD_KEY
from jobcluster.backends.yarn.errors import PythonEnvironmentError, StagingError, YarnConfigurationError
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor, LocalResourceType, visibility_for
from jobcluster.backends.yarn.pyenv_parts import JOBCLUSTER_KEY, PACKAGES_KEY, PYSPARK_KEY
from jobcluster.backends.yarn.shared_files import ancestors, is_complete, shared_directory, shared_resource, upload_atomically
from jobcluster.backends.yarn.staging import HdfsPaths, hdfs_errors
from jobcluster.runtime.entrypoint import layout

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".jar")
"""What a NodeManager unpacks (Hadoop's ``FileUtil.unpack`` / ``RunJar.unJar``)."""

SHARED_DIR = "python"
"""Directory under ``<staging base>/.jobcluster/`` holding uploaded archives (beside the environment's parts)."""

RESERVED_NAMES = frozenset(
    {
        ENVIRONMENT_KEY,
        PYSPARK_KEY,
        JOBCLUSTER_KEY,
        PACKAGES_KEY,
        DASHBOARD_KEY,
        layout.ARTIFACTS_DIR,
        layout.CONFIG_FILE,
        layout.JOB_GRAPH_FILE,
        layout.SECRET_FILE,
        layout.REST_INFO_FILE,
        layout.SCRATCH_DIR,
    }
)
"""What else is in a container's working directory, which an archive's name may not shadow."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

Progress = Callable[[str], None]


def _no_progress(_message: str) -> None:
    pass


@dataclass(frozen=True)
class PythonArchive:
    """One entry of ``python.archives``: ``source`` as given (a local path, ``file://`` or ``hdfs://`` URI) and
    ``name``, the directory it is unpacked into in each container's working directory."""

    source: str
    name: str

    @property
    def remote(self) -> bool:
        """Whether ``source`` is on the cluster's file system rather than the client's."""
        return urlsplit(self.source).scheme not in ("", "file")

    @property
    def local_path(self) -> Path:
        """The client's file (only for a local ``source``)."""
        parts = urlsplit(self.source)
        return Path(parts.path if parts.scheme == "file" else self.source).expanduser()


def parse_archives(text: str | None) -> tuple[PythonArchive, ...]:
    """``python.archives`` as its entries, in order (None or blank: none).

    Raises:
        YarnConfigurationError: an entry is empty, not an archive YARN unpacks, on a file system other than the
            client's or HDFS, or two entries have the same name; the message names the key.
    """
    archives: list[PythonArchive] = []
    for entry in (e.strip() for e in (text or "").split(",")):
        if not entry:
            continue
        source, _, name = entry.partition("#")
        source = source.strip()
        file_name = posixpath.basename(urlsplit(source).path)
        name = name.strip() or file_name
        key = PYTHON_ARCHIVES.key
        if not file_name.lower().endswith(ARCHIVE_SUFFIXES):
            raise YarnConfigurationError(f"{key}: {source!r} is not an archive YARN unpacks (one of {', '.join(ARCHIVE_SUFFIXES)}).")
        if urlsplit(source).scheme not in ("", "file", "hdfs"):
            raise YarnConfigurationError(
                f"{key}: {source!r} must be a file of this machine or of the cluster's HDFS (hdfs://); copy it to one of them."
            )
        if not _NAME.fullmatch(name):
            raise YarnConfigurationError(
                f"{key}: {name!r} cannot name a directory in the containers (letters, digits, '.', '_', '-'); write {source}#<name>."
            )
        if name in RESERVED_NAMES:
            raise YarnConfigurationError(f"{key}: {name!r} is a name jobcluster uses in the containers; write {source}#<another name>.")
        if any(a.name == name for a in archives):
            raise YarnConfigurationError(f"{key}: two archives are unpacked into {name!r}; give each its own #<name>.")
        archives.append(PythonArchive(source, name))
    return tuple(archives)


def archived_interpreter(executable: str, archives: tuple[PythonArchive, ...], key: str = PYTHON_EXECUTABLE.key) -> PythonArchive | None:
    """The archive a relative ``python.executable`` (written as ``key``) points into (its first path component is the
    archive's name); None for an absolute path (a Python installed on the nodes).

    Raises:
        YarnConfigurationError: a relative path into none of ``archives``.
    """
    if posixpath.isabs(executable):
        return None
    first = posixpath.normpath(executable).split("/", 1)[0]
    archive = next((a for a in archives if a.name == first), None)
    if archive is None or posixpath.normpath(executable) == first:
        names = ", ".join(a.name for a in archives) or "none"
        raise YarnConfigurationError(
            f"{key} {executable!r} must be an absolute path of a Python present on every YARN node, or a "
            f"path into one of the {PYTHON_ARCHIVES.key} (<name>/bin/python3; names: {names})."
        )
    return archive


# -- checking a local archive --------------------------------------------------


def archive_members(path: Path) -> set[str]:
    """The normalized paths of the files, links and directories in the archive at ``path``.

    Raises:
        PythonEnvironmentError: not readable as a tar or zip archive.
    """
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        else:
            with tarfile.open(path) as archive:
                names = archive.getnames()
    except (OSError, tarfile.TarError, zipfile.BadZipFile) as error:
        raise PythonEnvironmentError(f"cannot read the archive {path}: {error}") from error
    return {posixpath.normpath(n).lstrip("/") for n in names if posixpath.normpath(n) not in (".", "")}


def check_interpreter(members: set[str], archive: PythonArchive, executable: str, version: str | None = None) -> None:
    """That ``executable`` (``<archive name>/...``) is in the archive whose ``members`` are given, next to the standard
    library of Python ``version`` (``X.Y``, default: the client's), as Python looks for it: ``<root>/lib/pythonX.Y/os.py``
    where the interpreter is ``<root>/bin/<name>``.

    Raises:
        PythonEnvironmentError: it is not there; the message lists the interpreters the archive holds.
    """
    version = version or f"{sys.version_info.major}.{sys.version_info.minor}"
    inside = posixpath.normpath(executable).split("/", 1)[1]
    found = sorted(m for m in members if re.fullmatch(r"(?:.*/)?bin/python3(?:\.\d+)?", m))
    if inside not in members:
        hint = ", ".join(f"{archive.name}/{m}" for m in found[:4]) or "none"
        raise PythonEnvironmentError(
            f"{PYTHON_EXECUTABLE.key} {executable!r} is not in {archive.source} (unpacked into {archive.name}/); the "
            f"interpreters it holds: {hint}."
        )
    root = posixpath.dirname(posixpath.dirname(inside))
    landmark = posixpath.join(root, "lib", f"python{version}", "os.py")
    if landmark not in members:
        libraries = sorted({m.split("/")[-2] for m in members if re.fullmatch(r"(?:.*/)?lib/python3\.\d+/os\.py", m)})
        raise PythonEnvironmentError(
            f"{archive.source} holds no standard library of Python {version} beside {executable} (no "
            f"{archive.name}/{landmark}; found: {', '.join(libraries) or 'none'}). The containers' interpreter must be the "
            f"client's Python {version}, whose environment is shipped with it."
        )


# -- shipping ------------------------------------------------------------------


def shipped_name(path: Path) -> str:
    """The name of a local archive on HDFS: its file name's stem, a digest of its content, its suffix
    (``cpython-3.11-<24 hex>.tar.gz``).

    Raises:
        OSError: the file cannot be read.
    """
    suffix = next(s for s in ARCHIVE_SUFFIXES if path.name.lower().endswith(s))
    stem = path.name[: -len(suffix)]
    with open(path, "rb") as data:
        digest = hashlib.file_digest(data, "sha256").hexdigest()
    return f"archive-{stem}-{digest[:24]}{path.name[-len(suffix) :]}"


def ship_archives(
    paths: HdfsPaths, staging_base: str, archives: tuple[PythonArchive, ...], progress: Progress = _no_progress
) -> tuple[LocalResourceDescriptor, ...]:
    """Each archive as an ARCHIVE LocalResource named by its ``name``: a local one uploaded once to
    ``<staging_base>/.jobcluster/python/`` (unless a file of its content is there), an HDFS one registered where it is;
    PUBLIC where HDFS permissions allow.

    Raises:
        PythonEnvironmentError: a local archive cannot be read.
        StagingError: HDFS refused or is unreachable, or an HDFS archive is not a file.
    """
    return tuple(_remote(paths, a) if a.remote else _uploaded(paths, staging_base, a, progress) for a in archives)


def _uploaded(paths: HdfsPaths, staging_base: str, archive: PythonArchive, progress: Progress) -> LocalResourceDescriptor:
    local = archive.local_path
    try:
        name = shipped_name(local)
    except OSError as error:
        raise PythonEnvironmentError(f"cannot read {PYTHON_ARCHIVES.key} {archive.source}: {error}") from error
    remote = posixpath.join(shared_directory(staging_base, SHARED_DIR), name)
    with hdfs_errors(f"cannot read the status of {paths.qualify(remote)}"):
        present = is_complete(paths.client.status(remote, strict=False), local.stat().st_size)
    if not present:
        progress(f"Uploading {local} ({local.stat().st_size / (1 << 20):.0f} MiB) to {paths.qualify(remote)} (once per content) ...")
        upload_atomically(paths, local, remote)
    return shared_resource(paths, remote, archive.name, LocalResourceType.ARCHIVE)


def _remote(paths: HdfsPaths, archive: PythonArchive) -> LocalResourceDescriptor:
    parts = urlsplit(archive.source)
    fs = urlsplit(paths.default_fs)
    if parts.netloc and parts.netloc != fs.netloc:
        raise StagingError(f"{PYTHON_ARCHIVES.key} {archive.source} is not on the cluster's file system {paths.default_fs}")
    path = posixpath.normpath(parts.path)
    with hdfs_errors(f"cannot read the status of {paths.qualify(path)}"):
        status = paths.client.status(path)
        permissions = [paths.client.status(p)["permission"] for p in ancestors(posixpath.dirname(path))]
    if status["type"] != "FILE":
        raise StagingError(f"{PYTHON_ARCHIVES.key} {archive.source} is a {status['type'].lower()}, not an archive")
    return LocalResourceDescriptor(
        key=archive.name,
        path=paths.qualify(path),
        size=int(status["length"]),
        modification_time=int(status["modificationTime"]),
        type=LocalResourceType.ARCHIVE,
        visibility=visibility_for(status["permission"], permissions),
    )
