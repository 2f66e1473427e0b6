"""``jobcluster list`` and ``jobcluster cancel``: the jobs of the running job clusters."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import click

from jobcluster.backends import registry
from jobcluster.cli.common import conf_dir_option, dynamic_properties_option, load_cli_configuration, reports_errors
from jobcluster.client.descriptor import ClusterDescriptor, ClusterHandle
from jobcluster.config import options
from jobcluster.errors import ClusterClientError, ClusterUnreachableError, JobNotFoundError


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
    for handle in descriptor.list_clusters():
        if job_id.lower() not in (handle.job_id, handle.cluster_id.lower()):
            continue
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
        return
    raise JobNotFoundError(f"no running job with JobID {job_id}; `jobcluster list` shows the running jobs")
