"""TaskManager pod states as the driver's watch will read them (Flink's KubernetesPod rules)."""

from __future__ import annotations

from jobcluster.backends.kubernetes.pod_status import (
    exit_code,
    is_scheduled,
    is_terminated,
    max_attempt,
    pod_termination,
    termination_diagnostics,
)
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from tests.support.fakes import CLUSTER_CONFIG

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


def oom_killed(limits: dict | None) -> dict:
    container = {
        "name": "jobcluster-main-container",
        "resources": {"requests": {"memory": "1024Mi"}, **({"limits": limits} if limits else {})},
    }
    return {
        "spec": {"containers": [{"name": "sidecar", "resources": {"limits": {"memory": "64Mi"}}}, container]},
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {"name": "sidecar", "state": {"running": {}}},
                {"name": "jobcluster-main-container", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}},
            ],
        },
    }


def test_an_oom_killed_container_is_a_memory_kill_at_the_limit_of_its_spec_with_the_option_to_change():
    ended = pod_termination(oom_killed({"memory": "1024Mi", "cpu": "2"}), "the diagnostics")
    assert ended.summary == "OOMKilled, exit code 137: killed by the kernel for exceeding the container's memory limit"
    assert ended.memory_kill is not None and ended.diagnostics == "the diagnostics"
    assert ended.memory_kill.words == "OOMKilled: container jobcluster-main-container reached its memory limit of 1024Mi"
    spec = task_executor_process_spec_from_config(CLUSTER_CONFIG)
    cause = ended.cause(spec)
    assert cause.startswith(f"{ended.summary} ({ended.memory_kill.words}). The JVM overhead ({spec.jvm_overhead >> 20}m of the 1024m")
    assert "raise taskmanager.memory.jvm-overhead.min (and .max, if lower)" in cause, "no excess measured: no number to reach"
    assert "taskmanager.memory.process.size by as much too" in cause
    unlimited = pod_termination(oom_killed(None), "")
    assert unlimited.memory_kill is not None and unlimited.memory_kill.words.endswith("reached its memory limit")


def test_other_ends_say_their_reason_and_meaning_and_are_no_memory_kill():
    evicted = pod_termination({"status": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}}, "")
    assert evicted.summary == "pod Evicted: evicted by its node (the node ran short of a resource): The node was low on resource: memory."
    assert evicted.memory_kill is None
    completed = {"status": {"containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}
    assert pod_termination(completed, "").summary == "Completed, exit code 0: exited normally"
    killed = {"status": {"containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 137, "reason": "Error"}}}]}}
    assert pod_termination(killed, "").summary.startswith("Error, exit code 137: killed by SIGKILL")
    assert pod_termination(killed, "").memory_kill is None, "a SIGKILL alone is no memory kill on Kubernetes"
