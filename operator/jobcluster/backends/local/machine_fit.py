"""Does a job cluster fit this machine? The local targets' counterpart of YARN's maximum-allocation check.

Why: on ``local-cluster`` every TaskExecutor is a process on this machine, sized by
the memory model.  A parallelism the machine cannot hold (``-p 64`` with 2
slots per TaskExecutor asks for 32 TaskExecutors of 2.5 GiB) would start
them all and swap or get killed.  So the client counts the TaskExecutors the
job will need, exactly as the SlotManager will request them, and refuses a
cluster whose containers together need more memory than the machine has;
more cores than the machine has only slows the job down, so that is a warning.
The JobManager requests no cores of its own: its driver schedules, the
executors compute.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

from jobcluster.client.descriptor import ClusterSpecification
from jobcluster.config import options as o
from jobcluster.errors import DeploymentError
from jobcluster.memory.size import MiB
from jobcluster.spark.parallelism import spark_parallelism


@dataclass(frozen=True)
class MachineResources:
    """What this machine has: ``memory`` in bytes (physical RAM), ``cores`` (usable CPUs)."""

    memory: int
    cores: int

    @classmethod
    def of_this_machine(cls) -> MachineResources:
        return cls(memory=psutil.virtual_memory().total, cores=len(os.sched_getaffinity(0)))


@dataclass(frozen=True)
class ClusterDemand:
    """What a job cluster requests: ``task_executors`` containers, total ``memory`` (bytes) and ``cores``."""

    task_executors: int
    memory: int
    cores: float


def cluster_demand(spec: ClusterSpecification, required_slots: int, cpu_cores_per_task_executor: float, max_slots: int) -> ClusterDemand:
    """The TaskExecutors (as the SlotManager will request them) and the JobManager, added up."""
    task_executors = spark_parallelism(required_slots, spec.slots_per_task_manager, max_slots).task_executors
    memory = (task_executors * spec.task_manager_memory_mib + spec.master_memory_mib) * MiB
    return ClusterDemand(task_executors, memory, task_executors * cpu_cores_per_task_executor)


def check_fits(demand: ClusterDemand, machine: MachineResources, spec: ClusterSpecification) -> str | None:
    """Refuse a cluster that needs more memory than ``machine``; return a warning when it needs more cores.

    Raises:
        DeploymentError: the memory does not fit; the message names the options to change.
    """
    what = (
        f"{demand.task_executors} TaskExecutor(s) of {spec.task_manager_memory_mib} MiB and "
        f"{_cores(demand.cores / demand.task_executors)} core(s) each ({o.NUM_TASK_SLOTS.key}={spec.slots_per_task_manager}) "
        f"plus a JobManager of {spec.master_memory_mib} MiB"
    )
    if demand.memory > machine.memory:
        raise DeploymentError(
            f"this machine cannot hold the job cluster: {what} request {demand.memory // MiB} MiB, "
            f"but it has {machine.memory // MiB} MiB of memory. Lower -p ({o.PARALLELISM_DEFAULT.key}), "
            f"raise {o.NUM_TASK_SLOTS.key} (fewer TaskExecutors), or lower {o.TASK_MANAGER_TOTAL_PROCESS_MEMORY.key} "
            f"or {o.JOB_MANAGER_TOTAL_PROCESS_MEMORY.key}"
        )
    if demand.cores > machine.cores:
        return (
            f"the job cluster requests more cores than this machine has: {what} request {_cores(demand.cores)} cores, "
            f"the machine has {machine.cores}; the job will run, but its tasks share the cores. Lower -p "
            f"({o.PARALLELISM_DEFAULT.key}), or {o.NUM_TASK_SLOTS.key} / {o.TASK_MANAGER_CPU_CORES.key}"
        )
    return None


def check_job_manager_fits(spec: ClusterSpecification, machine: MachineResources) -> None:
    """A MiniCluster (``-t local``) is one process, the JobManager's: refuse it when ``machine`` cannot hold that.

    Its TaskExecutors take no memory of their own (they are endpoints in that process, and the program's
    Spark runs in the driver's JVM), and its tasks are threads of the driver: no cores are requested.

    Raises:
        DeploymentError: the JobManager's process is larger than the machine's memory.
    """
    if spec.master_memory_mib * MiB > machine.memory:
        raise DeploymentError(
            f"this machine cannot hold the job cluster: its JobManager's process of {spec.master_memory_mib} MiB "
            f"is more than the {machine.memory // MiB} MiB of memory it has. Lower {o.JOB_MANAGER_TOTAL_PROCESS_MEMORY.key}"
        )


def _cores(value: float) -> str:
    return f"{value:g}"
