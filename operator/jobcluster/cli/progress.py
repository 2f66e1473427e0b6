"""What an attached ``jobcluster run`` prints while the job runs.

Progress goes to stderr, one line per change (cluster, TaskExecutors, slots,
job state, Spark progress); the program's own output goes to stdout at the
end, so ``jobcluster run ... > out.txt`` keeps just the result.
"""

from __future__ import annotations

from typing import Any

import click

from jobcluster.client.job_client import JobClient, JobExecutionResult
from jobcluster.config.configuration import Configuration
from jobcluster.jobgraph.model import JobGraph


def _say(message: str) -> None:
    click.echo(message, err=True)


class ProgressPrinter:
    def __init__(self) -> None:
        self._task_managers: set[str] = set()
        self._state: str | None = None
        self._slots: tuple[int, int] | None = None
        self._spark: tuple[Any, ...] | None = None

    def deploying(self, graph: JobGraph, target: str, config: Configuration) -> None:
        _say(f"Deploying job cluster for '{graph.job_name}' (job {graph.job_id}) on target {target}, parallelism {graph.parallelism}")

    def submitted(self, job_client: JobClient) -> None:
        cluster = job_client.cluster_client
        _say(f"Job cluster {cluster.cluster_id} is up; REST API at {cluster.rest_url}")

    def detached(self, job_client: JobClient) -> None:
        click.echo(f"Job has been submitted with JobID {job_client.job_id}")
        click.echo(f"  follow it:  jobcluster list   (or GET {job_client.cluster_client.rest_url}/jobs/{job_client.job_id})")
        click.echo(f"  cancel it:  jobcluster cancel {job_client.job_id}")

    def update(self, job: dict[str, Any], task_managers: list[dict[str, Any]]) -> None:
        for tm in task_managers:
            if tm["id"] not in self._task_managers:
                self._task_managers.add(tm["id"])
                spec = tm.get("memoryConfiguration", {})
                _say(
                    f"TaskExecutor {tm['id']} registered: {tm['slotsNumber']} slots, process {_mib(spec.get('total_process'))} "
                    f"(task heap {_mib(spec.get('task_heap'))}, managed {_mib(spec.get('managed'))}, network {_mib(spec.get('network'))})"
                )
        slots = (job["slots"]["held"], job["slots"]["required"])
        if slots != self._slots:
            self._slots = slots
            _say(f"Slots offered to the job: {slots[0]}/{slots[1]}")
        if job["state"] != self._state:
            self._state = job["state"]
            _say(f"Job {job['jid']} is {job['state']}")
        spark = job.get("spark")
        if spark:
            key = (spark["jobs_completed"], spark["jobs_total"], spark["tasks_completed"], spark["tasks_total"], spark["executors"])
            if key != self._spark:
                self._spark = key
                _say(f"Spark {spark['app_id']}: {key[0]}/{key[1]} Spark jobs, {key[2]}/{key[3]} tasks done, {key[4]} executors")

    def result(self, result: JobExecutionResult) -> None:
        if result.program_output:
            click.echo(result.program_output.rstrip("\n"))
        restarts = f", {result.restarts} restart(s)" if result.restarts else ""
        _say(f"Job {result.job_id} ({result.job_name}) {result.status} in {result.duration_ms / 1000:.1f} s{restarts}")
        if result.failure_cause:
            _say(f"Cause: {result.failure_cause.rstrip()}")

    def shut_down(self, cluster_id: str, gone: bool) -> None:
        if gone:
            _say(f"Job cluster {cluster_id} has shut down.")
        else:
            _say(f"Job cluster {cluster_id} is still shutting down; see its logs if it does not go away.")


def _mib(value: int | None) -> str:
    return "?" if value is None else f"{value / (1 << 20):.0f} MiB"
