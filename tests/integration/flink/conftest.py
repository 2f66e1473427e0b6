"""Session fixture: Flink's own client (tests/infra/flink) of each tested release, resolved and compiled once per session.

Parametrized over ``tests/infra/flink/versions`` (Flink 1.20 and 2.3): every test
that takes ``flink_client`` runs once per release, and pytest groups the tests
by release, so each client is compiled once.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.infra.flink.client import VERSIONS, FlinkClient, build_classpath


@pytest.fixture(scope="session", params=VERSIONS, ids=[f"flink-{version}" for version in VERSIONS])
def flink_client(request: pytest.FixtureRequest) -> Iterator[FlinkClient]:
    version: str = request.param
    client = FlinkClient(build_classpath(version), version)
    yield client
    client.close()
