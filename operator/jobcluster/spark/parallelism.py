"""How a job's parallelism becomes Spark cores: TaskExecutors, worker cores and ``spark.cores.max``.

Why: a job with parallelism ``p`` must run on exactly ``p`` Spark cores, for
every number of slots per TaskExecutor.  Fixing ``spark.executor.cores`` to the
slots of a TaskExecutor cannot do that: ``p`` below the slots leaves no
executor that fits (``spark.cores.max`` < ``spark.executor.cores``, the job
hangs) and ``p`` not a multiple of the slots leaves the last TaskExecutor idle.

So ``spark.executor.cores`` stays unset.  Spark's standalone Master then starts
one executor per worker and an application and hands out cores one at a time,
round-robin over the workers with free cores, until ``spark.cores.max`` is
reached (``Master.scheduleExecutorsOnWorkers`` with ``spark.deploy.spreadOut``;
Spark 3.5 and 4.x).  Every worker has as many cores as its TaskExecutor has slots, the
cluster has ``ceil(p / slots)`` TaskExecutors, so their cores are at least
``p`` and Spark grants exactly ``p``.  Memory stays within each container: a
worker offers exactly one executor heap (``--memory`` = ``spark.executor.memory``),
so the Master never puts a second executor of the job on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from jobcluster.config import options as o
from jobcluster.errors import IllegalConfigurationError


@dataclass(frozen=True)
class SparkParallelism:
    """What ``parallelism`` slots become in Spark.

    ``task_executors``: TaskExecutors the job needs (``ceil(parallelism / slots)``);
    ``worker_cores``: cores of each one's Spark worker (= its slots);
    ``cores_max``: ``spark.cores.max``, the cores the application gets (= parallelism).
    Executors take the cores Spark grants them (``spark.executor.cores`` unset).
    """

    parallelism: int
    slots_per_task_executor: int
    task_executors: int
    worker_cores: int
    cores_max: int

    @property
    def total_worker_cores(self) -> int:
        return self.task_executors * self.worker_cores


def spark_parallelism(parallelism: int, slots_per_task_executor: int, max_slots: int | None = None) -> SparkParallelism:
    """Derive the Spark side of a job of ``parallelism`` slots on TaskExecutors of ``slots_per_task_executor``.

    ``max_slots`` is ``slotmanager.number-of-slots.max`` (None: unlimited); the
    SlotManager never requests a TaskExecutor whose slots would exceed it.

    Raises:
        IllegalConfigurationError: parallelism or slots below 1, or the job needs
            more slots than ``max_slots`` lets the cluster have (it would wait for
            them until ``slot.request.timeout``).
    """
    if parallelism < 1:
        raise IllegalConfigurationError(f"the parallelism must be at least 1, not {parallelism} (-p / {o.PARALLELISM_DEFAULT.key})")
    if slots_per_task_executor < 1:
        raise IllegalConfigurationError(f"{o.NUM_TASK_SLOTS.key} must be at least 1, not {slots_per_task_executor}")
    task_executors = math.ceil(parallelism / slots_per_task_executor)
    if max_slots is not None:
        reachable = (max_slots // slots_per_task_executor) * slots_per_task_executor
        if parallelism > reachable:
            raise IllegalConfigurationError(
                f"the job needs {parallelism} slots, but {o.SLOT_MANAGER_MAX_SLOTS.key}={max_slots} with "
                f"{o.NUM_TASK_SLOTS.key}={slots_per_task_executor} allows at most {reachable}; "
                f"lower -p ({o.PARALLELISM_DEFAULT.key}) or raise {o.SLOT_MANAGER_MAX_SLOTS.key}"
            )
    return SparkParallelism(
        parallelism=parallelism,
        slots_per_task_executor=slots_per_task_executor,
        task_executors=task_executors,
        worker_cores=slots_per_task_executor,
        cores_max=parallelism,
    )
