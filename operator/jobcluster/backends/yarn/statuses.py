"""What YARN's statuses mean to the ResourceManager: completed containers and the application's final status.

Pure mappings for the YarnResourceManagerDriver (backends.md §2):

- a completed container's ``ContainerExitStatus`` becomes the
  :class:`WorkerTermination` the ResourceManager logs and reports when the
  worker terminates: the status with YARN's name for it (``exit status -104
  (KILLED_EXCEEDED_PMEM)``) or the process's exit code, its meaning, the
  diagnostics with Flink's wording per cause (normal exit, preempted, invalid,
  aborted by YARN, bad disks, killed for exceeding its memory, anything else)
  and, for a memory kill, the NodeManager's numbers (``Current usage: 2.6 GB
  of 2.5 GB physical memory used``, and how many bytes beyond the limit);
- an application whose ApplicationMaster YARN killed for its memory (its
  attempt's diagnostics: ``exited with exitCode: -103``) gets the numbers and
  the options to change said first (:func:`explained_application_diagnostics`);
- the job's terminal state becomes the ``FinalApplicationStatus`` the
  ApplicationMaster unregisters with (``SUCCEEDED``, ``FAILED``, ``KILLED``
  for a canceled job, else ``UNDEFINED``), and back, for a watcher that
  learns how an ended application's job went.
"""

from __future__ import annotations

import datetime
import re

from jobcluster.runtime.resourcemanager.worker_termination import (
    MemoryKill,
    WorkerTermination,
    exit_code_meaning,
    exit_code_status,
    virtual_memory_hint,
)

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
KILLED_FOR_EXCESS_LOGS = -108
KILLED_BY_CONTAINER_SCHEDULER = -109

#: YARN's name and meaning of each of its own exit statuses (the javadoc of ``ContainerExitStatus``).
_EXIT_STATUSES = {
    INVALID: ("INVALID", "the container never ran"),
    ABORTED: ("ABORTED", "released by the application or lost with its node"),
    DISKS_FAILED: ("DISKS_FAILED", "its node's local or log directories went bad"),
    PREEMPTED: ("PREEMPTED", "preempted by YARN for another application"),
    KILLED_EXCEEDED_VMEM: ("KILLED_EXCEEDED_VMEM", "killed by YARN for exceeding its virtual memory limit"),
    KILLED_EXCEEDED_PMEM: ("KILLED_EXCEEDED_PMEM", "killed by YARN for exceeding its physical memory limit"),
    KILLED_BY_APPMASTER: ("KILLED_BY_APPMASTER", "killed at the ApplicationMaster's request"),
    KILLED_BY_RESOURCEMANAGER: ("KILLED_BY_RESOURCEMANAGER", "killed by YARN's ResourceManager"),
    KILLED_AFTER_APP_COMPLETION: ("KILLED_AFTER_APP_COMPLETION", "killed because its application ended"),
    KILLED_FOR_EXCESS_LOGS: ("KILLED_FOR_EXCESS_LOGS", "killed by YARN for writing too much log"),
    KILLED_BY_CONTAINER_SCHEDULER: ("KILLED_BY_CONTAINER_SCHEDULER", "killed by the NodeManager's container scheduler"),
}


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
        return f"Container {container_id} was killed by YARN for exceeding its {kind} memory limit. Diagnostics: {diagnostics}"
    return f"Container {container_id} marked as failed.\n Exit code:{exit_status}.\n Diagnostics:{diagnostics}"


def is_killed_for_memory(exit_status: int) -> bool:
    """Whether YARN killed the container for its physical or virtual memory."""
    return exit_status in (KILLED_EXCEEDED_PMEM, KILLED_EXCEEDED_VMEM)


def container_exit_status(exit_status: int) -> str:
    """``exit status -104 (KILLED_EXCEEDED_PMEM)`` for YARN's own statuses; ``exit code 143`` for a process's exit code."""
    if exit_status in _EXIT_STATUSES:
        return f"exit status {exit_status} ({_EXIT_STATUSES[exit_status][0]})"
    return exit_code_status(exit_status)


def container_exit_meaning(exit_status: int) -> str:
    """What a ``ContainerExitStatus`` means: YARN's own (negative) statuses by their javadoc, others as a process's exit code
    (YARN gives the container's exit code: 143 for SIGTERM, 137 for SIGKILL, ...)."""
    if exit_status in _EXIT_STATUSES:
        return _EXIT_STATUSES[exit_status][1]
    if exit_status < 0:
        return "a status of YARN's this client does not know"
    return exit_code_meaning(exit_status)


# ContainersMonitorImpl (Hadoop 3): "Container [pid=1,containerID=c] is running 123B beyond the 'PHYSICAL' memory limit.
# Current usage: 2.6 GB of 2.5 GB physical memory used; 4.6 GB of 5.3 GB virtual memory used. Killing container."
# Hadoop 2 said "is running beyond physical memory limits" without the bytes.
_BEYOND = re.compile(r"is running (\d+)B beyond the '(?:PHYSICAL|VIRTUAL)' memory limit")
_USAGE = re.compile(r"([\d.]+ ?[KMGTPE]?B) of ([\d.]+ ?[KMGTPE]?B) (physical|virtual) memory used")


def memory_kill_of(exit_status: int, diagnostics: str) -> MemoryKill | None:
    """For a container YARN killed for its memory (-104 or -103): YARN's numbers from the NodeManager's diagnostics
    (``Current usage: 2.6 GB of 2.5 GB physical memory used``, the usage of the limit that was exceeded; the excess in
    bytes when given); None for any other status."""
    if not is_killed_for_memory(exit_status):
        return None
    kind = "physical" if exit_status == KILLED_EXCEEDED_PMEM else "virtual"
    usage = next((m for m in _USAGE.finditer(diagnostics) if m.group(3) == kind), None)
    beyond = _BEYOND.search(diagnostics)
    words = f"Current usage: {usage.group(0)}" if usage else "YARN's diagnostics give no usage"
    return MemoryKill(words, int(beyond.group(1)) if beyond else None, virtual=kind == "virtual")


# RMAppAttemptImpl: "AM Container for appattempt_1_0001_000001 exited with  exitCode: -103"
_AM_EXIT = re.compile(r"AM Container for \S+ exited with\s+exitCode: (-?\d+)")


def explained_application_diagnostics(diagnostics: str) -> str:
    """An application's diagnostics from YARN, led by what to change when YARN killed its ApplicationMaster (the
    JobManager) for its memory: YARN's numbers, then the JobManager's options or the cluster's; unchanged otherwise."""
    exit_status = next((int(m.group(1)) for m in _AM_EXIT.finditer(diagnostics)), None)
    kill = None if exit_status is None else memory_kill_of(exit_status, diagnostics)
    if kill is None:
        return diagnostics
    if kill.virtual:
        hint = virtual_memory_hint("jobmanager.memory.process.size")
    else:
        hint = (
            "The JVM overhead holds all memory no limit of the JobManager's memory model covers (the program's Python, "
            "the JVMs' native memory): raise jobmanager.memory.jvm-overhead.min (and .max, if lower), or "
            "jobmanager.memory.process.size"
        )
    kind = "virtual" if kill.virtual else "physical"
    killed = f"The ApplicationMaster (the JobManager) was killed by YARN for exceeding its {kind} memory limit ({kill.words})"
    return f"{killed}. {hint}. {diagnostics}"


def container_termination(container_id: str, exit_status: int, diagnostics: str) -> WorkerTermination:
    """Why a completed container ended: its status and meaning, Flink's diagnostics with YARN's, and YARN's numbers
    when it was killed for its memory."""
    return WorkerTermination(
        container_exit_status(exit_status),
        container_exit_meaning(exit_status),
        container_completed_diagnostics(container_id, exit_status, diagnostics),
        memory_kill_of(exit_status, diagnostics),
    )


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
