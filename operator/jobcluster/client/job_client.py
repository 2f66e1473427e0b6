"""JobClient: follow one job to its end."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.errors import ClusterClientError

POLL_INTERVAL = 1.0  # seconds between status polls


@dataclass(frozen=True)
class JobExecutionResult:
    """How the job ended: ``status`` is FINISHED, FAILED or CANCELED; ``duration_ms`` in milliseconds."""

    job_id: str
    job_name: str
    status: str
    duration_ms: int
    program_output: str
    failure_cause: str | None
    restarts: int

    @property
    def succeeded(self) -> bool:
        return self.status == "FINISHED"


class JobClient:
    """Handle on job ``job_id`` running in the cluster behind ``cluster_client``."""

    def __init__(self, cluster_client: RestClusterClient, job_id: str) -> None:
        self.cluster_client = cluster_client
        self.job_id = job_id

    def details(self) -> dict[str, Any]:
        return self.cluster_client.job_details(self.job_id)

    def cancel(self) -> None:
        self.cluster_client.cancel(self.job_id)

    def wait_for_result(
        self, on_update: Callable[[dict[str, Any], list[dict[str, Any]]], None] | None = None, max_unreachable: float = 60.0
    ) -> JobExecutionResult:
        """Poll until the job is terminal; ``on_update(job_details, task_managers)`` after each poll.

        Raises:
            ClusterClientError: the cluster's liveness check reports its
                JobManager gone (within one poll interval, ~1 s), or the cluster
                stays unreachable for ``max_unreachable`` seconds; either way it
                died before reporting a result.
        """
        last_contact = time.monotonic()
        while True:
            try:
                result = self.cluster_client.execution_result(self.job_id)
                if result is not None:
                    return _to_result(result)
                if on_update is not None:
                    on_update(self.details(), self.cluster_client.task_managers())
                last_contact = time.monotonic()
            except ClusterClientError as exc:
                if not self.cluster_client.job_manager_alive():
                    raise ClusterClientError(self._died_message("its JobManager process has died")) from exc
                if time.monotonic() - last_contact > max_unreachable:
                    raise ClusterClientError(
                        self._died_message(f"lost contact with it for {max_unreachable:.0f} s; its JobManager has probably died")
                    ) from exc
            time.sleep(POLL_INTERVAL)

    def _died_message(self, what: str) -> str:
        cluster = self.cluster_client
        logs = f"see its logs in {cluster.log_location}" if cluster.log_location else "see the cluster's logs"
        return f"job cluster {cluster.cluster_id} ended before job {self.job_id} reported a result: {what} ({logs})"


def _to_result(body: dict[str, Any]) -> JobExecutionResult:
    failure = body.get("failure-cause")
    return JobExecutionResult(
        job_id=body["id"],
        job_name=body.get("job-name", ""),
        status=body["job-status"],
        duration_ms=body.get("net-runtime", 0),
        program_output=body.get("program-output", ""),
        failure_cause=failure.get("stack-trace") if failure else None,
        restarts=body.get("restarts", 0),
    )
