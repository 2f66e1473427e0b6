"""PySpark's daemon, with each PySpark worker's memory limit as a data-segment limit (``RLIMIT_DATA``).

Spark starts it in every executor as ``python -m jobcluster.spark.pyspark_daemon``
(``spark.python.daemon.module``); it sets the limit and then runs PySpark's own
daemon unchanged, which forks the PySpark workers: each inherits the limit and
counts its own memory against it.  An allocation past it fails, which Python
raises as ``MemoryError`` in the task.

Why not Spark's ``spark.executor.pyspark.memory``: Spark enforces that as an
address-space limit (``RLIMIT_AS``), which counts every mapping a process
reserves, also shared libraries and reservations never touched.  Measured here
(Python 3.11, pandas 3.1, pyarrow 26): ``import pandas`` fails below 400 MiB of
address space while the process holds about 110 MiB.  ``RLIMIT_DATA`` (Linux 4.7
and later) counts the private writable memory a process maps, its heap and
anonymous mappings, which is what a Python task fills; the same import works
within 115 MiB.

Imports nothing of jobcluster: it runs in the executor's Python, before PySpark's
daemon, and should cost that process nothing.
"""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Mapping

#: The environment variable the executor passes to the daemon (``spark.executorEnv.``): each worker's limit, bytes.
LIMIT_ENV = "JOBCLUSTER_PYSPARK_WORKER_MEMORY"


def set_worker_memory_limit(environ: Mapping[str, str] = os.environ) -> int | None:
    """Set this process's ``RLIMIT_DATA`` (soft and hard) to ``environ[LIMIT_ENV]`` bytes, unless a lower limit is
    already set (a lower hard limit wins); returns the limit now in force, None when there is none to set (the variable missing or 0).

    Raises:
        ValueError: the variable is not a whole number of bytes.
        OSError: the kernel refused the limit.
    """
    value = environ.get(LIMIT_ENV, "")
    if not value or int(value) <= 0:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
    if soft != resource.RLIM_INFINITY and soft <= limit:
        return soft
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    return limit


def main() -> None:
    limit = set_worker_memory_limit()
    if limit is not None:
        # the executor's stderr: where Spark's own "Setting mem limits" line would be
        print(f"jobcluster: each PySpark worker's memory limit (RLIMIT_DATA): {limit >> 20} MiB", file=sys.stderr, flush=True)
    from pyspark.daemon import manager  # after the limit: the daemon's own memory counts against it too

    manager()  # type: ignore[no-untyped-call,unused-ignore]  # annotated from PySpark 4 on, not in 3.5


if __name__ == "__main__":
    main()
