"""Savepoints as the client sees them before it deploys anything: there, and a savepoint.

Why on the client: a job started from a savepoint that is missing, or from a
directory that is not one, must be refused before a cluster is deployed for
it. The rules and their words are here (:func:`read_savepoint`,
:func:`dispose_savepoint`); the file system they read is a
:class:`SavepointFileSystem`, which the target's ClusterDescriptor picks
(``ClusterDescriptor.read_savepoint``): this machine's for the ``local``
target (:class:`LocalFileSystem`, by path or ``file:`` URI), HDFS through
WebHDFS for ``yarn-application`` (a backend's client library, which this layer
may not import). Elsewhere (on Kubernetes any path is the pods', e.g. on a
volume their pod template mounts) the job's driver reads the savepoint when
its first query starts, which fails the job with the same words.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Literal, Protocol
from urllib.parse import urlsplit

from jobcluster.spark.checkpoints import SAVEPOINT_METADATA_FILE, SavepointError, SavepointMetadata, parse_savepoint_metadata

#: What is at a path: a directory, a file, or nothing (None).
EntryKind = Literal["directory", "file"]


class SavepointFileSystem(Protocol):
    """The few operations the client needs on the file system that holds a savepoint.

    ``uri``: the path or URI as the user gave it. Each method raises OSError
    (a subclass, or one wrapping the file system's own error) when the file
    system cannot answer; the callers below turn it into SavepointError.
    """

    def kind(self, uri: str) -> EntryKind | None:
        """``"directory"``, ``"file"``, or None when nothing is at ``uri``."""
        ...

    def read_text(self, uri: str) -> str:
        """The whole file at ``uri`` as UTF-8 text."""
        ...

    def delete(self, uri: str) -> None:
        """Delete the directory ``uri`` and everything below it."""
        ...


def local_path(uri: str) -> Path | None:
    """The path of ``uri`` on this machine (a plain path, ``file:/x``, ``file:///x``); None for another scheme."""
    parts = urlsplit(uri)
    if parts.scheme in ("", "file") and not parts.netloc:
        return Path(parts.path if parts.scheme else uri)
    return None


class LocalFileSystem:
    """This machine's file system, for paths and ``file:`` URIs (:func:`local_path`); ValueError for another URI."""

    @staticmethod
    def _path(uri: str) -> Path:
        path = local_path(uri)
        if path is None:
            raise ValueError(f"{uri} is not on this machine's file system")
        return path

    def kind(self, uri: str) -> EntryKind | None:
        path = self._path(uri)
        if not path.exists():
            return None
        return "directory" if path.is_dir() else "file"

    def read_text(self, uri: str) -> str:
        return self._path(uri).read_text(encoding="utf-8")

    def delete(self, uri: str) -> None:
        shutil.rmtree(self._path(uri))


def _metadata_uri(uri: str) -> str:
    return f"{uri.rstrip('/')}/{SAVEPOINT_METADATA_FILE}"


def read_savepoint(uri: str, files: SavepointFileSystem) -> SavepointMetadata:
    """The metadata of the savepoint at ``uri``, read on ``files``.

    Raises:
        SavepointError: it does not exist, is not a savepoint (no ``_metadata``
            file in a directory), its metadata is not jobcluster's, or the file
            system cannot be read.
    """
    try:
        kind = files.kind(uri)
        if kind is None:
            raise SavepointError(f"savepoint {uri} does not exist")
        if kind != "directory" or files.kind(_metadata_uri(uri)) != "file":
            raise SavepointError(
                f"{uri} is not a savepoint: it has no {SAVEPOINT_METADATA_FILE} file (a savepoint is the directory that has one)"
            )
        text = files.read_text(_metadata_uri(uri))
    except OSError as exc:
        raise SavepointError(f"cannot read savepoint {uri}: {exc}") from exc
    return parse_savepoint_metadata(text, uri)


def dispose_savepoint(uri: str, files: SavepointFileSystem) -> None:
    """Delete the savepoint at ``uri`` on ``files``; SavepointError (nothing deleted) when it is not a savepoint
    (:func:`read_savepoint`), or the file system refuses."""
    read_savepoint(uri, files)
    try:
        files.delete(uri)
    except OSError as exc:
        raise SavepointError(f"cannot delete savepoint {uri}: {exc}") from exc


def read_local_savepoint(uri: str) -> SavepointMetadata | None:
    """The metadata of the savepoint at ``uri`` on this machine; None when ``uri`` is not on this machine's file system.

    Raises SavepointError when it does not exist or is not a savepoint.
    """
    if local_path(uri) is None:
        return None
    return read_savepoint(uri, LocalFileSystem())


def dispose_local_savepoint(uri: str) -> None:
    """Delete the savepoint at ``uri`` on this machine; SavepointError (nothing deleted) when it is not a savepoint or not local."""
    if local_path(uri) is None:
        raise SavepointError(
            f"{uri} is not on this machine's file system: dispose of it through the running job's cluster "
            "(POST /savepoint-disposal) or with the tools of its file system"
        )
    dispose_savepoint(uri, LocalFileSystem())
