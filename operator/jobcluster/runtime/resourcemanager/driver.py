"""The ResourceManagerDriver SPI: how an active ResourceManager gets workers.

The ResourceManager knows nothing of local processes, YARN or Kubernetes; a
driver does, and nothing more. The contract, for every driver:

* All methods are called on the ResourceManager's loop and must not block it.
* ``request_resource`` starts one TaskExecutor sized by the given
  TaskExecutorProcessSpec and returns its ResourceID once the start was
  *accepted* (process spawned, container allocated, pod created). The worker
  registers with the ResourceManager by itself later; until then it is pending.
* A worker that ends, for any reason, is reported once through
  ``ResourceEventHandler.on_worker_terminated`` — unless it was released with
  ``release_resource``, which is idempotent.
* Failures of the backend are reported as data (``on_error``), not raised
  across the SPI, except from ``request_resource`` where the request itself
  failed (a :class:`~jobcluster.errors.ResourceManagerError`).
* ``terminate`` releases every worker the driver started; afterwards no process,
  container or pod of this cluster's workers is left.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from jobcluster.memory.spec import TaskExecutorProcessSpec


class ApplicationStatus(enum.Enum):
    """How the cluster's application ended (Flink's ApplicationStatus), and the entrypoint's exit code."""

    SUCCEEDED = 0
    FAILED = 1
    CANCELED = 2
    UNKNOWN = 3

    @property
    def exit_code(self) -> int:
        return self.value


@dataclass(frozen=True)
class TaskExecutorLaunchContext:
    """What every driver needs to start a TaskExecutor, independent of the backend.

    ``command``: argv of the TaskExecutor bootstrap; ``env``: environment it needs
    (ResourceManager address and fencing token, cluster secret, cluster id);
    ``cluster_dir``: the staged cluster directory (config, JobGraph, artifacts);
    ``log_dir``: where worker logs go on this machine.
    """

    cluster_id: str
    command: list[str]
    env: dict[str, str]
    cluster_dir: Path
    log_dir: Path


class ResourceEventHandler(Protocol):
    """Callbacks a driver uses; the ResourceManager implements them on its loop."""

    async def on_worker_terminated(self, resource_id: str, diagnostics: str) -> None: ...

    async def on_previous_attempt_workers_recovered(self, resource_ids: list[str]) -> None: ...

    async def on_error(self, error: Exception) -> None: ...


class ResourceManagerDriver(abc.ABC):
    """Starts and stops TaskExecutors on one kind of infrastructure (see the module docstring)."""

    @abc.abstractmethod
    async def initialize(self, handler: ResourceEventHandler, launch_context: TaskExecutorLaunchContext) -> None:
        """Connect to the backend; report workers of a previous attempt, if any."""

    @abc.abstractmethod
    async def request_resource(self, spec: TaskExecutorProcessSpec) -> str:
        """Start one TaskExecutor of exactly ``spec``'s size; return its ResourceID."""

    @abc.abstractmethod
    async def release_resource(self, resource_id: str) -> None:
        """Stop the worker (idempotent); no ``on_worker_terminated`` follows."""

    @abc.abstractmethod
    async def terminate(self) -> None:
        """Release every worker this driver started."""

    @abc.abstractmethod
    async def deregister_application(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        """Tell the backend how the application ended (YARN final status, ...)."""
