"""Parallelism -> Spark cores: every -p with every slot count gets exactly p cores, no executor impossible."""

from __future__ import annotations

import pytest

from jobcluster.errors import IllegalConfigurationError
from jobcluster.spark.parallelism import spark_parallelism


def standalone_master_grants(worker_cores: list[int], cores_max: int, executor_cores: int | None) -> list[int]:
    """Cores Spark 3.5's standalone Master grants one application per worker (spreadOut, the default).

    A model of ``Master.scheduleExecutorsOnWorkers`` for workers that offer one
    executor heap each: without ``spark.executor.cores`` one executor per worker
    gets cores one at a time, round-robin; with it, whole executors of that size.
    """
    step = executor_cores or 1
    assigned = [0] * len(worker_cores)
    executors = [0] * len(worker_cores)
    to_assign = min(cores_max, sum(worker_cores))

    def can_launch(pos: int) -> bool:
        enough_cores = worker_cores[pos] - assigned[pos] >= step
        new_executor = executor_cores is not None or executors[pos] == 0
        enough_memory = executors[pos] == 0 if new_executor else True  # one heap per worker
        return to_assign >= step and enough_cores and enough_memory

    free = [pos for pos in range(len(worker_cores)) if can_launch(pos)]
    while free:
        for pos in free:
            if can_launch(pos):
                to_assign -= step
                assigned[pos] += step
                executors[pos] = 1 if executor_cores is None else executors[pos] + 1
        free = [pos for pos in free if can_launch(pos)]
    return assigned


@pytest.mark.parametrize("slots", [1, 2, 3])
@pytest.mark.parametrize("parallelism", [1, 2, 3, 4, 5])
def test_every_parallelism_gets_exactly_its_cores(parallelism, slots):
    plan = spark_parallelism(parallelism, slots)
    assert plan.cores_max == parallelism
    assert plan.task_executors == -(-parallelism // slots)
    assert plan.worker_cores == slots
    # as few TaskExecutors as hold the slots: fewer than one TaskExecutor's slots stay unused
    assert 0 <= plan.total_worker_cores - parallelism < slots
    granted = standalone_master_grants([plan.worker_cores] * plan.task_executors, plan.cores_max, executor_cores=None)
    assert sum(granted) == parallelism
    assert all(1 <= cores <= slots for cores in granted), f"every TaskExecutor runs an executor: {granted}"


@pytest.mark.parametrize(("parallelism", "slots", "granted"), [(1, 2, 0), (3, 2, 2), (5, 3, 3)])
def test_fixed_executor_cores_would_miss_the_parallelism(parallelism, slots, granted):
    # what spark.executor.cores = slots did: -p 1 with 2 slots never started an executor, -p 3 ran on 2 cores
    plan = spark_parallelism(parallelism, slots)
    cores = standalone_master_grants([slots] * plan.task_executors, parallelism, executor_cores=slots)
    assert sum(cores) == granted


def test_max_slots_that_cannot_hold_the_job_is_refused():
    assert spark_parallelism(4, 2, max_slots=4).task_executors == 2
    assert spark_parallelism(3, 2, max_slots=5).task_executors == 2
    with pytest.raises(IllegalConfigurationError, match=r"needs 4 slots.*number-of-slots.max=5.*at most 3"):
        spark_parallelism(4, 3, max_slots=5)


@pytest.mark.parametrize(("parallelism", "slots"), [(0, 2), (2, 0)])
def test_below_one_is_refused(parallelism, slots):
    with pytest.raises(IllegalConfigurationError):
        spark_parallelism(parallelism, slots)
