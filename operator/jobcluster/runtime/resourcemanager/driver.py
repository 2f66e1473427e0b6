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
  ``release_resource``, which is idempotent. The report says why, as a
  :class:`~jobcluster.runtime.resourcemanager.worker_termination.WorkerTermination`:
  the platform's exit code or status, its meaning, the platform's diagnostics,
  and whether (and with which numbers) the platform killed it for its memory.
* What a driver notices about a live worker that the user should know (on
  ``local``: its processes use more memory than its container's size, which
  nothing enforces there) goes to ``on_worker_warning``, once per finding.
* A failure of the backend that the driver cannot recover from (its
  connection to YARN's ResourceManager or to the API server is lost) is
  reported as data through ``on_error``, never raised across the SPI; the
  ResourceManager then ends the cluster (Flink's ``onError`` → ``onFatalError``).
  Only ``request_resource`` raises, when the request itself failed (a
  :class:`~jobcluster.errors.ResourceManagerError`; the SlotManager asks again).
* ``release_all_workers`` stops every worker the driver started (of this or a
  previous attempt); afterwards no process, container or pod of this cluster's
  workers is left, and the application stays registered.
* ``close`` is called last, once, whether or not the application was
  deregistered: it stops the driver's own watches, threads and clients
  (Flink's ``ResourceManagerDriver.terminate``).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Protocol

from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.runtime.resourcemanager.worker_termination import WorkerTermination
from jobcluster.runtime.taskexecutor.launch import TaskExecutorLaunchSettings, TaskExecutorLocation


@dataclass(frozen=True)
class TaskExecutorLaunchContext:
    """What every driver needs to start a TaskExecutor, independent of the backend.

    ``command``: argv of the TaskExecutor bootstrap; ``settings``: what each
    TaskExecutor is told (its environment: ``settings.environment(resource_id, ...)``);
    ``secret``: the cluster secret, for a driver whose platform cannot ship it as a
    private file; ``location``: the JobManager's own cluster directory, log directory
    and bind host, which a driver starting processes on the same machine reuses.
    """

    command: list[str]
    settings: TaskExecutorLaunchSettings
    secret: str
    location: TaskExecutorLocation

    @property
    def cluster_id(self) -> str:
        return self.settings.cluster_id


class ResourceEventHandler(Protocol):
    """Callbacks a driver uses; the ResourceManager implements them on its loop."""

    async def on_worker_terminated(self, resource_id: str, termination: WorkerTermination) -> None: ...

    async def on_worker_warning(self, resource_id: str, message: str) -> None:
        """Something the user should know about the live worker ``resource_id`` (one sentence, with what to change)."""

    async def on_worker_pending(self, resource_id: str, reason: str) -> None:
        """The platform cannot start the requested worker ``resource_id`` yet, in its own words (a pod no node fits:
        the scheduler's message); said once per worker, it may still start."""

    async def on_previous_attempt_workers_recovered(self, resource_ids: list[str]) -> None: ...

    async def on_error(self, error: Exception) -> None:
        """The backend failed for good: the cluster ends (see the module docstring)."""


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
    async def release_all_workers(self) -> None:
        """Stop every worker this driver started, of any attempt; requests made afterwards may fail."""

    async def record_job_result(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        """The job has ended: record how, where the backend keeps a result of its own for the cluster's owner, at once
        rather than at deregistration (Flink's JobResultStore writes its entry as the job ends, before the cleanup);
        a no-op where the platform keeps it (YARN) or nothing is kept."""
        return None

    @abc.abstractmethod
    async def deregister_application(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        """Tell the backend how the application ended (YARN final status, ...)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop the driver's watches, threads and clients (idempotent); no worker is touched."""
