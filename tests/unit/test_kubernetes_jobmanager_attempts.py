"""The bound on a Kubernetes JobManager's starts (backends/kubernetes/jobmanager_attempts.py): the rule, as YARN's."""

from __future__ import annotations

from jobcluster.backends.kubernetes.config_options import KUBERNETES_JOB_MANAGER_ATTEMPTS
from jobcluster.backends.kubernetes.jobmanager_attempts import (
    JobManagerAttempts,
    admit_start,
    job_manager_attempts,
    recorded_starts,
    starts_annotation,
)
from jobcluster.config.configuration import Configuration
from jobcluster.config.validation import option_problem

BOUND = JobManagerAttempts(limit=3, interval=600.0)


def test_starts_within_the_bound_are_admitted_and_recorded():
    starts: list[float] = []
    for now in (1000.0, 1100.0, 1200.0):
        starts, refused = admit_start(starts, now, BOUND)
        assert refused is None
    assert starts == [1000.0, 1100.0, 1200.0]


def test_one_start_more_within_the_interval_is_refused_with_the_count_and_the_options():
    starts, refused = admit_start([1000.0, 1100.0, 1200.0], 1300.0, BOUND)
    assert starts == [1000.0, 1100.0, 1200.0]
    assert refused is not None and refused.startswith("the JobManager started 4 times within 300 s")
    assert "jobcluster.kubernetes.jobmanager.attempts=3" in refused and "attempts-interval=600 s" in refused


def test_starts_older_than_the_interval_no_longer_count():
    """A long streaming job that lost its JobManager three times over a day keeps running."""
    starts, refused = admit_start([0.0, 1000.0, 1200.0], 1500.0, BOUND)  # 0.0 is 1500 s old
    assert refused is None and starts == [1000.0, 1200.0, 1500.0]
    assert admit_start([1000.0], 1600.0, BOUND) == ([1600.0], None), "exactly the interval old: gone"


def test_the_starts_survive_on_the_deployment_and_a_garbled_record_counts_nothing():
    deployment = {"metadata": {"annotations": starts_annotation([1000.4, 1100.6])}}
    assert recorded_starts(deployment) == [1000.0, 1101.0]
    for text in ("x", "{}", '["a", 3]'):
        garbled = {"metadata": {"annotations": {"jobcluster.io/jobmanager-starts": text}}}
        assert recorded_starts(garbled) == ([3.0] if text == '["a", 3]' else [])
    assert recorded_starts({"metadata": {}}) == []


def test_the_bound_is_read_from_its_options():
    assert job_manager_attempts(Configuration()) == JobManagerAttempts(3, 600.0)
    configured = Configuration(
        {"jobcluster.kubernetes.jobmanager.attempts": "1", "jobcluster.kubernetes.jobmanager.attempts-interval": "1 h"}
    )
    assert job_manager_attempts(configured) == JobManagerAttempts(1, 3600.0)
    none = Configuration({"jobcluster.kubernetes.jobmanager.attempts": "0"})
    assert option_problem(none, KUBERNETES_JOB_MANAGER_ATTEMPTS) == "jobcluster.kubernetes.jobmanager.attempts: '0' must be greater than 0"
