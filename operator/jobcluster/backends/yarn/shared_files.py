"""Files on HDFS that every job of a user shares: uploaded once under a name that says their content, cached by YARN.

What is the same for many jobs (the packed Python environment, ``pyenv.py``; Flink's web dashboard,
``dashboard_files.py``) is not staged per application but kept in a directory of its own under
``<staging base>/.jobcluster/`` (mode 755), named by a digest of its content: a later job finds the file
there and registers it again, and YARN, seeing the same path and timestamp, reuses the copy its NodeManagers
localized. The file is written world-readable, so that it is a PUBLIC LocalResource where the directories
above it let everyone through (``local_resources.visibility_for``): each NodeManager then downloads it once
for all applications of all users.

An upload goes to a temporary name first and is renamed: a reader never sees a partial file, and of two
clients uploading the same content at once, the one whose rename finds the file there keeps that one.

Every job that registers a shared file marks it used by setting its access time (never its modification
time, which YARN compares with the registered one): ``shared_retention.py`` removes the files no job used
for a while.
"""

from __future__ import annotations

import logging
import posixpath
import time
import uuid
from pathlib import Path
from typing import Any

from hdfs.util import HdfsError

from jobcluster.backends.yarn.errors import StagingError
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor, LocalResourceType, visibility_for
from jobcluster.backends.yarn.staging import STAGING_ROOT, HdfsPaths, hdfs_errors

log = logging.getLogger(__name__)

SHARED_PERMISSION = "644"
"""A shared file: readable by everyone (a PUBLIC LocalResource needs it)."""


def shared_directory(staging_base: str, name: str) -> str:
    """``<staging_base>/.jobcluster/<name>``: where the shared files of one kind live."""
    return posixpath.join(staging_base, STAGING_ROOT, name)


def is_complete(status: dict[str, Any] | None, size: int | None = None) -> bool:
    """Whether WebHDFS's ``status`` is a file, of ``size`` bytes when given."""
    return status is not None and status["type"] == "FILE" and (size is None or int(status["length"]) == size)


def upload_atomically(paths: HdfsPaths, local: Path, remote: str) -> None:
    """Upload ``local`` to the HDFS path ``remote`` (mode :data:`SHARED_PERMISSION`) through a temporary name in the
    same directory, creating the directory and ``.jobcluster`` (755) when missing; no temporary file is left.

    Raises:
        StagingError: HDFS refused or is unreachable.
    """
    client = paths.client
    size = local.stat().st_size
    for parent in ancestors(posixpath.dirname(remote))[-2:]:  # .jobcluster and the kind's directory: traversable by everyone
        with hdfs_errors(f"cannot read the status of {paths.qualify(parent)}"):
            exists = client.status(parent, strict=False) is not None
        if not exists:
            paths.ensure_directory(parent, "755")
    partial = f"{remote}.{uuid.uuid4().hex}.partial"
    try:
        with hdfs_errors(f"cannot upload {local} to {paths.qualify(remote)}"), open(local, "rb") as data:
            client.write(partial, data=data, overwrite=True, permission=SHARED_PERMISSION)
        with hdfs_errors(f"cannot rename {paths.qualify(partial)} to {paths.qualify(remote)}"):
            try:
                client.rename(partial, remote)
            except HdfsError:
                if not is_complete(client.status(remote, strict=False), size):
                    raise
    finally:
        with hdfs_errors(f"cannot remove {paths.qualify(partial)}"):
            client.delete(partial)


def ancestors(path: str) -> list[str]:
    """``/a/b/c`` → ``["/", "/a", "/a/b", "/a/b/c"]``."""
    parts = [p for p in path.split("/") if p]
    return ["/"] + ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def shared_resource(paths: HdfsPaths, remote: str, key: str, type: LocalResourceType) -> LocalResourceDescriptor:
    """The shared file ``remote`` as a LocalResource named ``key``: PUBLIC when HDFS permissions allow, else PRIVATE;
    marked used (:func:`mark_used`).

    Raises:
        StagingError: HDFS refused or is unreachable, or ``remote`` is not a file.
    """
    (resource,) = shared_resources(paths, posixpath.dirname(remote), [(posixpath.basename(remote), key)], type)
    return resource


def shared_resources(
    paths: HdfsPaths, directory: str, files: list[tuple[str, str]], type: LocalResourceType
) -> tuple[LocalResourceDescriptor, ...]:
    """The shared files (name in ``directory``, key) as LocalResources, each marked used (:func:`mark_used`): one
    listing of ``directory`` and one look at its ancestors' permissions for all of them, whatever their number.

    Raises:
        StagingError: HDFS refused or is unreachable, or one of them is not a file.
    """
    for name, _ in files:
        mark_used(paths, posixpath.join(directory, name))
    with hdfs_errors(f"cannot read the permissions of {paths.qualify(directory)}"):
        permissions = [paths.client.status(p)["permission"] for p in ancestors(directory)]
    statuses = listing(paths, directory)
    resources = []
    for name, key in files:
        status = statuses.get(name)
        if status is None or not is_complete(status):
            raise StagingError(f"{paths.qualify(posixpath.join(directory, name))} is not a file on HDFS")
        resources.append(
            LocalResourceDescriptor(
                key=key,
                path=paths.qualify(posixpath.join(directory, name)),
                size=int(status["length"]),
                modification_time=int(status["modificationTime"]),
                type=type,
                visibility=visibility_for(status["permission"], permissions),
            )
        )
    return tuple(resources)


def listing(paths: HdfsPaths, directory: str) -> dict[str, dict[str, Any]]:
    """WebHDFS's status of every entry of ``directory``, by name; empty when it does not exist.

    Raises:
        StagingError: HDFS refused or is unreachable.
    """
    with hdfs_errors(f"cannot list {paths.qualify(directory)}"):
        if paths.client.status(directory, strict=False) is None:
            return {}
        return dict(paths.client.list(directory, status=True))


def mark_used(paths: HdfsPaths, remote: str, now_ms: int | None = None) -> bool:
    """Set the access time of the shared file ``remote`` to now (milliseconds since the epoch), which is what
    retention reads as its last use; False, and a log line, when HDFS keeps no access times
    (``dfs.namenode.accesstime.precision`` = 0: then nothing is ever pruned) or refuses."""
    try:
        paths.client.set_times(remote, access_time=int(time.time() * 1000) if now_ms is None else now_ms)
    except HdfsError as error:
        log.info("cannot mark %s used (its access time): %s", paths.qualify(remote), error)
        return False
    return True
