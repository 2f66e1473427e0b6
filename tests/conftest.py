"""Session fixtures every layer may use: the real Kafka test broker (tests/infra/kafka) and Spark's Kafka connector.

The broker starts once per session, and only when a test that needs it is
selected: ``kafka_cluster`` is a lazy session fixture, as ``hadoop_cluster``
is. Its teardown always stops the JVM; when any test of the session failed it
keeps the broker's logs and prints where they are. Tests under
``tests/integration/k8s`` get a broker that pods reach as well (their
conftest overrides ``kafka_cluster``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# `tests.infra...` must import under a plain `pytest` as well as under
# `python -m pytest` (which puts the working directory on sys.path).
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.infra.kafka.cluster import KafkaCluster, spark_kafka_connector_jars  # noqa: E402
from tests.support.kafka_session import KEPT_KAFKA_LOGS, kafka_session  # noqa: E402


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say where the logs of a failed session's broker are, after the results."""
    for path in KEPT_KAFKA_LOGS:
        terminalreporter.write_line(f"Kafka test broker logs kept in {path}", yellow=True)


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[KafkaCluster]:
    """A running one-node KRaft Kafka cluster; clients on this machine use ``bootstrap_servers``."""
    yield from kafka_session(request)


@pytest.fixture(scope="session")
def spark_kafka_jars() -> list[Path]:
    """Spark's Kafka connector for pyspark's Spark version (4 jars), for ``jobcluster run --jars``."""
    return spark_kafka_connector_jars()
