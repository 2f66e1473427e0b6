"""One thread per pod: its lifecycle from first sight to deletion.

Why: each pod moves on its own clock (back-offs, probes, grace periods), and a
container's parent-death signal is tied to the thread that started it, so one
thread owns each pod from start to end: it prepares volumes and environments
(retrying while that fails), runs init containers in order (sidecars stay up),
then the main containers, restarts per restartPolicy, reports status after each
step, and on deletion kills the pod's processes and finalises the deletion.
"""

from __future__ import annotations

import functools
import logging
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Protocol

import psutil

from tests.infra.k8s.node_agent.addresses import HOST_IP
from tests.infra.k8s.node_agent.apiserver import ApiServer
from tests.infra.k8s.node_agent.container_run import ContainerRun
from tests.infra.k8s.node_agent.containers import ContainerProcesses
from tests.infra.k8s.node_agent.environment import container_environment
from tests.infra.k8s.node_agent.errors import PodConfigError
from tests.infra.k8s.node_agent.mounts import build_root, rewrite
from tests.infra.k8s.node_agent.pod_status import Conditions, pod_phase, pod_status
from tests.infra.k8s.node_agent.probes import Prober
from tests.infra.k8s.node_agent.processes import KILL_WAIT_SECONDS, ProcessTable, descendants_with_env, kill_processes
from tests.infra.k8s.node_agent.restarts import schedule_restart, should_restart
from tests.infra.k8s.node_agent.timestamps import now_rfc3339
from tests.infra.k8s.node_agent.volumes import PodVolumes

log = logging.getLogger("node-agent")


class Node(Protocol):
    """What a pod worker uses of the node agent (agent.NodeAgent)."""

    work_dir: Path
    stopping: threading.Event
    procs: ProcessTable
    apiserver: ApiServer
    allocatable: dict[str, str]

    def allocate_ip(self, uid: str) -> str: ...

    def worker_done(self, worker: PodWorker) -> None: ...


class PodWorker(threading.Thread):
    """Owns one pod (by UID): volumes, processes, restarts, status, deletion.

    All processes of the pod are spawned from this thread (their PDEATHSIG is
    tied to it), and the thread ends only after they are dead.
    """

    def __init__(self, agent: Node, pod: dict) -> None:
        meta = pod["metadata"]
        super().__init__(name=f"pod-{meta['namespace']}/{meta['name']}", daemon=True)
        self.agent = agent
        self.pod = pod
        self.uid = meta["uid"]
        self.namespace = meta["namespace"]
        self.pod_name = meta["name"]
        self.wake = threading.Event()
        self.gone = False  # the API object is gone: kill, nothing to report
        self.dir = agent.work_dir / "pods" / self.namespace / self.pod_name / self.uid
        self.pod_ip = ""
        self.start_time = now_rfc3339()
        self.runs_init: list[ContainerRun] = []
        self.runs_main: list[ContainerRun] = []
        self.initialized = False
        self.failed = False  # terminal Failed (init failure or final exit != 0)
        self.config_error: str | None = None
        self.terminal_phase: str | None = None
        self.conditions = Conditions()
        self.last_pushed: dict | None = None
        self.container_env: dict[str, dict[str, str]] = {}
        self.container_mounts: dict[str, list[tuple[str, str]]] = {}
        self.containers = ContainerProcesses(agent.procs, self.dir, self.namespace, self.pod_name)
        self.prober = Prober(agent.procs, self.namespace, self.pod_name)

    # -- called from the watch thread
    def update(self, pod: dict) -> None:
        self.pod = pod
        self.wake.set()

    def removed(self) -> None:
        self.gone = True
        self.wake.set()

    # -- thread body
    def run(self) -> None:
        try:
            self._run()
        except Exception:
            log.exception("pod %s/%s: worker failed", self.namespace, self.pod_name)
        finally:
            self.kill_all(grace=2.0)
            self.agent.worker_done(self)

    def _run(self) -> None:
        phase = (self.pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            # Finished before this agent saw it (e.g. agent restart): never run again.
            self.terminal_phase = phase
        else:
            spec = self.pod["spec"]
            self.pod_ip = HOST_IP if spec.get("hostNetwork") else self.agent.allocate_ip(self.uid)
            for c in spec.get("initContainers") or []:
                kind = "sidecar" if c.get("restartPolicy") == "Always" else "init"
                self.runs_init.append(ContainerRun(c, kind))
            self.runs_main = [ContainerRun(c, "main") for c in spec.get("containers") or []]
            log.info("pod %s/%s (%s): starting with IP %s", self.namespace, self.pod_name, self.uid, self.pod_ip)
        while True:
            if self.gone or self.agent.stopping.is_set():
                return
            if self.pod["metadata"].get("deletionTimestamp"):
                self.finish_deletion()
                return
            if self.terminal_phase is None:
                if not self.container_env and self.runs_main:
                    try:
                        self.prepare()
                        self.config_error = None
                    except Exception as e:  # noqa: BLE001 - PodConfigError, or the API server unreachable: retried
                        if not isinstance(e, PodConfigError):
                            e = PodConfigError(f"{type(e).__name__}: {e}")
                        if self.config_error != str(e):
                            log.warning("pod %s/%s: %s", self.namespace, self.pod_name, e)
                        self.config_error = str(e)
                if self.container_env:
                    self.step()
                self.push_status()
            busy = any(r.running or (not r.done and r.ever_ran) for r in self.runs_init + self.runs_main)
            self.wake.wait(0.2 if busy else 1.0)
            self.wake.clear()

    # -- setup
    def prepare(self) -> None:
        """Volumes, env and path mappings for every container; raises PodConfigError to retry later."""
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "logs").mkdir(exist_ok=True)
        pod_volumes = PodVolumes(self.agent.apiserver, self.pod, self.pod_ip, self.dir, self.agent.allocatable)
        volumes = {}
        for vol in self.pod["spec"].get("volumes") or []:
            volumes[vol["name"]] = pod_volumes.materialise_volume(vol)
        envs = {}
        for run in self.runs_init + self.runs_main:
            c = run.spec
            root = self.dir / "rootfs" / c["name"]
            mounts = build_root(root, c, volumes)
            self.container_mounts[c["name"]] = mounts
            envs[c["name"]] = container_environment(
                c,
                root,
                pod=self.pod,
                pod_ip=self.pod_ip,
                api_host_port=self.agent.apiserver.host_port,
                read_object=self.agent.apiserver.read_object,
                node_allocatable=self.agent.allocatable,
                rewrite=functools.partial(rewrite, mounts=mounts),
            )
        self.container_env = envs

    # -- running
    def mounts(self, run: ContainerRun) -> list[tuple[str, str]]:
        return self.container_mounts.get(run.name, [])

    def probe(self, run: ContainerRun) -> None:
        self.prober.probe(
            run,
            env=self.container_env[run.name],
            mounts=self.mounts(run),
            pod_ip=self.pod_ip,
            pod_grace=self.pod["spec"].get("terminationGracePeriodSeconds", 30),
            kill=self.containers.kill,
        )

    def advance(self, run: ContainerRun) -> None:
        """Poll; on exit either mark done or schedule a restart; start when due."""
        if run.done:
            return
        if run.proc is not None:
            self.containers.poll(run)
            if run.proc is not None:
                self.probe(run)
                return
        if "terminated" in run.state:
            if should_restart(run, self.pod["spec"].get("restartPolicy", "Always")):
                schedule_restart(run, f"{self.pod_name}_{self.namespace}({self.uid})")
            else:
                run.done = True
                return
        if time.monotonic() >= run.next_start:
            self.containers.start(run, self.container_env[run.name], self.mounts(run))
            if run.proc is None:  # failed to start: decide on the next step
                self.advance(run)

    def step(self) -> None:
        if not self.initialized:
            for run in self.runs_init:
                if run.kind == "sidecar":
                    self.advance(run)
                    if not (run.running and run.startup_ok):
                        return
                    continue
                if run.done:
                    if run.state["terminated"]["exitCode"] != 0:
                        self.failed = True
                        self.finish(failed=True)
                        return
                    continue
                self.advance(run)
                if not run.done:
                    return
                if run.state["terminated"]["exitCode"] != 0:
                    self.failed = True
                    self.finish(failed=True)
                    return
            self.initialized = True
        for run in self.runs_main:
            self.advance(run)
        for run in self.runs_init:
            if run.kind == "sidecar":
                self.advance(run)
        if self.runs_main and all(r.done for r in self.runs_main):
            failed = any(r.state["terminated"]["exitCode"] != 0 for r in self.runs_main)
            self.finish(failed=failed)

    def finish(self, failed: bool) -> None:
        """Terminal phase: stop sidecars and anything left, never start again."""
        self.kill_all(grace=self.grace_period())
        self.terminal_phase = "Failed" if failed else "Succeeded"
        for run in self.runs_init + self.runs_main:
            if run.state.get("waiting"):
                # Never ran or waiting for a restart that will not come.
                run.state = run.last_state or {
                    "terminated": {
                        "exitCode": 0 if not run.ever_ran else 1,
                        "reason": "ContainerStatusUnknown" if run.ever_ran else "Completed",
                        "finishedAt": now_rfc3339(),
                    }
                }
            run.done = True
        log.info("pod %s/%s: %s", self.namespace, self.pod_name, self.terminal_phase)

    def grace_period(self) -> float:
        meta_grace = self.pod["metadata"].get("deletionGracePeriodSeconds")
        grace = meta_grace if meta_grace is not None else self.pod["spec"].get("terminationGracePeriodSeconds", 30)
        return float(max(grace or 0, 0))

    def kill_all(self, grace: float) -> None:
        procs = []
        for run in self.runs_init + self.runs_main:
            if run.psproc is not None:
                procs.append(run.psproc)
                try:
                    procs.extend(run.psproc.children(recursive=True))
                except psutil.Error:
                    pass
        procs.extend(descendants_with_env(self.uid))
        unique = {p.pid: p for p in procs}
        kill_processes(list(unique.values()), grace, [r.proc for r in self.runs_init + self.runs_main if r.proc])
        for run in self.runs_init + self.runs_main:
            if run.proc is not None:
                try:
                    rc = run.proc.wait(timeout=KILL_WAIT_SECONDS)
                except subprocess.TimeoutExpired:
                    rc = -signal.SIGKILL
                self.containers.exited(run, 128 - rc if rc < 0 else rc, -rc if rc < 0 else None)
                run.done = True

    def finish_deletion(self) -> None:
        """Graceful deletion: SIGTERM, SIGKILL after the grace period, final status, delete with grace 0."""
        grace = self.grace_period()
        log.info("pod %s/%s: deleting (grace %.0fs)", self.namespace, self.pod_name, grace)
        self.kill_all(grace)
        if self.terminal_phase is None and self.runs_main:
            self.push_status()
        self.agent.apiserver.delete_pod(self.namespace, self.pod_name, self.uid)

    # -- status
    def phase(self) -> str:
        return pod_phase(self.terminal_phase, self.initialized, bool(self.container_env), self.runs_main)

    def push_status(self) -> None:
        phase = self.phase()
        if self.terminal_phase and not self.runs_main:
            return  # finished before we saw it: the status is already final
        status = pod_status(
            pod=self.pod,
            phase=phase,
            terminal_phase=self.terminal_phase,
            failed=self.failed,
            initialized=self.initialized,
            prepared=bool(self.container_env),
            runs_init=self.runs_init,
            runs_main=self.runs_main,
            config_error=self.config_error,
            pod_ip=self.pod_ip,
            start_time=self.start_time,
            conditions=self.conditions,
        )
        if status == self.last_pushed:
            return
        if self.agent.apiserver.patch_pod_status(self.namespace, self.pod_name, status):
            self.last_pushed = status
