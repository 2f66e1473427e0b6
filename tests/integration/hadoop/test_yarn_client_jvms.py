"""The operator's bound on its YARN client JVMs (``jobcluster.operator.yarn.client-jvms``): real JVMs against the
test cluster. One JVM takes ~140 MiB; the operator's pod is limited, so a deployment or kill past the bound waits for
one to end and, after a while, fails transiently instead of starting another."""

from __future__ import annotations

import threading

import psutil
import pytest

from jobcluster.backends.yarn.client_jvms import ClientJvms
from jobcluster.backends.yarn.config_options import ENV_HADOOP_CONF_DIR
from jobcluster.backends.yarn.descriptor import YarnClusterDescriptor
from jobcluster.backends.yarn.errors import YarnUnavailableError
from jobcluster.config.configuration import Configuration
from tests.infra.hadoop.cluster import HadoopCluster

pytestmark = pytest.mark.hadoop


def gateway_jvms() -> set[psutil.Process]:
    """This process's live py4j gateway JVMs (other tests of the same worker may keep their own)."""
    return {p for p in psutil.Process().children(recursive=True) if _is_live_gateway(p)}


def _is_live_gateway(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE and "py4j.GatewayServer" in " ".join(process.cmdline())
    except psutil.NoSuchProcess:
        return False


def test_past_the_bound_a_connection_waits_for_a_jvm_to_end_then_fails_transiently(hadoop_cluster: HadoopCluster) -> None:
    before = gateway_jvms()
    said: list[str] = []
    descriptor = YarnClusterDescriptor(Configuration({ENV_HADOOP_CONF_DIR: str(hadoop_cluster.hadoop_conf_dir)}), ClientJvms(1, wait=1.0))
    descriptor.progress = said.append
    first = descriptor._connect()
    try:
        assert first.yarn.applications(["no-such-type"]) == [], "the JVM holding the slot works"
        with pytest.raises(YarnUnavailableError, match=r"all 1 YARN client JVMs stayed busy for 1 s") as refused:
            descriptor._connect()
        assert refused.value.transient, "the operator tries the deployment or removal again later"
        assert said == ["waiting for one of the 1 YARN client JVMs this process runs at once (jobcluster.operator.yarn.client-jvms)"]
        assert len(gateway_jvms() - before) == 1, "no JVM was started past the bound"

        waiting: list[object] = []
        waiter = threading.Thread(target=lambda: waiting.append(descriptor._connect()))
        descriptor.client_jvms.wait = 60.0  # type: ignore[union-attr]
        waiter.start()
        waiter.join(2.0)
        assert waiter.is_alive() and not waiting, "it waits while the slot is held"
    finally:
        first.close()
        first.close()  # closed twice (an error path and the client's own close): the slot is given back once
    waiter.join(60.0)
    (second,) = waiting
    try:
        assert second.yarn.applications(["no-such-type"]) == []  # type: ignore[attr-defined]
    finally:
        second.close()  # type: ignore[attr-defined]
    assert gateway_jvms() - before == set(), "each JVM ends with its client"
