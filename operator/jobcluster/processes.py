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
import contextlib
import ctypes
import logging
import os
import select
import signal
import socket
import sys
import threading
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
    kill_processes(process_tree(pid) + list(extra), grace_seconds)


def kill_processes(procs: Sequence[psutil.Process], grace_seconds: float = 5.0) -> None:
    """SIGTERM each of ``procs``, SIGKILL those alive after ``grace_seconds``; returns once they ended (or another
    ``grace_seconds`` passed)."""
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


def processes_with_environment(name: str, value: str) -> list[psutil.Process]:
    """Every live process (of those this user may inspect) whose environment sets ``name`` to ``value``.

    Why: the descendants of a process that was killed inherited its environment, in whatever session they started
    and wherever they were re-parented; a variable unique to it finds what it left behind.
    """
    found = []
    for proc in psutil.process_iter(["status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and proc.environ().get(name) == value:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


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


#: Bytes one read of a :class:`PipeCopier` takes from its pipe at most.
PIPE_CHUNK = 64 * 1024
#: Milliseconds a :class:`PipeCopier` waits for data before it looks at drain requests again.
_PIPE_POLL_MS = 100
#: Seconds :meth:`ChildProcess.wait` waits for what the process wrote before it exited to reach its sinks.
DRAIN_TIMEOUT = 10.0

OutputSink = Callable[[bytes], None]


class PipeCopier:
    """A pipe a child process writes to, copied to ``sink(data)`` by a thread of its own.

    Why a thread: the sink writes files, which must not happen on an event
    loop, and the child must never wait for us: the thread reads as soon as
    data arrives (at most PIPE_CHUNK bytes a read). ``write_fd`` is the end to
    give the child; :meth:`started` closes our copy of it once the child has
    it, so that the pipe ends (and the thread with it) when the child and every
    process that inherited it are gone. A sink that raises OSError (a full
    disk) loses that data, which is logged, and copying goes on.
    """

    def __init__(self, name: str, sink: OutputSink) -> None:
        self.name = name
        self._sink = sink
        self._read_fd, self.write_fd = os.pipe()
        self._changed = threading.Condition()
        self._drains_requested = 0
        self._drains_done = 0  # the last request before which the pipe was seen empty
        self._ended = False
        self._sink_failed = False
        self._thread = threading.Thread(target=self._copy, name=f"copy-{name}", daemon=True)

    def started(self) -> None:
        """The child holds ``write_fd`` now: close ours and start copying."""
        os.close(self.write_fd)
        self._thread.start()

    def abandon(self) -> None:
        """The child could not be started: close both ends."""
        os.close(self.write_fd)
        os.close(self._read_fd)

    def drain(self, timeout: float) -> bool:
        """Block until everything written to the pipe before this call has gone to the sink (True), or the
        pipe has ended; False after ``timeout`` seconds. Meaningful once the writer of interest has exited:
        others that share the pipe (its children) may still write, and are not waited for."""
        with self._changed:
            self._drains_requested += 1
            wanted = self._drains_requested
            return self._changed.wait_for(lambda: self._ended or self._drains_done >= wanted, timeout)

    def _copy(self) -> None:
        poller = select.poll()
        poller.register(self._read_fd, select.POLLIN)
        try:
            while True:
                with self._changed:
                    requested = self._drains_requested
                # while a drain waits, look without waiting: an empty pipe now means all written before it is copied
                if not poller.poll(0 if requested > self._drains_done else _PIPE_POLL_MS):
                    with self._changed:
                        self._drains_done = requested
                        self._changed.notify_all()
                    continue
                data = os.read(self._read_fd, PIPE_CHUNK)
                if not data:  # every process holding the write end has closed it
                    return
                self._deliver(data)
        finally:
            os.close(self._read_fd)
            with self._changed:
                self._ended = True
                self._changed.notify_all()

    def _deliver(self, data: bytes) -> None:
        try:
            self._sink(data)
        except OSError as exc:
            if not self._sink_failed:  # said once: a full disk would say it for every chunk
                log.error("output of %s is lost: %s", self.name, exc)
            self._sink_failed = True
        else:
            self._sink_failed = False


class ChildProcess:
    """An asyncio subprocess in its own session, with output to a log file or to sinks.

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
        stdout_sink: OutputSink | None = None,
        stderr_sink: OutputSink | None = None,
    ) -> None:
        """``log_file`` receives stderr, and stdout too unless ``stdout_file`` is given; both are opened by
        this process, so they keep its (private) modes whatever ``umask`` the child gets. A sink given for
        a stream takes its place instead: the stream is a pipe that a :class:`PipeCopier` copies to it."""
        self.name = name
        self.argv = list(argv)
        self.env = dict(env)
        self.log_file = log_file
        self.stdout_file = stdout_file
        self.cwd = cwd
        self.umask = umask
        self._sinks = {"stdout": stdout_sink, "stderr": stderr_sink}
        self._copiers: list[PipeCopier] = []
        self.process: asyncio.subprocess.Process | None = None
        #: set once ``process`` exists: what watchers await before ``wait()``
        self.started = asyncio.Event()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    async def start(self) -> None:
        # file-system calls run off the caller's loop (an endpoint's loop must never block)
        files = await asyncio.to_thread(self._open_logs)
        copiers = {stream: PipeCopier(f"{self.name} {stream}", sink) for stream, sink in self._sinks.items() if sink is not None}
        targets: dict[str, int | BinaryIO] = {**files, **{stream: copier.write_fd for stream, copier in copiers.items()}}
        try:
            with contextlib.ExitStack() as opened:
                for file in files.values():
                    opened.enter_context(file)
                self.process = await asyncio.create_subprocess_exec(
                    *self.argv,
                    env=self.env,
                    cwd=self.cwd,
                    stdout=targets["stdout"],
                    stderr=targets["stderr"],
                    stdin=asyncio.subprocess.DEVNULL,
                    start_new_session=True,
                    umask=self.umask,
                    preexec_fn=_terminate_with_parent(os.getpid()),
                )
        except BaseException:
            for copier in copiers.values():
                copier.abandon()
            raise
        for copier in copiers.values():
            copier.started()
        self._copiers = list(copiers.values())
        self.started.set()
        log.debug("started %s (pid %s): %s", self.name, self.process.pid, " ".join(self.argv))

    def _open_logs(self) -> dict[str, BinaryIO]:
        """The files of the streams without a sink, by stream, opened for appending (the log directory created):
        stderr to ``log_file``, stdout to ``stdout_file`` if set, else into the same file as stderr."""
        wanted = {"stderr": self.log_file, "stdout": self.stdout_file or self.log_file}
        opened: dict[str, BinaryIO] = {}
        try:
            for stream, path in wanted.items():
                if self._sinks[stream] is None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    opened[stream] = open(path, "ab")  # noqa: SIM115 - returned to start(), which closes them
        except BaseException:
            for file in opened.values():
                file.close()
            raise
        return opened

    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def wait(self) -> int:
        """The exit code, once the process has exited and what it wrote before has reached the sinks
        (at most DRAIN_TIMEOUT seconds more; processes it left behind may still write to them)."""
        assert self.process is not None
        code = await self.process.wait()
        for copier in self._copiers:
            if not await asyncio.to_thread(copier.drain, DRAIN_TIMEOUT):
                log.warning("the output of %s was not all copied within %.0f s of its exit", copier.name, DRAIN_TIMEOUT)
        return code

    async def stop(self, grace_seconds: float = 5.0) -> None:
        if self.process is None:
            return
        pid = self.process.pid
        members = await asyncio.to_thread(session_members, pid)  # reads /proc of every process: off the loop
        await asyncio.to_thread(kill_process_tree, pid, grace_seconds, members)
        if self.process.returncode is None:
            await self.process.wait()
