"""Progress never counts more tasks done than a Spark job has."""

from __future__ import annotations

from jobcluster.runtime.jobmaster.spark_application import completed_tasks


def test_tasks_rerun_after_a_lost_executor_count_once():
    # what Spark's /jobs reported after a TaskExecutor was replaced: 37 completions of 25 tasks
    job = {"numTasks": 25, "numCompletedTasks": 37, "numCompletedIndices": 21, "numSkippedTasks": 0}
    assert completed_tasks(job) == 21


def test_skipped_stages_count_as_done_and_the_sum_is_clamped():
    assert completed_tasks({"numTasks": 8, "numCompletedIndices": 4, "numSkippedTasks": 4}) == 8
    assert completed_tasks({"numTasks": 8, "numCompletedIndices": 6, "numSkippedTasks": 4}) == 8


def test_without_indices_completions_are_clamped():
    assert completed_tasks({"numTasks": 25, "numCompletedTasks": 37}) == 25
