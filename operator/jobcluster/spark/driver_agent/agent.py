"""The driver agent: what jobcluster does inside the PySpark program's process for its streaming queries.

The program stays unmodified. Before it runs, the agent wraps the few PySpark
methods through which a streaming query comes to be and is waited for:

- ``DataStreamWriter.queryName/option/options`` record the query's name and an
  explicit ``checkpointLocation``, which PySpark keeps only in the JVM;
- ``DataStreamWriter.start/toTable`` restore a named query from the savepoint
  the job starts from (``-s``) into its checkpoint, register the started query,
  and warn about a query that cannot be restored (no name, no location);
- ``StreamingQuery.awaitTermination`` and ``StreamingQueryManager.awaitAnyTermination``
  first refuse a restore that would drop a savepoint's query (unless
  ``--allowNonRestoredState``), and, once the queries were stopped for a
  stop-with-savepoint, hold the program until the savepoint is complete and
  the JobMaster has its path, so that the program's end never cuts it short.

Before a query with a checkpoint location starts, the agent takes that
location's lease for the job's JobMaster (:mod:`checkpoint_lease`) and renews
it from a thread of its own while the program runs; should the lease be lost
(another driver took it, or it could not be renewed), the queries writing
there are stopped and the program fails at its next wait.

A query started through Spark Connect (a program that makes its own Connect
session) runs in a server the agent cannot reach into: its start is refused
when the job restores a savepoint, and a savepoint or a stop with one is
refused while it runs (the job keeps running), never silently incomplete.

The JobMaster reaches the agent through its RPC endpoint (:mod:`endpoint`)
to read the queries' progress and to take, stop with, or dispose of savepoints.
Program threads and the endpoint's worker threads share the query registry
under one lock; every JVM call is blocking and runs off the endpoint's loop.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jobcluster.spark.checkpoints import (
    FILE_SINK_LOG,
    RESTORE_MARKER_FILE,
    SAVEPOINT_METADATA_FILE,
    Cut,
    QuerySavepoint,
    SavepointError,
    SavepointMetadata,
    StopWithSavepointFailed,
    last_batch,
    new_savepoint_name,
    non_restored_state_error,
    overtaken,
    parse_savepoint_metadata,
    plan_savepoint_copy,
    sink_log_batch,
    state_partitions,
    unrestored_queries,
)
from jobcluster.spark.driver_agent.checkpoint_lease import RENEW_INTERVAL, CheckpointLeaseError, CheckpointLeases
from jobcluster.spark.driver_agent.hadoop_files import HadoopFiles, is_file_gone, java_reason
from jobcluster.spark.driver_agent.settings import AgentSettings

log = logging.getLogger(__name__)

#: Seconds a program stays held after its savepoint is complete when the JobMaster never says it has the path.
RESUME_TIMEOUT = 30.0
#: Seconds a savepoint may take when the JobMaster does not say (execution.checkpointing.timeout's default).
DEFAULT_SAVEPOINT_TIMEOUT = 600.0
#: Seconds between looks at a query's status while a stop waits for its micro-batch to end or a drain for its input.
STATUS_POLL = 0.05
#: Spark's default of spark.sql.streaming.minBatchesToRetain (batches and state versions its maintenance keeps).
DEFAULT_MIN_BATCHES_TO_RETAIN = 100
#: Completed micro-batches kept per query for the checkpoint history (Flink's ``web.checkpoints.history`` default).
HISTORY_SIZE = 10
#: What a program that streams through Spark Connect can do instead.
_CONNECT_HINT = (
    "Build the session without Spark Connect (no .remote(...), no spark.api.mode=connect): the job's driver is a classic "
    "PySpark driver, and the same DataFrame program runs unchanged there, with savepoints."
)


@dataclass
class _Query:
    """A query the program started: its PySpark handle, name and checkpoint directory; ``connect``: through Spark Connect."""

    handle: Any
    name: str | None
    checkpoint: str | None
    connect: bool = False
    retain: int = DEFAULT_MIN_BATCHES_TO_RETAIN  # its session's spark.sql.streaming.minBatchesToRetain
    ran: tuple[dict[str, Any], ...] = ()  # progress reports of its last batches that ran, kept past Spark's recentProgress
    state_partitions: int | None = None  # fixed by its checkpoint once it has planned a batch
    lease: str | None = None  # the checkpoint location whose lease the agent holds for it


@dataclass
class _Restore:
    """The savepoint the job starts from, read when the first query starts."""

    path: str
    metadata: SavepointMetadata
    read_at: int  # ms since the epoch: when the first query's start read it (the restore's moment)
    checked: bool = False  # whether the program's queries were held against the savepoint's (before_await)


class DriverAgent:
    """The agent of one attempt of the program, configured by the JobMaster (:class:`AgentSettings`).

    ``files``: how it reaches checkpoints and savepoints, given the program's SparkSession (Hadoop's
    FileSystem in the driver's JVM; the unit tests give one over local paths).
    """

    def __init__(self, settings: AgentSettings, files: Callable[[Any], HadoopFiles] = HadoopFiles) -> None:
        self.settings = settings
        self._make_files = files
        self._lock = threading.Lock()
        self._queries: list[_Query] = []
        self._files: HadoopFiles | None = None
        self._session_root: str | None = None  # the session's spark.sql.streaming.checkpointLocation (the program may set it)
        self._retain = DEFAULT_MIN_BATCHES_TO_RETAIN
        self._shuffle_partitions: str | None = None
        self._restore: _Restore | None = None
        self._savepoint_lock = threading.Lock()  # one savepoint at a time
        self._program_may_go_on = threading.Event()
        self._program_may_go_on.set()
        self._failed_stop: str | None = None  # why a stop-with-savepoint failed after the queries stopped
        self._leases: CheckpointLeases | None = None
        self._lease_lost: CheckpointLeaseError | None = None
        self._renewing = threading.Event()  # set: the renewal thread is to end
        self._renewal: threading.Thread | None = None

    # ---- the program's side (called from the program's threads through the wrapped PySpark methods) ----

    def starting(self, spark: Any, name: str | None, explicit_checkpoint: str | None, file_sink: str | None = None) -> None:
        """Before a query starts: restore it from the job's savepoint if it has one there.

        ``file_sink``: the output path when the query writes through Spark's file sink. SavepointError on a bad
        savepoint, when the query's checkpoint location already holds another run's checkpoint (Spark would resume
        that one instead), or when its file sink's log is past the savepoint (the sink would skip those batches).
        CheckpointLeaseError when another driver holds the location's lease (after waiting up to its LEASE_DURATION).
        """
        with self._lock:
            if self._files is None:
                self._files = self._make_files(spark)
                self._leases = CheckpointLeases(self._files, self.settings.lease_holder or _own_holder(self.settings), self.settings.job_id)
            self._session_root = _session_conf(spark, "spark.sql.streaming.checkpointLocation")
            self._retain = int(_session_conf(spark, "spark.sql.streaming.minBatchesToRetain") or DEFAULT_MIN_BATCHES_TO_RETAIN)
            self._shuffle_partitions = _session_conf(spark, "spark.sql.shuffle.partitions")
        location = self._location(name, explicit_checkpoint)
        restore = self._restore_point()
        if restore is not None and name is not None and name in restore.metadata.queries:
            self._restore_query(restore, name, location, file_sink)
        if location is not None:
            self._hold_lease(self._files_().qualified(location))

    def started(self, handle: Any, name: str | None, explicit_checkpoint: str | None) -> None:
        """A query started: register it; warn when it cannot be found again after a failover or in a savepoint.

        Its checkpoint is recorded only when it can be found again (a name under the
        root, or its own location): savepoints leave the others out.
        """
        location = self._location(name, explicit_checkpoint)
        checkpoint = (_checkpoint_of(handle) or location) if location else None
        lease = self._files.qualified(location) if location and self._files else None  # as starting() leased it
        with self._lock:
            self._queries.append(_Query(handle, name, checkpoint, retain=self._retain, lease=lease))
        if name is None and explicit_checkpoint is None:
            _warn(
                f"streaming query {handle.id} has no name, so its checkpoint ({_checkpoint_of(handle) or 'a temporary directory'}) is "
                "not found again: after a failover it starts over, and a stop with a savepoint is refused while it runs. Name it "
                "with .queryName(...): the name is its id in checkpoints and savepoints (Flink's operator uid)."
            )
        elif location is None:
            _warn(
                f"streaming query {name!r} checkpoints in a temporary directory: execution.checkpointing.dir is not set, so it "
                "starts over after a failover and savepoints leave it out. Set it (-D execution.checkpointing.dir=URI)."
            )

    def starting_through_connect(self, name: str | None) -> None:
        """Before a query starts through Spark Connect: SavepointError when the job restores a savepoint (it cannot be applied)."""
        path = self.settings.restore_path
        if path is not None:
            raise SavepointError(
                f"cannot restore streaming query {name or '(unnamed)'} from savepoint {path}: it starts through Spark Connect, "
                f"whose server keeps its checkpoint out of jobcluster's reach. {_CONNECT_HINT}"
            )

    def started_through_connect(self, handle: Any, name: str | None) -> None:
        """A query started through Spark Connect: registered for its progress; savepoints refuse it (:meth:`savepoint`)."""
        with self._lock:
            self._queries.append(_Query(handle, name, None, connect=True))
        _warn(
            f"streaming query {name or handle.id} runs through Spark Connect: jobcluster cannot take its savepoints or stop it "
            f"with one (the job can still be cancelled). {_CONNECT_HINT}"
        )

    def before_await(self) -> None:
        """The program waits for its queries: it has started all it will. Refuse a restore that drops a savepoint's query.

        The refusal is :class:`NonRestoredStateError`: the JobMaster does not restart a program that ends with it.
        """
        restore = self._restore
        if restore is None or restore.checked:
            return
        restore.checked = True
        missing = unrestored_queries(restore.metadata, [q.name for q in self._snapshot() if q.name])
        if not missing:
            return
        if self.settings.allow_non_restored_state:
            _warn(f"state of {', '.join(map(repr, missing))} in savepoint {restore.path} is not restored (--allowNonRestoredState)")
            return
        for query in self._snapshot():
            query.handle.stop()
        raise NonRestoredStateError(non_restored_state_error(restore.path, missing))

    def after_await(self) -> None:
        """A wait of the program ended: while a stop-with-savepoint is under way, hold the program until it is done.

        StopWithSavepointFailed when it failed after the queries stopped: the program fails, and the JobMaster
        restarts it from the queries' checkpoints (Flink's failover after a failed stop-with-savepoint).
        """
        self._program_may_go_on.wait()
        if self._failed_stop is not None:
            raise StopWithSavepointFailed(self._failed_stop)
        if self._lease_lost is not None:
            raise self._lease_lost

    def release_leases(self) -> None:
        """The program ended: end the renewals and give the leases up, so that the next driver takes them at once."""
        self._renewing.set()
        if self._renewal is not None:
            self._renewal.join(timeout=RENEW_INTERVAL * 2)
        if self._leases is not None:
            self._leases.release()

    # ---- the JobMaster's side (called from the endpoint's worker threads) ----

    def query_views(self) -> list[dict[str, Any]]:
        """Every query the program started, with its progress (see :func:`query_view`)."""
        return [self._view(q) for q in self._snapshot()]

    def restore_view(self) -> dict[str, Any] | None:
        """The savepoint this attempt restored once its first query started: ``{"path", "parallelism", "restoredAt"}``
        (``parallelism`` the one the savepoint recorded, None when it did not; ``restoredAt`` ms since the epoch);
        None before, and in a job that restores none."""
        restore = self._restore
        if restore is None:
            return None
        return {"path": restore.path, "parallelism": restore.metadata.parallelism, "restoredAt": restore.read_at}

    def savepoint(self, target_directory: str, stop: bool, drain: bool, time_limit: float = DEFAULT_SAVEPOINT_TIMEOUT) -> dict[str, Any]:
        """Take a savepoint into ``target_directory`` within ``time_limit`` seconds; with ``stop``, stop the queries first.

        ``drain``: before the stop, the queries process the input available at the request. Returns
        ``{"location": URI, "queries": {name: committed batch id}, "skipped": [unnamed query ids],
        "replays": {name: batch id}}`` (``replays``: a batch a stop interrupted, which a restore runs again).
        A savepoint is complete or does not exist: a failure removes what was copied.

        Raises SavepointError with nothing stopped (the job runs on) when the program runs no streaming
        query, one through Spark Connect, another savepoint, an unnamed query (a stop), when the target
        cannot be written, or when the drain does not end in time; StopWithSavepointFailed when it fails
        after the queries stopped (the program is then failed at its next wait, :meth:`after_await`).
        With ``stop`` the program is held at its next wait until :meth:`resume_program`
        (at most RESUME_TIMEOUT seconds after this returns).
        """
        deadline = time.monotonic() + time_limit
        queries = self._savepoint_queries(stop)
        if not self._savepoint_lock.acquire(blocking=False):
            raise SavepointError(f"Job {self.settings.job_id} is already taking a savepoint; try again once it is complete.")
        try:
            return self._savepoint(queries, target_directory, stop, drain, deadline)
        finally:
            self._savepoint_lock.release()

    def resume_program(self) -> None:
        """Let the program go on after a stop-with-savepoint (the JobMaster has its outcome)."""
        self._program_may_go_on.set()

    def dispose_savepoint(self, path: str) -> None:
        """Delete the savepoint at ``path``; SavepointError when it is not a savepoint (nothing is deleted then)."""
        files = self._files_()
        _read_metadata(files, path)
        files.delete(path)

    # ---- internals: savepoints ----

    def _savepoint_queries(self, stop: bool) -> list[_Query]:
        """The queries a savepoint covers; SavepointError when it cannot be taken (nothing is stopped then)."""
        queries = self._snapshot()
        job = self.settings.job_id
        if not queries:
            raise SavepointError(f"Job {job} is not a streaming job: its program has started no streaming query.")
        through_connect = [q.name or str(q.handle.id) for q in queries if q.connect]
        if through_connect:
            raise SavepointError(
                f"Job {job} runs the streaming quer{'y' if len(through_connect) == 1 else 'ies'} "
                f"{', '.join(through_connect)} through Spark Connect, which jobcluster cannot take a savepoint of. {_CONNECT_HINT}"
            )
        unnamed = [str(q.handle.id) for q in queries if q.handle.isActive and (q.name is None or q.checkpoint is None)]
        if stop and unnamed:  # its state would end with the job, in no savepoint
            raise SavepointError(
                f"Job {job} runs the streaming quer{'y' if len(unnamed) == 1 else 'ies'} {', '.join(unnamed)} without a name or "
                "checkpoint, which a savepoint cannot hold: stopping the job with one would lose that state. Name each query "
                "(.queryName(...)) with execution.checkpointing.dir set, or cancel the job (jobcluster cancel) to drop it."
            )
        return queries

    def _savepoint(self, queries: list[_Query], target_directory: str, stop: bool, drain: bool, deadline: float) -> dict[str, Any]:
        files = self._files_()
        location = files.qualified(f"{target_directory.rstrip('/')}/{new_savepoint_name(self.settings.job_id)}")
        try:
            files.mkdirs(location)
        except Exception as exc:
            raise SavepointError(f"cannot create the savepoint directory {location}: {java_reason(exc)}") from exc
        started = time.monotonic()
        stopped = False
        if stop:
            self._program_may_go_on.clear()
        try:
            if stop:
                if drain:
                    _drain(queries, deadline)
                stopped = True
                _stop_gracefully(queries, deadline)
            result = self._write_savepoint(files, location, queries, stop, deadline)
        except BaseException as exc:
            _discard(files, location)
            if not stopped:
                self._program_may_go_on.set()
                raise
            self._failed_stop = (
                f"the stop-with-savepoint of job {self.settings.job_id} failed after its streaming queries stopped: "
                f"{_reason(exc)}. No savepoint was written; the program restarts from the queries' checkpoints."
            )
            raise StopWithSavepointFailed(self._failed_stop) from exc
        finally:
            if stopped:  # should the JobMaster never say it has the outcome, the program still goes on
                timer = threading.Timer(RESUME_TIMEOUT, self._program_may_go_on.set)
                timer.daemon = True
                timer.start()
        log.info("savepoint %s complete in %.1f s: %s", location, time.monotonic() - started, result["queries"])
        return result

    def _write_savepoint(self, files: HadoopFiles, location: str, queries: list[_Query], stop: bool, deadline: float) -> dict[str, Any]:
        saved: dict[str, QuerySavepoint] = {}
        skipped, replays = [], {}
        for query in queries:
            if query.name is None or query.checkpoint is None:  # an unnamed query cannot be restored by name
                skipped.append(str(query.handle.id))
                continue
            cut = _copy_cut(files, query, f"{location}/{query.name}", deadline)
            saved[query.name] = QuerySavepoint(committed_batch_id=cut.committed, planned_batch_id=cut.planned, source=query.checkpoint)
            if stop and cut.planned is not None and cut.planned != cut.committed:
                replays[query.name] = cut.planned
                _warn(
                    f"the stop interrupted micro-batch {cut.planned} of query {query.name!r}: a restore from this savepoint runs it "
                    "again with the same offsets (a sink that is not idempotent by batch id writes its output twice)"
                )
        metadata = SavepointMetadata(
            job_id=self.settings.job_id,
            job_name=self.settings.job_name,
            created=int(time.time() * 1000),
            stopped=stop,
            parallelism=self.settings.parallelism,
            queries=saved,
        )
        files.write_text_atomically(f"{location}/{SAVEPOINT_METADATA_FILE}", metadata.to_json())
        committed = {n: q.committed_batch_id for n, q in saved.items()}
        return {"location": location, "queries": committed, "skipped": skipped, "replays": replays}

    # ---- internals: restores ----

    def _restore_query(self, restore: _Restore, name: str, location: str | None, file_sink: str | None) -> None:
        """Restore query ``name`` from the job's savepoint into its checkpoint ``location`` (see :meth:`starting`)."""
        if location is None:
            raise SavepointError(
                f"cannot restore query {name!r} from savepoint {restore.path}: it has no checkpoint location "
                "(set execution.checkpointing.dir, or give the query a checkpointLocation)"
            )
        if file_sink is not None:
            self._check_file_sink(restore, name, file_sink)
        self._restore_into(restore.path, name, location)
        if not restore.metadata.stopped:
            _warn(
                f"savepoint {restore.path} was taken while its job ran on: query {name!r} writes again what came after it "
                "(sinks that skip batch ids they hold, such as Delta, skip it instead: restore those into a new output)"
            )

    def _restore_into(self, savepoint: str, name: str, location: str) -> None:
        """Copy query ``name`` of ``savepoint`` to ``location`` whole or not at all: into a sibling, then renamed into place.

        A location that exists is this job's restore of an earlier attempt (it names the savepoint in its
        marker file: the query resumes its own checkpoint), or another run's checkpoint: SavepointError.
        """
        files = self._files_()
        marker = f"{location}/{RESTORE_MARKER_FILE}"
        if files.exists(location):
            if files.exists(marker) and files.read_text(marker).strip() == savepoint:
                log.info("query %s resumes from its checkpoint %s (restored from savepoint %s before)", name, location, savepoint)
                return
            raise SavepointError(
                f"cannot restore query {name!r} from savepoint {savepoint}: its checkpoint location {location} already holds a "
                "checkpoint, which Spark would resume instead of the savepoint. Give the query a new checkpointLocation, or "
                f"delete {location}."
            )
        parent, _, base = location.rstrip("/").rpartition("/")
        for stale in files.names(parent):  # an earlier attempt's copy that never finished
            if stale.startswith(f"{base}.restoring-"):
                files.delete(f"{parent}/{stale}")
        staging = f"{location}.restoring-{secrets.token_hex(4)}"
        files.copy(f"{savepoint}/{name}", staging)
        files.write_text_atomically(f"{staging}/{RESTORE_MARKER_FILE}", savepoint)
        files.rename(staging, location)
        log.info("query %s restored from savepoint %s into %s", name, savepoint, location)
        partitions = self._state_partitions(location)
        if partitions is not None and str(partitions) != (self._shuffle_partitions or str(partitions)):
            _warn(
                f"query {name!r} keeps the {partitions} state partitions of its first run (Spark fixes "
                f"spark.sql.shuffle.partitions in its checkpoint): its stateful stages run {partitions} tasks, whatever this "
                f"job's parallelism (here spark.sql.shuffle.partitions={self._shuffle_partitions})"
            )

    def _check_file_sink(self, restore: _Restore, name: str, output: str) -> None:
        """Refuse a restore whose file sink already logged batches past the savepoint: Spark's ``FileStreamSink`` skips
        a batch id its log (``<output>/_spark_metadata``) holds, so the restored query's batches would be lost."""
        saved = restore.metadata.queries[name]
        last = saved.planned_batch_id if saved.planned_batch_id is not None else saved.committed_batch_id
        logged = sink_log_batch(self._files_().names(f"{output}/{FILE_SINK_LOG}"))
        if logged is not None and logged > (-1 if last is None else last):
            raise SavepointError(
                f"cannot restore query {name!r} from savepoint {restore.path} into its file sink {output}: the sink's log "
                f"({FILE_SINK_LOG}) already holds batches up to {logged}, past the savepoint's {last}, and Spark's file sink "
                "skips a batch id it holds, so the restored batches would be lost. Restore into a new output path (the "
                "savepoint is older than this output: it was taken while the job ran on, or the output is another job's)."
            )

    # ---- internals: leases ----

    def _hold_lease(self, location: str) -> None:
        assert self._leases is not None
        self._leases.acquire(location)
        with self._lock:
            if self._renewal is None:
                self._renewal = threading.Thread(target=self._renew_leases, name="jobcluster-checkpoint-lease", daemon=True)
                self._renewal.start()

    def _renew_leases(self) -> None:
        while not self._renewing.wait(RENEW_INTERVAL):
            self._renew_leases_once()

    def _renew_leases_once(self) -> None:
        assert self._leases is not None
        for location, lost in self._leases.renew().items():
            self._fence(location, lost)

    def _fence(self, location: str, lost: CheckpointLeaseError) -> None:
        """The lease on ``location`` is lost: stop the queries that write there, and fail the program at its next wait."""
        fenced = [q for q in self._snapshot() if q.lease == location]
        log.error("%s: stopping %s", lost, ", ".join(q.name or str(q.handle.id) for q in fenced) or "no query")
        self._lease_lost = CheckpointLeaseError(f"{lost}. Its streaming queries were stopped.", lost.restartable)
        for query in fenced:
            try:
                query.handle.stop()
            except Exception as exc:  # noqa: BLE001 - a query that fails to stop has stopped writing too
                log.warning("query %s did not stop cleanly: %s", query.name, exc)

    # ---- internals ----

    def _location(self, name: str | None, explicit_checkpoint: str | None) -> str | None:
        """Where a query checkpoints: its own location, else ``<root>/<name>`` (the session's root, which the program may
        have set itself, else the job's); None when neither is known."""
        if explicit_checkpoint:
            return explicit_checkpoint
        root = self._session_root or self.settings.checkpoint_root
        return f"{root.rstrip('/')}/{name}" if name and root else None

    def _snapshot(self) -> list[_Query]:
        with self._lock:
            return list(self._queries)

    def _files_(self) -> HadoopFiles:
        if self._files is None:
            raise SavepointError("the program has not started a streaming query yet")
        return self._files

    def _restore_point(self) -> _Restore | None:
        path = self.settings.restore_path
        if path is None:
            return None
        with self._lock:
            if self._restore is None:
                self._restore = _Restore(path, _read_metadata(self._files_(), path), int(time.time() * 1000))
            return self._restore

    def _view(self, query: _Query) -> dict[str, Any]:
        """The query's view; the batches that ran are kept here, as an idle query's no-data reports push them out of Spark's."""
        progress = _progress_since(query.handle, query.ran[-1]["batchId"] if query.ran else -1)
        query.ran = _ran(query.ran, progress)
        if query.state_partitions is None and query.checkpoint is not None and query.ran:
            query.state_partitions = self._state_partitions(query.checkpoint)
        return query_view(query.handle, query.name, query.checkpoint, progress, query.ran) | {"statePartitions": query.state_partitions}

    def _state_partitions(self, checkpoint: str) -> int | None:
        """The state partitions of the checkpoint at ``checkpoint`` (see :func:`state_partitions`); None before its first batch."""
        files = self._files_()
        batch = last_batch(files.names(f"{checkpoint}/offsets"))
        if batch is None:
            return None
        try:
            return state_partitions(files.read_text(f"{checkpoint}/offsets/{batch}"))
        except Exception:  # noqa: BLE001 - purged meanwhile by Spark's maintenance: asked again at the next view
            return None


class NonRestoredStateError(SavepointError):
    """A restore would drop a savepoint's query: the program fails, and is not restarted (it cannot pass on a retry)."""


def _session_conf(spark: Any, key: str) -> str | None:
    """A setting of the program's SparkSession; None when unset (or no session: the unit tests')."""
    try:
        value = spark.conf.get(key, None)
    except Exception:  # noqa: BLE001 - no session to ask (None) or one that cannot answer: the job's settings apply
        return None
    return str(value) if value else None


def _copy_cut(files: HadoopFiles, query: _Query, target: str, deadline: float) -> Cut:
    """Copy a query's checkpoint to ``target`` as Spark's recovery image (see :func:`plan_savepoint_copy`); returns the cut.

    A running query goes on meanwhile, and Spark's maintenance deletes what it no
    longer keeps: a file it removed is missed only when the restore does not need
    it and, where state versions share files (RocksDB), the query did not get
    ``minBatchesToRetain`` batches past the cut (then a shared file the cut needs
    may be gone unnoticed). Otherwise the copy is taken again at a newer cut,
    until ``deadline``: SavepointError then.
    """
    assert query.checkpoint is not None
    checkpoint = query.checkpoint
    while True:
        planned = last_batch(files.names(f"{checkpoint}/offsets"))  # read before the commit: both then describe one moment
        committed = last_batch(files.names(f"{checkpoint}/commits"))
        cut = Cut(planned, None if committed is None or planned is None else min(committed, planned))
        plan = plan_savepoint_copy(files.files(checkpoint), cut)
        missing = []
        for relative in plan.files:
            if time.monotonic() > deadline:
                raise SavepointError(
                    f"the copy of query {query.name!r} did not end within the savepoint's timeout (execution.checkpointing.timeout)"
                )
            try:
                files.copy(f"{checkpoint}/{relative}", f"{target}/{relative}")
            except Exception as exc:
                if not is_file_gone(exc):
                    raise
                if relative in plan.required:
                    missing.append(relative)
        advanced = plan.shared and overtaken(cut, last_batch(files.names(f"{checkpoint}/offsets")), query.retain)
        if not missing and not advanced:
            return cut
        why = f"{', '.join(missing)} went missing" if missing else "Spark's maintenance may have deleted what the copy needs"
        if not query.handle.isActive and missing:  # nothing runs that could have raced the copy: the checkpoint lacks them
            raise SavepointError(f"the checkpoint {checkpoint} of query {query.name!r} cannot be restored: {why}")
        log.warning(
            "query %s went past the savepoint's cut at batch %s during the copy (%s); copying again", query.name, cut.committed, why
        )
        files.delete(target)
        if time.monotonic() > deadline:
            raise SavepointError(
                f"query {query.name!r} ran ahead of every copy of its checkpoint within the timeout ({why}): raise "
                "spark.sql.streaming.minBatchesToRetain, or execution.checkpointing.timeout"
            )


def _discard(files: HadoopFiles, location: str) -> None:
    """Remove what a failed savepoint copied (Flink discards a failed savepoint): a savepoint is whole or absent."""
    try:
        files.delete(location)
    except Exception as exc:  # noqa: BLE001 - the failure being reported matters more; the leftover has no _metadata
        log.warning("could not remove the failed savepoint's directory %s: %s", location, exc)


def _reason(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, SavepointError) else java_reason(exc)


def _read_metadata(files: HadoopFiles, path: str) -> SavepointMetadata:
    metadata = f"{path.rstrip('/')}/{SAVEPOINT_METADATA_FILE}"
    if not files.exists(path):
        raise SavepointError(f"savepoint {path} does not exist")
    if not files.exists(metadata):
        raise SavepointError(f"{path} is not a savepoint: it has no {SAVEPOINT_METADATA_FILE} file")
    return parse_savepoint_metadata(files.read_text(metadata), path)


def _stop_gracefully(queries: list[_Query], deadline: float) -> None:
    """Stop each active query once the micro-batch it runs at the request has committed: Spark's stop() interrupts one.

    A query between two micro-batches is stopped at once. Otherwise the stop waits
    until that batch's progress is reported (at most half the time left), and then
    stops the query whatever it does: a batch that began meanwhile (back-to-back
    triggers leave no gap to wait for) is interrupted, and the cut keeps its offsets.
    """
    for query in queries:
        handle = query.handle
        if not handle.isActive:
            continue
        running = _last_batch_id(handle)
        wait_until = time.monotonic() + max(0.0, deadline - time.monotonic()) / 2
        while handle.status.get("isTriggerActive") and _last_batch_id(handle) == running and time.monotonic() < wait_until:
            time.sleep(STATUS_POLL)
        handle.stop()


def _last_batch_id(handle: Any) -> int | None:
    progress = handle.lastProgress
    return None if not progress else progress.get("batchId")


def _drain(queries: list[_Query], deadline: float) -> None:
    """Until every active query processed the input its sources had at the request; SavepointError (nothing stopped) at the deadline.

    The input available at the request is each source's ``latestOffset`` in the
    first progress report of a trigger that began after it; the drain is over
    when a committed micro-batch's ``endOffset`` reached it, or when a trigger
    after the request found no new data.
    """
    requested = time.time()
    pending = {id(q): q for q in queries if q.handle.isActive}
    targets: dict[int, list[Any] | None] = {}
    while pending:
        for key, query in list(pending.items()):
            if _drained(query.handle, requested, targets, key):
                del pending[key]
        if not pending:
            return
        if time.monotonic() > deadline:
            names = ", ".join(repr(q.name or str(q.handle.id)) for q in pending.values())
            raise SavepointError(
                f"--drain: {names} did not process the input available at the request within the savepoint's timeout "
                "(execution.checkpointing.timeout); nothing was stopped, the job runs on"
            )
        time.sleep(STATUS_POLL * 10)


def _drained(handle: Any, requested: float, targets: dict[int, list[Any] | None], key: int) -> bool:
    after = [p for p in handle.recentProgress if (_epoch_ms(p.get("timestamp")) or 0) >= int(requested * 1000)]
    if not after:
        return not handle.isActive
    if key not in targets:
        targets[key] = [s.get("latestOffset") for s in after[0].get("sources") or []]
    target = targets[key]
    for progress in after:
        ran = "addBatch" in progress.get("durationMs", {})
        if not ran and not int(_number(progress.get("numInputRows"))):
            return True  # a trigger after the request found nothing new
        ends = [s.get("endOffset") for s in progress.get("sources") or []]
        if ran and target and all(t is not None and _offset_reached(e, t) for e, t in zip(ends, target, strict=False)):
            return True
    return False


def _offset_reached(end: Any, target: Any) -> bool:
    """Whether a source's end offset (as a progress report gives it: JSON text or parsed) is at or past ``target``.

    Offsets are compared field by field (Kafka's ``{topic: {partition: offset}}``,
    the file source's ``{"logOffset": n}``, numbers); other values must be equal.
    """
    end, target = _parsed(end), _parsed(target)
    if isinstance(target, dict):
        return isinstance(end, dict) and all(_offset_reached(end.get(k), v) for k, v in target.items())
    if isinstance(target, int | float) and isinstance(end, int | float):
        return end >= target
    return bool(end == target)


def _parsed(offset: Any) -> Any:
    if isinstance(offset, str):
        try:
            return json.loads(offset)
        except ValueError:
            return offset
    return offset


def _own_holder(settings: AgentSettings) -> str:
    """A lease holder's name for an agent its JobMaster gave none (each attempt then its own)."""
    return f"{settings.job_id}-{socket.gethostname()}-{os.getpid()}"


def _checkpoint_of(handle: Any) -> str | None:
    """The checkpoint directory Spark resolved for a started query (the JVM's StreamExecution knows it, PySpark does not say)."""
    try:
        return str(handle._jsq.streamingQuery().resolvedCheckpointRoot())
    except Exception:  # noqa: BLE001 - a PySpark without this internal: the location the program gave is used instead
        return None


def _warn(message: str) -> None:
    """A warning the user reads with the program's own output (its stderr), and in the driver's log."""
    print(f"jobcluster: WARNING: {message}", file=sys.stderr, flush=True)
    log.warning("%s", message)


def _epoch_ms(timestamp: str | None) -> int | None:
    if not timestamp:
        return None
    return int(datetime.fromisoformat(timestamp).timestamp() * 1000)


def _state(progress: dict[str, Any], key: str) -> int:
    return sum(int(_number(op.get(key))) for op in progress.get("stateOperators") or [])


def _number(value: Any) -> float:
    """A figure of a progress report; 0 where it has none: PySpark 4's reports hold None (Spark Connect's) or NaN for one."""
    return 0.0 if value is None or value != value else float(value)


def _progress_since(handle: Any, newest: int) -> list[dict[str, Any]]:
    """The query's progress reports of batches after ``newest``, and its last report, oldest first.

    Read from the end of Spark's list (``spark.sql.streaming.numRecentProgressUpdates``, 100 by default), one
    report per py4j call: PySpark's ``recentProgress`` converts every one of them, and the JobMaster asks every
    ``web.refresh-interval``, which a busy driver would pay for on every poll. Without the JVM's handle (Spark Connect): PySpark's.
    """
    jsq = getattr(handle, "_jsq", None)
    if jsq is None:
        return list(handle.recentProgress)
    reports = jsq.recentProgress()
    found: list[dict[str, Any]] = []
    for index in range(len(reports) - 1, -1, -1):
        report = json.loads(reports[index].json())
        # an idle trigger reports the id of the batch it did not run: nothing before it ran past ``newest`` then
        ran = "addBatch" in report.get("durationMs", {})
        if found and report.get("batchId", -1) - (0 if ran else 1) <= newest:
            break
        found.append(report)
    return found[::-1]


def _ran(before: tuple[dict[str, Any], ...], progress: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The last HISTORY_SIZE progress reports of batches that ran (``durationMs.addBatch``): ``before``'s, then newer ones."""
    newest = before[-1]["batchId"] if before else -1
    return (*before, *(p for p in progress if "addBatch" in p.get("durationMs", {}) and p["batchId"] > newest))[-HISTORY_SIZE:]


def query_view(
    handle: Any,
    name: str | None,
    checkpoint: str | None,
    progress: list[dict[str, Any]] | None = None,
    ran: tuple[dict[str, Any], ...] | None = None,
) -> dict[str, Any]:
    """A query as the JobMaster shows it: ids, state, last and last committed micro-batch, rates, state size, history.

    Rates in rows per second, sizes in bytes, times in ms since the epoch. A
    micro-batch that ran (its progress has ``durationMs.addBatch``) is committed
    when its progress is reported; ``history`` holds the last HISTORY_SIZE of those.
    ``progress``: the query's recent reports (default: ``handle.recentProgress``); ``ran``: its reports of
    batches that ran (default: those among ``progress``).
    """
    progress = handle.recentProgress if progress is None else progress
    ran = _ran((), progress) if ran is None else ran
    last = progress[-1] if progress else {}
    committed = ran[-1] if ran else None
    exception = handle.exception() if not handle.isActive else None
    return {
        "name": name,
        "id": str(handle.id),
        "runId": str(handle.runId),
        "active": bool(handle.isActive),
        "batchId": last.get("batchId"),
        "committedBatchId": committed["batchId"] if committed else None,
        "inputRowsPerSecond": _number(last.get("inputRowsPerSecond")),
        "processedRowsPerSecond": _number(last.get("processedRowsPerSecond")),
        "numInputRows": int(_number(last.get("numInputRows"))),
        "stateRows": _state(last, "numRowsTotal"),
        "stateBytes": _state(last, "memoryUsedBytes"),
        "lastProgressTime": _epoch_ms(last.get("timestamp")),
        "lastCommitTime": _commit_time(committed),
        "checkpoint": checkpoint,
        "exception": str(exception) if exception is not None else None,
        "history": [_history_entry(p) for p in ran],
    }


def _commit_time(progress: dict[str, Any] | None) -> int | None:
    if progress is None:
        return None
    start = _epoch_ms(progress.get("timestamp"))
    return None if start is None else start + int(_number(progress["durationMs"].get("triggerExecution")))


def _history_entry(progress: dict[str, Any]) -> dict[str, Any]:
    return {
        "batchId": progress["batchId"],
        "triggerTime": _epoch_ms(progress.get("timestamp")),
        "durationMs": int(_number(progress["durationMs"].get("triggerExecution"))),
        "numInputRows": int(_number(progress.get("numInputRows"))),
        "stateBytes": _state(progress, "memoryUsedBytes"),
    }
