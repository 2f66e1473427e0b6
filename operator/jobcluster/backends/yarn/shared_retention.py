"""How long the shared files on HDFS are kept (``jobcluster.yarn.shared-files.retention``).

Why: every change of the Python environment leaves new archives in
``<staging base>/.jobcluster/python/`` (``pyenv.py``), every new dashboard one
in ``.jobcluster/dashboard/`` (``dashboard_files.py``); without a bound they pile
up for ever (a pyspark part is ~345 MiB). The next deployment and ``jobcluster
prune -t yarn-application`` remove the files no job used for the retention.

When a file was last used: every job that registers it sets its access time
(``shared_files.mark_used``). HDFS keeps access times unless
``dfs.namenode.accesstime.precision`` is 0; a file whose access time is 0 (none
kept) is never removed.

The rule that keeps running applications safe: YARN's PUBLIC cache is per
node, so a container started later (a TaskExecutor asked for during the job, an
ApplicationMaster's next attempt, a node the application never used before)
localizes from HDFS again, and fails when the file is gone. A running
application uses only files it registered at its submission or later, and
registering sets the access time, so a file last used before the oldest active
application of the jobcluster type was submitted is used by none of them. So a
file is removed only when its last use is older than both the retention and the
start of every active (not finished) jobcluster application on the cluster, of
every user. (A deployment that found a file just before another client removes
it fails to localize it and says so; deploying again uploads it again. That takes
a file unused for the whole retention picked up again in that moment.)
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Iterable
from dataclasses import dataclass

from jobcluster.backends.yarn.shared_files import listing, shared_directory
from jobcluster.backends.yarn.staging import HdfsPaths, hdfs_errors

log = logging.getLogger(__name__)

SHARED_KINDS = ("python", "dashboard")
"""The directories under ``<staging base>/.jobcluster/`` whose files are pruned (``pyenv.py``, ``dashboard_files.py``)."""


@dataclass(frozen=True)
class SharedFile:
    """One file of a shared directory: ``path`` on HDFS and ``last_used`` (its access time, milliseconds since the
    epoch; 0 when HDFS keeps none)."""

    path: str
    last_used: int


def cutoff(now_ms: int, retention: float, oldest_active_start_ms: int | None) -> int:
    """The time (ms) before which a last use makes a file removable: ``retention`` seconds ago, or the start of the
    oldest active application when that is earlier."""
    limit = now_ms - int(retention * 1000)
    return limit if oldest_active_start_ms is None else min(limit, oldest_active_start_ms)


def expired(files: Iterable[SharedFile], now_ms: int, retention: float, oldest_active_start_ms: int | None) -> list[SharedFile]:
    """The files to remove (see the module docstring), in the order given."""
    before = cutoff(now_ms, retention, oldest_active_start_ms)
    return [f for f in files if 0 < f.last_used < before]


def shared_files(paths: HdfsPaths, staging_base: str) -> list[SharedFile]:
    """Every file of the shared directories under ``staging_base`` (missing directories have none).

    Raises:
        StagingError: HDFS refused or is unreachable.
    """
    found = []
    for kind in SHARED_KINDS:
        directory = shared_directory(staging_base, kind)
        found += [
            SharedFile(posixpath.join(directory, name), int(status.get("accessTime") or 0))
            for name, status in sorted(listing(paths, directory).items())
            if status["type"] == "FILE"
        ]
    return found


def prune_shared_files(
    paths: HdfsPaths, staging_base: str, retention: float, oldest_active_start_ms: int | None, now_ms: int | None = None
) -> list[str]:
    """Remove the expired shared files under ``staging_base``; returns their qualified paths.

    Raises:
        StagingError: HDFS refused or is unreachable.
    """
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    removed = []
    for file in expired(shared_files(paths, staging_base), now_ms, retention, oldest_active_start_ms):
        with hdfs_errors(f"cannot remove {paths.qualify(file.path)}"):
            paths.client.delete(file.path)
        log.info("removed %s, last used %d s ago", paths.qualify(file.path), (now_ms - file.last_used) // 1000)
        removed.append(paths.qualify(file.path))
    return removed


def oldest_start(start_times_ms: Iterable[int]) -> int | None:
    """The earliest of the active applications' start times (ms); None when none is active. A start time of 0
    (not known) counts as the earliest possible: nothing such an application might use is removed."""
    times = list(start_times_ms)
    return min(times) if times else None
