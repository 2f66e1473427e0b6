"""TaskManager pod states as the driver's watch will read them (Flink's KubernetesPod rules)."""

from __future__ import annotations

from jobcluster.backends.kubernetes.pod_status import exit_code, is_scheduled, is_terminated, max_attempt, termination_diagnostics

PENDING = {"status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}
RUNNING = {
    "status": {
        "phase": "Running",
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [{"name": "jobcluster-main-container", "state": {"running": {"startedAt": "x"}}}],
    }
}
EXITED = {
    "status": {
        "phase": "Failed",
        "reason": "Evicted",
        "message": "low memory",
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [{"name": "jobcluster-main-container", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}],
    }
}


def test_scheduled_and_terminated():
    assert (is_scheduled(PENDING), is_terminated(PENDING)) == (False, False)
    assert (is_scheduled(RUNNING), is_terminated(RUNNING)) == (True, False)
    assert (is_scheduled(EXITED), is_terminated(EXITED)) == (True, True)
    assert is_terminated({"status": {"phase": "Failed"}})
    assert not is_scheduled({})


def test_diagnostics_in_flinks_format():
    assert termination_diagnostics(EXITED) == (
        "Pod terminated, container termination statuses: [jobcluster-main-container(exitCode=137, reason=OOMKilled, message=None)]"
        ", pod status: Failed(reason=Evicted, message=low memory)"
    )
    assert termination_diagnostics(RUNNING) == "Pod terminated, container termination statuses: []"
    assert exit_code(EXITED) == 137
    assert exit_code(RUNNING) is None


def test_max_attempt_of_previous_pods():
    assert max_attempt([]) == 0
    assert max_attempt(["wc-taskmanager-1-3", "wc-taskmanager-2-1", "wc", "other-pod"]) == 2
