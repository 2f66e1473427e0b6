"""How much memory a local TaskExecutor's processes use, against its process size, which nothing enforces on ``local``.

On YARN (physical-memory check) and Kubernetes (the container's memory limit)
a TaskExecutor whose processes outgrow its Total Process Memory is killed; on
``local`` they are plain processes, so the LocalProcessDriver measures them as
YARN's NodeManager measures a container (``ProcfsBasedProcessTree``): the sum
of the resident set sizes of the TaskExecutor's process and all its
descendants (its Spark worker, the executor JVM, the PySpark daemon and
workers). The first time the sum is over the size, the user is warned, with
the option to change; nothing is killed (a warning first: the same job on
YARN or Kubernetes would be killed).

:class:`MemoryCheck` is the decision, a pure function of the measurements;
:func:`process_tree_rss` the measurement, which reads ``/proc`` (blocking:
the driver runs it off its loop).
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil

from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.processes import process_tree
from jobcluster.runtime.resourcemanager.worker_termination import memory_hint

_MiB = 1 << 20


def process_tree_rss(pid: int) -> int | None:
    """The summed resident set size of process ``pid`` and its descendants, in bytes; None once ``pid`` is gone.

    Blocking (it reads ``/proc`` of each process). A descendant that ends while it is measured counts 0.
    """
    tree = process_tree(pid)
    if not tree:
        return None
    total = 0
    for proc in tree:
        try:
            total += proc.memory_info().rss
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue
    return total


@dataclass
class MemoryCheck:
    """The measurements of one TaskExecutor's process tree against its size ``spec.total_process``.

    ``peak``: the largest measurement so far (bytes); ``over``: whether a measurement was above the size
    (then :meth:`observe` has returned the one warning).
    """

    resource_id: str
    spec: TaskExecutorProcessSpec
    peak: int = 0
    over: bool = False

    def observe(self, rss: int) -> str | None:
        """Take one measurement (bytes); the warning, the first time it is above the size, else None."""
        self.peak = max(self.peak, rss)
        if self.over or rss <= self.spec.total_process:
            return None
        self.over = True
        return self.warning(rss)

    def warning(self, rss: int) -> str:
        """``its processes ... use 2712 MiB resident, more than its 2560 MiB process size ...``, with the option to change."""
        limit = self.spec.total_process
        return (
            f"its processes (the TaskExecutor, its Spark worker and executor JVMs, the PySpark workers) use {rss // _MiB} MiB "
            f"resident, more than its {limit // _MiB} MiB process size (taskmanager.memory.process.size): YARN's physical-memory "
            "check or a Kubernetes memory limit of that size would kill it; on local-cluster nothing limits it, it runs on. "
            f"{memory_hint(self.spec, rss - limit)}"
        )

    def killed_over_size(self) -> str | None:
        """For a TaskExecutor killed by SIGKILL: the words of its last state when it was over its size, else None
        (the kernel's out-of-memory killer is then the likely sender)."""
        if not self.over:
            return None
        return (
            f"its processes had used up to {self.peak // _MiB} MiB resident, more than its "
            f"{self.spec.total_process // _MiB} MiB process size: likely the kernel's out-of-memory killer"
        )
