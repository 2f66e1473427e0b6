"""Flink's JobStatus and ApplicationStatus: which states end a job, and how an application's status records its job's."""

from __future__ import annotations

import pytest

from jobcluster.jobgraph.job_status import TERMINAL_JOB_STATES, ApplicationStatus, JobStatus
from jobcluster.runtime.rest.flink_bodies import FLINK_JOB_STATES


@pytest.mark.parametrize("status", list(JobStatus))
def test_a_terminal_job_state_is_recorded_by_its_application_status_and_read_back(status):
    application = ApplicationStatus.of_job(status)
    if status.is_terminal:
        assert application is not ApplicationStatus.UNKNOWN
        assert application.job_state == status.value
    else:
        assert application is ApplicationStatus.UNKNOWN, "a job that did not end leaves its application's outcome unknown"


def test_the_terminal_states_are_flinks_globally_terminal_ones_and_rest_lists_every_state():
    assert {s.value for s in JobStatus if s.is_terminal} == TERMINAL_JOB_STATES == {"FINISHED", "FAILED", "CANCELED"}
    assert FLINK_JOB_STATES[:3] == ("INITIALIZING", "CREATED", "RUNNING") and len(FLINK_JOB_STATES) == 11
    assert [a.exit_code for a in ApplicationStatus] == [0, 1, 2, 3]
    assert ApplicationStatus.UNKNOWN.job_state == "UNKNOWN"
