"""A TaskExecutor's log files (runtime/taskexecutor/log_files.py): which files it serves in each target's layout, how
it finds its own log, the end of a large file, and the ResourceManager asking it over RPC for the dashboard."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from jobcluster.errors import UnknownTaskExecutorError
from jobcluster.runtime.taskexecutor import log_files
from jobcluster.runtime.taskexecutor.log_files import TaskExecutorLogs, own_log_file, read_tail
from tests.unit.test_task_executor import resource_manager, services, task_executor


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_on_local_only_its_own_files_of_the_shared_directory_are_served(tmp_path):
    for name in ("jobmanager.log", "driver.out", "driver.err.1", "spark-master.log", "tm-2.log", "spark-worker-tm-2.log", "tm-1.log"):
        write(tmp_path / name, name)
    write(tmp_path / "spark-worker-tm-1.log", "worker")
    write(tmp_path / "tm-1-work" / "app-2" / "3" / "stderr", "executor 3")
    write(tmp_path / "tm-1-work" / "app-2" / "3" / "stdout", "printed by the program")
    write(tmp_path / "tm-1-work" / "app-2" / "3" / "program.py", "the program")
    write(tmp_path / "tm-2-work" / "app-2" / "4" / "stderr", "another TaskManager's executor")

    logs = TaskExecutorLogs(tmp_path, "tm-1", tmp_path / "tm-1.log")

    assert list(logs.files()) == ["tm-1.log", "spark-worker-tm-1.log", "spark-executor-3-app-2.stderr"]
    assert logs.read("spark-executor-3-app-2.stderr").text == "executor 3"
    assert logs.read(None).text == "tm-1.log"
    for refused in ("driver.out", "jobmanager.log", "tm-2.log", "stdout", "../driver.out", "tm-1-work/app-2/3/stdout"):
        assert logs.read(refused) is None, refused


def test_on_yarn_its_own_log_is_the_containers_stderr_file_and_debug_files_are_not_served(tmp_path):
    # the container's log directory: the launch command's .out/.err, the NodeManager's own files
    for name in ("taskmanager.out", "launch_container.sh", "directory.info", "prelaunch.err"):
        write(tmp_path / name, name)
    own = write(tmp_path / "taskmanager.err", "INFO registered at the ResourceManager")
    write(tmp_path / "spark-worker-container_1_0001_01_000002.log", "worker")

    logs = TaskExecutorLogs(tmp_path, "container_1_0001_01_000002", own)

    assert list(logs.files()) == ["taskmanager.err", "spark-worker-container_1_0001_01_000002.log"]
    infos = logs.log_list()
    assert infos[0] == {"name": "taskmanager.err", "size": own.stat().st_size, "mtime": int(own.stat().st_mtime * 1000)}


def test_its_own_log_is_found_by_the_file_its_stderr_is_written_to(tmp_path):
    with open(tmp_path / "taskmanager.err", "ab") as stderr:
        assert own_log_file(tmp_path, stderr.fileno()) == tmp_path / "taskmanager.err"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with open(tmp_path / "taskmanager.err", "ab") as stderr:
        assert own_log_file(elsewhere, stderr.fileno()) is None, "a file, but not of its log directory"
    read, write_end = os.pipe()
    try:
        assert own_log_file(tmp_path, write_end) is None, "a pipe: a container's log"
    finally:
        os.close(read)
        os.close(write_end)


def test_without_a_stderr_file_it_writes_its_own_log_itself(tmp_path):
    # pytest captures stderr into a file of its own, which is no file of this log directory: as a pod's stderr
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        own = log_files.log_to_own_file(tmp_path)
        logging.getLogger("jobcluster.test").warning("registered at the ResourceManager")
        for handler in root.handlers:
            handler.flush()
    finally:
        for handler in set(root.handlers) - set(before):
            root.removeHandler(handler)
            handler.close()
    assert own == tmp_path / log_files.OWN_LOG_FALLBACK
    assert "registered at the ResourceManager" in own.read_text()


@pytest.mark.parametrize(
    ("content", "max_bytes", "expected_tail"),
    [
        (b"one\ntwo\n", 100, b"one\ntwo\n"),
        (b"first line\nsecond line\nthird\n", 16, b"third\n"),  # cut inside a line: from the next whole line on
        (b"no newline at all, long", 8, b"all, long"[-8:]),
    ],
)
def test_a_large_file_is_served_from_a_whole_line_near_its_end_with_a_note(tmp_path, content, max_bytes, expected_tail):
    path = tmp_path / "f.log"
    path.write_bytes(content)

    served = read_tail(path, max_bytes, where="f.log on h")

    assert served.size == len(content)
    if len(content) <= max_bytes:
        assert not served.truncated and served.text == content.decode()
        return
    note, _, tail = served.text.partition("\n")
    assert served.truncated and tail.encode() == expected_tail
    assert note == (
        f"[jobcluster: the first {len(content) - len(expected_tail)} bytes of this file ({len(content)} bytes) are left out: "
        f"a TaskManager's log is served up to its last {max_bytes} bytes. The whole file: f.log on h]"
    )


def test_the_resource_manager_asks_a_task_executor_for_its_logs_over_rpc(tmp_path):
    log_dir = tmp_path / "log"
    write(log_dir / "tm-1.log", "INFO registered at the ResourceManager\n")
    write(log_dir / "spark-worker-tm-1.log", "INFO Worker: started\n")

    async def scenario() -> None:
        async with services(2) as (rm_service, te_service):
            rm = resource_manager(rm_service, tmp_path)
            await rm_service.start_endpoint(rm)
            ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            te = task_executor(te_service, rm_service.address, ended, logs=TaskExecutorLogs(log_dir, "tm-1", log_dir / "tm-1.log"))
            await te_service.start_endpoint(te)
            await asyncio.wait_for(te.registered.wait(), 5.0)

            listed = await rm.request_task_manager_log_list("tm-1")
            assert [entry["name"] for entry in listed] == ["tm-1.log", "spark-worker-tm-1.log"]
            own = await rm.request_task_manager_log_file("tm-1", None)
            assert own == {"text": "INFO registered at the ResourceManager\n", "size": 39, "truncated": False}
            assert await rm.request_task_manager_log_file("tm-1", "driver.out") is None
            with pytest.raises(UnknownTaskExecutorError, match="tm-2 is not registered"):
                await rm.request_task_manager_log_list("tm-2")

    asyncio.run(scenario())
