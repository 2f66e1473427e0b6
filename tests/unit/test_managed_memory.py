"""Managed memory's consumers in a PySpark job: Flink's consumer weights read as Flink reads them, and the shares."""

import pytest

from jobcluster.config.configuration import Configuration, InvalidValueError
from jobcluster.errors import IllegalConfigurationError
from jobcluster.memory.managed import DEFAULT_CONSUMERS, ManagedMemoryConsumers, consumer_weights

MiB = 1 << 20
WEIGHTS = "taskmanager.memory.managed.consumer-weights"


def consumers(config: dict[str, str]) -> ManagedMemoryConsumers:
    return ManagedMemoryConsumers.from_config(Configuration(config))


@pytest.mark.parametrize(
    ("configured", "weights"),
    [
        ({"OPERATOR": "70", "STATE_BACKEND": "70", "PYTHON": "30"}, {"OPERATOR": 70, "STATE_BACKEND": 70, "PYTHON": 30}),
        ({"PYTHON": "30"}, {"OPERATOR": 0, "STATE_BACKEND": 0, "PYTHON": 30}),  # a kind left out weighs 0
        ({"DATAPROC": "50", "PYTHON": "10"}, {"OPERATOR": 50, "STATE_BACKEND": 50, "PYTHON": 10}),  # Flink 1.11's name
        ({"DATAPROC": "50", "OPERATOR": "7"}, {"OPERATOR": 7, "STATE_BACKEND": 50, "PYTHON": 0}),  # the newer name wins
        ({"GPU": "99", "PYTHON": " 1 "}, {"OPERATOR": 0, "STATE_BACKEND": 0, "PYTHON": 1}),  # unknown names are ignored
    ],
)
def test_weights_are_read_as_flink_reads_them(configured, weights):
    assert consumer_weights(configured) == weights


def test_a_negative_weight_is_refused_with_flinks_sentence_and_the_key():
    with pytest.raises(IllegalConfigurationError) as caught:
        consumer_weights({"PYTHON": "-1"})
    assert str(caught.value) == f"Managed memory weight should not be negative. Configured weight for PYTHON is -1 ({WEIGHTS})."


def test_a_weight_that_is_no_integer_names_the_key_and_the_consumer():
    with pytest.raises(InvalidValueError, match=rf"Could not parse value '30%' for key '{WEIGHTS}': the weight of PYTHON"):
        consumers({WEIGHTS: "OPERATOR:70,PYTHON:30%"})


def test_flinks_defaults_give_python_30_of_100():
    # STATE_BACKEND has no consumer in a PySpark job, so only OPERATOR (70) and PYTHON (30) share
    assert (DEFAULT_CONSUMERS.operator_weight, DEFAULT_CONSUMERS.python_weight) == (70, 30)
    managed = 805306380  # the shipped TaskManager's
    assert DEFAULT_CONSUMERS.python_share(managed) == 241591914  # 30 %, rounded down
    assert DEFAULT_CONSUMERS.operator_share(managed) == 563714466
    assert DEFAULT_CONSUMERS.configured == "OPERATOR:70,STATE_BACKEND:70,PYTHON:30"


def test_python_not_using_managed_memory_leaves_it_all_to_spark():
    found = consumers({"python.fn-execution.memory.managed": "false"})
    assert (found.python_weight, found.python_uses_managed) == (0, False)
    assert found.python_share(768 * MiB) == 0
    assert found.operator_share(768 * MiB) == 768 * MiB


@pytest.mark.parametrize(
    ("configured", "operator", "python"),
    [
        ("OPERATOR:70,PYTHON:0", 1000, 0),  # PYTHON weighs 0: everything to Spark's off-heap memory
        ("OPERATOR:0,PYTHON:30", 0, 1000),  # OPERATOR weighs 0: everything to the PySpark workers
        ("OPERATOR:0,PYTHON:0", 0, 0),  # no consumer weighs anything: nobody gets any (Flink: fraction 0)
        ("OPERATOR:1,PYTHON:2", 333, 666),  # each rounded down; the byte left over is nobody's
        ("STATE_BACKEND:500,OPERATOR:1,PYTHON:1", 500, 500),  # STATE_BACKEND does not count
    ],
)
def test_shares_follow_the_weights_of_the_consumers_a_pyspark_job_has(configured, operator, python):
    found = consumers({WEIGHTS: configured})
    assert (found.operator_share(1000), found.python_share(1000)) == (operator, python)
    assert found.operator_share(1000) + found.python_share(1000) <= 1000


def test_tiny_managed_memory_is_shared_to_the_byte():
    assert DEFAULT_CONSUMERS.python_share(MiB - 1) == (MiB - 1) * 30 // 100
    assert DEFAULT_CONSUMERS.python_share(0) == DEFAULT_CONSUMERS.operator_share(0) == 0
