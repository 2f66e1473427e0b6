"""What an attached ``jobcluster run`` prints as the job's details change (cli/progress.py)."""

from jobcluster.cli.progress import ProgressPrinter


def job(state: str, held: int) -> dict:
    return {"jid": "j1", "state": state, "slots": {"held": held, "required": 4}}


def task_manager(name: str) -> dict:
    return {"id": name, "slotsNumber": 2, "memoryConfiguration": {"totalProcessMemory": 2560 << 20}}


def test_each_change_is_said_once_and_a_new_attempt_is_followed_from_scratch(capsys):
    printer = ProgressPrinter()
    printer.update(job("CREATED", 0), [])
    printer.update(job("RUNNING", 4), [task_manager("tm-1-1"), task_manager("tm-1-2")])
    printer.update(job("RUNNING", 4), [task_manager("tm-1-1"), task_manager("tm-1-2")])
    first = capsys.readouterr().err.splitlines()
    assert first == [
        "Slots offered to the job: 0/4",
        "Job j1 is CREATED",
        "TaskExecutor tm-1-1 registered: 2 slots, process 2560 MiB (task heap ?, managed ?, network ?)",
        "TaskExecutor tm-1-2 registered: 2 slots, process 2560 MiB (task heap ?, managed ?, network ?)",
        "Slots offered to the job: 4/4",
        "Job j1 is RUNNING",
    ]
    printer.relocated("http://10.0.0.2:8081")
    printer.update(job("RUNNING", 4), [task_manager("tm-1-1")])  # a TaskExecutor of the same name registers with the new attempt
    again = capsys.readouterr().err.splitlines()
    assert again[0].startswith("The JobManager was restarted; following its new attempt at http://10.0.0.2:8081")
    assert again[1:] == [first[2], "Slots offered to the job: 4/4", "Job j1 is RUNNING"]


def test_a_lost_task_executor_is_said_once_with_the_platforms_reason(capsys):
    printer = ProgressPrinter()
    oom = "worker terminated: Pod terminated, container termination statuses: [main(exitCode=137, reason=OOMKilled, message=None)]"
    lost = {"lost-taskmanagers": [{"id": "tm-1-1", "cause": oom}]}
    printer.update(job("RUNNING", 4), [task_manager("tm-1-1")])
    capsys.readouterr()
    printer.update({**job("RUNNING", 2), **lost}, [])
    printer.update({**job("RUNNING", 2), **lost}, [])
    said = capsys.readouterr().err.splitlines()
    assert said.count(f"TaskExecutor tm-1-1 lost: {oom}") == 1
    assert "Slots offered to the job: 2/4" in said
