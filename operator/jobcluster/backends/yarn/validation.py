"""Checks a ClusterSpecification against what the YARN ResourceManager reports, before submission.

The rules and their severity are Flink's ``YarnClusterDescriptor``
(``isReadyForDeployment``, ``checkYarnQueues``, ``validateClusterResources``;
backends.md §1.2), so a configuration that deploys with Flink deploys here:

- fatal: a container larger than the maximum allocation
  (``yarn.scheduler.maximum-allocation-mb``), more vcores than the largest
  running node has, a minimum allocation of 0 MB or less. YARN would reject
  or never allocate such a container, so the deployment stops (the caller
  kills the application it created).
- fatal in addition to Flink: more vcores than ``maximum-allocation-vcores``;
  the ResourceManager rejects such a request with InvalidResourceRequestException,
  so saying it first, naming the option, is kinder.
- warning: a container larger than the largest *free* memory of any node
  (resources may free up), or a queue the ResourceManager does not list
  (a placement rule may create it; YARN rejects it at submission otherwise).
- note: a size that YARN rounds up to a multiple of the minimum allocation.

Every fatal message names the option to change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jobcluster.backends.yarn.config_options import YARN_APPLICATION_QUEUE, YARN_APPMASTER_VCORES, YARN_CONTAINERS_VCORES
from jobcluster.backends.yarn.container_requests import ContainerResource
from jobcluster.backends.yarn.errors import YarnDeploymentError
from jobcluster.client.descriptor import ClusterSpecification
from jobcluster.config import options as o


@dataclass(frozen=True)
class NodeCapacity:
    """One RUNNING NodeManager: its capability and what is in use (MiB, vcores)."""

    memory_mib: int
    vcores: int
    used_memory_mib: int = 0

    @property
    def free_memory_mib(self) -> int:
        return self.memory_mib - self.used_memory_mib


@dataclass(frozen=True)
class YarnClusterResources:
    """What the ResourceManager reports that a deployment is checked against.

    ``maximum``: the new application's maximum resource capability
    (``yarn.scheduler.maximum-allocation-mb/-vcores``); ``minimum_allocation_mb``:
    ``yarn.scheduler.minimum-allocation-mb`` of the client's configuration;
    ``nodes``: the RUNNING nodes; ``queues``: queue names, leaf and parent,
    as ``QueueInfo.getQueueName`` gives them (empty when unknown).
    """

    maximum: ContainerResource
    minimum_allocation_mb: int
    nodes: tuple[NodeCapacity, ...]
    queues: tuple[str, ...] = ()

    @property
    def max_node_vcores(self) -> int:
        return max((n.vcores for n in self.nodes), default=0)

    @property
    def largest_free_memory_mib(self) -> int:
        return max((n.free_memory_mib for n in self.nodes), default=0)


@dataclass
class SpecificationCheck:
    """Non-fatal findings: ``warnings`` the user should see, ``notes`` worth a log line."""

    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_cluster_specification(
    spec: ClusterSpecification,
    *,
    am_vcores: int,
    task_manager_vcores: int,
    queue: str | None,
    cluster: YarnClusterResources,
) -> SpecificationCheck:
    """Check the JobManager (ApplicationMaster) and TaskManager containers against ``cluster``.

    Raises:
        YarnDeploymentError: a fatal mismatch (see the module docstring); the message names the option to change.
    """
    result = SpecificationCheck()
    _check_vcores(am_vcores, task_manager_vcores, cluster)
    if queue is not None and cluster.queues and not _queue_exists(queue, cluster.queues):
        result.warnings.append(
            f"The specified queue '{queue}' does not exist. Available queues: {', '.join(cluster.queues)}; "
            f"set {YARN_APPLICATION_QUEUE.key} to one of them unless a placement rule creates it."
        )
    minimum = cluster.minimum_allocation_mb
    if minimum <= 0:
        raise YarnDeploymentError(
            f"The minimum allocation memory ({minimum} MB) configured via 'yarn.scheduler.minimum-allocation-mb' should be greater than 0."
        )
    # YARN never gives a container less than the minimum allocation (Flink raises the JobManager to it).
    jm = max(spec.master_memory_mib, minimum)
    tm = spec.task_manager_memory_mib
    for what, size, option in (
        ("JobManager", jm, o.JOB_MANAGER_TOTAL_PROCESS_MEMORY),
        ("TaskManager", tm, o.TASK_MANAGER_TOTAL_PROCESS_MEMORY),
    ):
        if size > cluster.maximum.memory_mib:
            raise YarnDeploymentError(
                f"The cluster does not have the requested resources for the {what} available: "
                f"maximum container memory {cluster.maximum.memory_mib} MB, requested {size} MB. "
                f"Lower {option.key}, or raise 'yarn.scheduler.maximum-allocation-mb' (and "
                "'yarn.nodemanager.resource.memory-mb') on the cluster."
            )
        if size % minimum:
            rounded = -(-size // minimum) * minimum
            result.notes.append(
                f"The configured {what} memory is {size} MB. YARN will allocate {rounded} MB to make up an integer multiple "
                f"of its minimum allocation memory ({minimum} MB, configured via 'yarn.scheduler.minimum-allocation-mb'). "
                f"The extra {rounded - size} MB may not be used."
            )
        if size > cluster.largest_free_memory_mib:
            result.warnings.append(
                f"The requested amount of memory for the {what} ({size} MB) is more than the largest free memory of any "
                f"YARN node ({cluster.largest_free_memory_mib} MB): the container waits until resources free up."
            )
    return result


def _check_vcores(am_vcores: int, task_manager_vcores: int, cluster: YarnClusterResources) -> None:
    node_max = cluster.max_node_vcores
    if am_vcores > node_max:
        raise YarnDeploymentError(
            f"The number of requested virtual cores for the application master {am_vcores} exceeds the maximum number "
            f"of virtual cores {node_max} available in the YARN cluster; lower {YARN_APPMASTER_VCORES.key}."
        )
    if task_manager_vcores > node_max:
        raise YarnDeploymentError(
            f"The number of requested virtual cores per TaskManager {task_manager_vcores} exceeds the maximum number of "
            f"virtual cores {node_max} available in the YARN cluster; lower {o.TASK_MANAGER_CPU_CORES.key}, "
            f"{YARN_CONTAINERS_VCORES.key} or, when both are unset, {o.NUM_TASK_SLOTS.key} (the default vcores)."
        )
    limit = cluster.maximum.vcores
    for what, vcores, option in (
        ("application master", am_vcores, YARN_APPMASTER_VCORES.key),
        ("TaskManager", task_manager_vcores, f"{o.TASK_MANAGER_CPU_CORES.key} / {YARN_CONTAINERS_VCORES.key}"),
    ):
        if vcores > limit:
            raise YarnDeploymentError(
                f"The {what} container asks for {vcores} virtual cores, more than the maximum allocation of "
                f"{limit} ('yarn.scheduler.maximum-allocation-vcores'); lower {option}."
            )


def _queue_exists(queue: str, queues: tuple[str, ...]) -> bool:
    """Flink's rule: the name matches a queue as given or under ``root.``."""
    return any(q == queue or q == f"root.{queue}" or f"root.{q}" == queue for q in queues)
