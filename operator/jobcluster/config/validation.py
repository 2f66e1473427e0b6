"""Checking every known option before anything is deployed.

Why here and not where an option is read: a value is otherwise parsed only
by the process that uses it, so a bad ``heartbeat.timeout`` would pass the
client, start a cluster and fail seconds later inside the entrypoint.  The
client calls :func:`validate_configuration` first, and every problem is
reported at once, each naming the key, the value and the expected form.
Keys jobcluster does not know are not checked; they pass through untouched.
The options to check are an argument: the backends declare their own, which
this layer cannot import (``backends.registry.validate_configuration`` passes
every option).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jobcluster.config import options
from jobcluster.config.config_option import ConfigOption
from jobcluster.config.configuration import Configuration
from jobcluster.config.values import parse_port_ranges
from jobcluster.errors import IllegalConfigurationError

#: The form each kind of value takes, as the error messages describe it.
EXPECTED_FORM = {
    "memory": "a memory size such as '1728m', '1 gb' or a plain number of bytes",
    "int": "an integer",
    "float": "a decimal number such as '0.4'",
    "double": "a decimal number such as '1.5'",
    "bool": "'true' or 'false'",
    "duration": "a duration such as '10 s', '500 ms', '2 min' or '7 d' (a plain number is milliseconds)",
    "str": "a text",
    "map": "key:value entries separated by commas, such as 'OPERATOR:70,PYTHON:30'",
}


def validate_configuration(config: Configuration, known: Iterable[ConfigOption[Any]]) -> None:
    """Check the value of every option in ``known`` that ``config`` sets, then the rules between options.

    ``known``: the options to check, e.g. ``backends.registry.ALL_OPTIONS`` (every option jobcluster declares).

    Raises:
        IllegalConfigurationError: one line per problem, each naming the key,
            the value given and what is expected.
    """
    problems = [problem for option in known if (problem := option_problem(config, option))]
    if not problems:
        problems = cross_option_problems(config)
    if len(problems) == 1:
        raise IllegalConfigurationError(problems[0])
    if problems:
        raise IllegalConfigurationError("invalid configuration:\n  - " + "\n  - ".join(problems))


def option_problem(config: Configuration, option: ConfigOption[Any]) -> str | None:
    """Why the value ``config`` gives ``option`` is not acceptable, or None (also when it is unset)."""
    key = next((k for k in option.all_keys if k in config), None)
    if key is None:
        return None
    text = config[key]
    try:
        value = config.get(option)
    except IllegalConfigurationError:
        return f"{key}: '{text}' is not {EXPECTED_FORM[option.kind]}"
    if option.choices and value not in option.choices:
        return f"unknown {key} '{text}'; expected one of: {', '.join(option.choices)}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return _range_problem(key, text, value, option)


def _range_problem(key: str, text: str, value: float, option: ConfigOption[Any]) -> str | None:
    unit = _UNIT.get(option.kind, "")
    if option.positive and value <= 0:
        return f"{key}: '{text}' must be greater than 0{unit}"
    low, high = option.minimum, option.maximum
    if (low is not None and value < low) or (high is not None and value > high):
        if low is not None and high is not None:
            return f"{key}: '{text}' is out of range; expected {_number(low)} to {_number(high)}{unit}"
        if low is not None:
            return f"{key}: '{text}' is too small; expected at least {_number(low)}{unit}"
        assert high is not None
        return f"{key}: '{text}' is too large; expected at most {_number(high)}{unit}"
    return None


_UNIT = {"memory": " bytes", "duration": " s"}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def cross_option_problems(config: Configuration) -> list[str]:
    """Rules that involve more than one option (read only once each option is valid on its own).

    Flink's ``HeartbeatServices``: the heartbeat timeout must not be shorter than the interval. Also the text options
    with a syntax of their own (``rest.bind-port``'s port ranges).
    """
    problems = []
    interval, timeout = config.get(options.HEARTBEAT_INTERVAL), config.get(options.HEARTBEAT_TIMEOUT)
    if timeout < interval:
        problems.append(f"heartbeat.timeout ({_number(timeout)} s) must not be shorter than heartbeat.interval ({_number(interval)} s)")
    bind_port = config.get(options.REST_BIND_PORT)
    if bind_port is not None:
        try:
            parse_port_ranges(bind_port)
        except ValueError as exc:
            problems.append(f"{options.REST_BIND_PORT.key}: {exc}")
    return problems
