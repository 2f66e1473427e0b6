"""Container sizes, container requests, and matching allocated containers back to them.

Why by priority: YARN may hand back a container larger than requested
(normalized up to its minimum allocation or increment) or with other vcores
(the DefaultResourceCalculator ignores them), so a returned container cannot
be matched to a request by its size. Flink therefore gives every distinct
TaskExecutorProcessSpec its own YARN ``Priority`` (1, 2, ... in order of first
use) and maps containers back by the priority they carry (FLINK-19324,
backends.md §2). Containers beyond what is pending at their priority are
surplus and go back to YARN.

Everything here is plain data and bookkeeping; the driver turns a
:class:`ContainerResource` into a ``Resource`` and a priority into a
``Priority`` through the gateway, and runs this on one thread.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from jobcluster.backends.yarn.errors import YarnDeploymentError
from jobcluster.backends.yarn.options import vcores_of
from jobcluster.memory.size import MiB
from jobcluster.memory.spec import TaskExecutorProcessSpec

Token = TypeVar("Token")


@dataclass(frozen=True, order=True)
class ContainerResource:
    """A YARN ``Resource``: memory in MiB and virtual cores."""

    memory_mib: int
    vcores: int

    def fits_into(self, maximum: ContainerResource) -> bool:
        return self.memory_mib <= maximum.memory_mib and self.vcores <= maximum.vcores

    def __str__(self) -> str:
        return f"<memory:{self.memory_mib}, vCores:{self.vcores}>"


def task_executor_resource(spec: TaskExecutorProcessSpec) -> ContainerResource:
    """The container of a TaskExecutor: exactly its Total Process Memory in whole MiB (floored, as Flink's
    ``getMebiBytes``) and its CPU cores rounded up to whole vcores."""
    return ContainerResource(memory_mib=spec.total_process // MiB, vcores=vcores_of(spec.cpu_cores))


@dataclass(frozen=True)
class AllocatedContainer:
    """A container the ResourceManager allocated, as the AMRM heartbeat reports it."""

    container_id: str
    node_id: str
    priority: int
    resource: ContainerResource


@dataclass(frozen=True)
class ContainerRequest:
    """What to hand to ``AMRMClient.addContainerRequest``: the spec's priority and resource."""

    priority: int
    resource: ContainerResource


@dataclass
class Matching(Generic[Token]):
    """The outcome of one allocation: containers paired with the requests they fulfil
    (``accepted``: container, spec, the request's token), and the surplus to release."""

    accepted: list[tuple[AllocatedContainer, TaskExecutorProcessSpec, Token]] = field(default_factory=list)
    excess: list[AllocatedContainer] = field(default_factory=list)


class PendingContainerRequests(Generic[Token]):
    """The container requests of one ApplicationMaster that YARN has not fulfilled yet.

    ``maximum`` is the registration's maximum resource capability: a spec
    larger than that is refused (YARN would never allocate it). A request
    carries a caller's token (for the driver: the future to complete), and
    requests of one spec are fulfilled first in, first out.
    """

    def __init__(self, maximum: ContainerResource) -> None:
        self.maximum = maximum
        self._priorities: dict[TaskExecutorProcessSpec, int] = {}
        self._specs: dict[int, TaskExecutorProcessSpec] = {}
        self._pending: dict[int, deque[Token]] = {}

    def request(self, spec: TaskExecutorProcessSpec, token: Token) -> ContainerRequest:
        """Record a request for one container of ``spec``; returns the priority and resource to ask YARN for.

        Raises:
            YarnDeploymentError: the container is larger than the maximum allocation.
        """
        resource = task_executor_resource(spec)
        if not resource.fits_into(self.maximum):
            raise YarnDeploymentError(
                f"The TaskExecutor container {resource} exceeds the maximum container of the YARN cluster {self.maximum}; "
                "lower taskmanager.memory.process.size or taskmanager.cpu.cores / yarn.containers.vcores, or raise "
                "yarn.scheduler.maximum-allocation-mb / -vcores."
            )
        priority = self.priority_of(spec)
        self._pending.setdefault(priority, deque()).append(token)
        return ContainerRequest(priority, resource)

    def priority_of(self, spec: TaskExecutorProcessSpec) -> int:
        """The YARN priority of ``spec``: a new one (counting up from 1) for a spec not seen before."""
        priority = self._priorities.get(spec)
        if priority is None:
            priority = len(self._priorities) + 1
            self._priorities[spec] = priority
            self._specs[priority] = spec
        return priority

    def cancel(self, token: Token) -> ContainerRequest | None:
        """Forget the pending request with ``token``; returns what to remove from the AMRMClient, or None."""
        for priority, tokens in self._pending.items():
            if token in tokens:
                tokens.remove(token)
                return ContainerRequest(priority, task_executor_resource(self._specs[priority]))
        return None

    def cancel_all(self) -> list[Token]:
        """Forget every pending request; returns their tokens, oldest first per priority."""
        tokens = [token for pending in self._pending.values() for token in pending]
        self._pending.clear()
        return tokens

    def match(self, containers: Iterable[AllocatedContainer]) -> Matching[Token]:
        """Pair allocated containers with pending requests of their priority, oldest request first;
        containers of an unknown priority, or beyond the pending count, are excess."""
        result: Matching[Token] = Matching()
        for container in containers:
            tokens = self._pending.get(container.priority)
            if not tokens:
                result.excess.append(container)
                continue
            result.accepted.append((container, self._specs[container.priority], tokens.popleft()))
        return result

    def pending_count(self, spec: TaskExecutorProcessSpec | None = None) -> int:
        """Requests not yet fulfilled, of ``spec`` or of all specs."""
        if spec is not None:
            priority = self._priorities.get(spec)
            return len(self._pending.get(priority, ())) if priority is not None else 0
        return sum(len(tokens) for tokens in self._pending.values())

    def heartbeat_interval(self, normal: float, while_requesting: float) -> float:
        """Seconds to the next AMRM heartbeat: ``yarn.heartbeat.container-request-interval`` while
        requests are pending (allocations only arrive with heartbeats), else ``yarn.heartbeat.interval``."""
        return while_requesting if self.pending_count() else normal
