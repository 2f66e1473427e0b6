"""The body of the ``kafka_cluster`` session fixtures (tests/conftest.py, and the Kubernetes tests' variant)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.infra.kafka.cluster import KafkaCluster

KEPT_KAFKA_LOGS: list[Path] = []
"""Log directories of brokers kept because a test failed; tests/conftest.py prints them after the results."""


def kafka_session(request: pytest.FixtureRequest, pod_address: str | None = None) -> Iterator[KafkaCluster]:
    """Start a broker (with a listener on ``pod_address`` when given), yield it, stop it; keep its logs when a test failed."""
    cluster = KafkaCluster(pod_address=pod_address)
    try:
        cluster.start()
    except BaseException:
        # start() has stopped the JVM and kept the logs; its error shows the end of the broker's log.
        KEPT_KAFKA_LOGS.append(cluster.log_dir)
        raise
    failed_before = request.session.testsfailed
    try:
        yield cluster
    finally:
        keep = request.session.testsfailed > failed_before
        cluster.stop(keep_logs=keep)
        if keep:
            KEPT_KAFKA_LOGS.append(cluster.log_dir)
