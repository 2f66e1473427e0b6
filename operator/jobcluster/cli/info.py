"""``jobcluster info``: the JobGraph and cluster sizes a program would get, without running it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from jobcluster.cli.common import conf_dir_option, dynamic_properties_option, load_cli_configuration, reports_errors
from jobcluster.client.executor import cluster_specification
from jobcluster.client.program import build_job_graph, packaged_program
from jobcluster.config import options
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.spark.home import spark_version


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-p", "--parallelism", type=click.IntRange(min=1), default=None, help="parallelism.default for the plan.")
@conf_dir_option
@dynamic_properties_option
@click.argument("program")
@click.argument("program_args", nargs=-1, type=click.UNPROCESSED)
@reports_errors
def info(
    parallelism: int | None, conf_dir: Path | None, dynamic_properties: tuple[str, ...], program: str, program_args: tuple[str, ...]
) -> None:
    """Print the JobGraph (JSON), ClusterSpecification and Spark version PROGRAM would be deployed with."""
    config = load_cli_configuration(conf_dir, dynamic_properties, **{options.PARALLELISM_DEFAULT.key: parallelism})
    graph = build_job_graph(packaged_program(program, program_args), config, task_executor_process_spec_from_config(config))
    spec = cluster_specification(config)
    plan = {"jobGraph": graph.model_dump(mode="json"), "clusterSpecification": spec.__dict__, "sparkVersion": spark_version()}
    click.echo(json.dumps(plan, indent=2))
