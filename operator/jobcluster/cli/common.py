"""Options and error handling shared by the CLI commands."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from jobcluster.backends.registry import validate_configuration
from jobcluster.config.configuration import Configuration
from jobcluster.config.loader import load_configuration, parse_dynamic_property
from jobcluster.errors import JobClusterError

_F = TypeVar("_F", bound=Callable[..., Any])
_P = ParamSpec("_P")
_R = TypeVar("_R")


def conf_dir_option(f: _F) -> _F:
    return click.option(
        "-c",
        "--conf-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Directory holding jobcluster.yaml, Flink's config.yaml, or both (default: $JOBCLUSTER_CONF_DIR, else the packaged defaults).",
    )(f)


def check_dynamic_properties(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """Click callback of ``-D``: each value must be ``key=value`` (a usage error, exit 2, otherwise)."""
    for text in values:
        try:
            parse_dynamic_property(text)
        except JobClusterError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return values


def dynamic_properties_option(f: _F) -> _F:
    return click.option(
        "-D",
        "dynamic_properties",
        multiple=True,
        metavar="KEY=VALUE",
        callback=check_dynamic_properties,
        help="Set a configuration option, overriding the file (repeatable), e.g. -D taskmanager.numberOfTaskSlots=2.",
    )(f)


def load_cli_configuration(conf_dir: Path | None, dynamic_properties: tuple[str, ...], **overrides: Any) -> Configuration:
    """The configuration of a CLI call: file, then -D, then the command's own options (non-None ``overrides``).

    Every option jobcluster knows is validated here, before anything is deployed.

    Raises:
        IllegalConfigurationError: the conf dir or file is unusable, or an option's value is invalid.
    """
    dynamic = dict(parse_dynamic_property(p) for p in dynamic_properties)
    config = load_configuration(conf_dir, dynamic)
    for key, value in overrides.items():
        if value is not None:
            config.set(key, str(value))
    validate_configuration(config)
    return config


def reports_errors(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turn JobClusterError into one 'Error: ...' line on stderr and exit code 1."""

    @functools.wraps(command)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return command(*args, **kwargs)
        except JobClusterError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(1)

    return wrapper
