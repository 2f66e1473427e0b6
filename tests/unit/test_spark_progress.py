"""Progress never counts more tasks done than a Spark job has; input and output are summed over stages."""

from __future__ import annotations

from jobcluster.runtime.jobmaster.spark_application import completed_tasks, stage_io


def test_tasks_rerun_after_a_lost_executor_count_once():
    # what Spark's /jobs reported after a TaskExecutor was replaced: 37 completions of 25 tasks
    job = {"numTasks": 25, "numCompletedTasks": 37, "numCompletedIndices": 21, "numSkippedTasks": 0}
    assert completed_tasks(job) == 21


def test_skipped_stages_count_as_done_and_the_sum_is_clamped():
    assert completed_tasks({"numTasks": 8, "numCompletedIndices": 4, "numSkippedTasks": 4}) == 8
    assert completed_tasks({"numTasks": 8, "numCompletedIndices": 6, "numSkippedTasks": 4}) == 8


def test_without_indices_completions_are_clamped():
    assert completed_tasks({"numTasks": 25, "numCompletedTasks": 37}) == 25


def test_stage_io_sums_sparks_input_and_output_of_every_stage_attempt():
    stages = [
        {"stageId": 0, "attemptId": 0, "inputBytes": 1000, "inputRecords": 10, "outputBytes": 0, "outputRecords": 0},
        {"stageId": 1, "attemptId": 0, "inputBytes": 0, "inputRecords": 0, "outputBytes": 300, "outputRecords": 3},
        {"stageId": 1, "attemptId": 1, "outputBytes": 300, "outputRecords": 3},  # a re-run attempt; fields Spark left out count 0
    ]
    assert stage_io(stages) == {"input_bytes": 1000, "input_records": 10, "output_bytes": 600, "output_records": 6}
    assert stage_io([]) == {"input_bytes": 0, "input_records": 0, "output_bytes": 0, "output_records": 0}
