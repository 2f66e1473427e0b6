"""The kopf handlers of FlinkJobs: thin, each one calls the same level-triggered reconciliation.

``create``, ``update`` (of the spec), ``resume`` (an operator restart adopts
every FlinkJob and its running cluster) and a timer (every
:data:`OBSERVE_INTERVAL` seconds: the job's status from its cluster, the
deadlines, a retry that is due, the TTL) all run :meth:`Reconciler.reconcile`,
which serializes the work per FlinkJob; different FlinkJobs are reconciled
concurrently, and the blocking calls run in threads, so one slow deployment
holds up no other.  The timer runs only for FlinkJobs that are not settled
(:func:`settled`): an ended or suspended FlinkJob costs nothing until its spec
changes.  ``delete`` removes the cluster at once, and keeps the finalizer
until it is gone: a deletion that waits for a deployment in flight is tried
again shortly; while removal fails (the platform does not answer, or how to
reach the cluster is lost) it is retried with a Warning event each time,
rather than let a running cluster go.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import kopf
import kubernetes

from jobcluster.backends.kubernetes.job_result import COMPONENT as RESULT_COMPONENT
from jobcluster.backends.kubernetes.kube_client import api_call
from jobcluster.backends.kubernetes.labels import COMPONENT_JOB_MANAGER, LABEL_APP, LABEL_COMPONENT, LABEL_TYPE, TYPE_VALUE
from jobcluster.config.values import parse_duration
from jobcluster.controller.flinkjob_ref import FlinkJobRef
from jobcluster.controller.flinkjob_status import Lifecycle
from jobcluster.controller.job_state import SHUTDOWN_TTL, pending_trigger
from jobcluster.controller.metrics import OperatorMetrics
from jobcluster.controller.reconciler import Reconciler, RemovalPending
from jobcluster.controller.resource import GROUP, PLURAL, VERSION
from jobcluster.controller.rollback_plan import may_roll_back
from jobcluster.errors import JobClusterError, NotFoundError

log = logging.getLogger(__name__)

OBSERVE_INTERVAL = 3.0  # seconds between two looks at a FlinkJob on its way somewhere (deploying, upgrading, a savepoint)
RECONCILE_INTERVAL = 15.0  # seconds between two looks at a FlinkJob whose job runs (events of its platform come sooner)
RECONCILE_INTERVAL_KEY = "kubernetes.operator.reconcile.interval"
DELETE_PENDING_DELAY = 5.0  # seconds between two tries of a deletion that waits for a deployment in flight
DELETE_RETRY_DELAY = 15.0  # seconds between two attempts at a removal that failed: a cluster that may run is never let go
TIMER_EXIT_POLLING = 2.0  # seconds between two checks that a deleted FlinkJob's timer ended, before its finalizer goes
API_TIMEOUT = (5.0, 30.0)  # seconds: connect, read of a status patch
FINALIZER = "jobcluster.io/finalizer"
ANNOTATION_PREFIX = "jobcluster.io"


@dataclass
class OperatorContext:
    """What the handlers share: the reconciler, the API client, metrics."""

    reconciler: Reconciler
    api: kubernetes.client.ApiClient
    metrics: OperatorMetrics


def build_registry(context: OperatorContext) -> kopf.OperatorRegistry:
    """A kopf registry with the FlinkJob handlers bound to ``context``.

    One function of this length because kopf registers handlers by decorating them, and each one closes over
    ``context``; every handler is a few lines that hand over to the Reconciler.
    """
    registry = kopf.OperatorRegistry()
    resource = (GROUP, VERSION, PLURAL)

    @kopf.on.startup(registry=registry)
    async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.finalizer = FINALIZER
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=ANNOTATION_PREFIX)
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=ANNOTATION_PREFIX)
        settings.posting.level = logging.INFO
        settings.networking.request_timeout = 60.0
        settings.networking.connect_timeout = 10.0
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 330
        # kopf releases a deleted FlinkJob's finalizer only once it sees its timer ended. A timer reconciling then is
        # not cancelled (a deployment's thread would go on unseen by the delete handler, which waits for it), and
        # kopf looks again only every cancellation_polling seconds: 60 by default, long after the timer ended
        settings.background.cancellation_polling = TIMER_EXIT_POLLING

    @kopf.on.cleanup(registry=registry)
    async def stop(**_: Any) -> None:
        # deployments in flight end before the Lease may pass to another replica, which would deploy them again
        await context.reconciler.close()

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(context.api.configuration)

    async def reconcile(body: Mapping[str, Any], logger: logging.Logger | logging.LoggerAdapter[Any]) -> None:
        started = time.monotonic()
        metadata = body["metadata"]
        name, namespace, uid = metadata["name"], metadata.get("namespace") or "default", metadata.get("uid") or ""
        try:
            lifecycle = await context.reconciler.reconcile(
                uid,
                lambda: _read_flinkjob(context.api, namespace, name, uid),
                lambda status: _patch_status(context.api, namespace, name, status),
                lambda kind, reason, message: kopf.event(cast(kopf.Body, body), type=kind, reason=reason, message=message[:1000]),
                lambda: _delete_flinkjob(context.api, namespace, name),
                generation=metadata.get("generation"),
            )
        except Exception:
            context.metrics.reconciles.labels("error").inc()
            raise
        finally:
            context.metrics.reconcile_seconds.observe(time.monotonic() - started)
        context.metrics.reconciles.labels("ok").inc()
        context.metrics.job_state(uid, lifecycle)
        logger.debug("reconciled: %s", lifecycle)

    @kopf.on.resume(*resource, registry=registry)
    @kopf.on.create(*resource, registry=registry)
    @kopf.on.update(*resource, field="spec", registry=registry)
    async def on_change(body: kopf.Body, logger: kopf.Logger, **_: Any) -> None:
        await reconcile(body, logger)

    @kopf.timer(
        *resource,
        interval=OBSERVE_INTERVAL,
        when=lambda spec, status, **_: not settled(spec, status, context.reconciler.defaults) and not paced(status),
        registry=registry,
    )
    async def observe(body: kopf.Body, logger: kopf.Logger, **_: Any) -> None:
        await reconcile(body, logger)

    paced_interval = reconcile_interval(context.reconciler.defaults)

    @kopf.timer(*resource, interval=paced_interval, when=lambda status, **_: paced(status), registry=registry)
    async def observe_running(body: kopf.Body, logger: kopf.Logger, **_: Any) -> None:
        await reconcile(body, logger)

    # The platform's events bring a paced look forward: a JobManager pod that changes (deleted, failed, replaced),
    # the job result a JobManager records as its job ends (job_result.py). The initial listing (type None) is not one.
    @kopf.on.event("", "v1", "pods", labels={LABEL_TYPE: TYPE_VALUE, LABEL_COMPONENT: COMPONENT_JOB_MANAGER}, registry=registry)
    @kopf.on.event("", "v1", "configmaps", labels={LABEL_TYPE: TYPE_VALUE, LABEL_COMPONENT: RESULT_COMPONENT}, registry=registry)
    async def platform_changed(body: kopf.Body, type: str | None, logger: kopf.Logger, **_: Any) -> None:
        job = context.reconciler.known(body.metadata.namespace or "default", body.metadata.labels.get(LABEL_APP, ""))
        if type is not None and job is not None:
            await reconcile(flinkjob_reference(job), logger)

    # no timeout nor retry limit: kopf releases the finalizer of a handler that gave up, and the cluster must be gone first
    @kopf.on.delete(*resource, registry=registry)
    async def on_delete(body: kopf.Body, **_: Any) -> None:
        job = FlinkJobRef.of(body)
        try:
            await context.reconciler.delete(job, lambda status: _patch_status(context.api, job.namespace, job.name, status))
        except RemovalPending as exc:
            raise kopf.TemporaryError(str(exc), delay=DELETE_PENDING_DELAY) from exc
        except JobClusterError as exc:
            message = removal_blocked(job, exc)
            kopf.warn(body, reason="ClusterNotRemoved", message=message[:1000])
            raise kopf.TemporaryError(message, delay=DELETE_RETRY_DELAY) from exc
        context.metrics.job_state(job.uid, None)

    return registry


def removal_blocked(job: FlinkJobRef, error: Exception) -> str:
    """The event of a deleted FlinkJob whose cluster could not be removed: why, and how to let it go anyway."""
    return (
        f"job cluster not removed ({str(error) or 'timed out'}); the finalizer {FINALIZER} stays and removal is retried every "
        f"{DELETE_RETRY_DELAY:.0f} s. Once nothing of it runs, release it: kubectl patch flinkjob {job.name} -n {job.namespace} "
        """--type=merge -p '{"metadata":{"finalizers":null}}'"""
    )


def paced(status: Mapping[str, Any]) -> bool:
    """Whether a FlinkJob's job runs with nothing in progress (no savepoint pending, no error standing): looked at
    every ``kubernetes.operator.reconcile.interval`` rather than every :data:`OBSERVE_INTERVAL` seconds."""
    lifecycle = (status or {}).get("lifecycleState")
    return lifecycle in (Lifecycle.STABLE, Lifecycle.ROLLED_BACK) and not pending_trigger(status) and not status.get("error")


def reconcile_interval(defaults: Mapping[str, str]) -> float:
    """Seconds between two looks at a FlinkJob whose job runs (:func:`paced`): ``kubernetes.operator.reconcile.interval``
    of the operator's ``defaults`` (the Flink Kubernetes Operator's option; :data:`RECONCILE_INTERVAL` seconds unless
    set)."""
    text = defaults.get(RECONCILE_INTERVAL_KEY)
    return parse_duration(text) if text else RECONCILE_INTERVAL


def flinkjob_reference(job: FlinkJobRef) -> dict[str, Any]:
    """The object of FlinkJob ``job`` as kopf's events and the reconciliation name it."""
    metadata = {"name": job.name, "namespace": job.namespace, "uid": job.uid, "generation": job.generation}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "FlinkJob", "metadata": metadata}


def settled(spec: Mapping[str, Any], status: Mapping[str, Any], defaults: Mapping[str, str]) -> bool:
    """Whether a FlinkJob waits for nothing but a change of its spec: suspended, or ended with no TTL to run out
    (neither its own ``ttlSecondsAfterFinished`` nor ``kubernetes.operator.jm-deployment.shutdown-ttl`` of its
    configuration or the operator's ``defaults``)."""
    lifecycle = (status or {}).get("lifecycleState")
    if lifecycle == Lifecycle.SUSPENDED:
        return (spec.get("job") or {}).get("state") == "suspended"
    if lifecycle == Lifecycle.FAILED and may_roll_back(spec, status, defaults):
        return False
    if lifecycle in (Lifecycle.FINISHED, Lifecycle.FAILED):
        default_ttl = {**defaults, **(spec.get("flinkConfiguration") or {})}.get(SHUTDOWN_TTL)
        return (spec.get("ttlSecondsAfterFinished") is None and not default_ttl) or bool(status.get("ttlExpired"))
    return False


def connection_info(config: kubernetes.client.Configuration) -> kopf.ConnectionInfo:
    """kopf's credentials from the operator's ApiClient, so kopf and the descriptor use the same login."""
    keys = config.api_key or {}
    token = keys.get("BearerToken") or keys.get("authorization") or ""
    scheme, _, value = str(token).partition(" ")
    return kopf.ConnectionInfo(
        server=config.host,
        ca_path=config.ssl_ca_cert,
        insecure=not config.verify_ssl,
        scheme=scheme if value else None,
        token=value or None,
        certificate_path=config.cert_file,
        private_key_path=config.key_file,
    )


async def _read_flinkjob(api: kubernetes.client.ApiClient, namespace: str, name: str, uid: str) -> FlinkJobRef | None:
    """The FlinkJob as the API server has it now; None when it is gone or is another object of the same name."""
    custom = kubernetes.client.CustomObjectsApi(api)
    try:
        body: Any = await asyncio.to_thread(
            api_call,
            "get",
            PLURAL,
            namespace,
            custom.get_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            name,
            _request_timeout=API_TIMEOUT,
        )
    except NotFoundError:
        return None
    ref = FlinkJobRef.of(body)
    return ref if ref.uid == uid else None


async def _patch_status(api: kubernetes.client.ApiClient, namespace: str, name: str, status: Mapping[str, Any]) -> None:
    """A JSON merge patch of the FlinkJob's status subresource (off the loop, with a timeout)."""
    custom = kubernetes.client.CustomObjectsApi(api)
    await asyncio.to_thread(
        custom.patch_namespaced_custom_object_status,
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        name,
        {"status": dict(status)},
        _request_timeout=API_TIMEOUT,
    )


async def _delete_flinkjob(api: kubernetes.client.ApiClient, namespace: str, name: str) -> None:
    custom = kubernetes.client.CustomObjectsApi(api)
    await asyncio.to_thread(custom.delete_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, name, _request_timeout=API_TIMEOUT)
