"""Flink's checkpoints and savepoints, laid onto Spark Structured Streaming's checkpoint directories.

Why this mapping: a streaming query of Spark keeps its progress in one
checkpoint directory: ``offsets/<batch>`` is written before a micro-batch
runs, ``commits/<batch>`` once its output is written, ``state/<operator>/<partition>/<version>.*``
holds the state store's versions (version = batch + 1), ``sources/`` what the
sources logged, ``metadata`` the query's id. A query restarted on that
directory continues after its last committed batch, which gives exactly-once
output with a replayable source and an idempotent sink. So:

- the job's **checkpoint root** is ``<execution.checkpointing.dir>/<job-id>``,
  given to Spark as ``spark.sql.streaming.checkpointLocation``: each query
  checkpoints in ``<root>/<query name>`` (the query name is Flink's operator
  uid: a query without one gets a random directory and cannot be restored);
- a **checkpoint id** is a query's last committed micro-batch;
- a **savepoint** is a directory ``savepoint-<first 6 of job id>-<12 hex>`` with
  one copy per named query, the image Spark would recover from at its cut
  (:class:`Cut`, :func:`plan_savepoint_copy`), and a ``_metadata`` file
  (:class:`SavepointMetadata`) that says so.

Everything here is pure: names, the cut, the metadata format. The copying is
done by the driver agent (:mod:`driver_agent`) through Hadoop's FileSystem.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobcluster.errors import JobClusterError

#: The file that makes a directory a savepoint (Flink's name for it).
SAVEPOINT_METADATA_FILE = "_metadata"
#: The file in a query's checkpoint restored from a savepoint that names that savepoint (written before the
#: restored copy is renamed into place; Spark ignores files of a checkpoint it does not know).
RESTORE_MARKER_FILE = "_jobcluster_restored_from"
#: The directory of a checkpoint location's lease (driver_agent/checkpoint_lease.py): the live driver's, never copied.
LEASE_DIRECTORY = "_jobcluster_lease"
#: Hex digits of randomness in a savepoint's name, after the job id's first six (as Flink names them).
_SAVEPOINT_RANDOM_HEX = 12

_BATCH_LOGS = ("offsets", "commits")
#: A state store version's file: ``6.delta``, ``6.zip`` (RocksDB), ``6_<uuid>.changelog`` (checkpoint format v2,
#: Spark 4: the commit log names the unique id of each version), with Spark 4's own ``.crc`` checksum file.
_STATE_VERSION = re.compile(r"^(\d+)(?:_[0-9a-fA-F-]{36})?\.(delta|snapshot|zip|changelog)$")
#: The kinds of state file that hold a whole version (the others hold the changes since the version before).
_SNAPSHOTS = ("snapshot", "zip")


class SavepointError(JobClusterError):
    """A savepoint cannot be taken, read or restored: missing, not a savepoint, or not matching the program."""


class StopWithSavepointFailed(SavepointError):
    """A stop-with-savepoint failed after the queries stopped: no savepoint; the program fails over to its checkpoints."""


class QuerySavepoint(BaseModel):
    """One query in a savepoint: its last committed and last planned micro-batch (None: none yet), where it was copied from.

    A planned batch past the committed one runs again, with the same offsets, after a restore.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    committed_batch_id: int | None = Field(alias="committedBatchId")
    planned_batch_id: int | None = Field(default=None, alias="plannedBatchId")
    source: str


class SavepointMetadata(BaseModel):
    """The ``_metadata`` file of a savepoint (JSON); ``created`` in ms since the epoch; queries by name.

    ``stopped``: the savepoint ended its job (a stop-with-savepoint), so no output
    was written after it; a savepoint of a job that ran on is older than its sinks.
    ``parallelism``: the job's parallelism when it was taken (None in a savepoint
    of a jobcluster that did not record it); a job restored with another one
    shows the change as Flink's rescale history does (runtime/rest/flink2_views.py).
    """

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    version: Literal[1] = 1
    kind: Literal["savepoint"] = "savepoint"
    job_id: str = Field(alias="jobId")
    job_name: str = Field(alias="jobName")
    created: int
    stopped: bool = False
    parallelism: int | None = None
    queries: dict[str, QuerySavepoint]

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


def parse_savepoint_metadata(text: str, path: str) -> SavepointMetadata:
    """The metadata of the savepoint at ``path`` from its ``_metadata`` text; SavepointError when it is not ours."""
    try:
        return SavepointMetadata.model_validate(json.loads(text))
    except (ValueError, ValidationError) as exc:
        raise SavepointError(f"{path} is not a jobcluster savepoint: its {SAVEPOINT_METADATA_FILE} cannot be read ({exc})") from exc


def job_checkpoint_root(checkpoint_directory: str, job_id: str) -> str:
    """The job's checkpoint root ``<execution.checkpointing.dir>/<job-id>`` (a path or URI, no trailing slash)."""
    return f"{checkpoint_directory.rstrip('/')}/{job_id}"


def new_savepoint_name(job_id: str) -> str:
    """``savepoint-<first 6 of the JobID>-<12 random hex digits>``, as Flink names a savepoint's directory."""
    return f"savepoint-{job_id[:6]}-{secrets.token_hex(_SAVEPOINT_RANDOM_HEX // 2)}"


def batch_id_of(file_name: str) -> int | None:
    """The batch id a file of ``offsets/`` or ``commits/`` stands for (``7``, ``.7.crc``); None for another file."""
    name = file_name.removeprefix(".").removesuffix(".crc")
    return int(name) if name.isdigit() else None


def last_batch(file_names: Iterable[str]) -> int | None:
    """The last micro-batch of a query's ``offsets/`` (planned) or ``commits/`` (committed), from its file names; None: none."""
    ids = [i for i in map(batch_id_of, file_names) if i is not None]
    return max(ids) if ids else None


@dataclass(frozen=True)
class Cut:
    """Where a query's checkpoint is cut for a savepoint: Spark's own recovery image at that moment.

    ``planned``: the last batch logged in ``offsets/``; ``committed``: the last in
    ``commits/`` (at most ``planned``); None: none yet. Read in that order, the two
    describe one state of the query: ``planned`` is ``committed`` or the next batch.
    """

    planned: int | None
    committed: int | None

    @property
    def state_version(self) -> int:
        """The state store version a restored query loads: the committed batch's (batch + 1); 0, the empty state, before any."""
        return 0 if self.committed is None else self.committed + 1


@dataclass(frozen=True)
class CopyPlan:
    """The files of a query's checkpoint a savepoint copies (relative, ``/``-separated; those a restore cannot do
    without first) and the required ones. ``shared``: it holds files that several state versions share (RocksDB's
    ``SSTs/``), so that which of them a restore needs is not known from their names."""

    files: list[str]
    required: frozenset[str]
    shared: bool = False


def plan_savepoint_copy(relative_paths: Iterable[str], cut: Cut) -> CopyPlan:
    """Which files of a query's checkpoint (listed after ``cut`` was read) make its savepoint.

    The savepoint is what a restart of Spark would recover from (Spark's
    ``MicroBatchExecution.populateStartOffsets``): ``offsets/`` up to the planned
    batch, so that a logged but uncommitted batch runs again with the same
    offsets under the same id (a sink that skips a batch id it wrote, such as
    the file sink, stays exact); ``commits/`` up to the committed batch; of
    each state store (a directory of ``<version>.delta|snapshot|zip|changelog``
    files, checkpoint format v2's ``<version>_<uuid>.*`` too) only what rebuilds
    the version that batch left: the newest snapshot (``.snapshot``, ``.zip``) at
    or before it and the deltas (``.delta``, ``.changelog``) after that, or every
    delta when no snapshot is that old; and every other file (``metadata``,
    ``sources/``, schemas, RocksDB's shared ``SSTs/``). Left out: ``*.tmp`` files,
    which Spark renames into place once whole, and the location's lease.

    Required (a restore fails without them, so the copy must have them): ``metadata``,
    the planned batch's offsets and the one before, the committed batch's
    commit, a source's log entries of those two batches, and the state store
    files named above.
    """
    last_planned = -1 if cut.planned is None else cut.planned
    last_committed = -1 if cut.committed is None else cut.committed
    files: list[str] = []
    required: set[str] = set()
    stores: dict[str, list[tuple[int, bool, str]]] = {}  # a state store directory: (version, is a snapshot, file)
    for relative in relative_paths:
        parts = relative.split("/")
        name = _data_file_name(parts[-1])
        if name.endswith(".tmp") or relative == RESTORE_MARKER_FILE or parts[0] == LEASE_DIRECTORY:
            continue
        if parts[0] in _BATCH_LOGS and len(parts) == 2:
            batch = batch_id_of(parts[1])
            last = last_planned if parts[0] == "offsets" else last_committed
            if batch is None or batch <= last:
                files.append(relative)
                wanted = (last, last - 1) if parts[0] == "offsets" else (last,)
                if batch in wanted and not parts[1].startswith("."):
                    required.add(relative)
            continue
        version = _STATE_VERSION.match(name) if parts[0] == "state" else None
        if version is None:
            files.append(relative)
            if relative == "metadata" or _source_log_of(parts, last_planned):
                required.add(relative)
            continue
        directory = "/".join(parts[:-1])
        stores.setdefault(directory, []).append((int(version.group(1)), version.group(2) in _SNAPSHOTS, relative))
    for store in stores.values():
        kept = _rebuilding(store, cut.state_version)
        files.extend(kept)
        required.update(f for f in kept if not f.rsplit("/", 1)[-1].startswith(".") and not f.endswith(".crc"))
    shared = any("/SSTs/" in f or f.endswith(".zip") for f in files)
    files.sort(key=lambda f: f not in required)  # the files maintenance may delete soonest, first
    return CopyPlan(files, frozenset(required), shared)


def _source_log_of(parts: list[str], planned: int) -> bool:
    """Whether ``sources/<n>/<batch>[.compact]`` is a source's log entry of the planned batch or the one before,
    which a re-run of the planned batch reads (Spark's file source)."""
    if len(parts) != 3 or parts[0] != "sources" or parts[2].startswith("."):
        return False
    batch = batch_id_of(parts[2].removesuffix(".compact"))
    return batch is not None and planned - 1 <= batch <= planned


def _data_file_name(name: str) -> str:
    """The data file a file name stands for: less Hadoop's ``.<name>.crc`` and Spark 4's ``<name>.crc`` checksums."""
    name = name.removeprefix(".")
    while name.endswith(".crc"):
        name = name.removesuffix(".crc")
    return name


def _rebuilding(store: list[tuple[int, bool, str]], version: int) -> list[str]:
    """The files of one state store that rebuild ``version``: the newest snapshot at or before it and the deltas after."""
    snapshots = [v for v, snapshot, _ in store if snapshot and v <= version]
    base = max(snapshots, default=0)
    return [f for v, snapshot, f in store if (v == base and snapshot) or (base < v <= version and not snapshot)]


def overtaken(cut: Cut, planned_now: int | None, min_batches_to_retain: int) -> bool:
    """Whether Spark's maintenance may have deleted files of ``cut`` that are shared between state versions (see
    :class:`CopyPlan`) while they were copied: the query planned past it.

    Spark keeps the newest ``spark.sql.streaming.minBatchesToRetain`` batches
    and state versions, counted back from the newest (``HDFSBackedStateStoreProvider.cleanup``,
    ``RocksDBFileManager.deleteOldVersions``, the offset and commit logs' purge),
    so the cut's version is safe while ``planned_now - committed`` stays below it.
    """
    if cut.committed is None or planned_now is None:
        return False
    return planned_now - cut.committed > min_batches_to_retain - 1


#: The log Spark's file sink keeps in its output directory: one file per batch id (``<id>``, ``<id>.compact``).
FILE_SINK_LOG = "_spark_metadata"


def sink_log_batch(file_names: Iterable[str]) -> int | None:
    """The last batch id in a file sink's log (``_spark_metadata``), from its file names; None when it has none."""
    return last_batch(name.removesuffix(".compact") for name in file_names)


def state_partitions(offset_log_text: str) -> int | None:
    """The state partitions a query keeps for good: ``spark.sql.shuffle.partitions`` of its checkpoint's offset log.

    An ``offsets/<batch>`` file is ``v1``, then the batch's metadata (JSON, with
    the settings Spark fixes at a query's first run, ``OffsetSeqMetadata``), then
    one line per source. A restart, and a restore, overrides the session's value
    with this one: the stateful stages run this many tasks whatever the cores.
    None when the file does not say.
    """
    lines = offset_log_text.splitlines()
    try:
        value = json.loads(lines[1]).get("conf", {}).get("spark.sql.shuffle.partitions")
        return int(value) if value is not None else None
    except (IndexError, ValueError, AttributeError):
        return None


def unrestored_queries(savepoint: SavepointMetadata, started: Iterable[str]) -> list[str]:
    """Queries of ``savepoint`` that the program did not start (sorted): state a restore would drop."""
    return sorted(set(savepoint.queries) - set(started))


def non_restored_state_error(path: str, missing: list[str]) -> str:
    """Why a restore is refused (Flink's ``--allowNonRestoredState`` message, for query names)."""
    names = ", ".join(repr(n) for n in missing)
    return (
        f"Failed to restore from savepoint {path}: it holds state of the streaming quer{'y' if len(missing) == 1 else 'ies'} {names}, "
        "which the program did not start (a query's name is its id in a savepoint). Rename the program's query back, or allow "
        "dropping that state with --allowNonRestoredState (execution.state-recovery.ignore-unclaimed-state: true)."
    )
