"""Savepoints as the client sees them before it deploys anything: there, and a savepoint.

Why on the client: a job started from a savepoint that is missing, or from a
directory that is not one, must be refused before a cluster is deployed for
it. Where the cluster shares the client's file system (the ``local`` target,
``ClusterDescriptor.read_savepoint``), savepoints are read and disposed of
here, by path or ``file:`` URI. Elsewhere (``hdfs://``; on Kubernetes any path
is the pods', e.g. on a volume their pod template mounts) the job's driver
reads the savepoint when its first query starts, which fails the job with the
same words.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlsplit

from jobcluster.spark.checkpoints import SAVEPOINT_METADATA_FILE, SavepointError, SavepointMetadata, parse_savepoint_metadata


def local_path(uri: str) -> Path | None:
    """The path of ``uri`` on this machine (a plain path, ``file:/x``, ``file:///x``); None for another scheme."""
    parts = urlsplit(uri)
    if parts.scheme in ("", "file") and not parts.netloc:
        return Path(parts.path if parts.scheme else uri)
    return None


def read_local_savepoint(uri: str) -> SavepointMetadata | None:
    """The metadata of the savepoint at ``uri``; None when ``uri`` is not on this machine's file system.

    Raises SavepointError when it does not exist or is not a savepoint.
    """
    path = local_path(uri)
    if path is None:
        return None
    if not path.exists():
        raise SavepointError(f"savepoint {uri} does not exist")
    metadata = path / SAVEPOINT_METADATA_FILE
    if not path.is_dir() or not metadata.is_file():
        raise SavepointError(
            f"{uri} is not a savepoint: it has no {SAVEPOINT_METADATA_FILE} file (a savepoint is the directory that has one)"
        )
    try:
        text = metadata.read_text()
    except OSError as exc:
        raise SavepointError(f"cannot read savepoint {uri}: {exc}") from exc
    return parse_savepoint_metadata(text, uri)


def dispose_local_savepoint(uri: str) -> None:
    """Delete the savepoint at ``uri`` on this machine; SavepointError (nothing deleted) when it is not a savepoint or not local."""
    if read_local_savepoint(uri) is None:
        raise SavepointError(
            f"{uri} is not on this machine's file system: dispose of it through the running job's cluster "
            "(POST /savepoint-disposal) or with the tools of its file system"
        )
    path = local_path(uri)
    assert path is not None
    try:
        shutil.rmtree(path)
    except OSError as exc:
        raise SavepointError(f"cannot delete savepoint {uri}: {exc}") from exc
