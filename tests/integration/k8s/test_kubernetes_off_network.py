"""The CLI where the pod network is not routed, as on a laptop: it follows, lists and cancels jobs through the API server.

The CLI runs in a network namespace of its own whose only route leads to the
node's address, where the API server listens; the JobManager pods' IPs
(10.244.0.0/24) cannot be reached from there. The client notices and reaches
the JobManager through the API server's ``pods/portforward``, as
``kubectl port-forward`` does, with no extra option.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import kubernetes
import pytest

from tests.infra.k8s.node import NODE_IP, POD_GATEWAY
from tests.integration.k8s.pods import TEST_NODE_CPU, image_options
from tests.integration.k8s.test_kubernetes_cluster_objects import objects_of
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

REPO = Path(__file__).resolve().parents[3]
WAITS = REPO / "tests" / "e2e" / "programs" / "waits.py"
TIMEOUT = (5, 30)


@pytest.fixture(scope="module")
def off_network():
    """``ip netns exec <ns>``: a network namespace routed to the node's address only (a /30 link to this machine)."""
    tag = uuid.uuid4().hex[:4]
    netns, inside, outside = f"jc-off-{tag}", f"jco{tag}", f"jch{tag}"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)

    ip("netns", "add", netns)
    try:
        ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        ip("link", "set", inside, "netns", netns)
        ip("addr", "add", "10.251.0.1/30", "dev", outside)
        ip("link", "set", outside, "up")
        ip("-n", netns, "addr", "add", "10.251.0.2/30", "dev", inside)
        ip("-n", netns, "link", "set", inside, "up")
        ip("-n", netns, "link", "set", "lo", "up")
        ip("-n", netns, "route", "add", f"{NODE_IP}/32", "via", "10.251.0.1")
        yield ["ip", "netns", "exec", netns]
    finally:
        subprocess.run(["ip", "link", "del", outside], capture_output=True, timeout=30, check=False)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True, timeout=30, check=False)


@pytest.fixture(scope="module")
def namespace(k8s_cluster, k8s_api):
    core = kubernetes.client.CoreV1Api(k8s_api)
    name = f"off-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}}, _request_timeout=TIMEOUT)
    k8s_cluster.kubectl("apply", "-n", name, "-f", str(REPO / "manifests" / "rbac.yaml"))
    yield name
    core.delete_namespace(name, _request_timeout=TIMEOUT)


def options(namespace: str, image: str, cluster_id: str) -> list[str]:
    values = {
        **image_options(image),
        "kubernetes.namespace": namespace,
        "kubernetes.cluster-id": cluster_id,
        "kubernetes.jobmanager.service-account": "jobcluster",
        **TEST_NODE_CPU,
        "taskmanager.numberOfTaskSlots": "1",
    }
    return [arg for key, value in values.items() for arg in ("-D", f"{key}={value}")]


def jobcluster(prefix: list[str], env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "jobcluster", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env=env,
        check=False,
    )


def test_the_pod_network_is_not_routed_from_the_namespace(off_network):
    """The premise: from the namespace the pods' gateway is unreachable, the API server's address is not."""
    unreachable = subprocess.run([*off_network, "ip", "route", "get", POD_GATEWAY], capture_output=True, text=True, timeout=30)
    assert unreachable.returncode != 0 and "unreachable" in unreachable.stderr.lower(), unreachable
    assert subprocess.run([*off_network, "ip", "route", "get", NODE_IP], capture_output=True, timeout=30).returncode == 0


def test_attached_and_detached_runs_list_and_cancel_from_off_the_pod_network(k8s_cluster, k8s_api, k8s_image, namespace, off_network):
    env = {**k8s_cluster.env(), "PYTHONPATH": os.pathsep.join(sys.path)}
    target = ["-t", "kubernetes-application", "-D", f"kubernetes.namespace={namespace}"]

    attached = jobcluster(off_network, env, "run", *target, "-p", "1", *options(namespace, k8s_image, "offnet-a"), str(WAITS), "3")
    assert attached.returncode == 0, attached.stderr[-4000:]
    assert "Reaching the JobManager pod offnet-a-" in attached.stderr and "cannot be reached from here" in attached.stderr
    assert re.search(r"Job [0-9a-f]{32} \(\S+\) FINISHED", attached.stderr), attached.stderr[-3000:]
    assert "done" in attached.stdout  # the program's output, streamed through the forward

    detached = jobcluster(off_network, env, "run", "-d", *target, "-p", "1", *options(namespace, k8s_image, "offnet-d"), str(WAITS), "600")
    assert detached.returncode == 0, detached.stderr[-4000:]
    job_id = re.search(r"[0-9a-f]{32}", detached.stdout + detached.stderr).group(0)

    def listed_running() -> str | None:
        listing = jobcluster(off_network, env, "list", *target)
        rows = [line for line in listing.stdout.splitlines() if job_id in line] if listing.returncode == 0 else []
        return rows[0] if rows and "RUNNING" in rows[0] else None

    row = wait_for(listed_running, timeout=300, interval=2, what=f"job {job_id} RUNNING in `jobcluster list` off the pod network")
    assert "offnet-d" in row
    # the command the run printed to cancel the job, as a user would paste it: it names the target and the namespace
    cancel = re.search(r"cancel it:\s+jobcluster (cancel .*)", detached.stdout)
    assert cancel and f"-D kubernetes.namespace={namespace}" in cancel.group(1), detached.stdout
    cancelled = jobcluster(off_network, env, *shlex.split(cancel.group(1)))
    assert cancelled.returncode == 0, cancelled.stderr
    assert f"Cancelled job {job_id}" in cancelled.stdout
    wait_for(lambda: not objects_of(k8s_api, namespace), timeout=120, what=f"no job cluster object left in {namespace}")
