"""What an attached ``jobcluster run`` prints while the job runs.

Progress goes to stderr, one line per change (cluster, TaskExecutors registered
or lost, with the platform's reason, a replacement with why the one it
replaces ended, a TaskExecutor's warnings, slots, job state, Spark progress). A
streaming job's Spark counts change with every micro-batch, so for it one line
per query is printed at a steady pace instead (every
``jobcluster.client.streaming-progress-interval``), and at once when a query
starts or stops. The
program's own stdout and stderr are copied to ours as they arrive, so
``jobcluster run ... > out.txt`` keeps just what the program printed. Its
stderr is copied up to the last line end, so that a progress line never lands
in the middle of one of its lines.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import click

from jobcluster.client.job_client import JobClient, JobExecutionResult
from jobcluster.config import options
from jobcluster.config.config_option import ConfigOption
from jobcluster.config.configuration import Configuration
from jobcluster.config.targets import DeploymentTarget
from jobcluster.jobgraph.job_status import TERMINAL_JOB_STATES
from jobcluster.jobgraph.model import JobGraph


def _say(message: str) -> None:
    click.echo(message, err=True)


def client_arguments(target: str, client_options: Iterable[ConfigOption[Any]], config: Configuration) -> str:
    """`` -t <target> -D <key>=<value> ...``, quoted for a POSIX shell: what a later ``jobcluster list`` or ``cancel``
    needs to find a cluster this ``config`` deployed. The target, unless a local one (both keep their clusters
    where ``list`` looks by default), and each of the target's ``client_options`` (``ClusterDescriptor.client_options``)
    that ``config`` sets, as it was written."""
    words = [] if target in (DeploymentTarget.LOCAL, DeploymentTarget.LOCAL_CLUSTER) else ["-t", target]
    for option in client_options:
        key = next((key for key in option.all_keys if key in config), None)
        if key is not None:
            words += ["-D", f"{key}={config[key]}"]
    return "".join(f" {shlex.quote(word)}" for word in words)


class ProgressPrinter:
    """Says what changed in the job, as :meth:`update` sees its details after each poll.

    ``streaming_interval``: seconds between the lines of a streaming job's
    queries; ``clock``: monotonic seconds that pace them (``time.monotonic``),
    ``wall_clock_ms``: milliseconds since the epoch, for the age of a query's last
    commit when the details carry no ``now`` of the cluster's own.
    """

    def __init__(
        self,
        streaming_interval: float = options.CLIENT_STREAMING_PROGRESS_INTERVAL.default,
        clock: Callable[[], float] = time.monotonic,
        wall_clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._streaming_interval = streaming_interval
        self._clock = clock
        self._wall_clock_ms = wall_clock_ms
        self._running_queries: dict[str, dict[str, Any]] = {}  # by runId: the query as last seen active
        self._stopped_queries: set[str] = set()  # runIds whose stop was said
        self._next_query_lines: float | None = None  # clock() at which the queries' lines are due; None: no query runs
        self._task_managers: set[str] = set()
        self._lost: set[tuple[str, str]] = set()  # TaskExecutors reported lost, with the cause said
        self._warned: set[tuple[str, str]] = set()  # TaskExecutors' warnings said
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

    def detached(self, job_client: JobClient, on_target: str) -> None:
        """The commands that follow and cancel the job; ``on_target``: their arguments (:func:`client_arguments`)."""
        cluster = job_client.cluster_client
        job = job_client.job_id
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
                replaces = tm.get("replaces")
                _say(
                    f"TaskExecutor {tm['id']} registered: {tm['slotsNumber']} slots, process {_mib(spec.get('totalProcessMemory'))} "
                    f"(task heap {_mib(spec.get('taskHeap'))}, managed {_mib(spec.get('managedMemory'))}, "
                    f"network {_mib(spec.get('networkMemory'))})"
                    + (f"; it replaces {replaces['id']}, which ended with {replaces['cause']}" if replaces else "")
                )
            for warning in tm.get("warnings") or []:
                if (tm["id"], warning) not in self._warned:
                    self._warned.add((tm["id"], warning))
                    _say(f"TaskExecutor {tm['id']}: WARNING: {warning}")
        for pending in job.get("pending-taskmanagers") or []:
            if (pending["id"], pending["reason"]) not in self._warned:
                self._warned.add((pending["id"], pending["reason"]))
                _say(f"TaskExecutor {pending['id']} cannot start yet: {pending['reason']}")
        for lost in job.get("lost-taskmanagers") or []:
            if (lost["id"], lost["cause"]) not in self._lost:
                self._lost.add((lost["id"], lost["cause"]))
                _say(f"TaskExecutor {lost['id']} lost: {lost['cause']}")
        slots = (job["slots"]["held"], job["slots"]["required"])
        if slots != self._slots and job["state"] not in TERMINAL_JOB_STATES:  # slots freed by the end are no news
            self._slots = slots
            _say(f"Slots offered to the job: {slots[0]}/{slots[1]}")
        if job["state"] != self._state and job["state"] not in TERMINAL_JOB_STATES:  # the end is said by result()
            self._state = job["state"]
            _say(f"Job {job['jid']} is {job['state']}")
        if job.get("job-type") == "STREAMING":
            self._queries(job)
            return
        spark = job.get("spark")
        if spark:
            key = (spark["jobs_completed"], spark["jobs_total"], spark["tasks_completed"], spark["tasks_total"], spark["executors"])
            if key != self._spark:
                self._spark = key
                _say(f"Spark {spark['app_id']}: {key[0]}/{key[1]} Spark jobs, {key[2]}/{key[3]} tasks done, {key[4]} executors")

    def _queries(self, job: dict[str, Any]) -> None:
        """A streaming job's queries: each start and stop at once; every ``streaming_interval`` a line per running query."""
        queries = (job.get("streaming") or {}).get("queries") or []
        now_ms = job.get("now") or self._wall_clock_ms()  # the cluster's clock, as the queries' times are
        active = {q["runId"]: q for q in queries if q.get("active")}
        for query in queries:
            run_id = query["runId"]
            if run_id in active:
                if run_id not in self._running_queries:
                    _say(f"Query {_query_name(query)} started (id {query['id']}, run {run_id})")
            elif run_id not in self._stopped_queries:  # also one that ran and stopped between two polls
                self._stopped_queries.add(run_id)
                _say(f"Query {_query_name(query)} stopped: {_batches(query, now_ms)}")
        for run_id, last_seen in self._running_queries.items():
            if run_id not in active and run_id not in self._stopped_queries:  # no longer listed: what was last seen of it
                self._stopped_queries.add(run_id)
                _say(f"Query {_query_name(last_seen)} stopped: {_batches(last_seen, now_ms)}")
        self._running_queries = active
        if not active:
            self._next_query_lines = None
            return
        now = self._clock()
        if self._next_query_lines is None:  # a query has just started, and said so
            self._next_query_lines = now + self._streaming_interval
        elif now >= self._next_query_lines:
            self._next_query_lines = now + self._streaming_interval
            for query in active.values():
                _say(f"Query {_query_name(query)}: {_batches(query, now_ms, rates=True)}")

    def relocated(self, rest_url: str) -> None:
        """A new JobManager attempt took over: the job runs again (a streaming job from its checkpoints), followed at ``rest_url``."""
        self._flush_program_stderr()
        self._state = self._slots = self._spark = None
        self._running_queries.clear()
        self._stopped_queries.clear()  # the new attempt runs the queries again, with new runIds
        self._next_query_lines = None
        self._task_managers.clear()  # the new attempt's TaskExecutors register with it anew
        _say(
            f"The JobManager was restarted; following its new attempt at {rest_url} "
            "(the job runs again: a batch job from its start, a streaming job from its checkpoints)"
        )

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


def _query_name(query: dict[str, Any]) -> str:
    return str(query.get("name") or query["id"])


def _batches(query: dict[str, Any], now_ms: int, rates: bool = False) -> str:
    """``batch 42, 1,234 rows/s in, 1,200 rows/s processed, 5,000 state rows, last committed batch 41, 2 s ago``
    (without the rates and state unless ``rates``)."""
    batch = query.get("batchId")
    parts = ["no batch yet" if batch is None else f"batch {batch}"]
    if rates:
        parts += [
            f"{query.get('inputRowsPerSecond') or 0:,.0f} rows/s in",
            f"{query.get('processedRowsPerSecond') or 0:,.0f} rows/s processed",
            f"{query.get('stateRows') or 0:,} state rows",
        ]
    committed, commit_time = query.get("committedBatchId"), query.get("lastCommitTime")
    if committed is None:
        parts.append("no batch committed yet")
    elif commit_time is None:
        parts.append(f"last committed batch {committed}")
    else:
        parts.append(f"last committed batch {committed}, {_age(now_ms - commit_time)} ago")
    return ", ".join(parts)


def _age(ms: int) -> str:
    """``45 s``, ``12 min``, ``26 h 5 min``: how long ago, to the unit that matters."""
    seconds = max(0, ms) // 1000
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _mib(value: int | None) -> str:
    return "?" if value is None else f"{value / (1 << 20):.0f} MiB"
