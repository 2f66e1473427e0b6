"""How long the logs of ended local job clusters are kept (``jobcluster.logs.max-age``).

Why: every local cluster leaves ``$JOBCLUSTER_HOME/log/<cluster-id>/`` behind
(the JobManager's, TaskExecutors', Spark daemons' and driver's logs), so that
a failed job can be read afterwards; without a bound they pile up for ever.
A log directory is removed once its cluster has ended and nothing in it was
written for ``max-age``.  The logs of a running cluster are never removed,
however old, since a long job may write nothing new for days.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Collection
from pathlib import Path

log = logging.getLogger(__name__)


def last_activity(directory: Path) -> float:
    """The newest modification time (seconds since the epoch) of ``directory`` and everything below it."""
    newest = directory.stat().st_mtime
    for root, dirs, files in os.walk(directory):
        for name in (*dirs, *files):
            try:
                newest = max(newest, os.lstat(os.path.join(root, name)).st_mtime)
            except OSError:  # removed while we walk
                continue
    return newest


def expired_log_dirs(log_root: Path, max_age: float, running: Collection[str], now: float | None = None) -> list[Path]:
    """The cluster log directories under ``log_root`` older than ``max_age`` seconds, sorted.

    ``running``: cluster ids whose logs are kept whatever their age (the
    clusters that run, or are being deployed, now).
    """
    if not log_root.is_dir():
        return []
    now = time.time() if now is None else now
    expired = []
    for directory in sorted(log_root.iterdir()):
        if not directory.is_dir() or directory.is_symlink() or directory.name in running:
            continue
        try:
            if now - last_activity(directory) > max_age:
                expired.append(directory)
        except OSError:
            continue
    return expired


def prune_log_dirs(log_root: Path, max_age: float, running: Collection[str], now: float | None = None) -> list[Path]:
    """Remove what :func:`expired_log_dirs` finds; returns the directories removed."""
    removed = []
    for directory in expired_log_dirs(log_root, max_age, running, now):
        shutil.rmtree(directory, ignore_errors=True)
        if not directory.exists():
            removed.append(directory)
            log.info("removed the logs of ended job cluster %s", directory.name)
    return removed
