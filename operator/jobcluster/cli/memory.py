"""``jobcluster memory``: show the memory a configuration gives each container.

Why a command of its own: sizes come from the configuration file, not from
code, and Flink's derivation rules (fractions, caps, remainders) are not
obvious.  This answers "what will my TaskExecutor (or JobManager) container
get, and what does each part become in Spark?" before anything is deployed.

Exit status answers the Flink question: 0 when the configuration derives a
process spec, 1 (message on stderr, no traceback) when it does not.  A
configuration that Flink accepts but Spark could not run still exits 0: the
table shows the mapping with a warning for each Spark minimum missed (with
``--output json`` the warning goes to stderr); ``jobcluster run`` is what
refuses it.  The PySpark workers' budget (task off-heap plus PYTHON's share of
managed memory) has a line of its own, in all and per worker, since neither is
a component of Flink's.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from jobcluster.backends.registry import validate_configuration
from jobcluster.cli.common import check_dynamic_properties
from jobcluster.config.loader import (
    CONFIG_FILE_NAME,
    CONFIG_FILE_NAMES,
    FLINK_CONFIG_FILE_NAME,
    config_files,
    default_conf_dir,
    load_configuration,
    parse_dynamic_property,
)
from jobcluster.config.options import JOB_MANAGER_JVM_DIRECT_MEMORY_LIMIT_ENABLED
from jobcluster.errors import JobClusterError
from jobcluster.memory.jobmanager import job_manager_process_spec_from_config
from jobcluster.memory.managed import ManagedMemoryConsumers
from jobcluster.memory.size import MiB, format_binary
from jobcluster.memory.spec import JobManagerProcessSpec, TaskExecutorProcessSpec
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.spark.sizing import (
    JobManagerSparkSizing,
    MemoryCap,
    PySparkMemory,
    TaskExecutorSparkSizing,
    spark_sizing_for_job_manager,
    spark_sizing_for_task_executor,
)

TASK_EXECUTOR_COMPONENTS = (
    ("framework_heap", "Framework Heap"),
    ("task_heap", "Task Heap"),
    ("framework_off_heap", "Framework Off-Heap"),
    ("task_off_heap", "Task Off-Heap"),
    ("network", "Network"),
    ("managed", "Managed"),
    ("jvm_metaspace", "JVM Metaspace"),
    ("jvm_overhead", "JVM Overhead"),
)
JOB_MANAGER_COMPONENTS = (
    ("jvm_heap", "JVM Heap"),
    ("off_heap", "Off-Heap"),
    ("jvm_metaspace", "JVM Metaspace"),
    ("jvm_overhead", "JVM Overhead"),
)
_LABELS = dict(TASK_EXECUTOR_COMPONENTS + JOB_MANAGER_COMPONENTS)
_BAR_WIDTH = 30
_PARTIAL_BLOCKS = " ▏▎▍▌▋▊▉"


@click.command("memory")
@click.option(
    "-c",
    "--conf-dir",
    "conf_dir",
    type=click.Path(path_type=Path),
    default=None,
    help=f"Directory holding {CONFIG_FILE_NAME} or Flink's {FLINK_CONFIG_FILE_NAME} (or both); a directory without either "
    "means only the built-in defaults.  Default: $JOBCLUSTER_CONF_DIR, else the packaged configuration.",
)
@click.option(
    "-D",
    "dynamic_properties",
    multiple=True,
    metavar="KEY=VALUE",
    callback=check_dynamic_properties,
    help="Override one configuration key (repeatable), e.g. -D taskmanager.memory.process.size=4g.",
)
@click.option("--jobmanager", is_flag=True, help="Show the JobManager container instead of a TaskExecutor's.")
@click.option(
    "--output",
    "output",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: a breakdown for people; json: the components in bytes.",
)
def memory(conf_dir: Path | None, dynamic_properties: tuple[str, ...], jobmanager: bool, output: str) -> None:
    """Show the memory model of a TaskExecutor (or, with --jobmanager, the JobManager) container."""
    try:
        overrides = dict(parse_dynamic_property(item) for item in dynamic_properties)
        directory = conf_dir if conf_dir is not None else default_conf_dir()
        config = load_configuration(directory, overrides)
        spec: JobManagerProcessSpec | TaskExecutorProcessSpec
        sizing: JobManagerSparkSizing | TaskExecutorSparkSizing
        if jobmanager:
            spec = job_manager_process_spec_from_config(config)
            sizing = spark_sizing_for_job_manager(spec, check=False)
            direct_limit = config.get(JOB_MANAGER_JVM_DIRECT_MEMORY_LIMIT_ENABLED)
        else:
            spec = task_executor_process_spec_from_config(config)
            sizing = spark_sizing_for_task_executor(spec, ManagedMemoryConsumers.from_config(config), check=False)
        validate_configuration(config)  # after the model, so memory keys keep Flink's own messages
    except JobClusterError as error:
        click.echo(_describe_error(error), err=True)
        raise click.exceptions.Exit(1) from None

    if output == "json":
        document = spec_as_json(spec)
        if isinstance(sizing, TaskExecutorSparkSizing):
            document.update(pyspark_as_json(sizing.pyspark))
        click.echo(json.dumps(document, indent=2))
        for problem in sizing.problems():
            click.echo(f"Warning: Spark cannot run this: {problem}.", err=True)
        return
    source = _source_text(directory, len(overrides))
    if isinstance(spec, JobManagerProcessSpec):
        assert isinstance(sizing, JobManagerSparkSizing)  # chosen together above
        lines = job_manager_table(spec, sizing, source, direct_limit)
    else:
        assert isinstance(sizing, TaskExecutorSparkSizing)
        lines = task_executor_table(spec, sizing, source)
    click.echo("\n".join(lines))


def spec_as_json(spec: TaskExecutorProcessSpec | JobManagerProcessSpec) -> dict[str, int]:
    """The components and totals of a process spec, in bytes (the ``--output json`` document)."""
    components = JOB_MANAGER_COMPONENTS if isinstance(spec, JobManagerProcessSpec) else TASK_EXECUTOR_COMPONENTS
    document = {name: getattr(spec, name) for name, _ in components}
    document["total_flink"] = spec.total_flink
    document["total_process"] = spec.total_process
    return document


def pyspark_as_json(pyspark: PySparkMemory) -> dict[str, int]:
    """The PySpark workers' memory in bytes: ``pyspark_memory``, what they may use together (their limits'
    sum), and ``pyspark_memory_per_worker``, each one's limit (its ``RLIMIT_DATA``; 0: none)."""
    return {"pyspark_memory": pyspark.total_limit, "pyspark_memory_per_worker": pyspark.per_worker_mib * MiB}


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------


def task_executor_table(spec: TaskExecutorProcessSpec, sizing: TaskExecutorSparkSizing, source: str) -> list[str]:
    """The human breakdown of a TaskExecutor container, one line per list item."""
    slot = spec.default_slot_profile()
    lines = [f"TaskExecutor container  ({source})", ""]
    lines += _component_rows(spec, TASK_EXECUTOR_COMPONENTS)
    lines += [
        "",
        f"  JVM heap   {format_binary(spec.jvm_heap):>10}  (framework heap + task heap)",
        f"  JVM direct {format_binary(spec.jvm_direct):>10}  (framework off-heap + task off-heap + network)",
        f"  CPU cores {spec.cpu_cores.normalize():f}, slots {spec.num_slots}; each slot: "
        f"task heap {format_binary(slot.task_heap)}, task off-heap {format_binary(slot.task_off_heap)}, "
        f"managed {format_binary(slot.managed)}, network {format_binary(slot.network)}",
        f"  Flink JVM args: {spec.jvm_args()}",
        "",
        "Spark in this container (worker daemon + one executor)",
    ]
    python = "PySpark daemon" if sizing.pyspark.per_worker_mib else "PySpark daemon and workers"
    lines += _cap_rows(sizing.caps(), spec.jvm_overhead, f"not limited: TaskExecutor process, {python}, JVM native")
    lines += _sum_row(sizing.total_capped, sizing.jvm_overhead, sizing.total_process)
    lines.append(f"  worker: {' '.join(sizing.worker_args())}")
    lines += pyspark_rows(sizing.pyspark)
    lines += _problem_rows(sizing.problems())
    return lines


def pyspark_rows(pyspark: PySparkMemory) -> list[str]:
    """The PySpark workers' budget: in all and per worker on a line of its own, then where it comes from."""
    if pyspark.per_worker_mib:
        budget = (
            f"  Python: {format_binary(pyspark.total_limit)} = {pyspark.workers} PySpark workers (one per slot) "
            f"x {pyspark.per_worker_mib} MiB each (RLIMIT_DATA of each)"
        )
    else:
        budget = "  Python: no limit: the PySpark workers use the JVM overhead"
    return [budget, f"          from {pyspark.source()}"]


def job_manager_table(
    spec: JobManagerProcessSpec, sizing: JobManagerSparkSizing, source: str, enable_direct_limit: bool = False
) -> list[str]:
    """The human breakdown of the JobManager container, one line per list item."""
    lines = [f"JobManager container  ({source})", ""]
    lines += _component_rows(spec, JOB_MANAGER_COMPONENTS)
    lines += [
        "",
        f"  Flink JVM args: {spec.jvm_args(enable_direct_limit)}",
        "",
        "Spark in this container (master daemon + driver, client mode)",
    ]
    lines += _cap_rows(sizing.caps(), spec.jvm_overhead, "not limited: entrypoint process, PySpark driver process, JVM native")
    lines += _sum_row(sizing.total_capped, sizing.jvm_overhead, sizing.total_process)
    lines += _problem_rows(sizing.problems())
    return lines


def _component_rows(spec: TaskExecutorProcessSpec | JobManagerProcessSpec, components: tuple[tuple[str, str], ...]) -> list[str]:
    total = spec.total_process
    rows = [f"  {'Component':<22}{'Size':>10}  {'Bytes':>12}"]
    for name, label in components:
        size = getattr(spec, name)
        share = size / total if total else 0.0
        rows.append(f"  {label:<22}{format_binary(size):>10}  {size:>12}  {_bar(share):<{_BAR_WIDTH}} {share:6.1%}")
    rows.append("  " + "-" * (22 + 10 + 2 + 12))
    rows.append(f"  {'Total Flink Memory':<22}{format_binary(spec.total_flink):>10}  {spec.total_flink:>12}")
    rows.append(f"  {'Total Process Memory':<22}{format_binary(total):>10}  {total:>12}")
    return rows


def _cap_rows(caps: tuple[MemoryCap, ...], overhead: int, overhead_text: str) -> list[str]:
    rows = [f"  {'Flink component':<20}   {'becomes':<28}{'limit':>10}  setting"]
    for cap in caps:
        rows.append(f"  {_LABELS[cap.component]:<20} → {cap.name:<28}{format_binary(cap.bytes):>10}  {cap.setting}")
    rows.append(f"  {'JVM Overhead':<20} → {'(no limit)':<28}{format_binary(overhead):>10}  {overhead_text}")
    return rows


def _sum_row(capped: int, overhead: int, total: int) -> list[str]:
    used = capped + overhead
    return [
        f"  limits + overhead = {format_binary(used)} of {format_binary(total)} container "
        f"({total - used} bytes unassigned by rounding to MiB)"
    ]


def _problem_rows(problems: tuple[str, ...]) -> list[str]:
    if not problems:
        return []
    return ["", "WARNING: Spark cannot run this configuration (jobcluster run refuses it):"] + [f"  - {problem}" for problem in problems]


def _bar(share: float) -> str:
    eighths = round(max(0.0, min(1.0, share)) * _BAR_WIDTH * 8)
    full, partial = divmod(eighths, 8)
    return "█" * full + (_PARTIAL_BLOCKS[partial] if partial else "")


def _source_text(directory: Path, overrides: int) -> str:
    paths = config_files(directory)
    text = " and ".join(map(str, paths)) if paths else f"no {' or '.join(CONFIG_FILE_NAMES)} in {directory}: built-in defaults only"
    if overrides:
        text += f", {overrides} -D override{'s' if overrides > 1 else ''}"
    return text


def _describe_error(error: BaseException) -> str:
    """The error's message, then each chained cause that adds something new."""
    lines = [f"Error: {error}"]
    seen = str(error)
    cause = error.__cause__
    while cause is not None:
        text = str(cause)
        if text and text not in seen:
            lines.append(f"  Caused by: {text}")
            seen += "\n" + text
        cause = cause.__cause__
    return "\n".join(lines)
