"""The operator's one adapter over every target's ClusterDescriptor: what it asks the descriptor, in which case.

The descriptor and the target's hooks are recording stand-ins (the real ones run in
tests/integration/k8s/test_operator_e2e.py and test_chart.py); a cluster that ends
between being found and being killed is a race a real platform does not produce on demand.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import threading

import pytest

from jobcluster.client.descriptor import ClusterDescriptor, ClusterHandle, JobResult
from jobcluster.client.operator_hook import ClusterRef, InvalidSpecError
from jobcluster.config.configuration import Configuration
from jobcluster.controller.clusters import ClusterAccessLostError, DescriptorClusters
from jobcluster.errors import DeploymentError, NotFoundError

REF = ClusterRef("yarn-per-job", "jobs", "wc", "u-1")
RESULT = JobResult("app-1", "f" * 32, "FAILED", "2026-11-26T12:00:00Z", "boom")


class Descriptor(ClusterDescriptor):
    target = "yarn-per-job"

    def __init__(self, running: dict[str, ClusterHandle | None], pending: str | None = None) -> None:
        self.running = running
        self.pending = pending
        self.calls: list[tuple[str, str]] = []

    def deploy_job_cluster(self, spec, graph, program, config):
        raise AssertionError("not deployed here")

    def retrieve(self, cluster_id):
        self.calls.append(("retrieve", cluster_id))
        return self.running.get(cluster_id)

    def job_result(self, cluster_id):
        self.calls.append(("job_result", cluster_id))
        return RESULT

    def pending_reason(self, cluster_id):
        return self.pending

    def remove_job_result(self, cluster_id):
        self.calls.append(("remove_job_result", cluster_id))

    def list_clusters(self):
        return []

    def kill_cluster(self, cluster_id):
        self.calls.append(("kill", cluster_id))
        if self.running.pop(cluster_id, None) is None:
            raise NotFoundError(f"{cluster_id} ended meanwhile")


class Target:
    def __init__(self, descriptor: Descriptor | None, ids: list[str], unreachable: bool = False) -> None:
        self._descriptor, self.ids, self.unreachable = descriptor, ids, unreachable

    def access(self, ref):
        if self._descriptor is None:
            raise InvalidSpecError("spec.hadoopConfigMap 'hadoop' does not exist", reason="HadoopConfigurationMissing")
        return {"core-site.xml": "<configuration/>"}

    def descriptor(self, ref, config=None):
        if self._descriptor is None:
            raise InvalidSpecError("spec.hadoopConfigMap 'hadoop' does not exist", reason="HadoopConfigurationMissing")
        return self._descriptor

    def prepare(self, ref, config: Configuration) -> Configuration:
        return config

    def cluster_id(self, ref, descriptor):
        return next(iter(self.ids), "")

    def running(self, ref, descriptor):
        if self.unreachable:
            raise DeploymentError("the ResourceManager does not answer")
        return list(self.ids)


def handle(cluster_id: str) -> ClusterHandle:
    return ClusterHandle(cluster_id, "yarn-per-job", None, "f" * 32, "wc", "logs")


def test_a_running_cluster_is_observed_with_its_pending_reason_and_a_gone_one_by_the_result_it_left():
    running = DescriptorClusters(Target(Descriptor({"app-1": handle("app-1")}, pending="no node fits"), ["app-1"]))
    seen = running.observe(REF, "f" * 32)
    assert seen.exists and seen.cluster_id == "app-1" and seen.pending == "no node fits" and seen.result is None

    gone = DescriptorClusters(Target(Descriptor({}), ["app-1"])).observe(REF, "f" * 32)
    assert not gone.exists and gone.cluster_id == "app-1" and gone.result == RESULT

    assert DescriptorClusters(Target(Descriptor({}), [])).observe(REF, None).exists is False


def test_removal_stops_every_running_cluster_and_one_that_ended_meanwhile_is_fine():
    descriptor = Descriptor({"app-1": handle("app-1"), "app-2": handle("app-2")})
    clusters = DescriptorClusters(Target(descriptor, ["app-1", "app-2", "app-3"]))
    assert clusters.remove(REF) is True
    assert [c for c in descriptor.calls if c[0] == "kill"] == [("kill", "app-1"), ("kill", "app-2"), ("kill", "app-3")]
    assert DescriptorClusters(Target(Descriptor({}), ["app-9"])).remove(REF) is False
    assert DescriptorClusters(Target(None, [])).remove(REF) is False, "a FlinkJob that deployed nothing is let go"


def test_removal_of_a_deployed_cluster_that_cannot_be_reached_raises_rather_than_let_it_run():
    deployed, kept = dataclasses.replace(REF, cluster_id="app-1"), dataclasses.replace(REF, access={"core-site.xml": "x"})
    with pytest.raises(ClusterAccessLostError, match=r"app-1.*does not exist"):
        DescriptorClusters(Target(None, [])).remove(deployed)  # its ConfigMap went, and nothing was kept
    for ref in (deployed, kept):  # kept: a deployment began, its application may run
        with pytest.raises(DeploymentError, match="does not answer"):
            DescriptorClusters(Target(Descriptor({}), [], unreachable=True)).remove(ref)
    assert DescriptorClusters(Target(Descriptor({}), [], unreachable=True)).remove(REF) is False, "deployed nothing"


def test_what_to_keep_comes_from_the_hook_and_a_refused_spec_keeps_nothing():
    assert DescriptorClusters(Target(Descriptor({}), [])).access(REF) == {"core-site.xml": "<configuration/>"}
    assert DescriptorClusters(Target(None, [])).access(REF) == {}, "the deployment that follows says why"


def test_the_result_record_is_removed_through_the_descriptor():
    descriptor = Descriptor({})
    DescriptorClusters(Target(descriptor, ["wc"])).remove_result(REF)
    assert descriptor.calls == [("remove_job_result", "wc")]


class JobManagerStandIn(http.server.BaseHTTPRequestHandler):
    """A JobManager's REST API that says what ``state`` is (the real one runs in tests/integration/k8s)."""

    state = "RUNNING"

    def do_GET(self) -> None:
        bodies = {
            f"/jobs/{'f' * 32}": {"jid": "f" * 32, "name": "wc", "state": self.state},
            "/taskmanagers": {"taskmanagers": []},
            f"/jobs/{'f' * 32}/execution-result": {"status": {"id": "COMPLETED"}, "job-execution-result": {}},
        }
        body = json.dumps(bodies.get(self.path, {})).encode()
        self.send_response(200 if self.path in bodies else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def test_a_running_job_is_looked_at_through_its_rest_api_alone_until_it_is_no_longer_running():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), JobManagerStandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        rest = ClusterHandle("app-1", "yarn-per-job", f"http://127.0.0.1:{server.server_port}", "f" * 32, "wc", "logs")
        descriptor = Descriptor({"app-1": rest})
        clusters = DescriptorClusters(Target(descriptor, ["app-1"]))
        looks = [clusters.observe(REF, "f" * 32) for _ in range(3)]
        assert [seen.job["state"] for seen in looks if seen.job] == ["RUNNING"] * 3
        assert descriptor.calls == [("retrieve", "app-1")], "the platform is asked once; then the JobManager alone"
        JobManagerStandIn.state = "FINISHED"
        assert clusters.observe(REF, "f" * 32).job["state"] == "FINISHED"
        assert descriptor.calls == [("retrieve", "app-1")], "an ended job's answer is a whole look (a stop's savepoint read with it)"
        JobManagerStandIn.state = "RUNNING"
        clusters.observe(REF, "f" * 32)
        JobManagerStandIn.state = "RESTARTING"
        assert clusters.observe(REF, "f" * 32).job["state"] == "RESTARTING"
        assert descriptor.calls == [("retrieve", "app-1")] * 3, "any other answer is followed by the full look"
    finally:
        JobManagerStandIn.state = "RUNNING"
        server.shutdown()
        server.server_close()


def test_an_adopted_cluster_whose_job_id_the_status_lacks_is_asked_for_its_own_job():
    """An operator killed inside a deployment wrote no job id; the cluster knows it (YARN's tag, the Deployment's label)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), JobManagerStandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        rest = ClusterHandle("app-1", "yarn-per-job", f"http://127.0.0.1:{server.server_port}", "f" * 32, "wc", "logs")
        seen = DescriptorClusters(Target(Descriptor({"app-1": rest}), ["app-1"])).observe(REF, None)
        assert seen.job is not None and seen.job["jid"] == "f" * 32 and seen.job["state"] == "RUNNING"
    finally:
        server.shutdown()
        server.server_close()
