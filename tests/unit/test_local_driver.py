"""The LocalProcessDriver with real child processes (a short Python command instead of a TaskExecutor):
each worker gets its launch in its environment, an exit is reported once with its code, a released or
all-released worker is not reported, and nothing outlives the driver."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import sys
from decimal import Decimal
from pathlib import Path

import psutil

from jobcluster.backends.local.driver import LocalProcessDriver
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.runtime.resourcemanager.driver import TaskExecutorLaunchContext
from jobcluster.runtime.taskexecutor.launch import TaskExecutorLaunchSettings, TaskExecutorLocation
from tests.support.fakes import CLUSTER_CONFIG, RecordingEventHandler, until

SPEC = task_executor_process_spec_from_config(CLUSTER_CONFIG)
MiB = 1 << 20

# The stand-in TaskExecutor: writes what it was launched with, then exits with the code of the file exit-<ResourceID>
# (checked twice a second) or sleeps on.
WORKER = """
import json, os, pathlib, sys, time
directory = pathlib.Path(os.environ["JOBCLUSTER_CLUSTER_DIR"])
me = os.environ["JOBCLUSTER_RESOURCE_ID"]
launch = {key: value for key, value in os.environ.items() if key.startswith("JOBCLUSTER_")}
(directory / f"launch-{me}.json").write_text(json.dumps({"env": launch, "argv": sys.argv[1:]}))
while not (directory / f"exit-{me}").exists():
    time.sleep(0.5)
sys.exit(int((directory / f"exit-{me}").read_text()))
"""


def context(directory: Path) -> TaskExecutorLaunchContext:
    return TaskExecutorLaunchContext(
        [sys.executable, "-c", WORKER],
        TaskExecutorLaunchSettings("local-1", "http://127.0.0.1:6123", "rm-1"),
        "s3cr3t",
        TaskExecutorLocation(directory, directory / "log", "127.0.0.1"),
    )


def test_workers_are_launched_reported_once_when_they_exit_and_not_when_released(tmp_path):
    (tmp_path / "log").mkdir()

    async def scenario() -> tuple[RecordingEventHandler, list[int]]:
        handler, driver = RecordingEventHandler(), LocalProcessDriver()
        await driver.initialize(handler, context(tmp_path))
        first, second, third = [await driver.request_resource(SPEC) for _ in range(3)]
        assert [first, second, third] == ["local-1-taskmanager-1", "local-1-taskmanager-2", "local-1-taskmanager-3"]
        await until(lambda: all((tmp_path / f"launch-{r}.json").exists() for r in (first, second, third)), seconds=30)
        pids = [p.pid for p in psutil.process_iter(["cmdline"]) if WORKER in (p.info["cmdline"] or [])]

        (tmp_path / f"exit-{first}").write_text("3")
        await until(lambda: bool(handler.terminated), seconds=10)
        await driver.release_resource(second)
        await driver.release_resource(second)  # idempotent
        await driver.release_all_workers()
        await driver.close()
        await asyncio.sleep(1.0)  # a report of the released ones would have come by now
        return handler, pids

    handler, pids = asyncio.run(scenario())
    ((resource_id, ended),) = handler.terminated
    assert resource_id == "local-1-taskmanager-1" and "exited with code 3" in ended.diagnostics
    assert ended.summary == "exit code 3: exited with an error of its own (see its log)" and ended.memory_kill is None
    assert handler.warnings == [], "the workers stayed within their size"
    assert handler.errors == []
    assert len(pids) == 3 and not [pid for pid in pids if psutil.pid_exists(pid)], "no worker outlives the driver"

    launched = json.loads((tmp_path / "launch-local-1-taskmanager-2.json").read_text())
    env = launched["env"]
    assert env["JOBCLUSTER_RESOURCE_ID"] == "local-1-taskmanager-2" and env["JOBCLUSTER_RESOURCE_MANAGER_ID"] == "rm-1"
    assert env["JOBCLUSTER_CLUSTER_DIR"] == str(tmp_path) and env["JOBCLUSTER_BIND_HOST"] == "127.0.0.1"
    assert env["JOBCLUSTER_CLUSTER_SECRET"] == "s3cr3t", "a local process gets the secret in its environment"
    assert launched["argv"] == [arg for key, value in SPEC.dynamic_configs().items() for arg in ("-D", f"{key}={value}")]
    assert (tmp_path / "log" / "local-1-taskmanager-1.log").exists()


# A stand-in TaskExecutor that holds 64 MiB (every page written, so resident) until it is killed.
HOG = "import time; hog = bytes([1]) * (64 << 20); time.sleep(120)"


def test_a_worker_over_its_size_is_warned_of_once_and_its_sigkill_is_reported_as_a_likely_memory_kill(tmp_path):
    (tmp_path / "log").mkdir()
    small = TaskExecutorProcessSpec(Decimal(1), MiB, MiB, 25 * MiB, 0, MiB, MiB, MiB, 2 * MiB, 1)  # 32 MiB in all

    async def scenario() -> RecordingEventHandler:
        handler, driver = RecordingEventHandler(), LocalProcessDriver(memory_check_interval=0.1)
        await driver.initialize(handler, dataclasses.replace(context(tmp_path), command=[sys.executable, "-c", HOG]))
        resource_id = await driver.request_resource(small)
        await until(lambda: bool(handler.warnings), seconds=30)
        await asyncio.sleep(0.5)  # five more measurements, all over the size
        assert len(handler.warnings) == 1, "warned once"
        assert not handler.terminated, "warned, not killed"
        pid = next(p.pid for p in psutil.process_iter(["cmdline"]) if HOG in (p.info["cmdline"] or []))
        psutil.Process(pid).kill()
        await until(lambda: bool(handler.terminated), seconds=10)
        assert handler.terminated[0][0] == resource_id
        await driver.close()
        return handler

    handler = asyncio.run(scenario())
    ((resource_id, warning),) = handler.warnings
    assert resource_id == "local-1-taskmanager-1"
    assert re.search(r"use \d+ MiB resident, more than its 32 MiB process size \(taskmanager.memory.process.size\)", warning), warning
    assert "raise taskmanager.memory.jvm-overhead.min to at least" in warning
    ((_, ended),) = handler.terminated
    assert ended.status == "signal SIGKILL" and ended.memory_kill is not None
    assert "likely the kernel's out-of-memory killer" in ended.memory_kill.words
