"""Session fixture: Flink's own client (tests/infra/flink), resolved once and compiled once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.infra.flink.client import FlinkClient, build_classpath


@pytest.fixture(scope="session")
def flink_client() -> Iterator[FlinkClient]:
    client = FlinkClient(build_classpath())
    yield client
    client.close()
