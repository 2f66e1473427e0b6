"""What YARN's statuses mean to the ResourceManager: completed containers and the application's final status.

Pure mappings for the YarnResourceManagerDriver (backends.md §2):

- a completed container's ``ContainerExitStatus`` becomes the diagnostics
  the ResourceManager logs and reports when the worker terminates, with
  Flink's wording per cause (normal exit, preempted, invalid, aborted by
  YARN, bad disks, killed for exceeding its memory, anything else);
- the job's terminal state becomes the ``FinalApplicationStatus`` the
  ApplicationMaster unregisters with (``SUCCEEDED``, ``FAILED``, ``KILLED``
  for a canceled job, else ``UNDEFINED``), and back, for a watcher that
  learns how an ended application's job went.
"""

from __future__ import annotations

import datetime

# org.apache.hadoop.yarn.api.records.ContainerExitStatus
SUCCESS = 0
INVALID = -1000
ABORTED = -100
DISKS_FAILED = -101
PREEMPTED = -102
KILLED_EXCEEDED_VMEM = -103
KILLED_EXCEEDED_PMEM = -104
KILLED_BY_APPMASTER = -105
KILLED_BY_RESOURCEMANAGER = -106
KILLED_AFTER_APP_COMPLETION = -107


def container_completed_diagnostics(container_id: str, exit_status: int, diagnostics: str) -> str:
    """Why a container ended, in words, with YARN's diagnostics appended."""
    if exit_status == SUCCESS:
        return f"Container {container_id} exited normally. Diagnostics: {diagnostics}"
    if exit_status == PREEMPTED:
        return f"Container {container_id} was preempted by YARN. Diagnostics: {diagnostics}"
    if exit_status == INVALID:
        return f"Container {container_id} was invalid. Diagnostics: {diagnostics}"
    if exit_status == ABORTED:
        return (
            f"Container {container_id} killed by YARN, either due to being released by the application or being 'lost' "
            f"due to node failures etc. Diagnostics: {diagnostics}"
        )
    if exit_status == DISKS_FAILED:
        return (
            f"Container {container_id} is failed because threshold number of the nodemanager-local-directories or threshold "
            f"number of the nodemanager-log-directories have become bad. Diagnostics: {diagnostics}"
        )
    if exit_status in (KILLED_EXCEEDED_PMEM, KILLED_EXCEEDED_VMEM):
        kind = "physical" if exit_status == KILLED_EXCEEDED_PMEM else "virtual"
        return (
            f"Container {container_id} was killed by YARN for exceeding its {kind} memory limit; the memory model's "
            f"limits did not hold (raise taskmanager.memory.jvm-overhead.min / .fraction). Diagnostics: {diagnostics}"
        )
    return f"Container {container_id} marked as failed.\n Exit code:{exit_status}.\n Diagnostics:{diagnostics}"


def is_killed_for_memory(exit_status: int) -> bool:
    """Whether YARN killed the container for its physical or virtual memory."""
    return exit_status in (KILLED_EXCEEDED_PMEM, KILLED_EXCEEDED_VMEM)


_FINAL_STATUS = {"FINISHED": "SUCCEEDED", "SUCCEEDED": "SUCCEEDED", "FAILED": "FAILED", "CANCELED": "KILLED"}


def final_application_status(job_state: str | None) -> str:
    """The ``FinalApplicationStatus`` for the name of the driver SPI's ``ApplicationStatus`` or of a job's
    terminal state (Flink's mapping): SUCCEEDED/FINISHED → SUCCEEDED, FAILED → FAILED, CANCELED → KILLED,
    anything else (UNKNOWN, None) → UNDEFINED."""
    return _FINAL_STATUS.get((job_state or "").upper(), "UNDEFINED")


_JOB_STATE = {"SUCCEEDED": "FINISHED", "FAILED": "FAILED", "KILLED": "CANCELED"}


def job_state_of_final_status(final_status: str) -> str:
    """The job's terminal state for the ``FinalApplicationStatus`` of an ended application (the reverse of
    :func:`final_application_status`): SUCCEEDED → FINISHED, FAILED → FAILED, KILLED → CANCELED, and
    UNDEFINED (it ended without unregistering: killed through YARN, or its last attempt lost) → FAILED."""
    return _JOB_STATE.get(final_status.upper(), "FAILED")


def finish_time_of(millis: object) -> str:
    """An application's finish time (ms since the epoch, 0 while it runs) as RFC 3339 UTC, or ``""``."""
    if not isinstance(millis, int) or millis <= 0:
        return ""
    return datetime.datetime.fromtimestamp(millis / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
