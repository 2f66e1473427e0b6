"""What the agent knows about one container of a pod, across its restarts.

Why: the pod worker, the process launcher, the probes, the restart policy and
the status builder all read and update the same per-container record: the
current process, state and last state (as the API's ContainerState), restart
count, back-off and probe results. ``status()`` renders it as the pod status's
ContainerStatus; ``containerID`` is ``process://<pid>``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field

import psutil


@dataclass
class ContainerRun:
    spec: dict
    kind: str  # "init", "sidecar" or "main"
    restart_count: int = 0
    proc: subprocess.Popen | None = None
    psproc: psutil.Process | None = None
    started_at: str | None = None
    started_mono: float = 0.0
    state: dict = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: dict = field(default_factory=dict)
    ever_ran: bool = False
    done: bool = False  # terminated and will not run again
    next_start: float = 0.0
    failures: int = 0
    ready: bool = False  # readiness probe passed (or no readiness probe)
    startup_ok: bool = False  # startup probe passed (or no startup probe)
    probes: dict = field(default_factory=dict)  # probe kind -> {"next", "succ", "fail"}

    @property
    def name(self) -> str:
        return self.spec["name"]

    @property
    def running(self) -> bool:
        return self.proc is not None

    def status(self) -> dict:
        out = {
            "name": self.name,
            "image": self.spec.get("image", ""),
            "imageID": "",
            "restartCount": self.restart_count,
            "ready": self.running and self.ready,
            "started": self.running and self.startup_ok,
            "state": self.state,
            "lastState": self.last_state,
        }
        if self.proc is not None:
            out["containerID"] = f"process://{self.proc.pid}"
        elif "terminated" in self.state and "containerID" in self.state["terminated"]:
            out["containerID"] = self.state["terminated"]["containerID"]
        return out
