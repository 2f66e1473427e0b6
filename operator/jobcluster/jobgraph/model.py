"""The JobGraph: what the client hands to a job cluster.

A PySpark program is one JobVertex (Spark plans its own stages inside it);
the graph carries what the cluster needs to run it: the program and its
arguments, parallelism, the slot sharing group and per-slot resource profile
the JobMaster asks the ResourceManager for, the user artifacts, the
execution config (restart strategy), where the job checkpoints and the
savepoint it starts from, and, for clusters on the client's own machine,
where the client started the program. It is JSON on the wire and on disk,
versioned, and validated when read back.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jobcluster.errors import JobGraphError

JOB_GRAPH_VERSION: Final = 1
JOB_GRAPH_FILE_NAME = "jobgraph.json"


def new_job_id() -> str:
    """A JobID: 32 lower-case hex digits, as Flink prints them."""
    return uuid.uuid4().hex


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ResourceProfileSpec(_Model):
    """Resources of one slot: CPU cores and memory in bytes (Flink's ResourceProfile)."""

    cpu_cores: float = Field(ge=0)
    task_heap: int = Field(ge=0)
    task_off_heap: int = Field(ge=0)
    managed: int = Field(ge=0)
    network: int = Field(ge=0)


class RestartStrategy(_Model):
    """Flink's ``restart-strategy.*``: ``none`` or ``fixed-delay`` (attempts, delay in seconds)."""

    type: Literal["none", "fixed-delay"] = "none"
    attempts: int = Field(default=0, ge=0)
    delay_seconds: float = Field(default=1.0, ge=0)


class ExecutionConfig(_Model):
    restart_strategy: RestartStrategy = RestartStrategy()


class CheckpointingSettings(_Model):
    """Where the job checkpoints (Flink's JobCheckpointingSettings): ``directory`` from ``execution.checkpointing.dir``,
    a path or URI; the job's own root is ``<directory>/<job id>``."""

    directory: str = Field(min_length=1)


class SavepointRestoreSettings(_Model):
    """The savepoint the job starts from (Flink's SavepointRestoreSettings: ``-s``, ``--allowNonRestoredState``)."""

    path: str = Field(min_length=1)
    allow_non_restored_state: bool = False


class UserArtifact(_Model):
    """A file the program needs; ``path`` is relative to the staging directory, or absolute for a file
    already on the cluster's file system (``local://``, not staged).

    ``kind``: ``py-file`` (``--py-files``: on the program's ``sys.path`` and shipped to the executors'
    Python workers) or ``jar`` (``--jars``: on the driver JVM's classpath and fetched by the executors).
    """

    name: str
    path: str
    kind: Literal["py-file", "jar"] = "py-file"


class ClientPaths(_Model):
    """Where the client started the program: absolute paths on the client's machine.

    Only a ClusterDescriptor whose cluster shares the client's file system (the
    ``local`` target) sets it. The driver then runs as ``spark-submit`` in client
    mode would from the user's shell: in ``working_directory`` (relative paths in
    the program's arguments and code resolve there), running ``program`` where it
    is (so its directory is first on ``sys.path`` and ``__file__`` is the user's
    file). Without it, as on YARN and Kubernetes, the driver runs the staged copy
    in its container's working directory, as Spark's cluster mode does.
    """

    working_directory: str
    program: str

    @field_validator("working_directory", "program")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not Path(value).is_absolute():
            raise ValueError(f"{value!r} is not an absolute path")
        return value


class JobVertex(_Model):
    """One vertex: the PySpark program, run by ``spark-submit`` with ``parallelism`` cores."""

    id: str
    name: str
    program: str = Field(
        description="staged program path, relative to the staging directory; absolute for a program already "
        "on the cluster's file system (local://), which is not staged"
    )
    program_args: list[str] = []
    parallelism: int = Field(ge=1)
    max_parallelism: int = Field(ge=1)
    slot_sharing_group: str = "default"

    @model_validator(mode="after")
    def _max_not_below_parallelism(self) -> JobVertex:
        if self.max_parallelism < self.parallelism:
            raise ValueError(f"max parallelism {self.max_parallelism} is below parallelism {self.parallelism}")
        return self


class JobGraph(_Model):
    """The whole job: its id, name, vertices and configs. ``version`` guards the file format."""

    version: Literal[1] = JOB_GRAPH_VERSION
    job_id: str
    job_name: str
    vertices: list[JobVertex] = Field(min_length=1)
    slot_profile: ResourceProfileSpec | None = None
    user_artifacts: list[UserArtifact] = []
    execution_config: ExecutionConfig = ExecutionConfig()
    checkpointing: CheckpointingSettings | None = None
    savepoint_restore: SavepointRestoreSettings | None = None
    client_paths: ClientPaths | None = None

    @field_validator("job_id")
    @classmethod
    def _job_id_is_hex(cls, value: str) -> str:
        if len(value) != 32 or any(c not in "0123456789abcdef" for c in value):
            raise ValueError("a JobID is 32 lower-case hex digits")
        return value

    def required_slots(self) -> int:
        """Slots the job needs: per slot sharing group the highest vertex parallelism, summed."""
        by_group: dict[str, int] = {}
        for vertex in self.vertices:
            by_group[vertex.slot_sharing_group] = max(by_group.get(vertex.slot_sharing_group, 0), vertex.parallelism)
        return sum(by_group.values())

    @model_validator(mode="after")
    def _restore_needs_checkpoints(self) -> JobGraph:
        if self.savepoint_restore is not None and self.checkpointing is None:
            raise ValueError("restoring a savepoint needs a checkpoint directory (execution.checkpointing.dir) to restore into")
        return self

    @property
    def parallelism(self) -> int:
        return max(v.parallelism for v in self.vertices)


def write_job_graph(graph: JobGraph, path: Path) -> None:
    """Write ``graph`` as JSON to ``path``."""
    path.write_text(graph.model_dump_json(indent=2))


def read_job_graph(path: Path) -> JobGraph:
    """Read and validate a JobGraph file; raises JobGraphError naming the file and the problem."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise JobGraphError(f"cannot read JobGraph {path}: {exc}") from exc
    if isinstance(data, dict) and data.get("version") != JOB_GRAPH_VERSION:
        raise JobGraphError(f"JobGraph {path} has version {data.get('version')!r}; this jobcluster reads version {JOB_GRAPH_VERSION}")
    try:
        return JobGraph.model_validate(data)
    except ValidationError as exc:
        raise JobGraphError(f"invalid JobGraph {path}: {exc}") from exc
