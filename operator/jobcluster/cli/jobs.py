"""``jobcluster list``, ``cancel``, ``stop`` and ``savepoint``: the jobs of the running job clusters."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import click

from jobcluster.backends import registry
from jobcluster.cli.common import conf_dir_option, dynamic_properties_option, load_cli_configuration, reports_errors
from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.client.descriptor import ClusterDescriptor, ClusterHandle
from jobcluster.config import options
from jobcluster.errors import ClusterClientError, ClusterUnreachableError, JobNotFoundError

SAVEPOINT_WAIT_MARGIN = 30.0  # seconds the client waits beyond execution.checkpointing.timeout, for the cluster to say it failed


def _descriptor(target: str | None, conf_dir: Path | None, dynamic_properties: tuple[str, ...]) -> ClusterDescriptor:
    config = load_cli_configuration(conf_dir, dynamic_properties, **{options.EXECUTION_TARGET.key: target})
    return registry.cluster_descriptor(config.get(options.EXECUTION_TARGET), config)


def _jobs(handle: ClusterHandle) -> list[dict[str, Any]]:
    if handle.rest_url is None:
        return [{"jid": handle.job_id, "name": handle.job_name, "state": "DEPLOYING", "start-time": 0}]
    try:
        return handle.client().list_jobs()
    except ClusterClientError:
        return [{"jid": handle.job_id, "name": handle.job_name, "state": "UNREACHABLE", "start-time": 0}]


@click.command(name="list")
@click.option("-t", "--target", default=None, help="execution.target whose clusters to list (default: from the configuration).")
@conf_dir_option
@dynamic_properties_option
@reports_errors
def list_jobs(target: str | None, conf_dir: Path | None, dynamic_properties: tuple[str, ...]) -> None:
    """List the jobs of the running job clusters."""
    rows = [(h, job) for h in _descriptor(target, conf_dir, dynamic_properties).list_clusters() for job in _jobs(h)]
    if not rows:
        click.echo("No running jobs.")
        return
    width = max(24, *(len(h.cluster_id) for h, _ in rows))
    click.echo(f"{'Started':19}  {'JobID':32}  {'State':11}  {'Cluster':{width}}  {'Name':20}  REST")
    for handle, job in rows:
        started = datetime.datetime.fromtimestamp(job["start-time"] / 1000).strftime("%Y-%m-%d %H:%M:%S") if job.get("start-time") else "-"
        rest = handle.rest_url or "-"
        click.echo(f"{started:19}  {job['jid']:32}  {job['state']:11}  {handle.cluster_id:{width}}  {job['name']:20}  {rest}")


@click.command()
@click.argument("job_id")
@click.option("-t", "--target", default=None, help="execution.target of the job's cluster (default: from the configuration).")
@conf_dir_option
@dynamic_properties_option
@reports_errors
def cancel(job_id: str, target: str | None, conf_dir: Path | None, dynamic_properties: tuple[str, ...]) -> None:
    """Cancel the running job JOB_ID (or the job of the cluster with id JOB_ID); its job cluster then shuts down.

    When the cluster's JobManager does not answer, the cluster is killed through its platform
    (a YARN application killed and its staging directory removed; on Kubernetes its Deployment deleted).
    """
    descriptor = _descriptor(target, conf_dir, dynamic_properties)
    handle = _running_job(descriptor, job_id)
    if handle.rest_url:
        try:
            handle.client().cancel(handle.job_id)
        except ClusterUnreachableError as exc:
            click.echo(f"The JobManager of cluster {handle.cluster_id} does not answer ({exc}); killing the cluster.", err=True)
        else:
            click.echo(f"Cancelled job {handle.job_id} (cluster {handle.cluster_id} shuts down).")
            return
    descriptor.kill_cluster(handle.cluster_id)
    click.echo(f"Killed job cluster {handle.cluster_id} (job {handle.job_id}).")


def _running_job(descriptor: ClusterDescriptor, job_id: str) -> ClusterHandle:
    """The cluster running job ``job_id`` (or the cluster with that id); JobNotFoundError when none is."""
    for handle in descriptor.list_clusters():
        if job_id.lower() in (handle.job_id, handle.cluster_id.lower()):
            return handle
    raise JobNotFoundError(f"no running job with JobID {job_id}; `jobcluster list` shows the running jobs")


def _savepoint_client(descriptor: ClusterDescriptor, job_id: str) -> tuple[ClusterHandle, RestClusterClient]:
    handle = _running_job(descriptor, job_id)
    if handle.rest_url is None:
        raise ClusterClientError(f"job {handle.job_id} is still being deployed: take a savepoint once it runs")
    return handle, handle.client()


@click.command()
@click.argument("job_id")
@click.option(
    "-p",
    "--savepointPath",
    "savepoint_path",
    default=None,
    metavar="DIR",
    help="Directory of the savepoint (a path or URI the cluster's driver reaches). Default: execution.checkpointing.savepoint-dir.",
)
@click.option(
    "-d",
    "--drain",
    is_flag=True,
    help="First process the input the sources have at the request (bounded by execution.checkpointing.timeout).",
)
@click.option("-t", "--target", default=None, help="execution.target of the job's cluster (default: from the configuration).")
@conf_dir_option
@dynamic_properties_option
@reports_errors
def stop(
    job_id: str, savepoint_path: str | None, drain: bool, target: str | None, conf_dir: Path | None, dynamic_properties: tuple[str, ...]
) -> None:
    """Stop the streaming job JOB_ID with a savepoint (Flink's stop-with-savepoint) and print the savepoint's path.

    Each streaming query stops once its running micro-batch has committed, their
    checkpoints are copied into DIR/savepoint-<job id's first 6>-<random>, and
    the job ends FINISHED. A stop that fails leaves the job running (and says
    why). Start a job from the savepoint with `jobcluster run -s PATH`.
    """
    config = load_cli_configuration(conf_dir, dynamic_properties, **{options.EXECUTION_TARGET.key: target})
    descriptor = registry.cluster_descriptor(config.get(options.EXECUTION_TARGET), config)
    handle, client = _savepoint_client(descriptor, job_id)
    try:
        click.echo(f'Suspending job "{handle.job_id}" with a savepoint.', err=True)
        trigger = client.trigger_savepoint(handle.job_id, savepoint_path, stop=True, drain=drain)
        location = client.wait_for_savepoint(handle.job_id, trigger, config.get(options.CHECKPOINTING_TIMEOUT) + SAVEPOINT_WAIT_MARGIN)
    finally:
        client.close()
    click.echo(f"Savepoint completed. Path: {location}")


@click.command()
@click.argument("job_id", required=False)
@click.argument("target_directory", required=False)
@click.option(
    "-d", "--dispose", "dispose", default=None, metavar="PATH", help="Delete the savepoint at PATH instead, on the target's file system."
)
@click.option("-t", "--target", default=None, help="execution.target of the job's cluster (default: from the configuration).")
@conf_dir_option
@dynamic_properties_option
@reports_errors
def savepoint(
    job_id: str | None,
    target_directory: str | None,
    dispose: str | None,
    target: str | None,
    conf_dir: Path | None,
    dynamic_properties: tuple[str, ...],
) -> None:
    """Take a savepoint of the running streaming job JOB_ID into TARGET_DIRECTORY, or dispose of one (-d PATH).

    The savepoint holds each named query's checkpoint up to its last committed
    micro-batch; the job runs on. TARGET_DIRECTORY defaults to
    execution.checkpointing.savepoint-dir.
    """
    if dispose is not None and job_id is not None:
        raise click.UsageError("give either JOB_ID (take a savepoint) or --dispose PATH, not both")
    if dispose is None and job_id is None:
        raise click.UsageError("missing JOB_ID: the job to take a savepoint of (or --dispose PATH)")
    config = load_cli_configuration(conf_dir, dynamic_properties, **{options.EXECUTION_TARGET.key: target})
    descriptor = registry.cluster_descriptor(config.get(options.EXECUTION_TARGET), config)
    if dispose is not None:
        click.echo(f"Disposing savepoint '{dispose}'.", err=True)
        descriptor.dispose_savepoint(dispose)
        click.echo(f"Savepoint '{dispose}' disposed.")
        return
    assert job_id is not None
    handle, client = _savepoint_client(descriptor, job_id)
    try:
        click.echo(f"Triggering savepoint for job {handle.job_id}.", err=True)
        trigger = client.trigger_savepoint(handle.job_id, target_directory, stop=False)
        location = client.wait_for_savepoint(handle.job_id, trigger, config.get(options.CHECKPOINTING_TIMEOUT) + SAVEPOINT_WAIT_MARGIN)
    finally:
        client.close()
    click.echo(f"Savepoint completed. Path: {location}")
    click.echo("You can resume your program from this savepoint with: jobcluster run -s PATH ...", err=True)
