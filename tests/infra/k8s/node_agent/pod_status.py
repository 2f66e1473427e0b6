"""The pod status the kubelet would write: phase, conditions, IPs, container statuses.

Why: controllers (ReplicaSet, Job, the garbage collector) and the tests act on
pod status, so it must follow the kubelet's rules: Pending until prepared,
initialised and every main container started; Ready only while every main and
sidecar container runs and is ready; ``CreateContainerConfigError`` while the
pod's configuration cannot be resolved. Pure functions of the worker's state,
except that conditions remember when their status last changed.
"""

from __future__ import annotations

from typing import Any

from tests.infra.k8s.node_agent.addresses import HOST_IP
from tests.infra.k8s.node_agent.container_run import ContainerRun
from tests.infra.k8s.node_agent.timestamps import now_rfc3339


def pod_phase(terminal_phase: str | None, initialized: bool, prepared: bool, runs_main: list[ContainerRun]) -> str:
    if terminal_phase:
        return terminal_phase
    if not initialized or not prepared:
        return "Pending"
    if any(not r.ever_ran for r in runs_main):
        return "Pending"
    return "Running"


class Conditions:
    """Pod conditions whose lastTransitionTime is the time their status last changed."""

    def __init__(self) -> None:
        self.times: dict[str, tuple[str, str]] = {}

    def condition(self, type_: str, status: bool, reason: str | None = None) -> dict:
        value = "True" if status else "False"
        prev = self.times.get(type_)
        if prev is None or prev[0] != value:
            self.times[type_] = (value, now_rfc3339())
        cond = {"type": type_, "status": value, "lastProbeTime": None, "lastTransitionTime": self.times[type_][1]}
        if reason and not status:
            cond["reason"] = reason
        return cond


def pod_status(
    *,
    pod: dict,
    phase: str,
    terminal_phase: str | None,
    failed: bool,
    initialized: bool,
    prepared: bool,
    runs_init: list[ContainerRun],
    runs_main: list[ContainerRun],
    config_error: str | None,
    pod_ip: str,
    start_time: str,
    conditions: Conditions,
) -> dict[str, Any]:
    """The status to merge-patch; pod is the object as last seen (its other conditions are kept)."""
    ready = (
        phase == "Running"
        and all(r.running and r.ready for r in runs_main)
        and all(r.running and r.ready for r in runs_init if r.kind == "sidecar")
    )
    not_ready = "PodCompleted" if terminal_phase else "ContainersNotReady"
    init_done = initialized or not runs_init or bool(terminal_phase and not failed)
    ours = [
        conditions.condition("PodReadyToStartContainers", prepared and not terminal_phase),
        conditions.condition("Initialized", init_done, None if init_done else "ContainersNotInitialized"),
        conditions.condition("Ready", ready, not_ready),
        conditions.condition("ContainersReady", ready, not_ready),
    ]
    owned = {c["type"] for c in ours}
    others = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") not in owned]
    main = [r.status() for r in runs_main]
    init = [r.status() for r in runs_init]
    if config_error:
        for s in main + init:
            if "waiting" in s["state"] and s["state"]["waiting"].get("reason") == "ContainerCreating":
                s["state"] = {"waiting": {"reason": "CreateContainerConfigError", "message": config_error}}
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": others + ours,
        "hostIP": HOST_IP,
        "hostIPs": [{"ip": HOST_IP}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": start_time,
        "containerStatuses": main,
        "initContainerStatuses": init,
    }
    status["message"] = config_error  # None removes a stale message (merge patch)
    return status
