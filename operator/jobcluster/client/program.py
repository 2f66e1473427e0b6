"""Building the JobGraph of a PySpark program (the client's part of FLIP-73's flow)."""

from __future__ import annotations

from pathlib import Path

from jobcluster.client.descriptor import PackagedProgram
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.errors import JobGraphError
from jobcluster.jobgraph.model import (
    ExecutionConfig,
    JobGraph,
    JobVertex,
    ResourceProfileSpec,
    RestartStrategy,
    UserArtifact,
    new_job_id,
)
from jobcluster.memory.spec import TaskExecutorProcessSpec


def check_program(program: PackagedProgram) -> None:
    """JobGraphError when the script or an artifact is missing or not a file."""
    for path in (program.script, *program.artifacts):
        if not path.exists():
            raise JobGraphError(f"program file {path} does not exist")
        if not path.is_file():
            raise JobGraphError(f"program file {path} is not a regular file")
    if program.script.suffix != ".py":
        raise JobGraphError(f"program {program.script} is not a Python file (.py); jobcluster runs PySpark programs")


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
        job_id=new_job_id(),
        job_name=name,
        vertices=[
            JobVertex(
                id=new_job_id(),
                name=f"PySpark: {program.script.name}",
                program=program.script.name,
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
        user_artifacts=[UserArtifact(name=p.name, path=p.name) for p in program.artifacts],
        execution_config=ExecutionConfig(
            restart_strategy=RestartStrategy(
                type="fixed-delay" if strategy == "fixed-delay" else "none",
                attempts=config.get(options.RESTART_ATTEMPTS),
                delay_seconds=config.get(options.RESTART_DELAY),
            )
        ),
    )


def staged_files(program: PackagedProgram) -> list[Path]:
    """Every file to stage next to the JobGraph: the script, then the artifacts."""
    return [program.script, *program.artifacts]
