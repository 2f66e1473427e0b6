"""Why a worker ended, in words, and the option a memory kill asks to change (runtime/resourcemanager/worker_termination.py)."""

from __future__ import annotations

import pytest

from jobcluster.config.configuration import Configuration
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.runtime.resourcemanager.worker_termination import (
    MemoryKill,
    WorkerTermination,
    exit_code_meaning,
    exit_code_status,
    memory_hint,
)

#: The shipped TaskManager: 2560m, whose JVM overhead is its minimum (0.1 x 2560m is below 384m).
SHIPPED = task_executor_process_spec_from_config(
    Configuration(
        {"taskmanager.memory.process.size": "2560m", "taskmanager.memory.jvm-overhead.min": "384m", "taskmanager.numberOfTaskSlots": "2"}
    )
)


@pytest.mark.parametrize(
    ("code", "status", "meaning"),
    [
        (0, "exit code 0", "exited normally"),
        (1, "exit code 1", "exited with an error of its own (see its log)"),
        (126, "exit code 126", "its command could not be executed"),
        (127, "exit code 127", "its command was not found"),
        (128, "exit code 128", "exited with an error of its own (see its log)"),
        (137, "exit code 137", "killed by SIGKILL (a kill -9, a memory limit, or the kernel's out-of-memory killer)"),
        (143, "exit code 143", "stopped by SIGTERM (asked to stop: by its platform, an operator or a shutdown)"),
        (134, "exit code 134", "aborted with SIGABRT (e.g. a JVM or native library crash)"),
        (139, "exit code 139", "crashed with SIGSEGV (a segmentation fault)"),
        (129, "exit code 129", "ended by SIGHUP (its terminal or session went away)"),
        (138, "exit code 138", "killed by SIGUSR1"),
        (192, "exit code 192", "killed by SIGRTMAX"),  # Linux's last signal, 64
        (193, "exit code 193", "exited with an error of its own (see its log)"),  # beyond Linux's 64 signals
        (255, "exit code 255", "exited with an error of its own (see its log)"),
        (-9, "signal SIGKILL", "killed by SIGKILL (a kill -9, a memory limit, or the kernel's out-of-memory killer)"),  # asyncio's
        (-15, "signal SIGTERM", "stopped by SIGTERM (asked to stop: by its platform, an operator or a shutdown)"),
    ],
)
def test_exit_codes_in_words(code, status, meaning):
    assert (exit_code_status(code), exit_code_meaning(code)) == (status, meaning)


def test_the_hint_raises_the_overhead_by_the_measured_excess_within_the_same_or_a_grown_container():
    assert SHIPPED.jvm_overhead == 384 << 20 and SHIPPED.total_process == 2560 << 20
    hint = memory_hint(SHIPPED, (100 << 20) + 1)
    assert hint.startswith("The JVM overhead (384m of the 2560m container) holds all memory no limit of the memory model covers")
    assert "raise taskmanager.memory.jvm-overhead.min to at least 485m (and .max, if lower)" in hint
    assert "raise taskmanager.memory.process.size by as much too (to at least 2661m) to keep them" in hint


def test_without_numbers_the_hint_names_the_options_and_a_virtual_limit_is_the_clusters_ratio():
    assert "raise taskmanager.memory.jvm-overhead.min (and .max, if lower)" in memory_hint(SHIPPED)
    assert memory_hint(None).startswith("The JVM overhead holds all memory")
    virtual = memory_hint(SHIPPED, 1 << 30, virtual=True)
    assert "yarn.nodemanager.vmem-pmem-ratio" in virtual and "raise taskmanager.memory.process.size (now 2560m)" in virtual
    assert "jvm-overhead" not in virtual


def test_a_cause_is_the_summary_and_for_a_memory_kill_the_platforms_words_and_the_hint():
    plain = WorkerTermination("exit code 1", exit_code_meaning(1), "see taskmanager.log")
    assert plain.cause(SHIPPED) == plain.summary == "exit code 1: exited with an error of its own (see its log)"
    killed = WorkerTermination("OOMKilled, exit code 137", "killed by the kernel", "", MemoryKill("OOMKilled at 2560Mi"))
    assert killed.cause(SHIPPED) == f"OOMKilled, exit code 137: killed by the kernel (OOMKilled at 2560Mi). {memory_hint(SHIPPED)}"
