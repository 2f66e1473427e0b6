"""Why a worker ended, as its driver reports it, and what a memory kill asks the user to change.

Pure rules, shared by every driver (``backends/*/driver.py``) and the
ResourceManager:

- :class:`WorkerTermination`: the platform's exit code or status, what it
  means, the platform's full diagnostics, and, when the platform killed the
  worker for its memory, the platform's words with its numbers
  (:class:`MemoryKill`);
- :func:`exit_code_meaning`: a process's exit code in words (Linux's signal
  numbers for codes above 128, as a shell, YARN and Kubernetes give them, and
  for negative codes, as asyncio gives them);
- :func:`memory_hint`: the options to change when a container's processes
  outgrew it, with the sizes of the TaskExecutor's memory model.

Why the JVM overhead is what to raise (Flink's own advice for a container
killed for memory, "Container Memory Exceeded" in Flink's memory
troubleshooting): every other component of the memory model is an explicit
limit of a Spark process (heap, direct memory, metaspace, off-heap,
the PySpark workers' ``RLIMIT_DATA``); only the JVM overhead holds what no limit
covers (native memory of the JVMs, Python processes without a limit), so a
container whose processes outgrow it did so there.
"""

from __future__ import annotations

import math
import signal
from dataclasses import dataclass

from jobcluster.memory.spec import TaskExecutorProcessSpec

_MiB = 1 << 20


@dataclass(frozen=True)
class MemoryKill:
    """The platform killed the worker for its memory.

    ``words``: what the platform said, with its numbers (YARN: ``2.6 GB of 2.5 GB physical memory used``;
    Kubernetes: ``OOMKilled at its memory limit of 2560Mi``); ``excess_bytes``: how far the worker's
    processes were above their limit when they were killed, when the platform says (YARN does), else None;
    ``virtual``: the limit was YARN's virtual memory limit (a cluster setting more than the worker's size).
    """

    words: str
    excess_bytes: int | None = None
    virtual: bool = False


@dataclass(frozen=True)
class WorkerTermination:
    """How a worker ended (``ResourceEventHandler.on_worker_terminated``).

    ``status``: the exit code or status as the platform names it (``exit code 137``, ``exit status -104
    (KILLED_EXCEEDED_PMEM)``, ``OOMKilled, exit code 137``); ``meaning``: what it means (``killed by SIGKILL
    ...``); ``diagnostics``: the platform's whole text (YARN's diagnostics, the pod's container statuses,
    the process's log file); ``memory_kill``: set when the platform killed it for its memory.
    """

    status: str
    meaning: str
    diagnostics: str = ""
    memory_kill: MemoryKill | None = None

    @property
    def summary(self) -> str:
        """``<status>: <meaning>``, one line, without the memory kill's numbers or the diagnostics."""
        return f"{self.status}: {self.meaning}"

    def cause(self, spec: TaskExecutorProcessSpec | None) -> str:
        """The summary, then for a memory kill the platform's numbers and the option to change
        (:func:`memory_hint` with ``spec``, the TaskExecutor's sizes, None when unknown)."""
        if self.memory_kill is None:
            return self.summary
        kill = self.memory_kill
        return f"{self.summary} ({kill.words}). {memory_hint(spec, kill.excess_bytes, virtual=kill.virtual)}"


def exit_code_meaning(code: int) -> str:
    """What a process's exit code says, in words.

    ``0`` exited normally; ``126``/``127`` its command could not be run or found (the shell's codes);
    ``128 + n`` and ``-n`` (asyncio's way) for a signal ``n`` of Linux: killed or stopped by that signal,
    with what usually sends it (SIGKILL: a kill -9, a memory limit, the kernel's OOM killer; SIGTERM: a
    request to stop); any other code: an error of the process itself, in its log.
    """
    if code == 0:
        return "exited normally"
    if code == 126:
        return "its command could not be executed"
    if code == 127:
        return "its command was not found"
    number = -code if code < 0 else code - 128 if 128 < code < 128 + 65 else None
    if number is not None:
        return _signal_meaning(number)
    return "exited with an error of its own (see its log)"


_SIGNAL_MEANINGS = {
    signal.SIGKILL: "killed by SIGKILL (a kill -9, a memory limit, or the kernel's out-of-memory killer)",
    signal.SIGTERM: "stopped by SIGTERM (asked to stop: by its platform, an operator or a shutdown)",
    signal.SIGINT: "interrupted by SIGINT",
    signal.SIGHUP: "ended by SIGHUP (its terminal or session went away)",
    signal.SIGSEGV: "crashed with SIGSEGV (a segmentation fault)",
    signal.SIGABRT: "aborted with SIGABRT (e.g. a JVM or native library crash)",
    signal.SIGBUS: "crashed with SIGBUS",
}


def _signal_meaning(number: int) -> str:
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"killed by signal {number}"
    return _SIGNAL_MEANINGS.get(sig, f"killed by {sig.name}")


def exit_code_status(code: int) -> str:
    """``exit code 137``; a negative code (asyncio's, for a signal) as ``signal SIGKILL``."""
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def memory_hint(spec: TaskExecutorProcessSpec | None, excess_bytes: int | None = None, *, virtual: bool = False) -> str:
    """The options to change for a TaskExecutor container whose processes outgrew it, with its sizes.

    For YARN's virtual memory limit (``virtual``): the limit is the container's size times the
    cluster's ``yarn.nodemanager.vmem-pmem-ratio``, so ``taskmanager.memory.process.size`` or the cluster's
    setting. Otherwise the JVM overhead (see the module docstring): ``taskmanager.memory.jvm-overhead.min``
    to at least the overhead plus ``excess_bytes`` (rounded up to MiB; how far above the container its
    processes were, when measured); with a
    configured process size the container keeps its size and the task heap and managed memory shrink by as
    much, so the process size is to be raised by as much to keep them. ``spec``: the TaskExecutor's sizes
    (None: the hint names the options without them).
    """
    if virtual:
        return virtual_memory_hint("taskmanager.memory.process.size" + (f" (now {_mib(spec.total_process)})" if spec else ""))
    holds = "all memory no limit of the memory model covers (the JVMs' native memory, Python processes without a limit)"
    if spec is None:
        return (
            f"The JVM overhead holds {holds}: raise taskmanager.memory.jvm-overhead.min (and .max, if lower); with "
            "taskmanager.memory.process.size set, raise that by as much too to keep the task heap and managed memory"
        )
    overhead = spec.jvm_overhead
    wanted = overhead + math.ceil(excess_bytes / _MiB) * _MiB if excess_bytes else None
    target = f" to at least {_mib(wanted)}" if wanted else ""
    keep = f" (to at least {_mib(spec.total_process + wanted - overhead)})" if wanted else ""
    return (
        f"The JVM overhead ({_mib(overhead)} of the {_mib(spec.total_process)} container) holds {holds}: raise "
        f"taskmanager.memory.jvm-overhead.min{target} (and .max, if lower); with taskmanager.memory.process.size set, the "
        "container keeps its size and the task heap and managed memory shrink by as much, so raise "
        f"taskmanager.memory.process.size by as much too{keep} to keep them"
    )


def virtual_memory_hint(process_size: str) -> str:
    """What to change for a container YARN killed for its virtual memory: ``process_size``, the option of its size
    (``taskmanager.memory.process.size``, ``jobmanager.memory.process.size``), or the cluster's ratio or check."""
    return (
        "YARN's virtual memory limit is the container's size times the cluster's yarn.nodemanager.vmem-pmem-ratio "
        f"(2.1 by default), and JVMs and Python processes reserve more address space than they use: raise {process_size}, "
        "or the ratio (or turn yarn.nodemanager.vmem-check-enabled off) on the cluster"
    )


def _mib(size: int) -> str:
    """A size in whole MiB, in Flink's syntax: ``384m`` (rounded up)."""
    return f"{math.ceil(size / _MiB)}m"
