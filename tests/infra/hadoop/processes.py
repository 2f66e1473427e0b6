"""Start daemon processes that cannot outlive their owner, and stop them for sure.

Why: a test session must leave no JVM behind, whether it ends normally, on
Ctrl-C, or is killed outright. Three layers make sure of it:

1. each daemon runs in its own session (so a Ctrl-C at the terminal does not
   hit it mid-test, and its whole process group can be signalled) and gets
   ``PR_SET_PDEATHSIG=SIGKILL``, so the kernel kills it if the Python process
   that started it dies without cleaning up;
2. ``terminate`` sends SIGTERM to each daemon's process group, waits a bounded
   time for it and every descendant it had (YARN containers included), then
   SIGKILLs what is left;
3. ``sweep`` kills any process still carrying the cluster's marker on its
   command line or working inside the cluster's directory (a container whose
   NodeManager died first is re-parented to init and escapes layer 2).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import psutil

_PR_SET_PDEATHSIG = 1

_prctl: Callable[..., int] | None
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: layer 1 is skipped
    _prctl = None


def _die_with_parent(parent_pid: int):
    def preexec() -> None:
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # The parent may have died between fork and prctl.
        if os.getppid() != parent_pid:
            os._exit(1)

    return preexec


def spawn(argv: Sequence[str], *, env: Mapping[str, str], log_path: Path, cwd: Path) -> subprocess.Popen:
    """Start ``argv`` in a new session, stdout and stderr appended to ``log_path``."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent(os.getpid()),
        )


def _tree(pid: int) -> list[psutil.Process]:
    try:
        proc = psutil.Process(pid)
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def terminate(procs: Iterable[subprocess.Popen], timeout: float = 20.0) -> None:
    """SIGTERM every process group in ``procs``; SIGKILL whatever of them and
    their descendants is still alive after ``timeout`` seconds; reap them."""
    procs = list(procs)
    victims: dict[int, psutil.Process] = {}
    for p in procs:
        for v in _tree(p.pid):
            victims[v.pid] = v
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    _, alive = psutil.wait_procs(list(victims.values()), timeout=timeout)
    for v in alive:
        try:
            v.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def sweep(marker: str, directory: Path) -> list[int]:
    """SIGKILL every process whose command line contains ``marker`` or whose
    working directory is inside ``directory``; return their pids."""
    me = os.getpid()
    prefix = str(directory.resolve()) + os.sep
    killed: list[psutil.Process] = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd"]):
        info = proc.info
        if info["pid"] == me:
            continue
        cmdline = " ".join(info["cmdline"] or ())
        cwd = (info["cwd"] or "") + os.sep
        if marker in cmdline or cwd.startswith(prefix):
            try:
                proc.kill()
                killed.append(proc)
            except psutil.NoSuchProcess:
                pass
    psutil.wait_procs(killed, timeout=5)
    return [p.pid for p in killed]


IDLE_CGROUP = Path("/sys/fs/cgroup/cpu/jobcluster-idle")
"""A cgroup v1 CPU group whose threads get only CPU time nothing else wants (``cpu.idle``), and at most
``IDLE_QUOTA_US`` of every 100 ms all together (``cpu.cfs_quota_us``)."""
IDLE_QUOTA_US = 1000
"""Microseconds of CPU per 100 ms period for the whole idle group: 1% of one core."""


def idle_threads(pid: int, name: str, timeout: float = 10.0) -> list[int]:
    """Put the threads of process ``pid`` named ``name`` (Linux keeps a thread name's first 15 characters) in
    ``IDLE_CGROUP``; their ids, once at least one exists (else after ``timeout`` seconds, none).

    Why a cgroup: the kernel's autogroups give each session (each daemon here runs in its own) an equal share of
    the CPU, so a thread that never waits takes its daemon's whole share, whatever its own priority; measured on 2
    busy cores, such a thread still got 5-10% of the machine with ``cpu.idle`` alone, under 1% with the quota.
    Where the cgroup cannot be used (cgroup v2, not root), the threads are set to SCHED_IDLE, which yields to the
    daemon's other threads only; where that fails too, nothing changes."""
    deadline = time.monotonic() + timeout
    while not (tids := _threads_named(pid, name)) and time.monotonic() < deadline:
        time.sleep(0.2)
    grouped = _write_all({IDLE_CGROUP / "cpu.idle": "1", IDLE_CGROUP / "cpu.cfs_quota_us": str(IDLE_QUOTA_US)})
    for tid in tids:
        # cgroup v1 places threads one by one
        if not (grouped and _write_all({IDLE_CGROUP / "tasks": str(tid)})):
            with contextlib.suppress(OSError):
                os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
    return tids


def _write_all(files: Mapping[Path, str]) -> bool:
    """Write each file (the idle cgroup made first); False when one cannot be written."""
    try:
        IDLE_CGROUP.mkdir(exist_ok=True)
        for path, text in files.items():
            path.write_text(text)
    except OSError:
        return False
    return True


def _threads_named(pid: int, name: str) -> list[int]:
    tids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            if (task / "comm").read_text().strip() == name[:15]:
                tids.append(int(task.name))
    return tids


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file, for error messages."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"<cannot read {path}: {e}>"
    # Cut very long lines (a JVM's STARTUP_MSG prints its whole classpath).
    return "\n".join(line[:400] for line in text.splitlines()[-lines:])
