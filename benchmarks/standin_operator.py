"""The FlinkJob operator over stand-in job clusters: how benchmarks/operator_throughput.py runs 1,000 running FlinkJobs.

    python benchmarks/standin_operator.py --namespace NS --port P --jobmanager http://127.0.0.1:Q [--kubeconfig FILE]

Everything of the operator is the real one (``jobcluster.controller.main.operate``:
kopf and its handlers, the reconciler, the planner, the status written to the API
server, the REST client that looks at each running job) but the platform under its
``kubernetes-application`` FlinkJobs: a stand-in descriptor "deploys" a cluster by
recording it in this process, and every cluster's REST API is one stand-in
JobManager (:class:`StandInJobManager`, run by the benchmark) that says every job
RUNNING. A thousand real JobManager pods do not fit on the test machine; what the
operator does for each of them does.
"""

from __future__ import annotations

import argparse
import http.server
import json
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "operator"))

from jobcluster.backends.kubernetes.config_options import KUBERNETES_CLUSTER_ID  # noqa: E402
from jobcluster.backends.kubernetes.kube_client import load_api_client  # noqa: E402
from jobcluster.client.cluster_client import RestClusterClient  # noqa: E402
from jobcluster.client.descriptor import ClusterDescriptor, ClusterHandle, ClusterSpecification, JobResult, PackagedProgram  # noqa: E402
from jobcluster.client.operator_hook import ClusterRef  # noqa: E402
from jobcluster.config.configuration import Configuration  # noqa: E402
from jobcluster.controller.clusters import DescriptorClusters, JobClusters  # noqa: E402
from jobcluster.controller.main import operate  # noqa: E402
from jobcluster.controller.resource import TARGET_KUBERNETES  # noqa: E402
from jobcluster.jobgraph.model import JobGraph  # noqa: E402

_JOB = re.compile(r"^/jobs/([0-9a-f]{32})$")


class StandInJobManager(http.server.ThreadingHTTPServer):
    """One HTTP server that answers Flink's REST API for any JobID as a JobManager whose job RUNS (``GET /jobs/{id}``,
    ``GET /taskmanagers``), on 127.0.0.1 at a free port; ``requests`` counts what it served."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests = 0
        self.started_ms = int(time.time() * 1000)
        self._count = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def counted(self) -> None:
        with self._count:
            self.requests += 1


class _Handler(http.server.BaseHTTPRequestHandler):
    server: StandInJobManager
    protocol_version = "HTTP/1.1"  # keep-alive: the operator's REST client reuses its connection, as with a real JobManager

    def do_GET(self) -> None:
        self.server.counted()
        job = _JOB.match(self.path)
        if job:
            body: Any = {
                "jid": job.group(1),
                "name": "standin",
                "state": "RUNNING",
                "start-time": self.server.started_ms,
                "end-time": -1,
                "duration": int(time.time() * 1000) - self.server.started_ms,
                "timestamps": {"RUNNING": self.server.started_ms},
                "job-type": "BATCH",
            }
        elif self.path == "/taskmanagers":
            body = {"taskmanagers": [{"id": "standin-tm", "slotsNumber": 2, "memoryConfiguration": {"totalProcessMemory": 1 << 30}}]}
        else:
            body = {}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class StandInDescriptor(ClusterDescriptor):
    """The clusters of the stand-in platform: recorded in ``clusters`` (cluster id → JobID), all served by the stand-in
    JobManager at ``url``."""

    target = TARGET_KUBERNETES

    def __init__(self, url: str, clusters: dict[str, str]) -> None:
        self.url = url
        self.clusters = clusters

    def deploy_job_cluster(
        self, spec: ClusterSpecification, graph: JobGraph, program: PackagedProgram, config: Configuration
    ) -> RestClusterClient:
        cluster_id = str(config.get(KUBERNETES_CLUSTER_ID))
        self.clusters[cluster_id] = graph.job_id
        return RestClusterClient(self.url, cluster_id)

    def retrieve(self, cluster_id: str) -> ClusterHandle | None:
        job_id = self.clusters.get(cluster_id)
        return None if job_id is None else ClusterHandle(cluster_id, self.target, self.url, job_id, "standin", "")

    def job_result(self, cluster_id: str) -> JobResult | None:
        return None

    def list_clusters(self) -> list[ClusterHandle]:
        return [handle for handle in map(self.retrieve, list(self.clusters)) if handle is not None]

    def kill_cluster(self, cluster_id: str) -> None:
        self.clusters.pop(cluster_id, None)


class StandInHook:
    """The operator hook of the stand-in platform (``client.operator_hook.OperatorHook``): a FlinkJob's cluster id is
    its name, as on Kubernetes."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.clusters: dict[str, str] = {}

    def descriptor(self, ref: ClusterRef, config: Configuration | None = None) -> ClusterDescriptor:
        return StandInDescriptor(self.url, self.clusters)

    def prepare(self, ref: ClusterRef, config: Configuration) -> Configuration:
        return config

    def cluster_id(self, ref: ClusterRef, descriptor: ClusterDescriptor) -> str:
        return ref.name

    def running(self, ref: ClusterRef, descriptor: ClusterDescriptor) -> list[str]:
        return [ref.name] if ref.name in self.clusters else []

    def access(self, ref: ClusterRef) -> dict[str, str]:
        return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespace", required=True, help="the namespace whose FlinkJobs it reconciles")
    parser.add_argument("--port", type=int, default=0, help="port of /healthz and /metrics (0: none)")
    parser.add_argument("--jobmanager", required=True, help="the stand-in JobManager's URL")
    parser.add_argument("--reconcile-interval", help="kubernetes.operator.reconcile.interval (default: the operator's)")
    args = parser.parse_args()
    api = load_api_client(Configuration({}))
    defaults = {"kubernetes.operator.reconcile.interval": args.reconcile_interval} if args.reconcile_interval else {}
    operate(api, defaults, JobClusters({TARGET_KUBERNETES: DescriptorClusters(StandInHook(args.jobmanager))}), (args.namespace,), args.port)


if __name__ == "__main__":
    main()
