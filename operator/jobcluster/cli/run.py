"""``jobcluster run``: deploy a PySpark program as its own job cluster."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from jobcluster.backends import registry
from jobcluster.cli.common import conf_dir_option, dynamic_properties_option, load_cli_configuration, reports_errors
from jobcluster.cli.progress import ProgressPrinter, client_arguments
from jobcluster.client.connectors import with_s3a_connector
from jobcluster.client.executor import PipelineExecutor
from jobcluster.client.job_client import JobExecutionResult
from jobcluster.client.program import build_job_graph, packaged_program, split_list_arguments
from jobcluster.config import options
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config

SHUTDOWN_TIMEOUT = 60.0  # seconds an attached run waits for its cluster to be gone


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "-t",
    "--target",
    default=None,
    metavar="TARGET",
    help=f"execution.target: where the job cluster runs ({', '.join(registry.known_targets())}). "
    "Default: from the configuration, else local.",
)
@click.option(
    "-p",
    "--parallelism",
    type=click.IntRange(min=1),
    default=None,
    help="parallelism.default: slots the job gets, and Spark's cores and default partitions.",
)
@conf_dir_option
@dynamic_properties_option
@click.option("-d", "--detached", is_flag=True, help="Return once the job is submitted, printing how to follow and cancel it.")
@click.option(
    "--py-files",
    "py_files",
    multiple=True,
    metavar="FILE",
    help="Extra .py/.zip files for the program (repeatable); local:///path for one already in the image.",
)
@click.option(
    "-s",
    "--fromSavepoint",
    "from_savepoint",
    default=None,
    metavar="PATH",
    help="execution.state-recovery.path: start from this savepoint (`jobcluster stop`/`savepoint` printed its path); "
    "each of its queries is restored into the program's query of the same name. Needs execution.checkpointing.dir.",
)
@click.option(
    "-n",
    "--allowNonRestoredState",
    "allow_non_restored_state",
    is_flag=True,
    default=None,
    help="Start even if the savepoint holds a query the program does not run (its state is dropped).",
)
@click.option(
    "--jars",
    "jars",
    multiple=True,
    metavar="JAR[,JAR...]",
    help="Extra jars for the driver's and executors' classpath (repeatable, comma-separated like spark-submit's); "
    "local:///path for one already in the image.",
)
@click.argument("program")
@click.argument("program_args", nargs=-1, type=click.UNPROCESSED)
@reports_errors
def run(
    target: str | None,
    parallelism: int | None,
    conf_dir: Path | None,
    dynamic_properties: tuple[str, ...],
    detached: bool,
    py_files: tuple[str, ...],
    from_savepoint: str | None,
    allow_non_restored_state: bool | None,
    jars: tuple[str, ...],
    program: str,
    program_args: tuple[str, ...],
) -> None:
    """Run PROGRAM (a PySpark script) with PROGRAM_ARGS on its own job cluster.

    PROGRAM is a file on this machine, staged with the job, or local:///path
    for a file already in the cluster's image (Kubernetes) or on its nodes.

    The program runs as under spark-submit in client mode: in this directory,
    with its own directory on sys.path; its stdout and stderr are streamed here
    as they are written (progress lines go to stderr). Spark settings: -D spark.KEY=VALUE.

    A streaming job's progress is one line per query every 10 s
    (-D jobcluster.client.streaming-progress-interval=30s), e.g. "Query
    wordcount: batch 42, 1,234 rows/s in, 1,200 rows/s processed, 5,000 state
    rows, last committed batch 41, 2 s ago", and a line as soon as a query
    starts or stops.

    \b
    Exit codes: 0 FINISHED; the program's own code when it exits with one above 1;
    1 FAILED, CANCELED or refused input; 2 usage error; 130 interrupted (the job keeps running).

    \b
    Example:
      jobcluster run -t local -p 4 -D taskmanager.numberOfTaskSlots=2 \\
          examples/wordcount.py --input docs/ --output out/
    """
    config = load_cli_configuration(
        conf_dir,
        dynamic_properties,
        **{
            options.EXECUTION_TARGET.key: target,
            options.PARALLELISM_DEFAULT.key: parallelism,
            options.EXECUTION_ATTACHED.key: "false" if detached else "true",
            options.SAVEPOINT_PATH.key: from_savepoint,
            options.SAVEPOINT_IGNORE_UNCLAIMED_STATE.key: "true" if allow_non_restored_state else None,
        },
    )
    target = config.get(options.EXECUTION_TARGET)
    descriptor = registry.cluster_descriptor(target, config)
    packaged = packaged_program(program, program_args, py_files, split_list_arguments(jars))
    packaged = with_s3a_connector(packaged, config, descriptor.runs_client_spark, lambda line: click.echo(line, err=True))
    graph = build_job_graph(packaged, config, task_executor_process_spec_from_config(config))
    if graph.savepoint_restore is not None:
        descriptor.read_savepoint(graph.savepoint_restore.path)  # missing or not a savepoint: refused before anything is deployed
    printer = ProgressPrinter(streaming_interval=config.get(options.CLIENT_STREAMING_PROGRESS_INTERVAL))
    descriptor.progress = printer.step
    printer.deploying(graph, target, config)
    job_client = PipelineExecutor(descriptor).execute(graph, packaged, config)
    cluster = job_client.cluster_client
    on_target = client_arguments(target, descriptor.client_options, config)
    try:
        printer.submitted(job_client)
        if detached:
            printer.detached(job_client, on_target)
            return
        try:
            result = job_client.wait_for_result(
                on_update=printer.update,
                on_output=printer.program_output,
                on_relocate=printer.relocated,
                on_output_gap=printer.output_rotated,
            )
        except KeyboardInterrupt:
            click.echo(f"\nInterrupted. The job keeps running; cancel it with: jobcluster cancel {graph.job_id}{on_target}", err=True)
            sys.exit(130)
        printer.result(result)
        printer.shut_down(cluster.cluster_id, cluster.wait_until_shut_down(SHUTDOWN_TIMEOUT), cluster.end_report(SHUTDOWN_TIMEOUT))
    finally:
        cluster.close()
    sys.exit(exit_code(result))


def exit_code(result: JobExecutionResult) -> int:
    """0 when the job FINISHED; the program's exit code when it failed with one of its own (> 1); else 1.

    A FAILED program that exited with 3 makes ``jobcluster run`` exit 3, as
    ``spark-submit`` would; a program killed by a signal, a job that failed
    around its program (e.g. no slots), and a CANCELED job give 1.
    """
    if result.succeeded:
        return 0
    code = result.program_exit_code
    if result.status == "FAILED" and code is not None and code > 1:
        return code
    return 1
