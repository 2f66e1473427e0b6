"""Completed-container diagnostics and the final application status the ApplicationMaster unregisters with."""

import pytest

from jobcluster.backends.yarn import statuses as s

CID = "container_1_0001_01_000002"


@pytest.mark.parametrize(
    ("exit_status", "expected"),
    [
        (0, f"Container {CID} exited normally. Diagnostics: d"),
        (-102, f"Container {CID} was preempted by YARN. Diagnostics: d"),
        (-1000, f"Container {CID} was invalid. Diagnostics: d"),
        (-100, f"Container {CID} killed by YARN, either due to being released by the application or being 'lost'"),
        (-101, f"Container {CID} is failed because threshold number of the nodemanager-local-directories"),
        (-104, f"Container {CID} was killed by YARN for exceeding its physical memory limit"),
        (-103, f"Container {CID} was killed by YARN for exceeding its virtual memory limit"),
        (143, f"Container {CID} marked as failed.\n Exit code:143.\n Diagnostics:d"),
        (-105, f"Container {CID} marked as failed.\n Exit code:-105."),
    ],
)
def test_container_completed_diagnostics(exit_status, expected):
    text = s.container_completed_diagnostics(CID, exit_status, "d")
    assert text.startswith(expected)
    assert text.endswith("d")


def test_memory_kills_are_recognised():
    assert s.is_killed_for_memory(-104) and s.is_killed_for_memory(-103)
    assert not s.is_killed_for_memory(-100) and not s.is_killed_for_memory(137)


@pytest.mark.parametrize(
    ("state", "final"),
    [
        ("FINISHED", "SUCCEEDED"),
        ("FAILED", "FAILED"),
        ("CANCELED", "KILLED"),
        ("canceled", "KILLED"),
        ("RUNNING", "UNDEFINED"),
        (None, "UNDEFINED"),
    ],
)
def test_final_application_status(state, final):
    assert s.final_application_status(state) == final


@pytest.mark.parametrize(
    ("final", "state"),
    [("SUCCEEDED", "FINISHED"), ("FAILED", "FAILED"), ("KILLED", "CANCELED"), ("UNDEFINED", "FAILED")],
)
def test_job_state_of_final_status_reverses_the_mapping(final, state):
    assert s.job_state_of_final_status(final) == state
    if final != "UNDEFINED":
        assert s.final_application_status(state) == final


def test_finish_time_is_rfc3339_utc_once_ended():
    assert s.finish_time_of(1_795_510_847_606) == "2026-11-24T09:00:47Z"
    assert s.finish_time_of(0) == "" and s.finish_time_of(None) == ""
