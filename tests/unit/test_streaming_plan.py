"""A streaming FlinkJob's upgrades, suspensions and savepoints, decided without a cluster (plan.py, job_state.py).

Each test walks the status from one reconciliation to the next as the reconciler
would merge it, so that the sequence an operator killed between two steps resumes
from is the one checked: trigger recorded → outcome recorded → old cluster removed
→ new one deployed from the recorded state → the record dropped once the job runs.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

import pytest

from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.controller.clusters import Observation
from jobcluster.controller.flinkjob_status import Lifecycle, timestamp
from jobcluster.controller.job_state import (
    CHECKPOINT_DIRECTORY_RULE,
    SAVEPOINT_DIRECTORY_RULE,
    Restore,
    SavepointPoll,
    StateSettings,
    checkpoint_info,
    prune_history,
    state_settings,
)
from jobcluster.controller.plan import plan
from jobcluster.controller.plan_types import DEPLOY, DISPOSE_SAVEPOINTS, REMOVE, TRIGGER_SAVEPOINT, Facts
from jobcluster.controller.resource import deployed_spec_hash, parse_spec

NOW = datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.UTC)
JOB_ID = "a" * 32
TRIGGER = "b" * 32
SP_DIR = "hdfs:///savepoints"
SAVEPOINT = StateSettings(upgrade_mode="savepoint", savepoint_directory=SP_DIR, checkpoint_directory="hdfs:///checkpoints")
LAST_STATE = StateSettings(upgrade_mode="last-state", savepoint_directory=SP_DIR, checkpoint_directory="hdfs:///checkpoints")
#: The ``upgrade`` record of a job that goes on from its checkpoints.
LAST_STATE_RECORD = {"mode": "last-state", "jobId": JOB_ID, "checkpointDirectory": "hdfs:///checkpoints", "requestTime": timestamp(NOW)}


def ago(seconds: float) -> str:
    return timestamp(NOW - datetime.timedelta(seconds=seconds))


def details(state: str = "RUNNING", job_type: str = "STREAMING", **extra: Any) -> dict[str, Any]:
    return {"jid": JOB_ID, "name": "wc", "state": state, "start-time": 1, "job-type": job_type, **extra}


def running(**status: Any) -> dict[str, Any]:
    """The status of a streaming job of spec h1 that runs."""
    job = {"jobId": JOB_ID, "jobName": "wc", "state": "RUNNING", "jobType": "STREAMING"}
    return {
        "lifecycleState": Lifecycle.STABLE,
        "deployedSpec": "h1",
        "deployTime": ago(3600),
        "firstRunningTime": ago(3500),
        "jobStatus": job,
        **status,
    }


def up(state: str = "RUNNING", poll: SavepointPoll | None = None, job_type: str = "STREAMING") -> Observation:
    return Observation(exists=True, rest_url="http://jm:8081", job=details(state, job_type), savepoint=poll)


def facts(status: dict[str, Any], observation: Observation | None, spec_hash: str = "h2", **kw: Any) -> Facts:
    values: dict[str, Any] = {
        "generation": 2,
        "spec_hash": spec_hash,
        "desired": "running",
        "startup_deadline": 300.0,
        "active_deadline": None,
        "ttl": None,
        "delete_after_ttl": False,
        "status": status,
        "observation": observation,
        "now": NOW,
        "state": SAVEPOINT,
        "trigger_id": TRIGGER,
    }
    return Facts(**{**values, **kw})


def merged(status: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """The status after a write of ``update`` (a JSON merge patch: None deletes)."""
    result = dict(status)
    for key, value in update.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def test_a_spec_change_in_savepoint_mode_stops_with_a_savepoint_then_removes_then_deploys_from_it():
    status = running()
    first = plan(facts(status, up()))
    assert first.actions == [TRIGGER_SAVEPOINT]
    assert first.trigger is not None and (first.trigger.trigger_id, first.trigger.stop, first.trigger.directory) == (TRIGGER, True, SP_DIR)
    pending = first.status["jobStatus"]["savepointInfo"]["trigger"]
    assert pending["triggerType"] == "UPGRADE" and pending["jobId"] == JOB_ID and first.status["lifecycleState"] == Lifecycle.UPGRADING
    assert [e[1] for e in first.events] == ["SavepointTriggered"]
    status = merged(status, first.status)

    assert plan(facts(status, up(poll=SavepointPoll(TRIGGER, "IN_PROGRESS")))).actions == []

    location = f"{SP_DIR}/savepoint-aaaaaa-0123456789ab"
    done = plan(facts(status, up("FINISHED", SavepointPoll(TRIGGER, "COMPLETED", location=location))))
    assert done.actions == [], "the path is written before the cluster that holds it goes"
    assert done.status["upgrade"]["savepointPath"] == location
    info = done.status["jobStatus"]["savepointInfo"]
    assert info["lastSavepoint"]["location"] == location and info["trigger"] is None
    assert info["savepointHistory"][-1]["triggerType"] == "UPGRADE"
    status = merged(status, done.status)

    removal = plan(facts(status, up("FINISHED")))
    assert removal.actions == [REMOVE]
    assert removal.status["jobStatus"]["savepointInfo"]["lastSavepoint"]["location"] == location, "kept across the removal"
    status = merged(status, removal.status)

    deploy = plan(facts(status, Observation(exists=False)))
    assert deploy.actions == [DEPLOY]
    assert deploy.restore == Restore(path=location)


def test_an_operator_killed_after_recording_the_trigger_triggers_the_same_id_again():
    status = merged(running(), plan(facts(running(), up())).status)
    again = plan(facts(status, up(poll=SavepointPoll(TRIGGER, "UNKNOWN")), trigger_id="c" * 32))
    assert again.actions == [TRIGGER_SAVEPOINT] and again.trigger is not None and again.trigger.trigger_id == TRIGGER


def test_the_new_job_running_drops_the_upgrade_record():
    status = running(upgrade={"mode": "savepoint", "jobId": "f" * 32, "savepointPath": "/sp/1"}, firstRunningTime="", deployedSpec="h2")
    observed = plan(facts(status, up()))
    assert observed.status["upgrade"] is None and observed.actions == []


def test_a_failed_upgrade_savepoint_keeps_the_job_running_on_the_old_spec_and_is_not_tried_again():
    status = merged(running(), plan(facts(running(), up())).status)
    failed = plan(facts(status, up(poll=SavepointPoll(TRIGGER, "FAILED", failure="disk full"))))
    assert failed.actions == [] and failed.status["lifecycleState"] == Lifecycle.STABLE
    assert "disk full" in failed.status["error"] and "last-state" in failed.status["error"]
    assert [e[:2] for e in failed.events] == [("Warning", "SavepointFailed")]
    status = merged(status, failed.status)
    later = plan(facts(status, up(), trigger_id="c" * 32))
    assert later.actions == [] and later.status["lifecycleState"] == Lifecycle.STABLE and "disk full" in later.status["error"]
    assert REMOVE not in plan(facts(status, up(), spec_hash="h2")).actions
    assert plan(facts(status, up(), spec_hash="h3")).actions == [TRIGGER_SAVEPOINT], "another spec tries again"
    assert plan(facts(status, up(), state=LAST_STATE)).actions == [REMOVE], "last-state goes on without a savepoint"


def test_a_savepoint_that_does_not_complete_in_time_fails():
    status = merged(running(), plan(facts(running(), up())).status)
    late = plan(facts(status, up(poll=SavepointPoll(TRIGGER, "IN_PROGRESS")), now=NOW + datetime.timedelta(seconds=601)))
    assert "did not complete within 600 s" in late.status["error"]


def test_a_stop_whose_cluster_ended_unread_goes_on_from_the_checkpoint_root():
    status = merged(running(), plan(facts(running(), up())).status)
    lost = plan(facts(status, Observation(exists=False)))
    assert lost.status["upgrade"] == LAST_STATE_RECORD
    assert [e[1] for e in lost.events] == ["SavepointLost"]
    deploy = plan(facts(merged(status, lost.status), Observation(exists=False)))
    assert deploy.actions == [DEPLOY] and deploy.restore == Restore(job_id=JOB_ID)


def test_savepoint_mode_goes_on_from_the_checkpoints_of_a_job_that_ended_or_whose_cluster_is_gone():
    for observation in (up("FAILED"), Observation(exists=False)):
        removal = plan(facts(running(), observation))
        assert removal.status["upgrade"] == LAST_STATE_RECORD, observation
        deploy = plan(facts(merged(running(), {**removal.status, "jobStatus": None}), Observation(exists=False)))
        assert deploy.actions == [DEPLOY] and deploy.restore == Restore(job_id=JOB_ID)


def test_savepoint_mode_waits_for_a_running_job():
    waiting = plan(facts(running(), up("RESTARTING")))
    assert waiting.actions == [] and "waits for the job to run" in waiting.status["error"]


def test_batch_jobs_and_stateless_mode_are_upgraded_as_before():
    batch = running(jobStatus={"jobId": JOB_ID, "state": "RUNNING", "jobType": "BATCH"})
    assert plan(facts(batch, up(job_type="BATCH"))).actions == [REMOVE]
    assert plan(facts(running(), up(), state=StateSettings())).actions == [REMOVE]
    deploy = plan(facts(merged(running(), {"jobStatus": None}), Observation(exists=False), state=StateSettings()))
    assert deploy.actions == [DEPLOY] and deploy.restore is None


def test_last_state_keeps_the_job_id_whether_or_not_the_job_manager_answers():
    for observation in (up(), Observation(exists=True)):
        removal = plan(facts(running(), observation, state=LAST_STATE))
        assert removal.actions == [REMOVE] and removal.status["upgrade"]["jobId"] == JOB_ID
        deploy = plan(facts(merged(running(), removal.status), Observation(exists=False), state=LAST_STATE))
        assert deploy.actions == [DEPLOY] and deploy.restore == Restore(job_id=JOB_ID)


def test_suspending_in_savepoint_mode_stops_with_a_savepoint_and_resuming_restores_it():
    status = running()
    first = plan(facts(status, up(), spec_hash="h1", desired="suspended"))
    assert first.actions == [TRIGGER_SAVEPOINT] and first.trigger is not None and first.trigger.stop
    status = merged(status, first.status)
    done = plan(facts(status, up("FINISHED", SavepointPoll(TRIGGER, "COMPLETED", location="/sp/2")), spec_hash="h1", desired="suspended"))
    status = merged(status, done.status)
    suspend = plan(facts(status, up("FINISHED"), spec_hash="h1", desired="suspended"))
    assert suspend.actions == [REMOVE] and suspend.status["lifecycleState"] == Lifecycle.SUSPENDED
    assert "/sp/2" in suspend.events[0][2]
    status = merged(status, suspend.status)
    resume = plan(facts(status, None, spec_hash="h1"))
    assert resume.actions == [DEPLOY] and resume.restore == Restore(path="/sp/2")


def test_resumed_while_its_suspension_savepoint_runs_redeploys_from_it():
    status = merged(running(), plan(facts(running(), up(), spec_hash="h1", desired="suspended")).status)
    done = plan(facts(status, up("FINISHED", SavepointPoll(TRIGGER, "COMPLETED", location="/sp/3")), spec_hash="h1"))
    assert done.status["upgrade"]["savepointPath"] == "/sp/3", "not FINISHED: the stop was the operator's"
    status = merged(status, done.status)
    assert plan(facts(status, up("FINISHED"), spec_hash="h1")).actions == [REMOVE]


def test_periodic_and_manual_savepoints_leave_the_job_running():
    periodic = StateSettings(upgrade_mode="savepoint", savepoint_directory=SP_DIR, periodic_interval=3600.0)
    assert plan(facts(running(), up(), spec_hash="h1", state=periodic)).actions == []
    due = plan(facts(running(firstRunningTime=ago(3601)), up(), spec_hash="h1", state=periodic))
    assert due.actions == [TRIGGER_SAVEPOINT] and due.trigger is not None and not due.trigger.stop
    info = due.status["jobStatus"]["savepointInfo"]
    assert info["trigger"]["triggerType"] == "PERIODIC" and info["lastPeriodicSavepointTimestamp"] == timestamp(NOW)

    manual = StateSettings(savepoint_trigger_nonce=7, savepoint_directory=SP_DIR)
    first = plan(facts(running(), up(), spec_hash="h1", state=manual))
    assert first.actions == [TRIGGER_SAVEPOINT] and first.status["jobStatus"]["savepointInfo"]["trigger"]["triggerNonce"] == 7
    status = merged(running(), first.status)
    failed = plan(facts(status, up(poll=SavepointPoll(TRIGGER, "FAILED", failure="no space")), spec_hash="h1", state=manual))
    assert failed.status["lifecycleState"] == Lifecycle.STABLE and failed.events[-1][:2] == ("Warning", "SavepointFailed")
    assert failed.status["jobStatus"]["savepointInfo"]["lastFailure"]["key"] == "manual:7"
    assert plan(facts(merged(status, failed.status), up(), spec_hash="h1", state=manual)).actions == [], "a nonce triggers once"


def test_the_history_limits_dispose_of_old_savepoints_but_never_the_last():
    history = [{"location": f"/sp/{n}", "timeStamp": ago(100 * (5 - n)), "triggerType": "PERIODIC"} for n in range(5)]
    settings = StateSettings(history_max_count=2, history_max_age=250.0, dispose_on_delete=True)
    kept, dispose = prune_history(history, "/sp/4", settings, NOW)
    assert [s["location"] for s in kept] == ["/sp/3", "/sp/4"] and dispose == ["/sp/2", "/sp/1", "/sp/0"]
    kept, dispose = prune_history(history[:1], "/sp/0", settings, NOW)
    assert dispose == [] and kept == history[:1]

    info = {"savepointHistory": history, "lastSavepoint": history[-1]}
    status = running(jobStatus={**running()["jobStatus"], "savepointInfo": info})
    pruned = plan(facts(status, up(), spec_hash="h1", state=StateSettings(history_max_count=2, dispose_on_delete=True)))
    assert pruned.actions == [DISPOSE_SAVEPOINTS] and pruned.dispose == ["/sp/2", "/sp/1", "/sp/0"]
    assert len(pruned.status["jobStatus"]["savepointInfo"]["savepointHistory"]) == 2


def test_by_default_the_history_limits_only_forget_savepoints_and_a_manual_one_is_never_disposed_of():
    """As the Flink Kubernetes Operator (kubernetes.operator.savepoint.dispose-on-delete, false): savepoint data is the
    user's unless they let the operator dispose of what it took for itself; another FlinkJob may start from it."""
    kinds = ["MANUAL", "PERIODIC", "UPGRADE", "PERIODIC"]
    history = [{"location": f"/sp/{n}", "timeStamp": ago(100 * (5 - n)), "triggerType": kind} for n, kind in enumerate(kinds)]
    kept, dispose = prune_history(history, "/sp/3", StateSettings(history_max_count=1), NOW)
    assert [s["location"] for s in kept] == ["/sp/3"] and dispose == []
    status = running(jobStatus={**running()["jobStatus"], "savepointInfo": {"savepointHistory": history, "lastSavepoint": history[-1]}})
    forgot = plan(facts(status, up(), spec_hash="h1", state=StateSettings(history_max_count=1)))
    assert DISPOSE_SAVEPOINTS not in forgot.actions and len(forgot.status["jobStatus"]["savepointInfo"]["savepointHistory"]) == 1
    _, dispose = prune_history(history, "/sp/3", StateSettings(history_max_count=1, dispose_on_delete=True), NOW)
    assert dispose == ["/sp/2", "/sp/1"], "the operator's own, never the manual one"
    with pytest.raises(InvalidSpecError, match="dispose-on-delete: 'yes' is not true or false"):
        state_settings(parse_spec({"job": {"source": "x"}}).job, {"kubernetes.operator.savepoint.dispose-on-delete": "yes"}, {})


def test_a_first_deployment_starts_from_the_initial_savepoint_until_a_job_ran():
    settings = StateSettings(initial_savepoint_path="/sp/old", allow_non_restored_state=True)
    first = plan(facts({}, None, state=settings))
    assert first.actions == [DEPLOY] and first.restore == Restore(path="/sp/old", allow_non_restored_state=True)
    failed = merged(first.status, {"deployedSpec": "h2", "deployTime": ago(10), "lifecycleState": Lifecycle.FAILED})
    again = plan(facts(failed, None, spec_hash="h3", state=settings))
    assert again.restore == Restore(path="/sp/old", allow_non_restored_state=True), "a deployment that failed keeps it"


def test_checkpoint_info_is_written_at_most_once_a_minute():
    queries = {"streaming": {"queries": [{"name": "wc", "committedBatchId": 41, "lastCommitTime": 1_700_000_000_000}]}}
    info = checkpoint_info(queries, None, NOW)
    assert info is not None and info["queries"][0]["committedBatchId"] == 41 and info["lastCommitTime"] == "2023-11-14T22:13:20Z"
    assert checkpoint_info({"streaming": {"queries": [{"name": "wc", "committedBatchId": 42}]}}, info, NOW) == info
    later = checkpoint_info({"streaming": {"queries": [{"name": "wc", "committedBatchId": 42}]}}, info, NOW + datetime.timedelta(minutes=2))
    assert later is not None and later["queries"][0]["committedBatchId"] == 42
    observed = plan(facts(running(), Observation(exists=True, job=details(**queries)), spec_hash="h1", state=StateSettings()))
    assert observed.status["jobStatus"]["checkpointInfo"]["queries"][0]["name"] == "wc"
    starting = checkpoint_info({"streaming": {"queries": [{"name": "wc", "committedBatchId": None}]}}, None, NOW)
    assert starting is not None and "lastCommitTime" not in starting
    soon = checkpoint_info(queries, starting, NOW + datetime.timedelta(seconds=5))
    assert soon is not None and soon["lastCommitTime"] == "2023-11-14T22:13:20Z", "the first commit is written at once"


def test_state_settings_check_the_directories_the_mode_needs():
    spec = parse_spec({"job": {"source": "x", "upgradeMode": "savepoint"}})
    with pytest.raises(InvalidSpecError, match="needs a savepoint directory") as raised:
        state_settings(spec.job, {}, {})
    assert str(raised.value) == SAVEPOINT_DIRECTORY_RULE and raised.value.reason == "SavepointDirectoryMissing"
    with pytest.raises(InvalidSpecError, match=re.escape(CHECKPOINT_DIRECTORY_RULE)):
        state_settings(spec.job, {}, {"state.savepoints.dir": SP_DIR})  # a restore needs somewhere to checkpoint
    directories = {"state.savepoints.dir": SP_DIR, "execution.checkpointing.dir": "hdfs:///checkpoints"}
    settings = state_settings(spec.job, {"kubernetes.operator.periodic.savepoint.interval": "1 h"}, directories)
    assert (settings.savepoint_directory, settings.periodic_interval, settings.history_max_count) == (SP_DIR, 3600.0, 10)
    last = parse_spec({"job": {"source": "x", "upgradeMode": "last-state"}})
    with pytest.raises(InvalidSpecError, match=re.escape(CHECKPOINT_DIRECTORY_RULE)):
        state_settings(last.job, {}, {})
    with pytest.raises(InvalidSpecError, match=r"history\.max\.count"):
        state_settings(parse_spec({"job": {"source": "x"}}).job, {"kubernetes.operator.savepoint.history.max.count": "0"}, {})


def test_how_state_is_carried_is_not_part_of_the_deployment():
    base = deployed_spec_hash({"job": {"source": "x"}})
    operator_options = {"kubernetes.operator.periodic.savepoint.interval": "1 h", "kubernetes.operator.savepoint.history.max.count": "3"}
    assert deployed_spec_hash({"job": {"source": "x"}, "flinkConfiguration": {}}) == deployed_spec_hash(
        {"job": {"source": "x"}, "flinkConfiguration": operator_options}
    ), "the operator's own options need no new cluster"
    carried = {"upgradeMode": "savepoint", "savepointTriggerNonce": 3, "initialSavepointPath": "/sp", "allowNonRestoredState": True}
    assert deployed_spec_hash({"job": {"source": "x", **carried}}) == base


@pytest.mark.parametrize("mode", ["last-state", "stateless"])
def test_leaving_savepoint_mode_while_the_upgrades_stop_runs_removes_and_deploys_once(mode):
    """The mode switched while the upgrade's stop-with-savepoint is pending: the stop is abandoned (recorded as its
    failure), the cluster removed, the new spec deployed once, and the new job then runs on, not replaced again."""
    settings = LAST_STATE if mode == "last-state" else StateSettings(upgrade_mode="stateless")
    status = merged(running(), plan(facts(running(), up())).status)  # savepoint mode: the stop is triggered
    removal = plan(facts(status, up(poll=SavepointPoll(TRIGGER, "IN_PROGRESS")), state=settings))
    assert removal.actions == [REMOVE]
    info = removal.status["jobStatus"]["savepointInfo"]
    assert info["trigger"] is None and f"job.upgradeMode changed to {mode}" in info["lastFailure"]["message"]
    assert [e[1] for e in removal.events] == ["SavepointAbandoned", "Upgrading"]
    status = merged(status, removal.status)

    deploy = plan(facts(status, Observation(exists=False), state=settings))
    assert deploy.actions == [DEPLOY]
    assert (deploy.restore.job_id if deploy.restore else None) == (JOB_ID if mode == "last-state" else None)
    status = merged(status, {**deploy.status, "deployedSpec": "h2", "lifecycleState": Lifecycle.DEPLOYED})
    for _ in range(3):
        after = plan(facts(status, up(), state=settings))
        assert REMOVE not in after.actions and DEPLOY not in after.actions, after
        status = merged(status, after.status)
    assert status["lifecycleState"] == Lifecycle.STABLE


def test_a_suspension_drops_a_deployment_retry_so_a_resumption_starts_its_deadline_afresh():
    status = running(deployRetry={"spec": "h1", "attempts": 3, "firstAttemptTime": ago(3000), "nextAttemptTime": ago(-30)})
    suspended = plan(facts(status, up("FINISHED"), spec_hash="h1", desired="suspended", state=StateSettings(upgrade_mode="stateless")))
    assert suspended.actions == [REMOVE] and "deployRetry" in suspended.status and suspended.status["deployRetry"] is None


RESTARTS = StateSettings(
    upgrade_mode="last-state", savepoint_directory=SP_DIR, checkpoint_directory="hdfs:///checkpoints", restart_failed=True
)


def test_a_failed_job_is_deployed_again_from_its_checkpoints_when_restart_failed_is_on():
    status = running()
    failed = up("FAILED")
    restarting = plan(facts(status, failed, spec_hash="h1", state=RESTARTS))
    assert restarting.actions == [REMOVE]
    assert restarting.status["lifecycleState"] == Lifecycle.UPGRADING and restarting.status["deployedSpec"] == ""
    assert restarting.status["upgrade"]["mode"] == "last-state" and restarting.status["upgrade"]["jobId"] == JOB_ID
    assert [reason for _, reason, _ in restarting.events] == ["JobFailed", "JobRestarting"]
    status = merged(status, restarting.status)
    deploying = plan(facts(status, None, spec_hash="h1", state=RESTARTS))
    assert deploying.actions == [DEPLOY] and deploying.restore == Restore(job_id=JOB_ID), "the new job resumes the failed one's checkpoints"


@pytest.mark.parametrize(
    ("state", "settings", "lifecycle"),
    [
        ("FAILED", LAST_STATE, Lifecycle.FAILED),  # off by default, as in the Flink Kubernetes Operator
        ("CANCELED", RESTARTS, Lifecycle.FAILED),  # only a job that failed is restarted
        ("FINISHED", RESTARTS, Lifecycle.FINISHED),
    ],
)
def test_only_a_failed_job_with_restart_failed_on_is_deployed_again(state, settings, lifecycle):
    ended = plan(facts(running(), up(state), spec_hash="h1", state=settings))
    assert ended.actions == [] and ended.status["lifecycleState"] == lifecycle


def test_a_cluster_deleted_from_outside_is_deployed_again_and_its_streaming_job_resumes_its_checkpoints():
    recovering = plan(facts(running(), Observation(exists=False), spec_hash="h1", state=LAST_STATE))
    assert recovering.actions == [DEPLOY] and recovering.restore == Restore(job_id=JOB_ID)
    assert recovering.status["upgrade"]["jobId"] == JOB_ID and recovering.events[0][:2] == ("Warning", "ClusterRecovering")


@pytest.mark.parametrize(
    "settings",
    [
        StateSettings(
            upgrade_mode="last-state", checkpoint_directory="hdfs:///checkpoints", jm_deployment_recovery=False
        ),  # kubernetes.operator.jm-deployment-recovery.enabled: false
        StateSettings(upgrade_mode="stateless", checkpoint_directory="hdfs:///checkpoints"),  # nothing to resume from
    ],
)
def test_a_cluster_deleted_from_outside_is_lost_when_recovery_is_off_or_the_job_keeps_no_state(settings):
    lost = plan(facts(running(), Observation(exists=False), spec_hash="h1", state=settings))
    assert lost.actions == [] and lost.status["failureReason"] == "ClusterLost"


REDEPLOY = StateSettings(
    upgrade_mode="savepoint",
    savepoint_directory=SP_DIR,
    checkpoint_directory="hdfs:///checkpoints",
    savepoint_redeploy_nonce=2,
    initial_savepoint_path="hdfs:///savepoints/chosen",
)


def test_a_new_savepoint_redeploy_nonce_removes_the_job_without_a_savepoint_and_starts_from_the_initial_one():
    status = running()
    removing = plan(facts(status, up(), state=REDEPLOY))
    assert removing.actions == [REMOVE], "no stop-with-savepoint: the state to start from is named"
    assert removing.status["upgrade"]["mode"] == "redeploy" and removing.status["upgrade"]["savepointPath"] == "hdfs:///savepoints/chosen"
    status = merged(status, removing.status)
    deploying = plan(facts(status, Observation(exists=False), state=REDEPLOY))
    assert deploying.actions == [DEPLOY] and deploying.restore == Restore(path="hdfs:///savepoints/chosen")
    # once deployed with that nonce, a later edit is an upgrade of its mode again (a savepoint of the new job)
    redeployed = merged(running(deployedSpec="h2"), {"savepointRedeployNonce": 2})
    upgrading = plan(facts(redeployed, up(), spec_hash="h3", state=REDEPLOY))
    assert upgrading.actions == [TRIGGER_SAVEPOINT]


def test_a_savepoint_redeploy_nonce_needs_an_initial_savepoint_path():
    spec = parse_spec({"job": {"source": "x", "savepointRedeployNonce": 1}})
    with pytest.raises(InvalidSpecError, match="initialSavepointPath, which is not set"):
        state_settings(spec.job, {}, {})
    assert deployed_spec_hash({"job": {"source": "x", "savepointRedeployNonce": 1}}) != deployed_spec_hash(
        {"job": {"source": "x", "savepointRedeployNonce": 2}}
    ), "a new nonce is a new deployment"
