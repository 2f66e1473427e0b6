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

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jobcluster.spark.checkpoints import (
    SAVEPOINT_METADATA_FILE,
    QuerySavepoint,
    SavepointError,
    SavepointMetadata,
    committed_batch,
    keep_in_savepoint,
    new_savepoint_name,
    non_restored_state_error,
    parse_savepoint_metadata,
    unrestored_queries,
)
from jobcluster.spark.driver_agent.hadoop_files import HadoopFiles, is_file_gone
from jobcluster.spark.driver_agent.settings import AgentSettings

log = logging.getLogger(__name__)

#: Seconds a program stays held after its savepoint is complete when the JobMaster never says it has the path.
RESUME_TIMEOUT = 30.0
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


@dataclass
class _Restore:
    """The savepoint the job starts from, read when the first query starts."""

    path: str
    metadata: SavepointMetadata
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
        self._restore: _Restore | None = None
        self._savepoint_lock = threading.Lock()  # one savepoint at a time
        self._program_may_go_on = threading.Event()
        self._program_may_go_on.set()

    # ---- the program's side (called from the program's threads through the wrapped PySpark methods) ----

    def starting(self, spark: Any, name: str | None, explicit_checkpoint: str | None) -> None:
        """Before a query starts: restore it from the job's savepoint if it has one there. SavepointError on a bad savepoint."""
        with self._lock:
            if self._files is None:
                self._files = self._make_files(spark)
        location = self._location(name, explicit_checkpoint)
        restore = self._restore_point()
        if restore is None or name is None or name not in restore.metadata.queries:
            return
        if location is None:
            raise SavepointError(
                f"cannot restore query {name!r} from savepoint {restore.path}: it has no checkpoint location "
                "(set execution.checkpointing.dir, or give the query a checkpointLocation)"
            )
        if self._has_progress(location):
            log.info("query %s resumes from its checkpoint %s (restored from the savepoint before)", name, location)
        else:
            self._files_().copy(f"{restore.path}/{name}", location)
            log.info("query %s restored from savepoint %s into %s", name, restore.path, location)

    def started(self, handle: Any, name: str | None, explicit_checkpoint: str | None) -> None:
        """A query started: register it; warn when it cannot be found again after a failover or in a savepoint.

        Its checkpoint is recorded only when it can be found again (a name under the
        root, or its own location): savepoints leave the others out.
        """
        location = self._location(name, explicit_checkpoint)
        checkpoint = (_checkpoint_of(handle) or location) if location else None
        with self._lock:
            self._queries.append(_Query(handle, name, checkpoint))
        if name is None and explicit_checkpoint is None:
            _warn(
                f"streaming query {handle.id} has no name, so its checkpoint ({_checkpoint_of(handle) or 'a temporary directory'}) is "
                "not found again: after a failover it starts over, and savepoints leave it out. Name it with .queryName(...): "
                "the name is its id in checkpoints and savepoints (Flink's operator uid)."
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
        """The program waits for its queries: it has started all it will. Refuse a restore that drops a savepoint's query."""
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
        raise SavepointError(non_restored_state_error(restore.path, missing))

    def after_await(self) -> None:
        """A wait of the program ended: while a stop-with-savepoint is under way, hold the program until it is done."""
        self._program_may_go_on.wait()

    # ---- the JobMaster's side (called from the endpoint's worker threads) ----

    def query_views(self) -> list[dict[str, Any]]:
        """Every query the program started, with its progress (see :func:`query_view`)."""
        return [query_view(q.handle, q.name, q.checkpoint) for q in self._snapshot()]

    def savepoint(self, target_directory: str, stop: bool, drain: bool) -> dict[str, Any]:
        """Take a savepoint into ``target_directory``; with ``stop``, stop the queries first (after ``drain``: all available input).

        Returns ``{"location": URI, "queries": {name: committed batch id}, "skipped": [unnamed query ids]}``.
        With ``stop`` the program is held at its next wait until :meth:`resume_program`
        (at most RESUME_TIMEOUT seconds after this returns). SavepointError when the
        program runs no streaming query.
        """
        queries = self._snapshot()
        if not queries:
            raise SavepointError(f"Job {self.settings.job_id} is not a streaming job: its program has started no streaming query.")
        through_connect = [q.name or str(q.handle.id) for q in queries if q.connect]
        if through_connect:  # refused before anything stops: the job keeps running
            raise SavepointError(
                f"Job {self.settings.job_id} runs the streaming quer{'y' if len(through_connect) == 1 else 'ies'} "
                f"{', '.join(through_connect)} through Spark Connect, which jobcluster cannot take a savepoint of. {_CONNECT_HINT}"
            )
        with self._savepoint_lock:
            if stop:
                self._program_may_go_on.clear()
            try:
                if stop:
                    _stop_all(queries, drain)
                result = self._write_savepoint(target_directory, queries)
            except BaseException:
                self._program_may_go_on.set()
                raise
        if stop:  # should the JobMaster never say it has the path, the program still ends
            timer = threading.Timer(RESUME_TIMEOUT, self._program_may_go_on.set)
            timer.daemon = True
            timer.start()
        return result

    def resume_program(self) -> None:
        """Let the program go on after a stop-with-savepoint (the JobMaster has the savepoint's path)."""
        self._program_may_go_on.set()

    def dispose_savepoint(self, path: str) -> None:
        """Delete the savepoint at ``path``; SavepointError when it is not a savepoint (nothing is deleted then)."""
        files = self._files_()
        _read_metadata(files, path)
        files.delete(path)

    # ---- internals ----

    def _location(self, name: str | None, explicit_checkpoint: str | None) -> str | None:
        """Where a query checkpoints: its own location, else ``<root>/<name>``; None when neither is known."""
        if explicit_checkpoint:
            return explicit_checkpoint
        root = self.settings.checkpoint_root
        return f"{root}/{name}" if name and root else None

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
                self._restore = _Restore(path, _read_metadata(self._files_(), path))
            return self._restore

    def _has_progress(self, checkpoint: str) -> bool:
        return bool(self._files_().names(f"{checkpoint}/offsets"))

    def _write_savepoint(self, target_directory: str, queries: list[_Query]) -> dict[str, Any]:
        files = self._files_()
        location = files.qualified(f"{target_directory.rstrip('/')}/{new_savepoint_name(self.settings.job_id)}")
        started = time.monotonic()
        saved: dict[str, QuerySavepoint] = {}
        skipped = []
        for query in queries:
            if query.name is None or query.checkpoint is None:  # an unnamed query cannot be restored by name
                skipped.append(str(query.handle.id))
                continue
            committed = _copy_cut(files, query.checkpoint, f"{location}/{query.name}")
            saved[query.name] = QuerySavepoint(committed_batch_id=committed, source=query.checkpoint)
        metadata = SavepointMetadata(
            job_id=self.settings.job_id, job_name=self.settings.job_name, created=int(time.time() * 1000), queries=saved
        )
        files.write_text(f"{location}/{SAVEPOINT_METADATA_FILE}", metadata.to_json())
        log.info("savepoint %s complete in %.1f s: %s", location, time.monotonic() - started, metadata.queries)
        return {"location": location, "queries": {n: q.committed_batch_id for n, q in saved.items()}, "skipped": skipped}


def _copy_cut(files: HadoopFiles, checkpoint: str, target: str) -> int | None:
    """Copy a query's checkpoint to ``target`` cut at its last committed batch (read first); returns that batch id.

    A running query only adds files after the commit that was read, or removes
    old ones (maintenance): a file gone by the time it is copied was not needed.
    """
    committed = committed_batch(files.names(f"{checkpoint}/commits"))
    for relative in files.files(checkpoint):
        if not keep_in_savepoint(relative, committed):
            continue
        try:
            files.copy(f"{checkpoint}/{relative}", f"{target}/{relative}")
        except Exception as exc:
            if not is_file_gone(exc):
                raise
    return committed


def _read_metadata(files: HadoopFiles, path: str) -> SavepointMetadata:
    metadata = f"{path.rstrip('/')}/{SAVEPOINT_METADATA_FILE}"
    if not files.exists(path):
        raise SavepointError(f"savepoint {path} does not exist")
    if not files.exists(metadata):
        raise SavepointError(f"{path} is not a savepoint: it has no {SAVEPOINT_METADATA_FILE} file")
    return parse_savepoint_metadata(files.read_text(metadata), path)


def _stop_all(queries: list[_Query], drain: bool) -> None:
    for query in queries:
        if not query.handle.isActive:
            continue
        if drain:
            query.handle.processAllAvailable()
        query.handle.stop()


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


def query_view(handle: Any, name: str | None, checkpoint: str | None) -> dict[str, Any]:
    """A query as the JobMaster shows it: ids, state, last and last committed micro-batch, rates, state size, history.

    Rates in rows per second, sizes in bytes, times in ms since the epoch. A
    micro-batch that ran (its progress has ``durationMs.addBatch``) is committed
    when its progress is reported; ``history`` holds the last HISTORY_SIZE of those.
    """
    progress: list[dict[str, Any]] = handle.recentProgress
    ran = [p for p in progress if "addBatch" in p.get("durationMs", {})]
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
        "history": [_history_entry(p) for p in ran[-HISTORY_SIZE:]],
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
