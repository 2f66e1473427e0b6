"""Building the JobGraph of a PySpark program (the client's part of FLIP-73's flow)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from jobcluster.client.descriptor import PackagedProgram
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.errors import JobGraphError
from jobcluster.jobgraph.model import (
    CheckpointingSettings,
    ExecutionConfig,
    JobGraph,
    JobVertex,
    ResourceProfileSpec,
    RestartStrategy,
    SavepointRestoreSettings,
    UserArtifact,
    new_job_id,
)
from jobcluster.memory.spec import TaskExecutorProcessSpec

#: Flink's scheme for a file already in the image (or on every node): ``local:///opt/app/job.py``.
PROVIDED_SCHEME = "local"


def parse_program_uri(text: str) -> tuple[Path, bool]:
    """``(path, provided)`` of a program, ``--py-files`` or ``--jars`` argument.

    A plain path or ``file://`` URI names a file on this machine, which is
    staged; ``local:///abs/path`` a file already on the cluster's file system
    (``provided``), which is not.  Raises JobGraphError for any other scheme or a
    ``local://`` path that is not absolute.
    """
    parts = urlsplit(text)
    if len(parts.scheme) <= 1:  # no scheme, or a Windows drive letter
        return Path(text), False
    if parts.scheme == "file":
        return Path(parts.path), False
    if parts.scheme == PROVIDED_SCHEME:
        if parts.netloc or not parts.path.startswith("/"):
            raise JobGraphError(
                f"{text!r}: a local:// program needs an absolute path in the image, with three slashes: local:///opt/app/job.py"
            )
        return Path(parts.path), True
    raise JobGraphError(
        f"{text!r}: the {parts.scheme}:// scheme is not supported; give a file on this machine (staged with the job) "
        "or local:///path for a file already in the cluster's image"
    )


def split_list_arguments(values: Iterable[str]) -> list[str]:
    """Each value split at commas, empty parts dropped: ``["a.jar,b.jar", "c.jar"]`` -> ``["a.jar", "b.jar", "c.jar"]``.

    How spark-submit reads ``--jars``; jobcluster also takes the option more than once.
    """
    return [part for value in values for part in value.split(",") if part]


def packaged_program(script: str, args: Iterable[str] = (), py_files: Iterable[str] = (), jars: Iterable[str] = ()) -> PackagedProgram:
    """The PackagedProgram of a script, its ``--py-files`` and its ``--jars``, each a path or URI (``parse_program_uri``).

    Raises JobGraphError for a URI it refuses.
    """
    script_path, script_provided = parse_program_uri(script)
    artifacts = [parse_program_uri(text) for text in py_files]
    jar_files = [parse_program_uri(text) for text in jars]
    provided = {path for path, is_provided in [(script_path, script_provided), *artifacts, *jar_files] if is_provided}
    return PackagedProgram(
        script=script_path,
        args=tuple(args),
        artifacts=tuple(path for path, _ in artifacts),
        provided=frozenset(provided),
        jars=tuple(path for path, _ in jar_files),
    )


def check_program(program: PackagedProgram) -> None:
    """JobGraphError when the script, an artifact or a jar is missing or not a file (provided files are checked where
    they are, by the cluster), or when two files to stage have the same name (they would land on one another)."""
    for path in (program.script, *program.artifacts):
        if path in program.provided:
            continue
        if not path.exists():
            raise JobGraphError(f"program file {path} does not exist")
        if not path.is_file():
            raise JobGraphError(f"program file {path} is not a regular file")
    for path in program.jars:
        if path in program.provided:
            continue
        if not path.exists():
            raise JobGraphError(f"jar {path} (--jars) does not exist")
        if not path.is_file():
            raise JobGraphError(f"jar {path} (--jars) is not a regular file")
    if program.script.suffix != ".py":
        raise JobGraphError(f"program {program.script} is not a Python file (.py); jobcluster runs PySpark programs")
    by_name: dict[str, Path] = {}
    for path in staged_files(program):
        other = by_name.setdefault(path.name, path)
        if other != path:
            raise JobGraphError(f"{other} and {path} would both be staged as {path.name}; rename one of them")


def build_job_graph(program: PackagedProgram, config: Configuration, tm_spec: TaskExecutorProcessSpec) -> JobGraph:
    """The JobGraph of ``program`` under ``config``.

    Parallelism comes from ``parallelism.default`` (the CLI's ``-p``), the job
    name from ``pipeline.name`` (default: the script's name), the restart
    strategy from ``restart-strategy.*``, and the slot profile from the
    TaskManager's default slot profile. Raises JobGraphError for a missing
    program or a parallelism below 1.
    """
    check_program(program)
    parallelism = config.get(options.PARALLELISM_DEFAULT)
    if parallelism < 1:
        raise JobGraphError(f"parallelism must be at least 1, got {parallelism} (parallelism.default / -p)")
    max_parallelism = config.get(options.MAX_PARALLELISM)
    if max_parallelism is None or max_parallelism < 1:
        max_parallelism = max(128, parallelism)
    name = config.get(options.PIPELINE_NAME) or program.script.stem
    profile = tm_spec.default_slot_profile()
    strategy = config.get(options.RESTART_STRATEGY)
    if strategy not in ("none", "fixed-delay", "off", "disable"):
        raise JobGraphError(f"restart-strategy.type {strategy!r} is not supported; use none or fixed-delay")
    return JobGraph(
        job_id=_job_id(config),
        job_name=name,
        vertices=[
            JobVertex(
                id=new_job_id(),
                name=f"PySpark: {program.script.name}",
                program=_graph_path(program, program.script),
                program_args=list(program.args),
                parallelism=parallelism,
                max_parallelism=max_parallelism,
            )
        ],
        slot_profile=ResourceProfileSpec(
            cpu_cores=float(profile.cpu_cores),
            task_heap=profile.task_heap,
            task_off_heap=profile.task_off_heap,
            managed=profile.managed,
            network=profile.network,
        ),
        user_artifacts=[
            *(UserArtifact(name=p.name, path=_graph_path(program, p)) for p in program.artifacts),
            *(UserArtifact(name=p.name, path=_graph_path(program, p), kind="jar") for p in program.jars),
        ],
        execution_config=ExecutionConfig(
            restart_strategy=RestartStrategy(
                type="fixed-delay" if strategy == "fixed-delay" else "none",
                attempts=config.get(options.RESTART_ATTEMPTS),
                delay_seconds=config.get(options.RESTART_DELAY),
            )
        ),
        checkpointing=_checkpointing(config),
        savepoint_restore=_savepoint_restore(config),
    )


def _job_id(config: Configuration) -> str:
    """``$internal.pipeline.job-id`` when set (a job resumed from its own checkpoints), else a new JobID."""
    fixed = config.get(options.PIPELINE_FIXED_JOB_ID)
    if not fixed:
        return new_job_id()
    if not re.fullmatch(r"[0-9a-f]{32}", fixed.lower()):
        raise JobGraphError(f"{options.PIPELINE_FIXED_JOB_ID.key} {fixed!r} is not a JobID (32 hexadecimal digits)")
    return fixed.lower()


def _checkpointing(config: Configuration) -> CheckpointingSettings | None:
    directory = config.get(options.CHECKPOINTS_DIRECTORY)
    return CheckpointingSettings(directory=directory) if directory else None


def _savepoint_restore(config: Configuration) -> SavepointRestoreSettings | None:
    """From ``execution.state-recovery.path`` (``-s``); JobGraphError when there is no checkpoint directory to restore into."""
    path = config.get(options.SAVEPOINT_PATH)
    if not path:
        return None
    if not config.get(options.CHECKPOINTS_DIRECTORY):
        raise JobGraphError(
            f"cannot start from savepoint {path}: restoring needs a checkpoint directory for the new job's queries; "
            "set execution.checkpointing.dir (-D execution.checkpointing.dir=URI)"
        )
    return SavepointRestoreSettings(path=path, allow_non_restored_state=config.get(options.SAVEPOINT_IGNORE_UNCLAIMED_STATE))


def _graph_path(program: PackagedProgram, path: Path) -> str:
    """A file's path in the JobGraph: its staged name, or its absolute path when it is provided."""
    return str(path) if path in program.provided else path.name


def staged_files(program: PackagedProgram) -> list[Path]:
    """Every file to stage next to the JobGraph: the script, then the artifacts, then the jars, except provided ones."""
    return [path for path in (program.script, *program.artifacts, *program.jars) if path not in program.provided]
