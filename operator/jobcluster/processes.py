"""Child processes that must never outlive their owner.

Every process jobcluster starts (entrypoint, TaskExecutors, Spark daemons,
the Spark driver) is started in a session of its own, so that it and all its
descendants can be found and stopped together. psutil does the finding;
stopping is SIGTERM to the whole tree, then SIGKILL after a grace period.
Children of a :class:`ChildProcess` also get SIGTERM from the kernel when
their owner dies without cleaning up (Linux's parent-death signal), so a
killed JobManager or TaskExecutor does not leave Spark daemons behind.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

import psutil

log = logging.getLogger(__name__)

#: The umask of every process of a job cluster: what they create (logs of the
#: JobManager, TaskExecutors, Spark daemons and executors; staged files) is
#: readable by the deploying user only, since it holds the program, its data
#: and the cluster's secrets.  Set at process start, not by chmod afterwards,
#: so no file is ever readable by others, even briefly.
PRIVATE_UMASK = 0o077

#: The umask of the processes that write the program's own files (the PySpark
#: driver, and the Spark workers whose executors write the job's output), in
#: octal: the deploying shell's, recorded by a client that shares the cluster's
#: file system (``local``), so the job's output gets the modes it would get
#: under ``spark-submit``. Their logs stay private: the files are opened by the
#: cluster's own processes and the directories are 0700.
ENV_PROGRAM_UMASK = "JOBCLUSTER_PROGRAM_UMASK"


def current_umask() -> int:
    """This process's umask (read by setting it and back: POSIX has no getter; call it before threads start)."""
    mask = os.umask(PRIVATE_UMASK)
    os.umask(mask)
    return mask


def program_umask() -> int:
    """The umask for processes that write the program's files: ``$JOBCLUSTER_PROGRAM_UMASK``, else :data:`PRIVATE_UMASK`."""
    try:
        return int(os.environ[ENV_PROGRAM_UMASK], 8) & 0o777
    except (KeyError, ValueError):
        return PRIVATE_UMASK


def find_free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that is free right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def process_tree(pid: int) -> list[psutil.Process]:
    """The process ``pid`` and all its descendants (empty if it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def kill_process_tree(pid: int, grace_seconds: float = 5.0, extra: Sequence[psutil.Process] = ()) -> None:
    """SIGTERM ``pid``, its descendants and ``extra``; SIGKILL what is alive after ``grace_seconds``.

    Descendants are collected *before* signalling, since children re-parent
    once their parent is gone and could not be found afterwards.
    """
    procs = process_tree(pid) + list(extra)
    for proc in procs:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            pass
    alive = wait_until_ended(procs, grace_seconds)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    wait_until_ended(alive, grace_seconds)


#: Seconds between checks of :func:`wait_until_ended`.
_ENDED_POLL_SECONDS = 0.02


def _ended(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until_ended(procs: Sequence[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait up to ``timeout`` seconds until every process of ``procs`` has ended; those still running.

    A zombie has ended: an orphan whose new parent has not reaped it yet (PID 1,
    or in a container the entrypoint, may take its time or never do it) holds
    no resources but its process-table entry. ``psutil.wait_procs`` would count
    it alive and wait out the whole timeout.
    """
    deadline = time.monotonic() + timeout
    alive = [proc for proc in procs if not _ended(proc)]
    while alive and time.monotonic() < deadline:
        time.sleep(_ENDED_POLL_SECONDS)
        alive = [proc for proc in alive if not _ended(proc)]
    return alive


def session_members(session_id: int) -> list[psutil.Process]:
    """Every live process of the session ``session_id`` (processes that were started with ``start_new_session``)."""
    members = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getsid(proc.pid) == session_id and proc.info["status"] != psutil.STATUS_ZOMBIE:  # a zombie has ended
                members.append(proc)
        except (ProcessLookupError, PermissionError, psutil.NoSuchProcess):
            continue
    return members


_PR_SET_PDEATHSIG = 1


def _terminate_with_parent(parent_pid: int) -> Callable[[], None]:
    """A ``preexec_fn`` asking the kernel to SIGTERM the child when ``parent_pid`` ends (Linux only)."""

    def preexec() -> None:
        if sys.platform.startswith("linux"):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent_pid:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


class ChildProcess:
    """An asyncio subprocess in its own session, with output to a log file.

    ``stop()`` ends the whole session, including grandchildren that were
    re-parented after their parent died (for example a Spark executor whose
    worker was killed).
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        log_file: Path,
        cwd: Path | None = None,
        stdout_file: Path | None = None,
        umask: int = PRIVATE_UMASK,
    ) -> None:
        """``log_file`` receives stderr, and stdout too unless ``stdout_file`` is given; both are opened by
        this process, so they keep its (private) modes whatever ``umask`` the child gets."""
        self.name = name
        self.argv = list(argv)
        self.env = dict(env)
        self.log_file = log_file
        self.stdout_file = stdout_file
        self.cwd = cwd
        self.umask = umask
        self.process: asyncio.subprocess.Process | None = None
        #: set once ``process`` exists: what watchers await before ``wait()``
        self.started = asyncio.Event()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    async def start(self) -> None:
        # file-system calls run off the caller's loop (an endpoint's loop must never block)
        err, out = await asyncio.to_thread(self._open_logs)
        with err, out:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                env=self.env,
                cwd=self.cwd,
                stdout=out,
                stderr=err,
                stdin=asyncio.subprocess.DEVNULL,
                start_new_session=True,
                umask=self.umask,
                preexec_fn=_terminate_with_parent(os.getpid()),
            )
        self.started.set()
        log.debug("started %s (pid %s): %s", self.name, self.process.pid, " ".join(self.argv))

    def _open_logs(self) -> tuple[BinaryIO, BinaryIO]:
        """``(stderr, stdout)`` opened for appending, creating the log directory; both are ``log_file`` unless ``stdout_file`` is set."""
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        err = open(self.log_file, "ab")  # noqa: SIM115 - returned to start(), which closes both
        try:
            return err, open(self.stdout_file or self.log_file, "ab")
        except BaseException:
            err.close()
            raise

    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def wait(self) -> int:
        assert self.process is not None
        return await self.process.wait()

    async def stop(self, grace_seconds: float = 5.0) -> None:
        if self.process is None:
            return
        pid = self.process.pid
        members = await asyncio.to_thread(session_members, pid)  # reads /proc of every process: off the loop
        await asyncio.to_thread(kill_process_tree, pid, grace_seconds, members)
        if self.process.returncode is None:
            await self.process.wait()
