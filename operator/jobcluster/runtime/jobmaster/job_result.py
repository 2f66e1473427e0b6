"""The job result: how a job ended, as the JobMaster records it (Flink's ``JobResult``)."""

from __future__ import annotations

from dataclasses import dataclass

from jobcluster.jobgraph.job_status import JobStatus


@dataclass(frozen=True)
class JobResult:
    """How a job ended. Times in milliseconds since the epoch, as Flink's REST API gives them.

    ``failure_cause``: why a FAILED job failed (for a failed program: how it exited and its error);
    ``program_exit_code``: the exit code of the program's last run (negative: killed by that
    signal), None when it never ran or was canceled.
    """

    job_id: str
    job_name: str
    status: JobStatus
    start_time: int
    end_time: int
    failure_cause: str | None = None
    program_exit_code: int | None = None
    restarts: int = 0

    @property
    def duration_ms(self) -> int:
        return self.end_time - self.start_time
