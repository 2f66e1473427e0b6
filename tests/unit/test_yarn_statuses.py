"""Completed-container diagnostics and the final application status the ApplicationMaster unregisters with."""

import pytest

from jobcluster.backends.yarn import statuses as s

CID = "container_1_0001_01_000002"


@pytest.mark.parametrize(
    ("exit_status", "expected"),
    [
        (0, f"Container {CID} exited normally. Diagnostics: d"),
        (-102, f"Container {CID} was preempted by YARN. Diagnostics: d"),
        (-1000, f"Container {CID} was invalid. Diagnostics: d"),
        (-100, f"Container {CID} killed by YARN, either due to being released by the application or being 'lost'"),
        (-101, f"Container {CID} is failed because threshold number of the nodemanager-local-directories"),
        (-104, f"Container {CID} was killed by YARN for exceeding its physical memory limit"),
        (-103, f"Container {CID} was killed by YARN for exceeding its virtual memory limit"),
        (143, f"Container {CID} marked as failed.\n Exit code:143.\n Diagnostics:d"),
        (-105, f"Container {CID} marked as failed.\n Exit code:-105."),
    ],
)
def test_container_completed_diagnostics(exit_status, expected):
    text = s.container_completed_diagnostics(CID, exit_status, "d")
    assert text.startswith(expected)
    assert text.endswith("d")


def test_memory_kills_are_recognised():
    assert s.is_killed_for_memory(-104) and s.is_killed_for_memory(-103)
    assert not s.is_killed_for_memory(-100) and not s.is_killed_for_memory(137)


@pytest.mark.parametrize(
    ("state", "final"),
    [
        ("FINISHED", "SUCCEEDED"),
        ("FAILED", "FAILED"),
        ("CANCELED", "KILLED"),
        ("canceled", "KILLED"),
        ("RUNNING", "UNDEFINED"),
        (None, "UNDEFINED"),
    ],
)
def test_final_application_status(state, final):
    assert s.final_application_status(state) == final


@pytest.mark.parametrize(
    ("final", "state"),
    [("SUCCEEDED", "FINISHED"), ("FAILED", "FAILED"), ("KILLED", "CANCELED"), ("UNDEFINED", "FAILED")],
)
def test_job_state_of_final_status_reverses_the_mapping(final, state):
    assert s.job_state_of_final_status(final) == state
    if final != "UNDEFINED":
        assert s.final_application_status(state) == final


def test_finish_time_is_rfc3339_utc_once_ended():
    assert s.finish_time_of(1_795_510_847_606) == "2026-11-24T09:00:47Z"
    assert s.finish_time_of(0) == "" and s.finish_time_of(None) == ""


# What a NodeManager of Hadoop 3 writes for a container killed by its physical-memory check (ContainersMonitorImpl),
# as the completed container's diagnostics reach the ApplicationMaster.
PMEM_DIAGNOSTICS = (
    f"[2026-11-26 14:00:01.000]Container [pid=4242,containerID={CID}] is running 231735296B beyond the 'PHYSICAL' memory limit. "
    "Current usage: 2.7 GB of 2.5 GB physical memory used; 5.1 GB of 5.3 GB virtual memory used. Killing container.\n"
    f"Dump of the process-tree for {CID} :\n\t|- PID PPID PGRPID SESSID CMD_NAME ...\n"
    "[2026-11-26 14:00:01.100]Container killed on request. Exit code is 143\n"
    "[2026-11-26 14:00:01.100]Container exited with a non-zero exit code 143. \n"
)


def test_a_physical_memory_kill_carries_yarns_numbers():
    ended = s.container_termination(CID, -104, PMEM_DIAGNOSTICS)
    assert ended.summary == "exit status -104 (KILLED_EXCEEDED_PMEM): killed by YARN for exceeding its physical memory limit"
    assert ended.memory_kill is not None
    assert ended.memory_kill.words == "Current usage: 2.7 GB of 2.5 GB physical memory used"
    assert ended.memory_kill.excess_bytes == 231735296 and not ended.memory_kill.virtual
    assert ended.diagnostics.startswith(f"Container {CID} was killed by YARN for exceeding its physical memory limit. Diagnostics: [")
    assert ended.diagnostics.endswith(PMEM_DIAGNOSTICS)


def test_a_virtual_memory_kill_names_the_usage_of_the_virtual_limit_and_hadoop_2s_words_parse_too():
    hadoop2 = (
        f"Container [pid=1,containerID={CID}] is running beyond virtual memory limits. Current usage: 1.1 GB of 2 GB physical "
        "memory used; 4.6 GB of 4.2 GB virtual memory used. Killing container."
    )
    kill = s.memory_kill_of(-103, hadoop2)
    assert kill is not None and kill.virtual
    assert (kill.words, kill.excess_bytes) == ("Current usage: 4.6 GB of 4.2 GB virtual memory used", None)
    assert s.memory_kill_of(-104, "no numbers").words == "YARN's diagnostics give no usage"  # type: ignore[union-attr]
    assert s.memory_kill_of(-100, PMEM_DIAGNOSTICS) is None and s.memory_kill_of(143, PMEM_DIAGNOSTICS) is None


@pytest.mark.parametrize(
    ("exit_status", "status", "meaning"),
    [
        (-100, "exit status -100 (ABORTED)", "released by the application or lost with its node"),
        (-102, "exit status -102 (PREEMPTED)", "preempted by YARN for another application"),
        (-103, "exit status -103 (KILLED_EXCEEDED_VMEM)", "killed by YARN for exceeding its virtual memory limit"),
        (-105, "exit status -105 (KILLED_BY_APPMASTER)", "killed at the ApplicationMaster's request"),
        (-107, "exit status -107 (KILLED_AFTER_APP_COMPLETION)", "killed because its application ended"),
        (-1000, "exit status -1000 (INVALID)", "the container never ran"),
        (143, "exit code 143", "stopped by SIGTERM (asked to stop: by its platform, an operator or a shutdown)"),
        (137, "exit code 137", "killed by SIGKILL (a kill -9, a memory limit, or the kernel's out-of-memory killer)"),
        (1, "exit code 1", "exited with an error of its own (see its log)"),
        (-42, "signal 42", "a status of YARN's this client does not know"),
    ],
)
def test_each_exit_status_has_yarns_name_and_its_meaning(exit_status, status, meaning):
    ended = s.container_termination(CID, exit_status, "d")
    assert (ended.status, ended.meaning) == (status, meaning)
    assert (ended.memory_kill is not None) == s.is_killed_for_memory(exit_status)


# What the ResourceManager said of a real ApplicationMaster the test cluster's NodeManager killed (vmem check on, 2.1).
AM_VMEM_KILL = (
    "Application application_1795922389290_0001 failed 1 times (global limit =2; local limit is =1) due to AM Container "
    "for appattempt_1795922389290_0001_000001 exited with  exitCode: -103\nFailing this attempt.Diagnostics: "
    "[2026-11-29 03:20:19.767]Container [pid=11814,containerID=container_1795922389290_0001_01_000001] is running "
    "879140352B beyond the 'VIRTUAL' memory limit. Current usage: 244.6 MB of 1.8 GB physical memory used; 4.5 GB of "
    "3.7 GB virtual memory used. Killing container.\nDump of the process-tree for container_1795922389290_0001_01_000001 :"
)


def test_an_application_master_killed_for_its_memory_is_named_first_with_the_numbers_and_what_to_change():
    explained = s.explained_application_diagnostics(AM_VMEM_KILL)
    assert explained.startswith(
        "The ApplicationMaster (the JobManager) was killed by YARN for exceeding its virtual memory limit "
        "(Current usage: 4.5 GB of 3.7 GB virtual memory used). YARN's virtual memory limit is the container's size times"
    )
    assert "raise jobmanager.memory.process.size, or the ratio (or turn yarn.nodemanager.vmem-check-enabled off)" in explained
    assert explained.endswith(AM_VMEM_KILL), "YARN's own words follow"
    pmem = AM_VMEM_KILL.replace("-103", "-104").replace("'VIRTUAL'", "'PHYSICAL'").replace("244.6 MB of 1.8 GB", "2.0 GB of 1.8 GB")
    assert "(Current usage: 2.0 GB of 1.8 GB physical memory used). The JVM overhead" in s.explained_application_diagnostics(pmem)
    assert "raise jobmanager.memory.jvm-overhead.min" in s.explained_application_diagnostics(pmem)
    other = AM_VMEM_KILL.replace("-103", "1")
    assert s.explained_application_diagnostics(other) == other
    assert s.explained_application_diagnostics("") == ""
