"""Session fixtures for tests against the real Hadoop test cluster (here, for every integration test:
the operator's tests on Kubernetes deploy to it as well).

The cluster (tests/infra/hadoop) starts once per session, and only when a
test that needs it is selected: ``hadoop_cluster`` is a lazy session fixture.
Its teardown always stops every daemon and container; when any test of the
session failed it keeps the logs (daemons and YARN containers) and prints
where they are.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest

# `tests.infra...` must import under a plain `pytest` as well as under
# `python -m pytest` (which puts the working directory on sys.path).
REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from jobcluster.backends.yarn.gateway import JvmGateway  # noqa: E402
from tests.infra.hadoop.cluster import HadoopCluster  # noqa: E402
from tests.infra.hadoop.secure_cluster import KerberizedHadoopCluster  # noqa: E402
from tests.infra.hadoop.secureconf import USERS_GROUP, KerberosSettings, ProxyUser  # noqa: E402

_kept_logs: list[Path] = []
_Cluster = TypeVar("_Cluster", bound=HadoopCluster)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say where the logs of a failed session's cluster are, after the results."""
    for path in _kept_logs:
        terminalreporter.write_line(f"Hadoop test cluster logs kept in {path}", yellow=True)


def _running(request: pytest.FixtureRequest, cluster: _Cluster) -> Iterator[_Cluster]:
    """``cluster`` started for the session, stopped after it; its logs kept (and their path printed) when it
    failed to start or a test failed meanwhile."""
    try:
        cluster.start()
    except BaseException:
        # start() has stopped what it started and kept the logs; its error
        # names the daemon and shows the end of its log.
        _kept_logs.append(cluster.log_dir)
        raise
    failed_before = request.session.testsfailed
    try:
        yield cluster
    finally:
        keep = request.session.testsfailed > failed_before
        cluster.stop(keep_logs=keep)
        if keep:
            _kept_logs.append(cluster.log_dir)


@pytest.fixture(scope="session")
def hadoop_cluster(request: pytest.FixtureRequest) -> Iterator[HadoopCluster]:
    """A running NameNode, DataNode, ResourceManager and NodeManager."""
    yield from _running(request, HadoopCluster())


@pytest.fixture(scope="session")
def yarn_jvm(hadoop_cluster: HadoopCluster) -> Iterator[JvmGateway]:
    """A py4j JVM with pyspark's Hadoop client jars, configured for the test cluster."""
    with JvmGateway(hadoop_cluster.hadoop_conf_dir, log_file=hadoop_cluster.log_dir / "test-gateway.log") as gateway:
        yield gateway


OPERATOR_USER = "operator"
"""The principal of the FlinkJob operator on the Kerberized cluster: a proxy user of the test users."""

KERBEROS_SETTINGS = KerberosSettings(
    token_max_lifetime_min=4 * 60,
    token_renew_interval_min=30,
    users=("alice", "bob", OPERATOR_USER),
    proxy_users={OPERATOR_USER: ProxyUser(hosts="*", groups=USERS_GROUP)},
)
"""The Kerberized cluster's settings: delegation tokens shorter-lived than Hadoop's defaults (7 days,
renewed by the day), so a test can tell the configured ones from the defaults, yet long enough for
any test that does not mean to watch a token expire; and an operator principal that may act as any
user of the group ``users`` (alice and bob), as a site allows its FlinkJob operator, while no rule
lets anyone else impersonate (bob as alice is refused, the operator as a user outside the group too)."""


@pytest.fixture(scope="session")
def kerberized_hadoop_cluster(request: pytest.FixtureRequest) -> Iterator[KerberizedHadoopCluster]:
    """The Kerberized cluster (tests/infra/hadoop/secure_cluster.py): its KDC, and the
    NameNode, DataNode, ResourceManager and NodeManager in secure mode. Apart from
    ``hadoop_cluster``: a session may run both."""
    yield from _running(request, KerberizedHadoopCluster(settings=KERBEROS_SETTINGS))


SHORT_TOKENS = KerberosSettings(token_max_lifetime_min=2, token_renew_interval_min=1)
"""A Kerberized cluster whose delegation tokens live two minutes at most and need renewing every minute: a job that
outlives them within one test (Hadoop's defaults: 7 days, 1 day)."""


@pytest.fixture(scope="module")
def short_token_hadoop_cluster(request: pytest.FixtureRequest) -> Iterator[KerberizedHadoopCluster]:
    """A Kerberized cluster of its own with ``SHORT_TOKENS``, for the module that needs it (it costs a cluster's start)."""
    yield from _running(request, KerberizedHadoopCluster(settings=SHORT_TOKENS))
