"""The driver's pure rules: which pod events end a worker, what a re-list means, what a new attempt keeps."""

from __future__ import annotations

from jobcluster.backends.kubernetes.pod_events import (
    DELETED,
    MODIFIED,
    attempt_patch,
    plan_recovery,
    recorded_attempt,
    resync_events,
    worker_termination,
)
from jobcluster.backends.kubernetes.taskmanager import attempt_of_pod, task_manager_pod_name

SCHEDULED = [{"type": "PodScheduled", "status": "True"}]


def pod(
    name: str, phase: str = "Running", *, scheduled: bool = True, exited: int | None = None, deleting: bool = False, owner: str = "jm-uid"
) -> dict:
    state = {"terminated": {"exitCode": exited, "reason": "Error"}} if exited is not None else {"running": {}}
    metadata: dict = {"name": name, "ownerReferences": [{"kind": "Deployment", "name": "wc", "uid": owner}]}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-23T19:00:00Z"
    return {
        "metadata": metadata,
        "status": {
            "phase": phase,
            "conditions": SCHEDULED if scheduled else [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            "containerStatuses": [{"name": "jobcluster-main-container", "state": state}],
        },
    }


def test_a_running_or_pending_pod_ends_nothing():
    assert worker_termination(MODIFIED, pod("wc-taskmanager-1-1")) is None
    assert worker_termination("ADDED", pod("wc-taskmanager-1-1", "Pending", scheduled=False)) is None
    # being deleted is not yet ended: the DELETED event or the container's end says so
    assert worker_termination(MODIFIED, pod("wc-taskmanager-1-1", deleting=True)) is None


def test_an_exited_container_ends_the_worker_with_its_exit_code_and_reason():
    ended = worker_termination(MODIFIED, pod("wc-taskmanager-1-1", "Failed", exited=7))
    assert ended is not None
    assert ended.summary == "Error, exit code 7: exited with an error of its own (see its log)"
    assert ended.diagnostics.startswith(
        "Pod terminated, container termination statuses: [jobcluster-main-container(exitCode=7, reason=Error"
    )
    assert "pod deleted" not in ended.diagnostics and ended.memory_kill is None


def test_a_deleted_pod_ends_the_worker_whatever_its_state():
    running = worker_termination(DELETED, pod("wc-taskmanager-1-1"))
    assert running is not None
    assert running.diagnostics == "Pod deleted before its container terminated, container termination statuses: []"
    assert running.summary.startswith("pod deleted: deleted while its container ran")
    exited = worker_termination(DELETED, pod("wc-taskmanager-1-1", "Failed", exited=143))
    assert exited is not None and "exitCode=143" in exited.diagnostics and exited.diagnostics.endswith(", pod deleted")
    assert exited.summary.startswith("Error, exit code 143: stopped by SIGTERM")


def test_a_relist_after_expiry_shows_every_pod_and_the_ones_that_went_missing():
    listed = [pod("wc-taskmanager-1-1"), pod("wc-taskmanager-1-3", "Failed", exited=1)]
    events = resync_events({"wc-taskmanager-1-1", "wc-taskmanager-1-2", "wc-taskmanager-1-3"}, listed)
    assert [(kind, p["metadata"]["name"]) for kind, p in events] == [
        (MODIFIED, "wc-taskmanager-1-1"),
        (MODIFIED, "wc-taskmanager-1-3"),
        (DELETED, "wc-taskmanager-1-2"),
    ]
    # ...which the rules above turn into exactly the missed terminations
    ended = [p["metadata"]["name"] for kind, p in events if worker_termination(kind, p) is not None]
    assert ended == ["wc-taskmanager-1-3", "wc-taskmanager-1-2"]


def test_a_new_attempt_keeps_live_scheduled_pods_deletes_the_rest_and_counts_on():
    recovery = plan_recovery(
        [
            pod("wc-taskmanager-1-1"),
            pod("wc-taskmanager-2-1"),
            pod("wc-taskmanager-2-2", "Failed", exited=1),
            pod("wc-taskmanager-2-3", "Pending", scheduled=False),
            pod("wc-taskmanager-2-4", deleting=True),
            pod("someone-elses-pod"),
        ]
    )
    assert recovery.recovered == ["wc-taskmanager-1-1", "wc-taskmanager-2-1"]
    assert recovery.to_delete == ["wc-taskmanager-2-2", "wc-taskmanager-2-3", "wc-taskmanager-2-4"]
    assert recovery.attempt == 3


def test_pods_told_to_register_at_a_replaced_job_managers_address_are_deleted_not_waited_for():
    """A JobManager pod deleted (a new pod, a new IP): the TaskManagers of the old one retry its address until their
    registration timeout, as long as the job's slot request timeout; counted as workers on their way they would let
    the job fail for want of slots. Only pods told the address this JobManager serves at are kept (the rule; a new
    attempt's RPC port is picked at its start, so in practice its address is new)."""

    def told(name: str, address: str) -> dict:
        found = pod(name)
        found["spec"] = {
            "containers": [
                {"name": "jobcluster-main-container", "env": [{"name": "JOBCLUSTER_RESOURCE_MANAGER_ADDRESS", "value": address}]}
            ]
        }
        return found

    pods = [told("wc-taskmanager-1-1", "http://10.244.0.5:6123"), told("wc-taskmanager-2-1", "http://10.244.0.9:6123")]
    recovery = plan_recovery(pods, resource_manager_address="http://10.244.0.9:6123")
    assert (recovery.recovered, recovery.to_delete, recovery.attempt) == (["wc-taskmanager-2-1"], ["wc-taskmanager-1-1"], 3)
    assert plan_recovery(pods).recovered == ["wc-taskmanager-1-1", "wc-taskmanager-2-1"], "no address known: all kept"


def test_pods_of_a_removed_cluster_of_the_same_id_are_neither_recovered_nor_deleted_and_their_names_stay_theirs():
    # an upgrade: the operator removed the cluster "wc" (its pods await the garbage collector) and deployed a new "wc"
    old = [pod("wc-taskmanager-1-1", owner="old-uid"), pod("wc-taskmanager-1-2", owner="old-uid")]
    recovery = plan_recovery(old, owner_uid="new-uid")
    assert (recovery.recovered, recovery.to_delete, recovery.attempt) == ([], [], 2)
    assert plan_recovery(old, owner_uid="old-uid").recovered == ["wc-taskmanager-1-1", "wc-taskmanager-1-2"], "its own attempt's"


def test_the_attempt_counts_from_ended_pods_too_and_starts_at_one():
    assert plan_recovery([pod("wc-taskmanager-4-9", "Failed", exited=1)]).attempt == 5
    assert plan_recovery([]).attempt == 1


def test_pod_names_carry_the_attempt():
    name = task_manager_pod_name("word-count-2", 3, 12)
    assert name == "word-count-2-taskmanager-3-12"
    assert attempt_of_pod(name) == 3
    assert attempt_of_pod("word-count-2") is None


def test_the_attempt_recorded_on_the_deployment_counts_when_no_pod_is_left():
    """A JobManager that deleted its TaskManager pods when stopped leaves only the recorded attempt to count from."""
    recorded = {"metadata": {"annotations": {"jobcluster.io/jobmanager-attempt": "2"}}}
    assert plan_recovery([], recorded_attempt(recorded)).attempt == 3
    assert plan_recovery([pod("wc-taskmanager-4-1")], recorded_attempt(recorded)).attempt == 5
    garbled = {"metadata": {"annotations": {"jobcluster.io/jobmanager-attempt": "x"}}}
    assert recorded_attempt({"metadata": {}}) == recorded_attempt(garbled) == 0
    assert recorded_attempt({"metadata": attempt_patch(3)["metadata"]}) == 3
