"""The job's states and the application's status, with Flink's names: one definition for the cluster, the client
and the operator.

:class:`JobStatus` is Flink's ``JobStatus``, in Flink's order: the REST API gives
these names (a job's ``state``, and a ``timestamps`` entry for each). A job cluster
goes through INITIALIZING, CREATED, RUNNING, RESTARTING, CANCELLING and ends
FINISHED, FAILED or CANCELED; FAILING, SUSPENDED and RECONCILING are Flink's
too and never reached here. :class:`ApplicationStatus` is Flink's
``ApplicationStatus``: how the cluster's application ended, which the platform
is told and which is the JobManager process's exit code.
"""

from __future__ import annotations

import enum


class JobStatus(enum.Enum):
    INITIALIZING = "INITIALIZING"
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    FAILING = "FAILING"
    FAILED = "FAILED"
    CANCELLING = "CANCELLING"
    CANCELED = "CANCELED"
    FINISHED = "FINISHED"
    RESTARTING = "RESTARTING"
    SUSPENDED = "SUSPENDED"
    RECONCILING = "RECONCILING"

    @property
    def is_terminal(self) -> bool:
        """Globally terminal (Flink's ``isGloballyTerminalState``): the job ended and will not run again."""
        return self.value in TERMINAL_JOB_STATES


TERMINAL_JOB_STATES: frozenset[str] = frozenset({"FINISHED", "FAILED", "CANCELED"})
"""The names of the globally terminal states, as a job's ``state`` arrives over REST or in a FlinkJob's status."""


class ApplicationStatus(enum.Enum):
    """How the cluster's application ended (Flink's ApplicationStatus); its value is the entrypoint's exit code."""

    SUCCEEDED = 0
    FAILED = 1
    CANCELED = 2
    UNKNOWN = 3

    @property
    def exit_code(self) -> int:
        return self.value

    @classmethod
    def of_job(cls, status: JobStatus) -> ApplicationStatus:
        """The application's status when its job ended in ``status`` (Flink's ``fromJobStatus``); UNKNOWN unless terminal."""
        return _OF_JOB.get(status, cls.UNKNOWN)

    @property
    def job_state(self) -> str:
        """The name of the job's terminal state this status records (Flink's ``deriveJobStatus``); ``UNKNOWN`` for UNKNOWN."""
        job = next((j for j, a in _OF_JOB.items() if a is self), None)
        return job.value if job is not None else "UNKNOWN"


_OF_JOB = {
    JobStatus.FINISHED: ApplicationStatus.SUCCEEDED,
    JobStatus.FAILED: ApplicationStatus.FAILED,
    JobStatus.CANCELED: ApplicationStatus.CANCELED,
}
