"""``wait_until_ended``: how a stopped process tree is waited for; what a killed process left behind, found and
stopped (processes.py)."""

import os
import subprocess
import sys
import time

import psutil

from jobcluster.processes import kill_processes, processes_with_environment, session_members, wait_until_ended


def test_a_zombie_has_ended_and_is_left_for_its_parent_to_reap():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    proc = psutil.Process(child.pid)
    deadline = time.monotonic() + 30
    while proc.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert wait_until_ended([proc], timeout=30) == []
        assert proc.status() == psutil.STATUS_ZOMBIE  # not reaped here: its owner still gets its exit code
    finally:
        assert child.wait(5) == 0


def test_a_running_process_is_returned_after_the_timeout_and_a_gone_one_is_not():
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    procs = [psutil.Process(running.pid), psutil.Process(gone.pid)]
    gone.wait(30)  # reaped: the pid no longer exists
    try:
        assert [p.pid for p in wait_until_ended(procs, timeout=0.2)] == [running.pid]
    finally:
        running.kill()
        running.wait(5)


def test_a_session_has_no_zombie_members():
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    ended = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    proc = psutil.Process(ended.pid)
    deadline = time.monotonic() + 30
    while proc.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert [p.pid for p in session_members(live.pid)] == [live.pid]
        assert session_members(ended.pid) == []
    finally:
        live.kill()
        live.wait(5)
        ended.wait(5)


def test_what_a_killed_process_left_in_another_session_is_found_by_its_environment_and_stopped():
    """A parent that starts a grandchild in a session of its own and is SIGKILLed (as a TaskExecutor whose Spark worker
    outlives it): the grandchild, re-parented, is found by the variable it inherited, and stopped; nothing else is."""
    marker = f"test-{os.getpid()}-{time.monotonic_ns()}"
    sleep = "import time; time.sleep(120)"
    spawn = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {sleep!r}], start_new_session=True); {sleep}"
    parent = subprocess.Popen([sys.executable, "-c", spawn], env={**os.environ, "JOBCLUSTER_TEST_MARKER": marker})
    bystander = subprocess.Popen([sys.executable, "-c", sleep], env={**os.environ, "JOBCLUSTER_TEST_MARKER": "other"})
    try:
        deadline = time.monotonic() + 30
        while not psutil.Process(parent.pid).children() and time.monotonic() < deadline:
            time.sleep(0.05)
        (grandchild,) = psutil.Process(parent.pid).children()
        parent.kill()
        parent.wait(10)
        assert grandchild.is_running()  # re-parented, in its own session: no tree or session of the parent has it
        found = processes_with_environment("JOBCLUSTER_TEST_MARKER", marker)
        assert [p.pid for p in found] == [grandchild.pid]
        kill_processes(found, grace_seconds=5)
        assert not grandchild.is_running() or grandchild.status() == psutil.STATUS_ZOMBIE
        assert processes_with_environment("JOBCLUSTER_TEST_MARKER", marker) == []
        assert bystander.poll() is None
    finally:
        for proc in (parent, bystander):
            proc.kill()
            proc.wait(5)
