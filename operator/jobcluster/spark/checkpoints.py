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
  one copy per named query, cut at its last committed batch (:func:`keep_in_savepoint`),
  and a ``_metadata`` file (:class:`SavepointMetadata`) that says so.

Everything here is pure: names, the cut, the metadata format. The copying is
done by the driver agent (:mod:`driver_agent`) through Hadoop's FileSystem.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobcluster.errors import JobClusterError

#: The file that makes a directory a savepoint (Flink's name for it).
SAVEPOINT_METADATA_FILE = "_metadata"
#: Hex digits of randomness in a savepoint's name, after the job id's first six (as Flink names them).
_SAVEPOINT_RANDOM_HEX = 12

_BATCH_LOGS = ("offsets", "commits")
#: A state store version's file: ``6.delta``, ``6.zip`` (RocksDB), ``6_<uuid>.changelog`` (checkpoint format v2,
#: Spark 4: the commit log names the unique id of each version), with Spark 4's own ``.crc`` checksum file.
_STATE_VERSION = re.compile(r"^(\d+)(?:_[0-9a-fA-F-]{36})?\.(?:delta|snapshot|zip|changelog)(?:\.crc)?$")


class SavepointError(JobClusterError):
    """A savepoint cannot be taken, read or restored: missing, not a savepoint, or not matching the program."""


class QuerySavepoint(BaseModel):
    """One query in a savepoint: its last committed micro-batch (None: none yet) and where it was copied from."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    committed_batch_id: int | None = Field(alias="committedBatchId")
    source: str


class SavepointMetadata(BaseModel):
    """The ``_metadata`` file of a savepoint (JSON); ``created`` in ms since the epoch; queries by name."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    version: Literal[1] = 1
    kind: Literal["savepoint"] = "savepoint"
    job_id: str = Field(alias="jobId")
    job_name: str = Field(alias="jobName")
    created: int
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


def committed_batch(commit_file_names: Iterable[str]) -> int | None:
    """The last committed micro-batch, from the file names in a query's ``commits/``; None when none is."""
    ids = [i for i in map(batch_id_of, commit_file_names) if i is not None]
    return max(ids) if ids else None


def keep_in_savepoint(relative_path: str, committed: int | None) -> bool:
    """Whether a file of a query's checkpoint (path relative to it, ``/``-separated) belongs in a savepoint cut at ``committed``.

    Kept: ``offsets/`` and ``commits/`` up to the committed batch, state store
    versions up to ``committed + 1`` (each batch writes the next version; a
    version's files under checkpoint format v2 too, ``<version>_<uuid>.*``),
    and everything else (``metadata``, ``sources/``, the state's schema and
    shared files), which a restarted query reconciles with its logs itself.
    Dropped: what a batch that never committed wrote (restored, the query
    runs that batch again), and files still being written (``*.tmp``, which
    Spark renames into place). ``committed`` None: no batch committed yet.
    """
    parts = relative_path.split("/")
    if parts[-1].removesuffix(".crc").endswith(".tmp"):  # a file Spark is writing, renamed into place once whole
        return False
    last = committed if committed is not None else -1
    if parts[0] in _BATCH_LOGS and len(parts) == 2:
        batch = batch_id_of(parts[1])
        return batch is None or batch <= last
    if parts[0] == "state":
        version = _STATE_VERSION.match(parts[-1].removeprefix(".").removesuffix(".crc"))  # less Hadoop's checksum
        return version is None or int(version.group(1)) <= last + 1
    return True


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
