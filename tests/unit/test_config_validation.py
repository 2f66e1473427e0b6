"""Every known option is checked on the client: the key, the value and the expected form are named.

The client checks against every option jobcluster declares (``backends.registry``): the shared ones and
each backend's own, which the config layer's check only gets as an argument.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from jobcluster.backends import registry
from jobcluster.backends.kubernetes.config_options import KUBERNETES_OPTIONS
from jobcluster.backends.registry import validate_configuration
from jobcluster.backends.yarn.config_options import YARN_OPTIONS
from jobcluster.config import validation
from jobcluster.config.configuration import Configuration
from jobcluster.config.options import CORE_OPTIONS
from jobcluster.config.validation import option_problem
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
        ("taskmanager.memory.managed.consumer-weights", "PYTHON", ["consumer-weights", "'PYTHON'", "key:value entries"]),
        ("python.fn-execution.memory.managed", "yes", ["python.fn-execution.memory.managed", "'true' or 'false'"]),
        ("yarn.application.priority", "high", ["yarn.application.priority", "'high'", "an integer"]),
        ("yarn.heartbeat.container-request-interval", "often", ["yarn.heartbeat.container-request-interval", "a duration"]),
        ("yarn.heartbeat-delay", "5 s", ["yarn.heartbeat-delay", "'5 s'", "an integer"]),  # YARN's deprecated key
        ("kubernetes.jobmanager.cpu.amount", "0", ["kubernetes.jobmanager.cpu.amount", "greater than 0"]),
        ("kubernetes.taskmanager.memory.limit-factor", "0.5", ["kubernetes.taskmanager.memory.limit-factor", "at least 1"]),
        ("kubernetes.container.image.pull-policy", "Sometimes", ["unknown kubernetes.container.image.pull-policy 'Sometimes'", "Never"]),
        ("jobcluster.kubernetes.jobmanager.startup-timeout", "later", ["jobcluster.kubernetes.jobmanager.startup-timeout", "a duration"]),
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
        ("yarn.application.priority", "3"),
        ("yarn.heartbeat.container-request-interval", "250"),
        ("kubernetes.rest-service.exposed.type", "Headless_ClusterIP"),
        ("kubernetes.jobmanager.cpu.limit-factor", "1.5"),
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


def test_the_options_to_check_are_the_callers():
    yarn_and_kubernetes = Configuration({"yarn.application.priority": "high", "kubernetes.jobmanager.cpu.amount": "-1"})

    validation.validate_configuration(yarn_and_kubernetes, CORE_OPTIONS)  # keys it does not know pass through
    with pytest.raises(IllegalConfigurationError, match=r"yarn\.application\.priority") as raised:
        validation.validate_configuration(yarn_and_kubernetes, YARN_OPTIONS)
    assert "kubernetes" not in str(raised.value)
    with pytest.raises(IllegalConfigurationError, match=r"kubernetes\.jobmanager\.cpu\.amount"):
        validation.validate_configuration(yarn_and_kubernetes, KUBERNETES_OPTIONS)


def test_all_options_are_the_shared_ones_and_every_backends():
    assert (*CORE_OPTIONS, *YARN_OPTIONS, *KUBERNETES_OPTIONS) == registry.ALL_OPTIONS
    # security.kerberos.login.* and security.delegation.tokens.*: Flink's keys, which only YARN reads so far
    assert {option.key.split(".")[0] for option in YARN_OPTIONS} == {"yarn", "env", "python", "security", "jobcluster"}
    assert {option.key.split(".")[0] for option in KUBERNETES_OPTIONS} == {"kubernetes", "jobcluster"}
    assert not any(option.key.startswith(("yarn.", "kubernetes.")) for option in CORE_OPTIONS)


def test_unset_options_are_not_checked():
    assert all(option_problem(Configuration(), option) is None for option in registry.ALL_OPTIONS)


def test_every_default_is_valid():
    config = Configuration({o.key: o.default for o in registry.ALL_OPTIONS if o.default is not None and o.kind != "duration"})
    validate_configuration(config)


def test_shipped_configuration_is_valid(monkeypatch):
    from jobcluster.config.loader import load_configuration

    monkeypatch.delenv("JOBCLUSTER_CONF_DIR", raising=False)
    validate_configuration(load_configuration())


def test_the_backends_options_load_no_platform_client():
    # The CLI checks every option, the backends' too: a local run must still not import YARN's or Kubernetes' clients.
    code = (
        "import sys, jobcluster.cli.main;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'kubernetes', 'kopf', 'py4j', 'pyspark', 'hdfs'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"
