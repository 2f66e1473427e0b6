"""restartPolicy and the restart back-off.

Why: whether an exited container runs again, and when, decides a pod's phase
and what tests see. The rules are the kubelet's (sidecars always restart, init
containers only after a failure unless the policy is Never, main containers per
``restartPolicy``), with a much shorter back-off so that tests see restarts
quickly: 1 s doubling to 60 s (the kubelet uses 10 s to 300 s), reset after a
long good run.
"""

from __future__ import annotations

import time

from tests.infra.k8s.node_agent.container_run import ContainerRun

# Restart back-off: first restart after BASE, doubling, capped at MAX; reset after a long good run.
BACKOFF_BASE_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 60.0
BACKOFF_RESET_SECONDS = 120.0


def failures_after_exit(failures: int, ran_seconds: float) -> int:
    """Consecutive failures counted for the back-off once a container exited after ran_seconds."""
    return 0 if ran_seconds > BACKOFF_RESET_SECONDS else failures + 1


def backoff_delay(failures: int) -> float:
    """Seconds to wait before the next start after failures consecutive failures."""
    return min(BACKOFF_BASE_SECONDS * 2 ** max(failures - 1, 0), BACKOFF_MAX_SECONDS)


def should_restart(run: ContainerRun, policy: str) -> bool:
    """Whether the terminated container runs again under the pod's restartPolicy."""
    if run.kind == "sidecar":
        return True
    code = run.state.get("terminated", {}).get("exitCode", 0)
    if run.kind == "init":
        return code != 0 and policy != "Never"
    return policy == "Always" or (policy == "OnFailure" and code != 0)


def schedule_restart(run: ContainerRun, pod_id: str) -> None:
    """Wait out the back-off (CrashLoopBackOff); pod_id is "<name>_<namespace>(<uid>)" as in the kubelet's message."""
    delay = backoff_delay(run.failures)
    run.next_start = time.monotonic() + delay
    run.last_state = run.state
    run.restart_count += 1
    run.state = {
        "waiting": {"reason": "CrashLoopBackOff", "message": f"back-off {delay:.0f}s restarting failed container={run.name} pod={pod_id}"}
    }
