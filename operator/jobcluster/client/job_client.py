"""JobClient: follow one job to its end."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.errors import ClusterClientError
from jobcluster.jobgraph.job_status import TERMINAL_JOB_STATES

POLL_INTERVAL = 0.5  # seconds between status polls: the result is seen at most this long after it is in
OUTPUT_STREAMS = ("stdout", "stderr")
ENDED_REPORT_TIMEOUT = 10.0  # seconds to wait for the platform's account of a cluster that died

OutputSink = Callable[[str, bytes], None]
#: ``(stream, first_lost, resumed_at)``: bytes ``first_lost`` up to ``resumed_at`` (logical offsets) of ``stream``
#: were rotated away in the cluster before they could be read.
OutputGap = Callable[[str, int, int], None]


@dataclass(frozen=True)
class JobExecutionResult:
    """How the job ended: ``status`` is FINISHED, FAILED or CANCELED; ``duration_ms`` in milliseconds."""

    job_id: str
    job_name: str
    status: str
    duration_ms: int
    failure_cause: str | None
    restarts: int
    program_exit_code: int | None = None

    @property
    def succeeded(self) -> bool:
        return self.status == "FINISHED"


class JobClient:
    """Handle on job ``job_id`` running in the cluster behind ``cluster_client``."""

    def __init__(self, cluster_client: RestClusterClient, job_id: str) -> None:
        self.cluster_client = cluster_client
        self.job_id = job_id

    def details(self) -> dict[str, Any]:
        return self.cluster_client.job_details(self.job_id)

    def cancel(self) -> None:
        self.cluster_client.cancel(self.job_id)

    def wait_for_result(
        self,
        on_update: Callable[[dict[str, Any], list[dict[str, Any]]], None] | None = None,
        max_unreachable: float = 60.0,
        on_output: OutputSink | None = None,
        on_relocate: Callable[[str], None] | None = None,
        on_output_gap: OutputGap | None = None,
    ) -> JobExecutionResult:
        """Poll until the job is terminal; ``on_update(job_details, task_managers)`` after each poll, the terminal one included.

        ``on_output(stream, data)`` receives the program's stdout and stderr
        as they are written (see :class:`DriverOutputFollower`), all of it
        before this returns: the output is read to its end once the job is
        terminal, and only then is the result fetched, which lets an attached
        cluster shut down. ``on_relocate(rest_url)`` when a new JobManager
        attempt serves elsewhere and the job is followed there. ``on_output_gap(stream,
        first_lost, resumed_at)`` when output was rotated away in the cluster
        before it was read (the program printed faster than it was followed).

        Raises:
            ClusterClientError: the cluster's liveness check reports its
                JobManager gone (within one poll interval, ~1 s), or the cluster
                stays unreachable for ``max_unreachable`` seconds; either way it
                died before reporting a result.
        """
        output = DriverOutputFollower(self.cluster_client, self.job_id, on_output, on_output_gap) if on_output else None
        last_contact = time.monotonic()
        while True:
            try:
                details = self.details()
                terminal = details["state"] in TERMINAL_JOB_STATES
                if on_update is not None:  # the terminal details too: a TaskManager lost just before the end is in them
                    on_update(details, self.cluster_client.task_managers())
                if output is not None:
                    output.poll()
                if terminal:
                    result = self.cluster_client.execution_result(self.job_id)
                    if result is not None:
                        return _to_result(result, details)
                last_contact = time.monotonic()
            except ClusterClientError as exc:
                if not self.cluster_client.job_manager_alive():
                    raise ClusterClientError(self._died_message("its JobManager process has died")) from exc
                if self.cluster_client.relocate():
                    # a new JobManager attempt runs the job again from its start, and its program's output with it
                    last_contact = time.monotonic()
                    if output is not None:
                        output.restart()
                    if on_relocate is not None:
                        on_relocate(self.cluster_client.rest_url)
                    continue
                if time.monotonic() - last_contact > max_unreachable:
                    raise ClusterClientError(
                        self._died_message(f"lost contact with it for {max_unreachable:.0f} s; its JobManager has probably died")
                    ) from exc
            time.sleep(POLL_INTERVAL)

    def _died_message(self, what: str) -> str:
        cluster = self.cluster_client
        logs = f"see its logs in {cluster.log_location}" if cluster.log_location else "see the cluster's logs"
        ended = cluster.end_report(ENDED_REPORT_TIMEOUT)
        what = f"{what}; {ended}" if ended else what
        return f"job cluster {cluster.cluster_id} ended before job {self.job_id} reported a result: {what} ({logs})"


class DriverOutputFollower:
    """Copies the program's stdout and stderr to ``sink(stream, data)``, each from where the last poll stopped.

    ``offsets`` are logical (see the REST endpoint's ``/jobs/{id}/stdout``): they
    run on over the cluster's rotated files, so every byte still kept is copied
    once, in order. Bytes rotated away before they were read are skipped, and
    ``on_gap(stream, first_lost, resumed_at)`` says which.
    """

    def __init__(self, cluster_client: RestClusterClient, job_id: str, sink: OutputSink, on_gap: OutputGap | None = None) -> None:
        self._cluster_client = cluster_client
        self._job_id = job_id
        self._sink = sink
        self._on_gap = on_gap
        self.offsets = dict.fromkeys(OUTPUT_STREAMS, 0)

    def restart(self) -> None:
        """Follow the streams from their beginning again (a new JobManager attempt writes them anew)."""
        self.offsets = dict.fromkeys(OUTPUT_STREAMS, 0)

    def poll(self) -> None:
        """Read each stream to its current end; ClusterClientError when the cluster cannot be reached."""
        for stream in OUTPUT_STREAMS:
            while True:
                offset = self.offsets[stream]
                chunk = self._cluster_client.job_output(self._job_id, stream, offset)
                if chunk.offset > offset:
                    self.offsets[stream] = chunk.offset
                    if self._on_gap is not None:
                        self._on_gap(stream, offset, chunk.offset)
                # a cluster never starts before the offset asked for; if one did, what we have is not copied again
                data = chunk.data[max(0, offset - chunk.offset) :]
                if not data:
                    break
                self.offsets[stream] += len(data)
                self._sink(stream, data)


def _to_result(result: dict[str, Any], details: dict[str, Any]) -> JobExecutionResult:
    """How the job ended, from Flink's ``job-execution-result`` and the terminal job's ``/jobs/{id}``.

    Flink's result carries the JobID, the runtime and, for a failed job, the
    cause; name, state, restarts and the program's exit code come from the
    job's details, fetched just before (a terminal job's details no longer change).
    """
    failure = result.get("failure-cause")
    return JobExecutionResult(
        job_id=result["id"],
        job_name=details.get("name", ""),
        status=details["state"],
        duration_ms=result.get("net-runtime", 0),
        failure_cause=failure.get("stack-trace") if failure else None,
        restarts=details.get("restarts", 0),
        program_exit_code=details.get("program-exit-code"),
    )
