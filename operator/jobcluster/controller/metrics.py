"""The operator's Prometheus metrics, and the HTTP endpoint that serves them next to ``/healthz``.

One aiohttp server on ``--port`` (aiohttp is already the REST endpoint's
library; prometheus-client renders the metrics), served from the start of the
process, a standby's included (leader.py):

- ``GET /healthz``: 200 while the operator's event loop answers (the liveness probe);
- ``GET /metrics``: the metrics below, in Prometheus' text format.

Every response closes its connection: kopf, stopping, waits for and then
cancels every task started after it, and a kept-alive scrape connection is one.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from jobcluster.controller.flinkjob_status import Lifecycle

LIFECYCLE_STATES = (
    Lifecycle.CREATED,
    Lifecycle.DEPLOYED,
    Lifecycle.STABLE,
    Lifecycle.SUSPENDED,
    Lifecycle.UPGRADING,
    Lifecycle.FAILED,
    Lifecycle.FINISHED,
    Lifecycle.DELETING,
    Lifecycle.ROLLING_BACK,
    Lifecycle.ROLLED_BACK,
)


class OperatorMetrics:
    """Reconciles (by outcome) and their durations, FlinkJobs by lifecycle state, deploy latency; in ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.reconciles = Counter(
            "jobcluster_operator_reconciles", "FlinkJob reconciliations, by outcome (ok or error).", ["outcome"], registry=self.registry
        )
        self.reconcile_seconds = Histogram(
            "jobcluster_operator_reconcile_duration_seconds",
            "Seconds one reconciliation of a FlinkJob took (a deployment included).",
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 120, 300),
            registry=self.registry,
        )
        self.deploy_seconds = Histogram(
            "jobcluster_operator_deploy_duration_seconds",
            "Seconds from the start of a deployment until the job cluster served REST.",
            buckets=(5, 10, 20, 30, 45, 60, 90, 120, 180, 300),
            registry=self.registry,
        )
        self.jobs = Gauge("jobcluster_operator_flinkjobs", "FlinkJobs by lifecycle state.", ["lifecycle_state"], registry=self.registry)
        self.leader = Gauge(
            "jobcluster_operator_leader",
            "1 while this operator process reconciles (it holds the leader Lease, or runs without leader election); 0 while it stands by.",
            registry=self.registry,
        )
        self._states: dict[str, str] = {}
        for state in LIFECYCLE_STATES:  # every state shown, at 0 until a FlinkJob is in it
            self.jobs.labels(state).set(0)

    def job_state(self, uid: str, lifecycle: str | None) -> None:
        """Record the lifecycle state of FlinkJob ``uid`` (None: it is gone): the gauge of its old state goes down by one,
        that of its new one up, so a reconciliation costs the same at 1,000 FlinkJobs as at one."""
        previous = self._states.pop(uid, None)
        if lifecycle is not None:
            self._states[uid] = lifecycle
        if previous == lifecycle:
            return
        if previous is not None:
            self.jobs.labels(previous).dec()
        if lifecycle is not None:
            self.jobs.labels(lifecycle).inc()

    def app(self) -> web.Application:
        """The aiohttp application serving ``/healthz`` and ``/metrics``."""

        async def healthz(_request: web.Request) -> web.Response:
            return _closing(web.Response(text="ok\n"))

        async def metrics(_request: web.Request) -> web.Response:
            return _closing(web.Response(body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}))

        app = web.Application()
        app.router.add_get("/healthz", healthz)
        app.router.add_get("/metrics", metrics)
        return app

    async def serve(self, port: int) -> web.AppRunner:
        """Serve :meth:`app` on ``port`` of every address (the pod's probe and Prometheus); clean the runner up to stop.

        Raises:
            OSError: the port is taken.
        """
        runner = web.AppRunner(self.app())
        await runner.setup()
        await web.TCPSite(runner, "0.0.0.0", port).start()
        return runner


def _closing(response: web.Response) -> web.Response:
    response.force_close()
    return response
