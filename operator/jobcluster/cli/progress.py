"""What an attached ``jobcluster run`` prints while the job runs.

Progress goes to stderr, one line per change (cluster, TaskExecutors registered
or lost, with the platform's reason, slots, job state, Spark progress). The
program's own stdout and stderr are copied to ours as they arrive, so
``jobcluster run ... > out.txt`` keeps just what the program printed. Its
stderr is copied up to the last line end, so that a progress line never lands
in the middle of one of its lines.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from jobcluster.client.job_client import JobClient, JobExecutionResult
from jobcluster.config.configuration import Configuration
from jobcluster.config.targets import DeploymentTarget
from jobcluster.jobgraph.model import JobGraph


def _say(message: str) -> None:
    click.echo(message, err=True)


class ProgressPrinter:
    def __init__(self) -> None:
        self._task_managers: set[str] = set()
        self._lost: set[str] = set()  # TaskExecutors reported lost
        self._state: str | None = None
        self._slots: tuple[int, int] | None = None
        self._spark: tuple[Any, ...] | None = None
        self._stderr_partial = b""  # the program's stderr after its last line end, held back

    def step(self, message: str) -> None:
        """A step of the deployment, as the target's ClusterDescriptor reports it."""
        _say(message)

    def deploying(self, graph: JobGraph, target: str, config: Configuration) -> None:
        _say(f"Deploying job cluster for '{graph.job_name}' (job {graph.job_id}) on target {target}, parallelism {graph.parallelism}")

    def submitted(self, job_client: JobClient) -> None:
        cluster = job_client.cluster_client
        _say(f"Job cluster {cluster.cluster_id} is up; REST API at {cluster.rest_url}")

    def detached(self, job_client: JobClient, target: str) -> None:
        cluster = job_client.cluster_client
        job = job_client.job_id
        on_target = "" if target == DeploymentTarget.LOCAL else f" -t {target}"
        logs = f" ({cluster.log_location})" if cluster.log_location else ""
        click.echo(f"Job has been submitted with JobID {job} to job cluster {cluster.cluster_id}")
        click.echo(f"  follow it:  jobcluster list{on_target}   (or GET {cluster.rest_url}/jobs/{job})")
        click.echo(f"  cancel it:  jobcluster cancel {job}{on_target}")
        click.echo(
            f"  its output: GET {cluster.rest_url}/jobs/{job}/stdout (and /stderr) while it runs; "
            f"kept in driver.out and driver.err of the cluster's logs{logs}"
        )

    def update(self, job: dict[str, Any], task_managers: list[dict[str, Any]]) -> None:
        for tm in task_managers:
            if tm["id"] not in self._task_managers:
                self._task_managers.add(tm["id"])
                spec = tm.get("memoryConfiguration", {})
                _say(
                    f"TaskExecutor {tm['id']} registered: {tm['slotsNumber']} slots, process {_mib(spec.get('totalProcessMemory'))} "
                    f"(task heap {_mib(spec.get('taskHeap'))}, managed {_mib(spec.get('managedMemory'))}, "
                    f"network {_mib(spec.get('networkMemory'))})"
                )
        for lost in job.get("lost-taskmanagers") or []:
            if lost["id"] not in self._lost:
                self._lost.add(lost["id"])
                _say(f"TaskExecutor {lost['id']} lost: {lost['cause']}")
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

    def relocated(self, rest_url: str) -> None:
        """A new JobManager attempt took over: the job runs again from its start, followed at ``rest_url``."""
        self._flush_program_stderr()
        self._state = self._slots = self._spark = None
        self._task_managers.clear()  # the new attempt's TaskExecutors register with it anew
        _say(f"The JobManager was restarted; following its new attempt at {rest_url} (the job runs again from its start)")

    def program_output(self, stream: str, data: bytes) -> None:
        """Copy what the program wrote to ``stream`` (``stdout`` or ``stderr``) to ours, bytes as they are."""
        if stream == "stdout":
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
            return
        lines, newline, self._stderr_partial = (self._stderr_partial + data).rpartition(b"\n")
        if newline:
            sys.stderr.buffer.write(lines + newline)
            sys.stderr.buffer.flush()

    def output_rotated(self, stream: str, first_lost: int, resumed_at: int) -> None:
        """Bytes ``first_lost`` to ``resumed_at`` of the program's ``stream`` were rotated away in the cluster unread."""
        self._flush_program_stderr()
        _say(
            f"[jobcluster] {resumed_at - first_lost:,} bytes of the program's {stream} were rotated away before they could be "
            f"read (see jobcluster.driver.output.max-files); resuming at byte {resumed_at:,}"
        )

    def _flush_program_stderr(self) -> None:
        if self._stderr_partial:
            sys.stderr.buffer.write(self._stderr_partial + b"\n")
            sys.stderr.buffer.flush()
            self._stderr_partial = b""

    def result(self, result: JobExecutionResult) -> None:
        self._flush_program_stderr()
        sys.stdout.flush()
        restarts = f", {result.restarts} restart(s)" if result.restarts else ""
        _say(f"Job {result.job_id} ({result.job_name}) {result.status} in {result.duration_ms / 1000:.1f} s{restarts}")
        if result.failure_cause:
            _say(f"Cause: {result.failure_cause.rstrip()}")

    def shut_down(self, cluster_id: str, gone: bool, platform_report: str | None = None) -> None:
        """The cluster's end, and how its platform reports it (e.g. the YARN application's final status)."""
        if gone:
            _say(f"Job cluster {cluster_id} has shut down.")
        else:
            _say(f"Job cluster {cluster_id} is still shutting down; see its logs if it does not go away.")
        if platform_report:
            _say(platform_report)


def _mib(value: int | None) -> str:
    return "?" if value is None else f"{value / (1 << 20):.0f} MiB"
