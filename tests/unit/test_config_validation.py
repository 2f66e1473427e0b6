"""Every known option is checked on the client: the key, the value and the expected form are named."""

from __future__ import annotations

import pytest

from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.config.validation import option_problem, validate_configuration
from jobcluster.errors import IllegalConfigurationError


def problem(key: str, value: str) -> str:
    with pytest.raises(IllegalConfigurationError) as raised:
        validate_configuration(Configuration({key: value}))
    return str(raised.value)


@pytest.mark.parametrize(
    ("key", "value", "phrases"),
    [
        ("heartbeat.timeout", "abc", ["heartbeat.timeout", "'abc'", "a duration such as"]),
        ("rest.port", "99999", ["rest.port", "'99999'", "0 to 65535"]),
        ("rest.port", "-1", ["rest.port", "0 to 65535"]),
        ("rest.port", "http", ["rest.port", "an integer"]),
        ("taskmanager.numberOfTaskSlots", "0", ["taskmanager.numberOfTaskSlots", "at least 1"]),
        ("restart-strategy.fixed-delay.attempts", "-2", ["restart-strategy.fixed-delay.attempts", "at least 0"]),
        ("restart-strategy.type", "sometimes", ["unknown restart-strategy.type 'sometimes'", "none", "fixed-delay"]),
        ("restart-strategy", "sometimes", ["unknown restart-strategy 'sometimes'"]),  # a fallback key is named as given
        ("execution.target", "mesos", ["unknown execution.target 'mesos'", "local"]),
        ("execution.attached", "yes", ["execution.attached", "'true' or 'false'"]),
        ("heartbeat.interval", "0 s", ["heartbeat.interval", "greater than 0"]),
        ("jobcluster.logs.max-age", "1 week", ["jobcluster.logs.max-age", "a duration"]),
        ("taskmanager.memory.process.size", "1.5g", ["taskmanager.memory.process.size", "a memory size"]),
        ("taskmanager.memory.managed.fraction", "most", ["taskmanager.memory.managed.fraction", "decimal number"]),
        ("akka.ask.timeout", "soon", ["akka.ask.timeout", "a duration"]),  # a deprecated key is named as given
    ],
)
def test_invalid_values_name_key_value_and_form(key, value, phrases):
    message = problem(key, value)
    for phrase in phrases:
        assert phrase in message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("rest.port", "0"),
        ("rest.port", "65535"),
        ("heartbeat.timeout", "20 s"),
        ("restart-strategy.type", "fixed-delay"),
        ("restart-strategy.fixed-delay.attempts", "0"),
        ("jobcluster.logs.max-age", "3 d"),
        ("some.unknown.key", "anything at all"),
        ("spark.executor.extraJavaOptions", "-Dx=1"),
    ],
)
def test_valid_values_pass(key, value):
    validate_configuration(Configuration({key: value}))


def test_every_problem_is_reported_at_once():
    with pytest.raises(IllegalConfigurationError) as raised:
        validate_configuration(Configuration({"rest.port": "99999", "heartbeat.timeout": "abc"}))
    message = str(raised.value)
    assert "rest.port" in message and "heartbeat.timeout" in message


def test_heartbeat_timeout_not_shorter_than_interval():
    with pytest.raises(IllegalConfigurationError, match=r"heartbeat\.timeout .* must not be shorter than heartbeat\.interval"):
        validate_configuration(Configuration({"heartbeat.interval": "30 s", "heartbeat.timeout": "10 s"}))


def test_unset_options_are_not_checked():
    assert all(option_problem(Configuration(), option) is None for option in options.ALL_OPTIONS)


def test_every_default_is_valid():
    config = Configuration({o.key: o.default for o in options.ALL_OPTIONS if o.default is not None and o.kind != "duration"})
    validate_configuration(config)


def test_shipped_configuration_is_valid(monkeypatch):
    from jobcluster.config.loader import load_configuration

    monkeypatch.delenv("JOBCLUSTER_CONF_DIR", raising=False)
    validate_configuration(load_configuration())
