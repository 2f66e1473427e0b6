"""Job states and the job result, with Flink's names."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class JobStatus(enum.Enum):
    INITIALIZING = "INITIALIZING"
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    RESTARTING = "RESTARTING"
    CANCELLING = "CANCELLING"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"

    @property
    def is_terminal(self) -> bool:
        return self in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED)


@dataclass(frozen=True)
class JobResult:
    """How a job ended. Times in milliseconds since the epoch, as Flink's REST API gives them.

    ``program_output``: the tail of what the program printed to stdout;
    ``failure_cause``: the reason and the tail of the driver's error output, for FAILED jobs.
    """

    job_id: str
    job_name: str
    status: JobStatus
    start_time: int
    end_time: int
    failure_cause: str | None = None
    program_output: str = ""
    restarts: int = 0

    @property
    def duration_ms(self) -> int:
        return self.end_time - self.start_time

    def to_rest(self) -> dict[str, Any]:
        """Flink's ``/jobs/{id}/execution-result`` body, with our program output added."""
        return {
            "status": {"id": "COMPLETED"},
            "job-execution-result": {
                "id": self.job_id,
                "application-status": {"FINISHED": "SUCCEEDED"}.get(self.status.value, self.status.value),
                "net-runtime": self.duration_ms,
                "accumulator-results": {},
                "failure-cause": {"class": "jobcluster.JobFailure", "stack-trace": self.failure_cause} if self.failure_cause else None,
                "job-status": self.status.value,
                "job-name": self.job_name,
                "start-time": self.start_time,
                "end-time": self.end_time,
                "restarts": self.restarts,
                "program-output": self.program_output,
            },
        }
