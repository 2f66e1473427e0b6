"""Container sizing from the memory model, priorities per spec, and matching allocated containers to requests."""

import dataclasses
from decimal import Decimal

import pytest

from jobcluster.backends.yarn.container_requests import (
    AllocatedContainer,
    ContainerRequest,
    ContainerResource,
    PendingContainerRequests,
    task_executor_resource,
)
from jobcluster.backends.yarn.errors import YarnDeploymentError
from jobcluster.config.configuration import Configuration
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config

MiB = 1 << 20


def spec_of(**conf: str):
    return task_executor_process_spec_from_config(Configuration(conf))


SPEC = spec_of(**{"taskmanager.memory.process.size": "2560m", "taskmanager.numberOfTaskSlots": "2"})
BIG = spec_of(**{"taskmanager.memory.process.size": "4g", "taskmanager.numberOfTaskSlots": "2"})
MAX = ContainerResource(8192, 8)


def container(n: int, priority: int, memory: int = 2560, vcores: int = 2) -> AllocatedContainer:
    return AllocatedContainer(f"container_1_0001_01_{n:06d}", "node1:8041", priority, ContainerResource(memory, vcores))


def test_resource_is_the_total_process_memory_in_mib_and_the_cpu_in_vcores():
    assert task_executor_resource(SPEC) == ContainerResource(2560, 2)


def test_resource_floors_memory_to_whole_mib_and_rounds_cpu_up():
    odd = dataclasses.replace(SPEC, jvm_overhead=SPEC.jvm_overhead + MiB - 1, cpu_cores=Decimal("1.5"))
    assert odd.total_process == 2560 * MiB + MiB - 1
    assert task_executor_resource(odd) == ContainerResource(2560, 2)


def test_one_priority_per_distinct_spec_counting_from_one():
    book: PendingContainerRequests[str] = PendingContainerRequests(MAX)

    assert book.request(SPEC, "a") == ContainerRequest(1, ContainerResource(2560, 2))
    assert book.request(BIG, "b") == ContainerRequest(2, ContainerResource(4096, 2))
    assert book.request(SPEC, "c") == ContainerRequest(1, ContainerResource(2560, 2))
    assert book.pending_count() == 3
    assert book.pending_count(SPEC) == 2
    assert book.pending_count(BIG) == 1


def test_containers_match_by_priority_not_by_size_oldest_request_first():
    book: PendingContainerRequests[str] = PendingContainerRequests(MAX)
    book.request(SPEC, "a")
    book.request(BIG, "b")
    book.request(SPEC, "c")

    # YARN normalizes sizes (here: up to a 1 GiB multiple) and may report other vcores.
    result = book.match([container(1, 1, memory=3072, vcores=1), container(2, 2, memory=4096), container(3, 1, memory=3072)])

    assert [(c.container_id[-1], s, t) for c, s, t in result.accepted] == [("1", SPEC, "a"), ("2", BIG, "b"), ("3", SPEC, "c")]
    assert result.excess == []
    assert book.pending_count() == 0


def test_surplus_and_unknown_priorities_are_excess():
    book: PendingContainerRequests[str] = PendingContainerRequests(MAX)
    book.request(SPEC, "a")

    result = book.match([container(1, 1), container(2, 1), container(3, 7)])

    assert [t for _, _, t in result.accepted] == ["a"]
    assert [c.container_id[-1] for c in result.excess] == ["2", "3"]


def test_cancel_removes_one_pending_request():
    book: PendingContainerRequests[str] = PendingContainerRequests(MAX)
    book.request(SPEC, "a")
    book.request(SPEC, "b")

    assert book.cancel("a") == ContainerRequest(1, ContainerResource(2560, 2))
    assert book.cancel("a") is None
    assert [t for _, _, t in book.match([container(1, 1)]).accepted] == ["b"]


def test_heartbeat_is_fast_only_while_requests_are_pending():
    book: PendingContainerRequests[str] = PendingContainerRequests(MAX)
    assert book.heartbeat_interval(5.0, 0.5) == 5.0
    book.request(SPEC, "a")
    assert book.heartbeat_interval(5.0, 0.5) == 0.5
    book.match([container(1, 1)])
    assert book.heartbeat_interval(5.0, 0.5) == 5.0


@pytest.mark.parametrize("maximum", [ContainerResource(2048, 8), ContainerResource(8192, 1)])
def test_a_container_beyond_the_maximum_allocation_is_refused(maximum):
    book: PendingContainerRequests[str] = PendingContainerRequests(maximum)
    with pytest.raises(YarnDeploymentError, match=r"taskmanager\.memory\.process\.size"):
        book.request(SPEC, "a")
    assert book.pending_count() == 0


def test_cancel_all_forgets_every_pending_request():
    book: PendingContainerRequests[str] = PendingContainerRequests(MAX)
    book.request(SPEC, "a")
    book.request(BIG, "b")
    book.request(SPEC, "c")

    assert sorted(book.cancel_all()) == ["a", "b", "c"]
    assert book.pending_count() == 0
    assert book.match([container(1, 1)]).excess == [container(1, 1)]
