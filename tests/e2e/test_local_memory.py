"""On local-cluster nothing limits a TaskExecutor's memory: the JobManager measures its process tree and warns, and the job
runs on. (On local, the MiniCluster, a TaskExecutor is no process: there is nothing to measure.)"""

from __future__ import annotations

import re

import pytest
from support import PROGRAMS, jobcluster, staging_dirs

pytestmark = pytest.mark.e2e


def test_a_task_executor_over_its_size_is_warned_of_with_the_option_to_change_and_the_job_finishes(home):
    # 2560 MiB of native memory in the executor JVM, outside every limit: with the JVMs and Python processes the
    # TaskExecutor's tree is well over its 2560m (the shipped size), measured every second while the task holds it.
    result = jobcluster(
        "run",
        "-t",
        "local-cluster",
        "-p",
        "1",
        "-D",
        "jobcluster.local.memory-check-interval=1 s",
        str(PROGRAMS / "native_memory.py"),
        "--mib",
        "2560",
        "--hold",
        "8",
    )
    assert result.returncode == 0, result.stderr
    assert "ALLOCATED 1 x 2560 MiB" in result.stdout
    warnings = re.findall(r"TaskExecutor (\S+): WARNING: (.*)", result.stderr)
    assert len(warnings) == 1, result.stderr
    task_executor, warning = warnings[0]
    used = re.match(
        r"its processes \(.*\) use (\d+) MiB resident, more than its 2560 MiB process size \(taskmanager\.memory\.process\.size\)", warning
    )
    assert used and int(used.group(1)) > 2560, warning  # the first measurement over it: while the task writes its memory
    assert "on local-cluster nothing limits it, it runs on" in warning
    overhead = re.search(r"raise taskmanager.memory.jvm-overhead.min to at least (\d+)m \(and \.max, if lower\)", warning)
    assert overhead and int(overhead.group(1)) >= 384 + int(used.group(1)) - 2560, warning  # the shipped overhead + the excess
    assert "raise taskmanager.memory.process.size by as much too (to at least" in warning
    assert not re.search(rf"TaskExecutor {re.escape(task_executor)} lost", result.stderr), "warned, not killed"
    (log,) = (home / "log").glob("*/jobmanager.log")
    assert f"TaskExecutor {task_executor}: {warning}" in log.read_text(), "the warning is in the job's log too"
    assert staging_dirs(home) == []
