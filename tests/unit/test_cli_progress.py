"""What an attached ``jobcluster run`` prints as the job's details change (cli/progress.py)."""

import shlex

from jobcluster.backends.kubernetes.descriptor import KubernetesClusterDescriptor
from jobcluster.backends.yarn.descriptor import YarnClusterDescriptor
from jobcluster.cli.progress import ProgressPrinter, client_arguments
from jobcluster.config.configuration import Configuration


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


def test_the_slots_a_finished_job_frees_are_not_said(capsys):
    printer = ProgressPrinter()
    printer.update(job("RUNNING", 4), [])
    printer.update(job("FINISHED", 0), [])
    assert capsys.readouterr().err.splitlines() == ["Slots offered to the job: 4/4", "Job j1 is RUNNING"]


def test_why_a_task_executor_cannot_start_is_said_once_while_the_job_waits_for_its_slots(capsys):
    printer = ProgressPrinter()
    reason = "the pod cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."
    pending = {"pending-taskmanagers": [{"id": "wc-taskmanager-1-1", "reason": reason}]}
    printer.update({**job("CREATED", 0), **pending}, [])
    printer.update({**job("CREATED", 0), **pending}, [])
    said = capsys.readouterr().err.splitlines()
    assert said.count(f"TaskExecutor wc-taskmanager-1-1 cannot start yet: {reason}") == 1, said


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
    # the platform's report after the JobMaster's own (a heartbeat timeout first): said too
    later = {"lost-taskmanagers": [{"id": "tm-1-1", "cause": "heartbeat timeout"}, {"id": "tm-1-1", "cause": oom}]}
    printer.update({**job("RUNNING", 2), **later}, [])
    assert capsys.readouterr().err.splitlines() == ["TaskExecutor tm-1-1 lost: heartbeat timeout"]


def test_a_replacement_says_why_the_one_it_replaces_ended_and_a_warning_is_said_once(capsys):
    printer = ProgressPrinter()
    replacement = {
        **task_manager("tm-1-2"),
        "replaces": {"id": "tm-1-1", "cause": "exit code 137: killed by SIGKILL"},
        "warnings": ["its processes use 2700 MiB resident, more than its 2560 MiB process size"],
    }
    printer.update(job("RUNNING", 4), [replacement])
    printer.update(job("RUNNING", 4), [replacement])
    said = capsys.readouterr().err.splitlines()
    assert said[:2] == [
        "TaskExecutor tm-1-2 registered: 2 slots, process 2560 MiB (task heap ?, managed ?, network ?); "
        "it replaces tm-1-1, which ended with exit code 137: killed by SIGKILL",
        "TaskExecutor tm-1-2: WARNING: its processes use 2700 MiB resident, more than its 2560 MiB process size",
    ]
    assert len(said) == 4, said
    printer.update(job("RUNNING", 4), [{**replacement, "warnings": [*replacement["warnings"], "another"]}])
    assert capsys.readouterr().err.splitlines() == ["TaskExecutor tm-1-2: WARNING: another"]


class Clock:
    """A monotonic clock the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def query(run_id: str = "run-1", active: bool = True, **fields) -> dict:
    base = {
        "name": "wordcount",
        "id": "q-1",
        "runId": run_id,
        "active": active,
        "batchId": 42,
        "committedBatchId": 41,
        "inputRowsPerSecond": 1234.4,
        "processedRowsPerSecond": 1200.0,
        "numInputRows": 5000,
        "stateRows": 5000,
        "stateBytes": 1 << 20,
        "lastProgressTime": 1_700_000_000_000,
        "lastCommitTime": 1_700_000_000_000,
        "checkpoint": "/tmp/ckpt",
    }
    return {**base, **fields}


def streaming_job(*queries: dict, now: int = 1_700_000_002_000) -> dict:
    spark = {"app_id": "app-1", "jobs_completed": 7, "jobs_total": 8, "tasks_completed": 30, "tasks_total": 32, "executors": 2}
    return {**job("RUNNING", 4), "job-type": "STREAMING", "streaming": {"queries": list(queries)}, "spark": spark, "now": now}


def test_a_streaming_job_prints_each_query_at_a_steady_pace_instead_of_spark_counts(capsys):
    clock = Clock()
    printer = ProgressPrinter(streaming_interval=10.0, clock=clock)
    printer.update(streaming_job(), [])
    capsys.readouterr()
    printer.update(streaming_job(query()), [])
    assert capsys.readouterr().err.splitlines() == ["Query wordcount started (id q-1, run run-1)"]
    for step in range(19):  # polls every 0.5 s, each with a new micro-batch: 9.5 s, nothing more is said
        clock.now += 0.5
        printer.update(streaming_job(query(batchId=43 + step)), [])
    assert capsys.readouterr().err == ""
    clock.now += 0.5
    printer.update(streaming_job(query(batchId=70, committedBatchId=69, lastCommitTime=1_700_000_000_000)), [])
    assert capsys.readouterr().err.splitlines() == [
        "Query wordcount: batch 70, 1,234 rows/s in, 1,200 rows/s processed, 5,000 state rows, last committed batch 69, 2 s ago"
    ]
    clock.now += 9.9
    printer.update(streaming_job(query()), [])
    assert capsys.readouterr().err == ""
    clock.now += 0.1
    printer.update(streaming_job(query(), now=1_700_000_000_000 + 3 * 3600_000 + 5 * 60_000), [])
    assert capsys.readouterr().err.endswith("last committed batch 41, 3 h 5 min ago\n")


def test_a_query_starting_or_stopping_is_said_at_once(capsys):
    clock = Clock()
    printer = ProgressPrinter(streaming_interval=10.0, clock=clock)
    printer.update(streaming_job(), [])
    capsys.readouterr()  # the job's state and slots
    printer.update(streaming_job(query()), [])
    clock.now += 3
    other = query("run-2", name=None, id="q-2", batchId=None, committedBatchId=None, lastCommitTime=None)
    printer.update(streaming_job(query(), other), [])
    clock.now += 1
    printer.update(streaming_job(query(active=False), other), [])
    printer.update(streaming_job(query(active=False), other), [])
    clock.now += 1
    printer.update(streaming_job(), [])  # the other one is no longer listed
    assert capsys.readouterr().err.splitlines() == [
        "Query wordcount started (id q-1, run run-1)",
        "Query q-2 started (id q-2, run run-2)",
        "Query wordcount stopped: batch 42, last committed batch 41, 2 s ago",
        "Query q-2 stopped: no batch yet, no batch committed yet",
    ]
    clock.now += 60
    printer.update(streaming_job(query(active=False)), [])
    assert capsys.readouterr().err == "", "no query runs: no lines, and a stop is said once"


def test_a_query_that_ran_between_two_polls_is_said_stopped_and_its_restart_started(capsys):
    printer = ProgressPrinter(streaming_interval=10.0, clock=Clock())
    printer.update(streaming_job(), [])
    capsys.readouterr()
    printer.update(streaming_job(query(active=False)), [])
    printer.update(streaming_job(query(active=False), query("run-2")), [])
    assert capsys.readouterr().err.splitlines() == [
        "Query wordcount stopped: batch 42, last committed batch 41, 2 s ago",
        "Query wordcount started (id q-1, run run-2)",
    ]


def test_a_batch_job_still_prints_spark_counts(capsys):
    printer = ProgressPrinter(streaming_interval=10.0, clock=Clock())
    batch = {**streaming_job(query()), "job-type": "BATCH", "streaming": None}
    printer.update(batch, [])
    printer.update({k: v for k, v in batch.items() if k not in ("job-type", "streaming")}, [])  # a cluster that says neither
    said = capsys.readouterr().err.splitlines()
    assert said[-1] == "Spark app-1: 7/8 Spark jobs, 30/32 tasks done, 2 executors" and not any("Query" in line for line in said)


def test_output_rotated_away_is_said_in_one_line(capsys):
    ProgressPrinter().output_rotated("stdout", 100, 12_445)
    assert capsys.readouterr().err == (
        "[jobcluster] 12,345 bytes of the program's stdout were rotated away before they could be read "
        "(see jobcluster.driver.output.max-files); resuming at byte 12,445\n"
    )


def test_the_terminal_details_say_a_last_loss_but_not_the_end_which_the_result_says(capsys):
    printer = ProgressPrinter()
    printer.update(job("RUNNING", 4), [])
    capsys.readouterr()
    printer.update({**job("FAILED", 0), "lost-taskmanagers": [{"id": "tm-1-1", "cause": "worker terminated: OOMKilled"}]}, [])
    said = capsys.readouterr().err.splitlines()
    assert said == ["TaskExecutor tm-1-1 lost: worker terminated: OOMKilled"]  # the slots the end frees are no news


def test_the_commands_a_run_prints_repeat_what_finds_its_cluster_and_nothing_else():
    config = Configuration(
        {
            "kubernetes.namespace": "team a",  # quoted for the shell
            "kubernetes.context": "prod",
            "taskmanager.numberOfTaskSlots": "2",  # not needed to find the cluster
            "kubernetes.cluster-id": "wc",
        }
    )
    words = shlex.split(client_arguments("kubernetes-application", KubernetesClusterDescriptor.client_options, config))
    assert words == ["-t", "kubernetes-application", "-D", "kubernetes.namespace=team a", "-D", "kubernetes.context=prod"]

    yarn = Configuration({"jobcluster.yarn.resourcemanager.api": "rest", "security.kerberos.login.keytab": "/k/alice.keytab"})
    assert shlex.split(client_arguments("yarn-application", YarnClusterDescriptor.client_options, yarn)) == [
        "-t", "yarn-application",
        "-D", "jobcluster.yarn.resourcemanager.api=rest",
        "-D", "security.kerberos.login.keytab=/k/alice.keytab",
    ]  # fmt: skip
    assert client_arguments("local-cluster", (), Configuration()) == "", "both local targets keep their clusters where list looks"
