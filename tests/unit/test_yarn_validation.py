"""The ClusterSpecification check against the ResourceManager's limits: Flink's fatal vs. warning cases."""

import pytest

from jobcluster.backends.yarn.container_requests import ContainerResource
from jobcluster.backends.yarn.errors import YarnDeploymentError
from jobcluster.backends.yarn.validation import NodeCapacity, YarnClusterResources, check_cluster_specification
from jobcluster.client.descriptor import ClusterSpecification

SPEC = ClusterSpecification(master_memory_mib=1536, task_manager_memory_mib=2560, slots_per_task_manager=2)
CLUSTER = YarnClusterResources(
    maximum=ContainerResource(8192, 8),
    minimum_allocation_mb=256,
    nodes=(NodeCapacity(memory_mib=8192, vcores=8),),
    queues=("default",),
)


def check(spec=SPEC, cluster=CLUSTER, am_vcores=1, tm_vcores=2, queue=None):
    return check_cluster_specification(spec, am_vcores=am_vcores, task_manager_vcores=tm_vcores, queue=queue, cluster=cluster)


def test_a_fitting_specification_passes_quietly():
    result = check(queue="default")
    assert result.warnings == []
    assert result.notes == []


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        (ClusterSpecification(9000, 2560, 2), "jobmanager.memory.process.size"),
        (ClusterSpecification(1536, 8193, 2), "taskmanager.memory.process.size"),
    ],
)
def test_memory_above_the_maximum_allocation_is_fatal(spec, named):
    with pytest.raises(YarnDeploymentError, match=named) as info:
        check(spec=spec)
    assert "yarn.scheduler.maximum-allocation-mb" in str(info.value)


def test_jobmanager_is_raised_to_the_minimum_allocation_first():
    cluster = YarnClusterResources(ContainerResource(1024, 8), 2048, (NodeCapacity(8192, 8),))
    with pytest.raises(YarnDeploymentError, match="requested 2048 MB"):
        check(spec=ClusterSpecification(512, 512, 1), cluster=cluster)


def test_am_vcores_above_the_largest_node_is_fatal():
    with pytest.raises(YarnDeploymentError, match=r"yarn\.appmaster\.vcores"):
        check(am_vcores=9)


def test_tm_vcores_above_the_largest_node_names_the_options():
    with pytest.raises(YarnDeploymentError, match=r"yarn\.containers\.vcores") as info:
        check(tm_vcores=9)
    assert "taskmanager.numberOfTaskSlots" in str(info.value)


def test_vcores_above_the_maximum_allocation_is_fatal():
    cluster = YarnClusterResources(ContainerResource(8192, 2), 256, (NodeCapacity(8192, 16),))
    with pytest.raises(YarnDeploymentError, match=r"yarn\.scheduler\.maximum-allocation-vcores"):
        check(cluster=cluster, tm_vcores=4)


def test_no_minimum_allocation_is_fatal():
    cluster = YarnClusterResources(ContainerResource(8192, 8), 0, (NodeCapacity(8192, 8),))
    with pytest.raises(YarnDeploymentError, match=r"yarn\.scheduler\.minimum-allocation-mb"):
        check(cluster=cluster)


def test_more_than_any_free_node_is_only_a_warning():
    busy = YarnClusterResources(ContainerResource(8192, 8), 256, (NodeCapacity(8192, 8, used_memory_mib=7000),))
    result = check(cluster=busy)
    assert len(result.warnings) == 2  # JobManager and TaskManager
    assert "TaskManager (2560 MB)" in result.warnings[1]
    assert "1192 MB" in result.warnings[1]


def test_unknown_queue_is_only_a_warning_naming_the_option():
    result = check(queue="etl")
    assert len(result.warnings) == 1
    assert "'etl' does not exist" in result.warnings[0]
    assert "yarn.application.queue" in result.warnings[0]


@pytest.mark.parametrize("queue", ["default", "root.default"])
def test_queue_matches_with_or_without_root(queue):
    assert check(queue=queue).warnings == []
    root_named = YarnClusterResources(CLUSTER.maximum, 256, CLUSTER.nodes, ("root.default",))
    assert check(queue=queue, cluster=root_named).warnings == []


def test_the_shipped_jobmanager_size_gets_a_note_on_the_test_cluster():
    result = check(spec=ClusterSpecification(1600, 2560, 2))
    assert result.warnings == []
    assert result.notes == [
        "The configured JobManager memory is 1600 MB. YARN will allocate 1792 MB to make up an integer multiple of its "
        "minimum allocation memory (256 MB, configured via 'yarn.scheduler.minimum-allocation-mb'). The extra 192 MB may not be used."
    ]


def test_sizes_off_the_minimum_allocation_grid_get_a_note():
    cluster = YarnClusterResources(ContainerResource(8192, 8), 1024, (NodeCapacity(8192, 8),))
    result = check(cluster=cluster)
    assert result.warnings == []
    assert len(result.notes) == 2
    assert "allocate 2048 MB" in result.notes[0] and "extra 512 MB" in result.notes[0]
    assert "allocate 3072 MB" in result.notes[1]
