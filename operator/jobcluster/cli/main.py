"""The ``jobcluster`` command line (a composition root: commands are thin, the work is in client/ and backends/)."""

from __future__ import annotations

import logging
import platform

import click

import jobcluster
from jobcluster.cli.info import info
from jobcluster.cli.jobs import cancel, list_jobs, savepoint, stop
from jobcluster.cli.memory import memory
from jobcluster.cli.prune import prune
from jobcluster.cli.run import run
from jobcluster.controller.main import operator
from jobcluster.spark.home import spark_version


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    jobcluster.__version__,
    prog_name="jobcluster",
    message=f"%(prog)s %(version)s (Spark {spark_version()}, Python {platform.python_version()})",
)
@click.option("-v", "--verbose", is_flag=True, help="Log what the client does.")
def cli(verbose: bool) -> None:
    """Run PySpark pipelines as per-job clusters on this machine, YARN or Kubernetes.

    Each `run` deploys a cluster for one job (Flink's per-job mode): a JobManager
    with a ResourceManager that starts TaskExecutors sized by Flink's memory model,
    each running a Spark worker; the program runs against them and the cluster
    goes away when the job ends.
    """
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


cli.add_command(run)
cli.add_command(list_jobs)
cli.add_command(info)
cli.add_command(cancel)
cli.add_command(stop)
cli.add_command(savepoint)
cli.add_command(memory)
cli.add_command(prune)
cli.add_command(operator)


def main() -> None:
    cli(prog_name="jobcluster")
