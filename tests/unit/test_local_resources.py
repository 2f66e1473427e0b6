"""The local targets refuse a cluster that needs more memory than the machine (local-cluster: every process; local: the
JobManager's one process), and local-cluster warns on cores."""

from __future__ import annotations

import pytest

from jobcluster.backends.local.machine_fit import ClusterDemand, MachineResources, check_fits, check_job_manager_fits, cluster_demand
from jobcluster.client.descriptor import ClusterSpecification
from jobcluster.errors import DeploymentError

GiB = 1 << 30
SHIPPED = ClusterSpecification(master_memory_mib=1600, task_manager_memory_mib=2560, slots_per_task_manager=2)
THIS_MACHINE = MachineResources(memory=24 * GiB, cores=2)


def test_task_executors_are_counted_as_the_slot_manager_requests_them():
    assert cluster_demand(SHIPPED, 64, 2.0, 2**31 - 1) == ClusterDemand(32, (32 * 2560 + 1600) << 20, 64.0)
    assert cluster_demand(SHIPPED, 3, 2.0, 2**31 - 1).task_executors == 2
    assert cluster_demand(SHIPPED, 1, 2.0, 2**31 - 1).task_executors == 1


def test_more_memory_than_the_machine_is_refused_naming_the_options():
    demand = cluster_demand(SHIPPED, 64, 2.0, 2**31 - 1)
    with pytest.raises(DeploymentError) as refused:
        check_fits(demand, THIS_MACHINE, SHIPPED)
    message = str(refused.value)
    for phrase in (
        "32 TaskExecutor(s) of 2560 MiB",
        "JobManager of 1600 MiB",
        "request 83520 MiB",
        "has 24576 MiB",
        "-p",
        "taskmanager.numberOfTaskSlots",
    ):
        assert phrase in message, message
    assert "taskmanager.memory.process.size" in message


def test_more_cores_than_the_machine_is_a_warning():
    warning = check_fits(cluster_demand(SHIPPED, 4, 2.0, 2**31 - 1), THIS_MACHINE, SHIPPED)
    assert warning is not None and "4 cores" in warning and "the machine has 2" in warning and "-p" in warning


def test_what_fits_passes_silently():
    assert check_fits(cluster_demand(SHIPPED, 2, 2.0, 2**31 - 1), THIS_MACHINE, SHIPPED) is None


def test_a_mini_cluster_is_checked_for_its_one_process_the_job_managers():
    check_job_manager_fits(SHIPPED, MachineResources(memory=2 * GiB, cores=1))  # no TaskExecutor process to count
    with pytest.raises(DeploymentError) as refused:
        check_job_manager_fits(SHIPPED, MachineResources(memory=1 * GiB, cores=1))
    assert "JobManager's process of 1600 MiB" in str(refused.value) and "jobmanager.memory.process.size" in str(refused.value)
