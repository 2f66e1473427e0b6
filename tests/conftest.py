"""Fixtures every layer may use: the real Kafka test broker (tests/infra/kafka), Spark's Kafka connector, an S3 server
(tests/infra/s3), browser artefacts.

The broker starts once per session, and only when a test that needs it is
selected: ``kafka_cluster`` is a lazy session fixture, as ``hadoop_cluster``
is. Its teardown always stops the JVM; when any test of the session failed it
keeps the broker's logs and prints where they are. Tests under
``tests/integration/k8s`` get a broker that pods reach as well (their
conftest overrides ``kafka_cluster``).
"""

from __future__ import annotations

import os
import re
import shutil
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
from tests.infra.s3.server import S3Server  # noqa: E402
from tests.support.kafka_session import KEPT_KAFKA_LOGS, kafka_session  # noqa: E402

# Every JVM the tests start on this machine (Spark's drivers, workers and executors on every local target and in YARN's
# containers, Hadoop's daemons and tools, Flink's CLI) inherits these. On the test machine's 2 cores, shared by dozens
# of short-lived JVMs, the client compiler alone and the serial collector take about 40% off a short Spark job's CPU
# time (docs/development/testing.md); the jobs' data is too small for C2's code to pay off. The test image's base sets the same for the
# pods' JVMs (tests/infra/image/build.sh). The product's own defaults are unchanged: only its daemons run so.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
if TEST_JVM_OPTIONS not in os.environ.get("JAVA_TOOL_OPTIONS", ""):
    os.environ["JAVA_TOOL_OPTIONS"] = " ".join(filter(None, (os.environ.get("JAVA_TOOL_OPTIONS"), TEST_JVM_OPTIONS)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say where the logs of a failed session's broker are, after the results."""
    for path in KEPT_KAFKA_LOGS:
        terminalreporter.write_line(f"Kafka test broker logs kept in {path}", yellow=True)


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[KafkaCluster]:
    """A running one-node KRaft Kafka cluster; clients on this machine use ``bootstrap_servers``."""
    yield from kafka_session(request)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """An S3-compatible server (moto's, in memory) on 127.0.0.1, for s3a:// through Hadoop's S3A connector."""
    with S3Server() as server:
        yield server


@pytest.fixture(scope="session")
def spark_kafka_jars() -> list[Path]:
    """Spark's Kafka connector for pyspark's Spark version (4 jars), for ``jobcluster run --jars``."""
    return spark_kafka_connector_jars()


@pytest.fixture
def browser_artefacts(request: pytest.FixtureRequest) -> Path:
    """This test's directory for screenshots and browser logs (tests/support/browser.py), emptied first.

    ``${JOBCLUSTER_TEST_ARTEFACTS:-<repo>/out/test-artefacts}/<test name>/``: it
    outlives the run, so that a failed test's last screenshot can be looked at.
    """
    root = Path(os.environ.get("JOBCLUSTER_TEST_ARTEFACTS") or REPO / "out" / "test-artefacts")
    # a parametrized test's name carries its parameters, which may hold any character
    directory = root / re.sub(r"[^\w.\[\]-]", "_", request.node.name)
    # what an earlier run left would pass for this run's evidence
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory
