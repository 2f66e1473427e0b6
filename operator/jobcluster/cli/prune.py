"""``jobcluster prune``: remove the logs of ended job clusters, and the files on the cluster that no job used for a
while (``yarn-application``: the shipped Python environment's parts), now instead of at the next deployment."""

from __future__ import annotations

from pathlib import Path

import click

from jobcluster.backends import registry
from jobcluster.cli.common import conf_dir_option, dynamic_properties_option, load_cli_configuration, reports_errors
from jobcluster.config import options
from jobcluster.config.values import parse_duration


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(f"{exc}; expected a duration such as '3 d', '12 h' or '0 s'", ctx=ctx, param=param) from None


@click.command()
@click.option("-t", "--target", default=None, help="execution.target whose logs to prune (default: from the configuration).")
@click.option(
    "--older-than",
    "older_than",
    default=None,
    metavar="DURATION",
    callback=_duration,
    help="Remove the logs of ended clusters with nothing written for this long, e.g. '1 d'; '0 s' removes all of them "
    "(default: jobcluster.logs.max-age); and the files shared by jobs that no job used for this long (default: "
    "jobcluster.yarn.shared-files.retention).",
)
@conf_dir_option
@dynamic_properties_option
@reports_errors
def prune(target: str | None, older_than: float | None, conf_dir: Path | None, dynamic_properties: tuple[str, ...]) -> None:
    """Remove the logs of ended job clusters (never those of a running one), and the files shared by jobs that no
    job used for a while (never those a running one may use)."""
    config = load_cli_configuration(conf_dir, dynamic_properties, **{options.EXECUTION_TARGET.key: target})
    max_age = older_than if older_than is not None else config.get(options.LOGS_MAX_AGE)
    descriptor = registry.cluster_descriptor(config.get(options.EXECUTION_TARGET), config)
    removed = descriptor.prune_logs(max_age)
    for path in removed:
        click.echo(f"Removed {path}")
    click.echo(f"Removed the logs of {len(removed)} ended job cluster(s).")
    shared = descriptor.prune_shared_files(older_than)
    for path in shared:
        click.echo(f"Removed {path}")
    if shared:
        click.echo(f"Removed {len(shared)} shared file(s) no job used lately.")
