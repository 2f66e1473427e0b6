"""A TaskExecutor's log files, as it serves them to the JobManager (Flink's ``TaskExecutor.requestLogList`` and
``requestFileUploadByName``), which shows them on the dashboard's TaskManager pages.

Which files: what a user needs to debug one TaskManager, and nothing of the
user's data (the program's output stays private, as ``driver.out`` does on the
JobManager):

- the TaskExecutor's own log: the file its stderr goes to when that is a file
  of its log directory (``<resource id>.log`` on ``local``, ``taskmanager.err``
  on YARN), else ``taskmanager.log``, which the TaskExecutor then writes itself
  (on Kubernetes its stderr is the container's log; see :func:`own_log_file`);
- its Spark worker's log, ``spark-worker-<resource id>.log``;
- each of its Spark executors' stderr (Spark's log of the executor), from the
  worker's work directory ``<resource id>-work/<application>/<executor>/stderr``,
  named ``spark-executor-<executor>-<application>.stderr``. An executor's stdout
  is not served: it holds what the program's functions print.

The same rule holds on every target, also where the log directory is shared
with the JobManager and the other TaskExecutors (``local``): only names of this
TaskExecutor's own files qualify. Only listed names are read, so a name cannot
reach another file.

A file is served up to its last :data:`MAX_LOG_BYTES`: a larger one starts with a
line that says how much was left out and where the whole file is. Why a bound:
the text travels in one RPC answer and one REST answer, and the dashboard shows
it in an editor; the end of a log is what one reads to debug.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_LOG_BYTES = 2 << 20
"""Bytes of a file's end that are served (2 MiB): hours of a TaskExecutor's log, the recent part of a chatty executor's."""

OWN_LOG_FALLBACK = "taskmanager.log"
"""The TaskExecutor's log file where its stderr is not a file of its log directory (Kubernetes)."""

OWN_LOG_FALLBACK_BYTES = 16 << 20
"""Size at which the fallback log is rotated (one older file is kept, ``taskmanager.log.1``, not served)."""

_EXECUTOR_PREFIX = "spark-executor-"
_EXECUTOR_SUFFIX = ".stderr"


def spark_worker_name(resource_id: str) -> str:
    """The name of the TaskExecutor's Spark worker process, whose log is ``<name>.log`` in the log directory."""
    return f"spark-worker-{resource_id}"


def spark_work_dir(log_dir: Path, resource_id: str) -> Path:
    """The Spark worker's work directory (Spark's ``--work-dir``), where its executors write their stdout and stderr."""
    return log_dir / f"{resource_id}-work"


def own_log_file(log_dir: Path, stream_fd: int = 2) -> Path | None:
    """The file of ``log_dir`` (top level) that the stream ``stream_fd`` (stderr) is written to; None when the stream
    is not a regular file there (a pipe: a container's log, a terminal).

    Found by device and inode, so whatever the launcher named it: ``<resource id>.log`` (local),
    ``taskmanager.err`` (YARN's launch command).
    """
    try:
        written = os.fstat(stream_fd)
    except OSError:
        return None
    if not stat.S_ISREG(written.st_mode):
        return None
    try:
        entries = list(log_dir.iterdir())
    except OSError:
        return None
    for path in entries:
        try:
            found = path.stat()
        except OSError:
            continue
        if stat.S_ISREG(found.st_mode) and (found.st_dev, found.st_ino) == (written.st_dev, written.st_ino):
            return path
    return None


def log_to_own_file(log_dir: Path) -> Path:
    """The TaskExecutor's log file: :func:`own_log_file`, or, when stderr is no file of ``log_dir``,
    :data:`OWN_LOG_FALLBACK`, to which the root logger then writes too (rotated at :data:`OWN_LOG_FALLBACK_BYTES`)."""
    own = own_log_file(log_dir)
    if own is not None:
        return own
    path = log_dir / OWN_LOG_FALLBACK
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=OWN_LOG_FALLBACK_BYTES, backupCount=1, encoding="utf-8")
    root = logging.getLogger()
    stream = next((h for h in root.handlers if isinstance(h, logging.StreamHandler) and h.stream is sys.stderr), None)
    if stream is not None and stream.formatter is not None:
        handler.setFormatter(stream.formatter)
    root.addHandler(handler)
    return path


@dataclass(frozen=True)
class LogText:
    """What is served of one log file: ``text`` (UTF-8, undecodable bytes replaced), the file's ``size`` in
    bytes, and whether its beginning was left out (``truncated``; ``text`` then starts with a note saying so)."""

    text: str
    size: int
    truncated: bool

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "size": self.size, "truncated": self.truncated}


@dataclass(frozen=True)
class TaskExecutorLogs:
    """The log files of the TaskExecutor ``resource_id``: ``log_dir`` is its log directory, ``own_log`` its own
    log's file (:func:`log_to_own_file`); ``host`` names the machine in a truncation note."""

    log_dir: Path
    resource_id: str
    own_log: Path | None
    host: str = ""

    def files(self) -> dict[str, Path]:
        """Served name → path of every file that exists now (see the module docstring), the own log first."""
        found: dict[str, Path] = {}
        if self.own_log is not None and self.own_log.is_file():
            found[self.own_log.name] = self.own_log
        worker = self.log_dir / f"{spark_worker_name(self.resource_id)}.log"
        if worker.is_file():
            found[worker.name] = worker
        for stderr in sorted(spark_work_dir(self.log_dir, self.resource_id).glob("*/*/stderr")):
            if stderr.is_file():
                executor, application = stderr.parent.name, stderr.parent.parent.name
                found[f"{_EXECUTOR_PREFIX}{executor}-{application}{_EXECUTOR_SUFFIX}"] = stderr
        return found

    def log_list(self) -> list[dict[str, Any]]:
        """Flink's LogInfo of each file: ``name``, ``size`` (bytes), ``mtime`` (ms since the epoch)."""
        infos = []
        for name, path in self.files().items():
            try:
                status = path.stat()
            except OSError:
                continue  # removed meanwhile (an ended application's work directory)
            infos.append({"name": name, "size": status.st_size, "mtime": int(status.st_mtime * 1000)})
        return infos

    def read(self, name: str | None, max_bytes: int = MAX_LOG_BYTES) -> LogText | None:
        """The file served as ``name`` (None: the TaskExecutor's own log) up to its last ``max_bytes``; None when
        there is no such file (not one of :meth:`files`, or gone).

        Raises:
            OSError: the file exists but cannot be read.
        """
        if name is None:
            name = self.own_log.name if self.own_log is not None else ""
        path = self.files().get(name)
        if path is None:
            return None
        try:
            return read_tail(path, max_bytes, where=f"{path} on {self.host}" if self.host else str(path))
        except FileNotFoundError:
            return None


def read_tail(path: Path, max_bytes: int, where: str) -> LogText:
    """``path``'s text, or, when it is larger than ``max_bytes``, its last ``max_bytes`` from the first line that
    starts in them, after a note naming ``where`` the whole file is.

    Raises:
        OSError: the file cannot be read.
    """
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= max_bytes:
            return LogText(f.read().decode("utf-8", errors="replace"), size, truncated=False)
        f.seek(size - max_bytes)
        tail = f.read(max_bytes)
    newline = tail.find(b"\n")
    if 0 <= newline < len(tail) - 1:
        tail = tail[newline + 1 :]  # from a whole line on
    left_out = size - len(tail)
    note = (
        f"[jobcluster: the first {left_out} bytes of this file ({size} bytes) are left out: a TaskManager's log is served "
        f"up to its last {_size_text(max_bytes)}. The whole file: {where}]\n"
    )
    return LogText(note + tail.decode("utf-8", errors="replace"), size, truncated=True)


def _size_text(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 and size % (1 << 20) == 0 else f"{size} bytes"
