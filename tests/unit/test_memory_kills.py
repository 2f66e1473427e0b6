"""The job's failure cause ends with the TaskManagers killed for memory while the attempt ran (runtime/jobmaster/memory_kills.py)."""

from jobcluster.runtime.jobmaster.memory_kills import MAX_LISTED, with_memory_kills

PROGRAM = "the PySpark program exited with code 1:\nExecutorLostFailure (executor 1 exited ...) Reason: Command exited with code 143\n"


def lost(name: str, memory_kill: bool) -> dict:
    return {"id": name, "cause": f"worker terminated: cause of {name}", "memory-kill": memory_kill}


def test_a_cause_without_memory_kills_is_unchanged():
    assert with_memory_kills(PROGRAM, []) == PROGRAM
    assert with_memory_kills(PROGRAM, [lost("tm-1", False)]) == PROGRAM


def test_the_memory_kills_follow_the_programs_error():
    cause = with_memory_kills(PROGRAM, [lost("tm-1", False), lost("tm-2", True)])
    assert cause == PROGRAM.rstrip("\n") + "\n\nTaskManager killed for memory while the job ran:\n  tm-2: worker terminated: cause of tm-2"


def test_many_memory_kills_are_counted_beyond_the_first_ones():
    cause = with_memory_kills(PROGRAM, [lost(f"tm-{i}", True) for i in range(MAX_LISTED + 3)])
    lines = cause.splitlines()
    assert lines[3] == f"{MAX_LISTED + 3} TaskManagers killed for memory while the job ran:"
    assert [line.split(":")[0].strip() for line in lines[4:-1]] == [f"tm-{i}" for i in range(MAX_LISTED)]
    assert lines[-1] == "  and 3 more (the job's lost-taskmanagers)"
