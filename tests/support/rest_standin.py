"""A real RestEndpoint in-process, in front of a stand-in dispatcher of one job.

Shared by the REST protocol tests (tests/unit) and the tests with Flink's own
client (tests/integration/flink): the endpoint, its routes and bodies are the
real ones; only the dispatcher behind it is a stand-in whose job state a test
sets (the dispatcher's own behaviour is tested in test_mini_dispatcher).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

from jobcluster.errors import JobNotFoundError
from jobcluster.jobgraph.job_status import JobStatus
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.runtime.jobmaster.job_result import JobResult
from jobcluster.runtime.jobmaster.savepoint_operations import SavepointOperations
from jobcluster.runtime.jobmaster.spark_application import SparkUi
from jobcluster.runtime.messages import TaskExecutorRegistration
from jobcluster.runtime.resourcemanager.resource_manager import task_manager_info
from jobcluster.runtime.rest.dashboard_views import TaskManagerLogSource
from jobcluster.runtime.rest.endpoint import RestEndpoint
from jobcluster.spark.checkpoints import SavepointError

JOB_ID = "0123456789abcdef0123456789abcdef"
VERTEX_ID = "fedcba9876543210fedcba9876543210"
TOKEN = "t0ken"
MiB = 1 << 20
SPARK = {
    "app_id": "app-1",
    "jobs_total": 2,
    "jobs_completed": 1,
    "tasks_total": 10,
    "tasks_completed": 6,
    "tasks_failed": 1,
    "executors": 2,
    "tasks_active": 3,
    "input_bytes": 4096,
    "input_records": 40,
    "output_bytes": 512,
    "output_records": 5,
}


class StandInDispatcher:
    """Knows one job ``JOB_ID`` ("wordcount", RUNNING with Spark's progress ``SPARK``); records cancels.

    ``finish(status, cause, exit_code)`` ends the job as the JobMaster would.
    A batch job unless ``queries`` (the driver agent's views) are set: then
    savepoints complete in ``savepoint_directory`` (or the one asked for),
    and a stop-with-savepoint ends the job FINISHED. A disposal succeeds
    unless its path ends with ``/not-a-savepoint``; its path is recorded in ``disposed``.
    ``ui``: the Spark UI of the running program, None (the default) while none runs.
    """

    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.state = "RUNNING"
        self.result: JobResult | None = None
        self.queries: list[dict[str, Any]] = []
        self.savepoint_directory: str | None = None
        self.savepoints = SavepointOperations()
        self.triggered: list[tuple[str | None, bool, bool]] = []  # (directory, stop, drain) of each savepoint asked for
        self.disposals = SavepointOperations()
        self.disposed: list[str] = []
        self.failures: list[dict[str, Any]] = []  # {"timestamp", "cause"} of each failed run, as the JobMaster keeps them
        self.ui: SparkUi | None = None
        self.restore: dict[str, Any] | None = None  # the savepoint restored, as the JobMaster has it from the driver agent

    def spark_ui(self) -> SparkUi | None:
        return self.ui

    def job_ids(self) -> list[str]:
        return [JOB_ID]

    def _job(self, job_id: str) -> None:
        if job_id != JOB_ID:
            raise JobNotFoundError(f"Job {job_id} not found")

    def finish(self, status: JobStatus, cause: str | None = None, exit_code: int | None = None) -> None:
        self.state = status.value
        self.result = JobResult(JOB_ID, "wordcount", status, 1000, 4000, cause, exit_code, restarts=1)

    def job_details(self, job_id: str) -> dict[str, Any]:
        self._job(job_id)
        end = self.result.end_time if self.result else -1
        return {
            "jid": job_id,
            "name": "wordcount",
            "state": self.state,
            "start-time": 1000,
            "end-time": end,
            "duration": 500 if end < 0 else end - 1000,
            "now": 1500,
            "timestamps": {"INITIALIZING": 1000, "CREATED": 1100, "RUNNING": 1200},
            "restarts": 1,
            "slots": {"required": 1, "held": 1},
            "vertices": [
                {
                    "id": VERTEX_ID,
                    "name": "wordcount.py",
                    "parallelism": 4,
                    "maxParallelism": 128,
                    "slotSharingGroup": "default",
                    "status": self.state,
                    "spark": SPARK,
                }
            ],
            "spark": SPARK,
            "program-exit-code": self.result.program_exit_code if self.result else None,
            "failures": list(self.failures),
            "restart-strategy": {"type": "fixed-delay", "attempts": 3, "delay_seconds": 1.0},
            "job-type": "STREAMING" if self.queries else "BATCH",
            "streaming": {"queries": self.queries} if self.queries else None,
            "savepoints": self.savepoints.completed(),
            "restore": self.restore,
        }

    def trigger_savepoint(self, job_id: str, trigger_id: str, target_directory: str | None, stop: bool, drain: bool) -> None:
        self._job(job_id)
        if not self.savepoints.known(trigger_id):
            self.triggered.append((target_directory, stop, drain))
        self.savepoints.start(trigger_id, self._savepoint(target_directory, stop), _spawn)

    async def _savepoint(self, target_directory: str | None, stop: bool) -> str:
        if not self.queries:
            raise SavepointError(f"Job {JOB_ID} is not a streaming job: its program runs no streaming query.")
        directory = target_directory or self.savepoint_directory
        if directory is None:
            raise SavepointError("No savepoint directory configured.")
        if stop:
            self.finish(JobStatus.FINISHED, exit_code=0)
        return f"{directory}/savepoint-{JOB_ID[:6]}-000000000000"

    def savepoint_operations(self, job_id: str) -> SavepointOperations:
        self._job(job_id)
        return self.savepoints

    def trigger_disposal(self, trigger_id: str, path: str) -> SavepointOperations:
        self.disposals.start(trigger_id, self._dispose(path), _spawn)
        return self.disposals

    async def _dispose(self, path: str) -> str:
        if path.endswith("/not-a-savepoint"):
            raise SavepointError(f"{path} is not a savepoint: it has no _metadata file")
        self.disposed.append(path)
        return path

    def disposal_operations(self) -> SavepointOperations:
        return self.disposals

    def checkpoint_statistics(self, job_id: str) -> dict[str, Any]:
        return {"details": self.job_details(job_id), "restored_from": None}

    def checkpoint_config(self, job_id: str) -> dict[str, Any]:
        self._job(job_id)
        return {"checkpoint_root": f"file:/cp/{JOB_ID}", "savepoint_directory": self.savepoint_directory, "timeout": 600.0}

    def job_result(self, job_id: str) -> JobResult | None:
        self._job(job_id)
        return self.result

    async def cancel_job(self, job_id: str) -> None:
        self._job(job_id)
        self.cancelled.append(job_id)
        if self.result is None:
            self.finish(JobStatus.CANCELED)


def _spawn(coro: Awaitable[None], name: str) -> asyncio.Task[None]:
    return asyncio.ensure_future(coro)


def registration() -> TaskExecutorRegistration:
    """A TaskExecutor of 2 slots with a known process spec (task heap 512 MiB, network 64 MiB, managed 256 MiB)."""
    spec = TaskExecutorProcessSpec(Decimal(2), 128 * MiB, 128 * MiB, 512 * MiB, 0, 64 * MiB, 256 * MiB, 256 * MiB, 192 * MiB, 2)
    return TaskExecutorRegistration(
        resource_id="tm-1",
        address="http://127.0.0.1:1/taskmanager",
        num_slots=2,
        process_spec={**spec.to_dict(), "total_flink": spec.total_flink, "total_process": spec.total_process},
        pid=4242,
        host="h",
        cpu_cores=8,
        physical_memory=16 << 30,
    )


def with_endpoint(
    scenario: Callable[[str, StandInDispatcher], None],
    dispatcher: StandInDispatcher | None = None,
    task_manager_logs: TaskManagerLogSource | None = None,
    **endpoint_options: Any,
) -> None:
    """Run ``scenario(url, dispatcher)`` (blocking, in a thread) against a real RestEndpoint with token ``TOKEN``;
    ``task_manager_logs``: where the TaskManagers' logs come from (none: they have none);
    ``endpoint_options``: RestEndpoint's keyword arguments (``dashboard``, ``configuration``, ``log_dir``)."""

    async def task_managers() -> list[dict[str, Any]]:
        return [task_manager_info(registration(), 1, 2500, 1000)]

    async def resource_overview() -> dict[str, Any]:
        return {"taskmanagers": 1, "slots-total": 2, "slots-available": 1, "pending-taskmanagers": 0}

    async def main() -> None:
        endpoint = RestEndpoint("127.0.0.1", 0, "test", TOKEN, **endpoint_options)
        standin = dispatcher or StandInDispatcher()
        await endpoint.start()
        if task_manager_logs is not None:
            endpoint.serve_task_manager_logs(task_manager_logs)
        endpoint.serve(standin, task_managers, resource_overview)  # type: ignore[arg-type]
        try:
            await asyncio.to_thread(scenario, endpoint.url, standin)
        finally:
            await endpoint.stop()

    asyncio.run(main())
