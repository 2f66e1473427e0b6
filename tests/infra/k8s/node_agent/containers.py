"""Containers as local processes: start, notice the exit, kill.

Why: there is no image and no runtime, so a container is its ``command`` +
``args`` (``$(VAR)``-expanded, mountPaths rewritten) run on this machine in a
session of its own, in its ``workingDir`` (else the pod's directory), with
output to ``<pod dir>/logs/<container>.log`` (the previous run's kept as
``.previous.log``). A container that cannot start (no command, executable not
found) terminates at once with reason StartError, like a failed runtime start.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil

from tests.infra.k8s.node_agent.container_run import ContainerRun
from tests.infra.k8s.node_agent.environment import expand_vars
from tests.infra.k8s.node_agent.mounts import Mounts, rewrite
from tests.infra.k8s.node_agent.processes import ProcessTable, kill_processes, setpriv_prefix
from tests.infra.k8s.node_agent.restarts import failures_after_exit
from tests.infra.k8s.node_agent.timestamps import now_rfc3339

log = logging.getLogger("node-agent")


class ContainerProcesses:
    """Starts, polls and kills the container processes of one pod (whose directory is pod_dir)."""

    def __init__(self, procs: ProcessTable, pod_dir: Path, namespace: str, pod_name: str) -> None:
        self.procs = procs
        self.dir = pod_dir
        self.namespace = namespace
        self.pod_name = pod_name

    def start(self, run: ContainerRun, env: dict[str, str], mounts: Mounts) -> None:
        c = run.spec
        argv = [expand_vars(a, env) for a in (c.get("command") or []) + (c.get("args") or [])]
        argv = [rewrite(a, mounts) for a in argv]
        log_path = self.dir / "logs" / f"{c['name']}.log"
        error = None
        if not c.get("command"):
            error = "no command: the node agent does not pull images, so the container must set command"
        else:
            exe = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
            if exe is None or not os.access(exe, os.X_OK):
                error = f"executable {argv[0]!r} not found on this machine (PATH={env.get('PATH')})"
        cwd = rewrite(c.get("workingDir") or "", mounts) or str(self.dir)
        if error is None:
            try:
                Path(cwd).mkdir(parents=True, exist_ok=True)
            except OSError as e:
                error = f"workingDir {cwd}: {e}"
        run.started_at = now_rfc3339()
        run.started_mono = time.monotonic()
        run.ever_ran = True
        if error is None:
            if log_path.exists():
                log_path.replace(log_path.with_suffix(".previous.log"))
            try:
                with open(log_path, "ab") as out:
                    run.proc = self.procs.spawn(
                        setpriv_prefix("KILL") + argv,
                        cwd=cwd,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
            except OSError as e:
                error = f"{argv[0]}: {e}"
        if error is not None:
            log.warning("pod %s/%s container %s: %s", self.namespace, self.pod_name, c["name"], error)
            self.exited(run, 128, None, reason="StartError", message=error)
            return
        assert run.proc is not None  # spawned above, else we returned
        try:
            run.psproc = psutil.Process(run.proc.pid)
        except psutil.Error:
            run.psproc = None
        run.state = {"running": {"startedAt": run.started_at}}
        run.ready = "readinessProbe" not in c
        run.startup_ok = "startupProbe" not in c
        run.probes = {}
        log.info("pod %s/%s container %s: started pid %d: %s", self.namespace, self.pod_name, c["name"], run.proc.pid, argv)

    def exited(self, run: ContainerRun, code: int, sig: int | None, reason: str | None = None, message: str | None = None) -> None:
        pid = run.proc.pid if run.proc else None
        if run.proc is not None:
            self.procs.forget(run.proc.pid)
            # Kill what the container left behind in its process group.
            try:
                os.killpg(run.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        run.proc = None
        run.psproc = None
        term: dict[str, Any] = {
            "exitCode": code,
            "reason": reason or ("Completed" if code == 0 else "Error"),
            "startedAt": run.started_at,
            "finishedAt": now_rfc3339(),
        }
        if sig:
            term["signal"] = sig
        if message:
            term["message"] = message
        if pid:
            term["containerID"] = f"process://{pid}"
        run.state = {"terminated": term}
        ran = time.monotonic() - run.started_mono
        run.failures = failures_after_exit(run.failures, ran)
        log.info("pod %s/%s container %s: exited %s after %.1fs", self.namespace, self.pod_name, run.name, code, ran)

    def poll(self, run: ContainerRun) -> None:
        if run.proc is None:
            return
        rc = run.proc.poll()
        if rc is None:
            return
        if rc < 0:
            self.exited(run, 128 - rc, -rc)
        else:
            self.exited(run, rc, None)

    def kill(self, run: ContainerRun, grace: float) -> None:
        if run.psproc is None:
            return
        try:
            procs = [run.psproc, *run.psproc.children(recursive=True)]
        except psutil.Error:
            procs = [run.psproc]
        kill_processes(procs, grace, [run.proc] if run.proc else [])
