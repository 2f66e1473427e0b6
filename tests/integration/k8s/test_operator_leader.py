"""Leader election of the operator against the real test API server: one Lease, one active operator.

Two electors race for a Lease (exactly one wins, a release hands over at once,
an unrenewed Lease is taken after its duration); then two operator processes
(``python -m jobcluster.controller``, as test_operator_e2e.py runs it, with the
chart's default timings): exactly one leads; SIGKILL of the leader hands over
once the Lease expires, SIGTERM at once; and each new leader reconciles what
changed after the hand-over (a FlinkJob with ``job.state: suspended`` becomes
SUSPENDED: no job pods needed).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import kubernetes
import pytest
import requests
import yaml

from jobcluster.controller.leader import LeaseElector, LeaseTimings
from tests.infra.k8s.cluster import free_port
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

REPO = Path(__file__).resolve().parents[3]
CRD = REPO / "manifests" / "crd" / "flinkjobs.jobcluster.io.yaml"
TIMEOUT = (5, 30)
GROUP, VERSION, PLURAL = "jobcluster.io", "v1alpha1", "flinkjobs"
LEASE = "jobcluster-operator"
LEASE_DURATION = 15  # the chart's leaderElection.leaseDuration


class Candidate:
    """One operator process with leader election, known in the Lease as ``<name>_<suffix>``."""

    def __init__(self, name: str, env: dict[str, str], namespace: str, log: Path) -> None:
        self.name, self.namespace, self.log = name, namespace, log
        self.env = {**env, "POD_NAME": name, "POD_NAMESPACE": namespace}
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        argv = [sys.executable, "-m", "jobcluster.controller", "--namespace", self.namespace, "--port", str(self.port)]
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(argv, env=self.env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def leads(self) -> bool | None:
        """What its jobcluster_operator_leader gauge says (None: no answer yet)."""
        assert self.process is not None and self.process.poll() is None, f"{self.name} exited:\n{self.log.read_text()[-3000:]}"
        try:
            text = requests.get(f"http://127.0.0.1:{self.port}/metrics", timeout=2).text
        except requests.RequestException:
            return None
        found = re.search(r"^jobcluster_operator_leader (\S+)$", text, re.MULTILINE)
        return None if found is None else float(found.group(1)) == 1.0

    def signal(self, signum: int) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signum)

    def stop(self) -> None:
        self.signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(30)


@pytest.fixture
def namespace(k8s_cluster, k8s_api):
    core = kubernetes.client.CoreV1Api(k8s_api)
    name = f"lead-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}}, _request_timeout=TIMEOUT)
    k8s_cluster.kubectl("apply", "-f", str(CRD))
    yield name
    custom = kubernetes.client.CustomObjectsApi(k8s_api)
    for item in custom.list_namespaced_custom_object(GROUP, VERSION, name, PLURAL, _request_timeout=TIMEOUT)["items"]:
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, name, PLURAL, item["metadata"]["name"], {"metadata": {"finalizers": None}}, _request_timeout=TIMEOUT
        )
    core.delete_namespace(name, _request_timeout=TIMEOUT)


def lease_spec(k8s_api, namespace: str, name: str = LEASE) -> kubernetes.client.V1LeaseSpec:
    return kubernetes.client.CoordinationV1Api(k8s_api).read_namespaced_lease(name, namespace, _request_timeout=TIMEOUT).spec


def race(*electors: LeaseElector) -> list[bool]:
    """Each elector's one try, all started at the same moment."""
    start = threading.Barrier(len(electors))
    results: list[bool] = [False] * len(electors)

    def attempt(i: int) -> None:
        start.wait()
        results[i] = electors[i].try_acquire_or_renew()

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(len(electors))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


def test_of_two_electors_racing_for_a_lease_exactly_one_wins_and_a_release_hands_over_at_once(k8s_api, namespace):
    timings = LeaseTimings()
    for round_ in range(3):  # a Lease to create: one create succeeds, the other is a 409
        a, b = (LeaseElector(k8s_api, namespace, f"race-{round_}", who, timings) for who in ("a", "b"))
        assert sorted(race(a, b)) == [False, True]
        assert lease_spec(k8s_api, namespace, f"race-{round_}").holder_identity in ("a", "b")

    a, b = (LeaseElector(k8s_api, namespace, "hand-over", who, timings) for who in ("a", "b"))
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()  # renewed; b waits for it to expire
    spec = lease_spec(k8s_api, namespace, "hand-over")
    assert (spec.holder_identity, spec.lease_duration_seconds, spec.lease_transitions) == ("a", 15, 0)
    assert a.release() and not a.release()
    assert lease_spec(k8s_api, namespace, "hand-over").holder_identity is None
    assert b.try_acquire_or_renew()  # released: no waiting
    spec = lease_spec(k8s_api, namespace, "hand-over")
    assert (spec.holder_identity, spec.lease_transitions) == ("b", 1)
    assert spec.renew_time >= spec.acquire_time

    # a released Lease, two takers at once: the read resourceVersion lets exactly one replace it
    assert b.release()
    c = LeaseElector(k8s_api, namespace, "hand-over", "c", timings)
    assert sorted(race(a, c)) == [False, True]

    # an unrenewed Lease is taken once it stayed unchanged for its duration, as the taker saw it
    short = LeaseTimings(lease_duration=2, renew_deadline=1, retry_period=0.5)
    a, b = (LeaseElector(k8s_api, namespace, "expiry", who, short) for who in ("a", "b"))
    assert a.try_acquire_or_renew() and not b.try_acquire_or_renew()
    first_seen = time.monotonic()
    taken = wait_for(lambda: b.try_acquire_or_renew(), timeout=10, interval=0.2, what="b takes the expired Lease")
    assert taken and time.monotonic() - first_seen >= 2
    assert not a.try_acquire_or_renew()  # a's Lease is gone: a stays out
    assert lease_spec(k8s_api, namespace, "expiry").holder_identity == "b"


def suspended_flinkjob(k8s_cluster, namespace: str, name: str) -> None:
    document = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "FlinkJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"job": {"source": "print('never runs')", "state": "suspended"}},
    }
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as manifest:
        manifest.write(yaml.safe_dump(document))
        manifest.flush()
        k8s_cluster.kubectl("apply", "-f", manifest.name)


def lifecycle(k8s_api, namespace: str, name: str) -> str | None:
    document = kubernetes.client.CustomObjectsApi(k8s_api).get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, _request_timeout=TIMEOUT
    )
    return (document.get("status") or {}).get("lifecycleState")


def the_leader(k8s_api, namespace: str, candidates: list[Candidate]) -> Candidate | None:
    """The one candidate that holds the Lease and says it leads, while every other says it stands by; else None."""
    answers = [c.leads() for c in candidates]
    if None in answers or answers.count(True) != 1:
        return None
    leader = candidates[answers.index(True)]
    holder = lease_spec(k8s_api, namespace).holder_identity or ""
    return leader if holder.startswith(f"{leader.name}_") else None


def test_two_operators_one_leads_a_killed_leader_is_replaced_after_the_lease_and_a_stopped_one_at_once(
    k8s_cluster, k8s_api, namespace, tmp_path
):
    env = k8s_cluster.env()
    candidates = [Candidate(name, env, namespace, tmp_path / f"{name}.log") for name in ("op-a", "op-b")]
    try:
        for candidate in candidates:
            candidate.start()
        first = wait_for(lambda: the_leader(k8s_api, namespace, candidates), timeout=60, interval=0.5, what="exactly one leader")
        (standby,) = [c for c in candidates if c is not first]
        suspended_flinkjob(k8s_cluster, namespace, "before")
        wait_for(lambda: lifecycle(k8s_api, namespace, "before") == "SUSPENDED", timeout=30, what="the leader reconciles")

        # SIGKILL: nothing is released; the standby takes over once the Lease went unrenewed for its duration
        first.signal(signal.SIGKILL)
        killed = time.monotonic()
        first.stop()
        wait_for(lambda: the_leader(k8s_api, namespace, [standby]), timeout=LEASE_DURATION + 10, interval=0.2, what="the standby leads")
        took = time.monotonic() - killed
        print(f"hand-over after SIGKILL: {took:.1f} s")
        assert LEASE_DURATION - 3 <= took <= LEASE_DURATION + 5, took  # 2 s renewals: it saw the last one at most 2 s before the kill
        suspended_flinkjob(k8s_cluster, namespace, "after-kill")
        wait_for(lambda: lifecycle(k8s_api, namespace, "after-kill") == "SUSPENDED", timeout=30, what="the new leader reconciles")

        # the killed pod's restart stands by; SIGTERM to the leader releases the Lease and it takes over at once
        restarted = Candidate("op-c", env, namespace, tmp_path / "op-c.log")
        candidates.append(restarted)
        restarted.start()
        wait_for(lambda: restarted.leads() is False, timeout=60, interval=0.5, what="the restarted operator stands by")
        transitions = lease_spec(k8s_api, namespace).lease_transitions
        standby.signal(signal.SIGTERM)
        stopped = time.monotonic()
        wait_for(lambda: the_leader(k8s_api, namespace, [restarted]), timeout=15, interval=0.1, what="the restarted operator leads")
        took = time.monotonic() - stopped
        print(f"hand-over after SIGTERM: {took:.1f} s")
        assert took < 5, took
        assert standby.process is not None and standby.process.wait(15) == 0, standby.log.read_text()[-3000:]
        assert lease_spec(k8s_api, namespace).lease_transitions == transitions + 1
        suspended_flinkjob(k8s_cluster, namespace, "after-term")
        wait_for(lambda: lifecycle(k8s_api, namespace, "after-term") == "SUSPENDED", timeout=30, what="the third leader reconciles")
    finally:
        for candidate in candidates:
            candidate.stop()
        print("operator logs:", *(c.log for c in candidates))
