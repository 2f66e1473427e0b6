"""Spawning, tracking, reaping and killing the processes of the node's pods.

Why: no pod process may outlive its pod or the agent, even one that daemonised
or left its process group. The agent is a child subreaper (orphans stay its
descendants), every process it starts carries the pod's UID in its environment
(``POD_UID_ENV``), and killing is SIGTERM, a grace period, then SIGKILL to the
processes and their process groups. Container processes also get SIGKILL from
the kernel when the pod worker thread that started them dies (``setpriv``).
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

import psutil

log = logging.getLogger("node-agent")

# How long to wait for processes after SIGKILL before giving up on them.
KILL_WAIT_SECONDS = 5.0

# Set in every process the agent starts; inherited by their children. Lets the
# agent find a pod's processes even after they daemonised or changed groups.
POD_UID_ENV = "JOBCLUSTER_K8S_POD_UID"

_PR_SET_CHILD_SUBREAPER = 36


def setpriv_prefix(signame: str) -> list[str]:
    """Prefix that makes a child die with signame when its parent thread dies (PR_SET_PDEATHSIG)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, f"--pdeathsig={signame}", "--"] if setpriv else []


def become_child_subreaper() -> None:
    """Make orphaned descendants re-parent to this process instead of init (PR_SET_CHILD_SUBREAPER)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except Exception:  # noqa: BLE001 - best effort: a warning, the agent still works
        log.warning("could not become a child subreaper; daemonised pod processes may escape")


class ProcessTable:
    """Tracks the processes the agent spawned and reaps orphans re-parented to it.

    The agent is a child subreaper, so a pod's daemonised grandchildren stay its
    descendants (and are killed with the pod) instead of escaping to init.
    Exit statuses of spawned processes belong to their Popen objects; only
    untracked zombies are reaped here.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tracked: set[int] = set()

    def spawn(self, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        with self.lock:
            proc = subprocess.Popen(argv, **kwargs)
            self.tracked.add(proc.pid)
            return proc

    def forget(self, pid: int) -> None:
        with self.lock:
            self.tracked.discard(pid)

    def reap_orphans(self) -> None:
        with self.lock:
            try:
                children = psutil.Process().children()
            except psutil.Error:
                return
            for child in children:
                if child.pid in self.tracked:
                    continue
                try:
                    if child.status() == psutil.STATUS_ZOMBIE:
                        os.waitpid(child.pid, os.WNOHANG)
                except (psutil.Error, ChildProcessError, OSError):
                    pass


def descendants_with_env(pod_uid: str) -> list[psutil.Process]:
    """All descendants of this agent that carry the pod's marker in their environment."""
    found: list[psutil.Process] = []
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return found
    for proc in children:
        try:
            if proc.environ().get(POD_UID_ENV) == pod_uid:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def kill_processes(procs: list[psutil.Process], grace: float, popens: Sequence[subprocess.Popen[Any]] = ()) -> None:
    """SIGTERM, wait up to grace seconds, then SIGKILL whatever is left (process groups too).

    Processes this agent spawned are reaped through their Popen objects (in popens)
    so that their exit status is not lost; nothing here calls waitpid on them.
    """

    def alive() -> list[psutil.Process]:
        for popen in popens:
            popen.poll()
        out = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    out.append(p)
            except psutil.Error:
                pass
        return out

    procs = alive()
    if not procs:
        return
    groups = set()
    for p in procs:
        try:
            groups.add(os.getpgid(p.pid))
        except OSError:
            pass
    groups.discard(os.getpgrp())
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, KILL_WAIT_SECONDS)):
        for pgid in groups:
            try:
                os.killpg(pgid, sig)
            except OSError:
                pass
        for p in procs:
            try:
                p.send_signal(sig)
            except psutil.Error:
                pass
        deadline = time.monotonic() + wait
        while procs and time.monotonic() < deadline:
            time.sleep(0.05)
            procs = alive()
        if not procs:
            return
    log.warning("processes survived SIGKILL: %s", [p.pid for p in procs])
