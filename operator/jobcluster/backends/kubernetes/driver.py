"""KubernetesResourceManagerDriver: TaskExecutors as TaskManager pods, owned by the JobManager Deployment.

Flink's ``KubernetesResourceManagerDriver`` with jobcluster's SPI
(``runtime/resourcemanager/driver.py``):

* ``initialize`` reads the JobManager Deployment (every TaskManager pod's
  owner), lists the TaskManager pods of earlier JobManager attempts, deletes the
  terminated or unscheduled ones and reports the others as recovered workers;
  the new attempt is one above the highest found in a pod name or recorded on
  the Deployment (``pod_events.plan_recovery``), and is recorded there: a
  JobManager that deleted its pods when stopped leaves no name to count from.
* ``request_resource`` creates the pod ``<cluster-id>-taskmanager-<attempt>-<n>``
  (``build_task_manager_pod``) and returns its name, the worker's ResourceID.
* A watch by label selector (``pod_watch``) sees every pod change; a pod that
  fails, whose container terminates, or that is deleted is reported once to
  ``on_worker_terminated`` with its exit code and reason and their meaning (an
  ``OOMKilled`` container as a memory kill, with its memory limit), then deleted.
* ``release_resource`` deletes one pod (idempotent, no report); ``terminate``
  stops the watch and deletes every TaskManager pod; ``deregister_application``
  deletes the Deployment, and the garbage collector everything it owns.

Threads: every API call runs off the loop (``asyncio.to_thread``) with the
timeouts of ``kube_client``; the watch runs on its own thread and hands its
events to the loop through a queue, which one task owned by the driver
consumes in order.  The driver's state is touched only on the loop.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import time
from typing import Any

import kubernetes

from jobcluster.backends.kubernetes import object_names
from jobcluster.backends.kubernetes.cluster_objects import delete_cluster
from jobcluster.backends.kubernetes.config_options import KUBERNETES_CLUSTER_ID, KUBERNETES_TASK_MANAGER_POD_TEMPLATE_FILE
from jobcluster.backends.kubernetes.job_result import build_job_result_config_map
from jobcluster.backends.kubernetes.jobmanager_attempts import (
    JobManagerAttempts,
    admit_start,
    job_manager_attempts,
    recorded_starts,
    starts_annotation,
)
from jobcluster.backends.kubernetes.kube_client import api_call, load_api_client
from jobcluster.backends.kubernetes.labels import selector_text, task_manager_selector
from jobcluster.backends.kubernetes.parameters import KubernetesTaskManagerParameters, task_manager_parameters
from jobcluster.backends.kubernetes.pod_events import (
    DELETED,
    attempt_patch,
    plan_recovery,
    pod_name,
    recorded_attempt,
    resync_events,
    worker_termination,
)
from jobcluster.backends.kubernetes.pod_status import unscheduled_reason
from jobcluster.backends.kubernetes.pod_template import load_pod_template
from jobcluster.backends.kubernetes.pod_watch import WATCH_TIMEOUT_SECONDS, PodWatch, list_pods
from jobcluster.backends.kubernetes.taskmanager import build_task_manager_pod, task_manager_pod_name
from jobcluster.config.configuration import Configuration
from jobcluster.errors import DeploymentError, IllegalConfigurationError, NotFoundError, ResourceManagerError
from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.memory.spec import TaskExecutorProcessSpec
from jobcluster.runtime.resourcemanager.driver import (
    ResourceEventHandler,
    ResourceManagerDriver,
    TaskExecutorLaunchContext,
)
from jobcluster.runtime.resourcemanager.worker_termination import WorkerTermination

log = logging.getLogger(__name__)

#: How long ``close`` waits for the watch thread to end, seconds (Flink: 5 s).
WATCH_STOP_SECONDS = 5.0

_Item = tuple[str, Any]  # ("event", (type, pod)) or ("list", pods)


class KubernetesResourceManagerDriver(ResourceManagerDriver):
    """Starts TaskExecutors as pods of ``params`` (see the module docstring).

    ``api``: a client allowed what manifests/rbac.yaml grants;
    ``job_manager_address``: the JobManager pod's IP, given to the TaskManager
    pods (no cluster DNS needed); ``template``: the TaskManager pod template,
    if any; ``watch_timeout_seconds``: how long one watch request lasts;
    ``attempts``: how often the JobManager may start (jobmanager_attempts.py).
    """

    def __init__(
        self,
        api: kubernetes.client.ApiClient,
        params: KubernetesTaskManagerParameters,
        job_manager_address: str,
        *,
        template: dict[str, Any] | None = None,
        watch_timeout_seconds: int = WATCH_TIMEOUT_SECONDS,
        attempts: JobManagerAttempts = JobManagerAttempts(),  # noqa: B008 - frozen
    ) -> None:
        self._api = api
        self._attempts = attempts
        self._core = kubernetes.client.CoreV1Api(api)
        self._params = params
        self._job_manager_address = job_manager_address
        self._template = template
        self._watch_timeout = watch_timeout_seconds
        self._selector = selector_text(task_manager_selector(params.cluster_id))
        self._handler: ResourceEventHandler | None = None
        self._context: TaskExecutorLaunchContext | None = None
        self._owner: dict[str, Any] | None = None
        self._result_recorded = False
        self._attempt = 0
        self._pod_number = 0
        #: Pods that are this driver's live workers: neither reported as terminated nor released.
        self._workers: set[str] = set()
        #: Pods being created → why, if they ended before their creation returned.
        self._creating: dict[str, WorkerTermination | None] = {}
        #: Pods whose scheduling failure was logged.
        self._unschedulable: set[str] = set()
        #: Pods being created → their event saying they cannot be scheduled, handed on once their creation returned.
        self._unscheduled_while_creating: dict[str, tuple[str, dict[str, Any]]] = {}
        self._queue: asyncio.Queue[_Item] | None = None
        self._consumer: asyncio.Task[None] | None = None
        self._watch: PodWatch | None = None

    @property
    def attempt(self) -> int:
        """The JobManager attempt this driver names its pods with (1 on a first start)."""
        return self._attempt

    @property
    def watch(self) -> PodWatch | None:
        return self._watch

    async def initialize(self, handler: ResourceEventHandler, launch_context: TaskExecutorLaunchContext) -> None:
        """Read the owner Deployment, admit this JobManager start, recover or delete earlier attempts' pods, record the
        new attempt, start watching.

        Raises:
            ResourceManagerError: the Deployment is missing, the API server refuses or cannot be reached, or the
                JobManager started more often than ``attempts`` allows (the job is FAILED and the cluster removed).
        """
        self._handler, self._context = handler, launch_context
        loop = asyncio.get_running_loop()
        try:
            self._owner = await asyncio.to_thread(self._read_owner)
            starts, refused = admit_start(recorded_starts(self._owner), time.time(), self._attempts)
            if refused:
                await self.deregister_application(ApplicationStatus.FAILED, refused)
                raise ResourceManagerError(refused)
            pods, version = await asyncio.to_thread(list_pods, self._core, self._params.namespace, self._selector)
            owner_uid = (self._owner.get("metadata") or {}).get("uid")
            recovery = plan_recovery(pods, recorded_attempt(self._owner), owner_uid, launch_context.settings.resource_manager_address)
            await asyncio.to_thread(self._record_attempt, recovery.attempt, starts)
        except DeploymentError as exc:
            raise ResourceManagerError(f"cannot start the Kubernetes ResourceManager driver: {exc}") from exc
        for name in recovery.to_delete:
            await self._delete_pod(name)
        self._attempt = recovery.attempt
        self._workers.update(recovery.recovered)
        log.info("Recovered %d pods from previous attempts, current attempt id is %d.", len(recovery.recovered), self._attempt)
        queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._queue = queue

        def hand_on(item: _Item) -> None:  # on the watch thread
            if watch.stopped:
                return
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody is left to tell
                pass

        watch = PodWatch(
            self._core,
            self._params.namespace,
            self._selector,
            lambda event_type, pod: hand_on(("event", (event_type, pod))),
            lambda pods: hand_on(("list", pods)),
            self._watch_timeout,
        )
        self._watch = watch
        watch.start(version)
        if recovery.recovered:
            await handler.on_previous_attempt_workers_recovered(recovery.recovered)
        self._consumer = loop.create_task(self._consume(queue), name=f"pod-events-{self._params.cluster_id}")

    def _read_owner(self) -> dict[str, Any]:
        apps = kubernetes.client.AppsV1Api(self._api)
        namespace, name = self._params.namespace, object_names.deployment_name(self._params.cluster_id)
        try:
            deployment = api_call("get", "deployments", namespace, apps.read_namespaced_deployment, name, namespace)
        except NotFoundError as exc:
            raise DeploymentError(f"Failed to find Deployment named {name} in namespace {namespace}: {exc}") from exc
        owner: dict[str, Any] = self._api.sanitize_for_serialization(deployment)  # type: ignore[no-untyped-call]  # untyped client
        return owner

    def _record_attempt(self, attempt: int, starts: list[float]) -> None:
        apps = kubernetes.client.AppsV1Api(self._api)
        namespace, name = self._params.namespace, object_names.deployment_name(self._params.cluster_id)
        patch = attempt_patch(attempt)
        patch["metadata"]["annotations"].update(starts_annotation(starts))
        api_call("patch", "deployments", namespace, apps.patch_namespaced_deployment, name, namespace, patch)

    async def request_resource(self, spec: TaskExecutorProcessSpec) -> str:
        """Create the next TaskManager pod of this attempt; its name once the API server accepted it.

        Raises:
            ResourceManagerError: the API server refused the pod, or the pod
                ended before its creation returned (the ResourceManager asks again).
        """
        assert self._context is not None and self._owner is not None, "driver not initialized"
        self._pod_number += 1
        name = task_manager_pod_name(self._params.cluster_id, self._attempt, self._pod_number)
        pod = build_task_manager_pod(
            self._params,
            spec,
            name,
            launch_env=self._context.settings.environment(name),
            job_manager_address=self._job_manager_address,
            owner=self._owner,
            template=self._template,
        )
        namespace = self._params.namespace
        self._creating[name] = None
        try:
            await asyncio.to_thread(api_call, "create", "pods", namespace, self._core.create_namespaced_pod, namespace, pod)
        except DeploymentError as exc:
            raise ResourceManagerError(f"could not create TaskManager pod {name}: {exc}") from exc
        finally:
            ended = self._creating.pop(name, None)
            unscheduled = self._unscheduled_while_creating.pop(name, None)
        if ended is not None:
            await self._delete_pod(name)
            raise ResourceManagerError(f"TaskManager pod {name} terminated right away: {ended.summary}: {ended.diagnostics}")
        self._workers.add(name)
        if unscheduled is not None and self._queue is not None:
            # queued, not handled here: the ResourceManager ignores a pending worker whose name it has not yet been given
            self._queue.put_nowait(("event", unscheduled))
        resources = pod["spec"]["containers"][0]["resources"]
        log.info("created TaskManager pod %s (requests %s, limits %s)", name, resources["requests"], resources["limits"])
        return name

    async def release_resource(self, resource_id: str) -> None:
        """Delete the pod ``resource_id``; nothing is reported for it (a pod already gone is fine)."""
        self._workers.discard(resource_id)
        await self._delete_pod(resource_id)

    async def release_all_workers(self) -> None:
        """Delete every TaskManager pod of the cluster (of any attempt); their terminations are not reported."""
        self._workers.clear()
        try:
            pods, _ = await asyncio.to_thread(list_pods, self._core, self._params.namespace, self._selector)
        except DeploymentError as exc:
            log.error("could not list the TaskManager pods to delete them: %s", exc)
            return
        await asyncio.gather(*(self._delete_pod(pod_name(pod)) for pod in pods))

    async def close(self) -> None:
        """Stop the pod watch and the task that hands its events on."""
        if self._watch is not None:
            await asyncio.to_thread(self._watch.stop, WATCH_STOP_SECONDS)
        if self._consumer is not None:
            self._consumer.cancel()
            await asyncio.gather(self._consumer, return_exceptions=True)
            self._consumer = None

    async def deregister_application(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        """Leave the job's result for the Deployment's owners, if any (``job_result.py``), then delete the
        JobManager Deployment; its ConfigMap, Secret, Service and pods follow (cascading)."""
        log.info("application finished with %s%s", status.name, f": {diagnostics}" if diagnostics else "")
        await self.record_job_result(status, diagnostics)
        uid = str(((self._owner or {}).get("metadata") or {}).get("uid") or "")
        try:
            if uid:  # its own Deployment, the one it read at start: never another made under its name since
                await asyncio.to_thread(delete_cluster, self._api, self._params.namespace, self._params.cluster_id, uid)
        except DeploymentError as exc:
            # the job has ended: its owner (the FlinkJob's finalizer, `jobcluster cancel`) deletes what is left
            log.error("could not delete the job cluster %s: %s", self._params.cluster_id, exc)

    async def record_job_result(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        """Leave the job's result for the Deployment's owners, once (``job_result.py``): written as the job ends, its
        ConfigMap is also the event that tells the FlinkJob operator at once."""
        if self._owner is not None and not self._result_recorded:
            self._result_recorded = True
            await asyncio.to_thread(self._write_job_result, status, diagnostics)

    def _write_job_result(self, status: ApplicationStatus, diagnostics: str | None) -> None:
        assert self._owner is not None
        config_map = build_job_result_config_map(self._owner, status.name, diagnostics, datetime.datetime.now(datetime.UTC))
        if config_map is None:
            return
        namespace = self._params.namespace
        try:
            api_call("create", "configmaps", namespace, self._core.create_namespaced_config_map, namespace, config_map)
        except DeploymentError as exc:
            log.error("could not leave the job result in ConfigMap %s: %s", config_map["metadata"]["name"], exc)

    async def _consume(self, queue: asyncio.Queue[_Item]) -> None:
        while True:
            kind, payload = await queue.get()
            events = resync_events(self._workers, payload) if kind == "list" else [payload]
            for event_type, pod in events:
                try:
                    await self._on_pod_event(event_type, pod)
                except Exception:  # one bad event must not end the watch of every worker, nor the cluster
                    log.exception("handling %s of pod %s failed", event_type, pod_name(pod))

    async def _on_pod_event(self, event_type: str, pod: dict[str, Any]) -> None:
        name = pod_name(pod)
        termination = worker_termination(event_type, pod)
        if termination is None:
            unscheduled = unscheduled_reason(pod)
            if unscheduled and name in self._creating:
                # the scheduler can answer before the create call returns (a loaded API server); the scheduler
                # does not say it again soon (it backs off), so the event waits for the pod's name to be known
                self._unscheduled_while_creating[name] = (event_type, pod)
            elif unscheduled and name not in self._unschedulable:
                self._unschedulable.add(name)  # once per pod: the scheduler retries, and says so on every try
                assert self._handler is not None
                await self._handler.on_worker_pending(name, f"the pod cannot be scheduled: {unscheduled}")
            return
        if name in self._creating:
            self._creating[name] = termination
            return
        if name not in self._workers:
            return  # released, already reported, or not this driver's
        self._workers.discard(name)
        log.warning("TaskManager pod %s terminated (%s): %s", name, termination.summary, termination.diagnostics)
        assert self._handler is not None
        await self._handler.on_worker_terminated(name, termination)
        if event_type != DELETED:
            await self._delete_pod(name)

    async def _delete_pod(self, name: str) -> None:
        """Delete the pod ``name``; gone already is fine, a failure is logged (the garbage collector removes it with the cluster)."""
        namespace = self._params.namespace
        try:
            await asyncio.to_thread(api_call, "delete", "pods", namespace, self._core.delete_namespaced_pod, name, namespace)
        except NotFoundError:
            return
        except DeploymentError as exc:
            log.warning("could not delete TaskManager pod %s: %s", name, exc)
            return
        log.info("deleted TaskManager pod %s", name)


def create_driver(config: Configuration, rest_url: str = "") -> KubernetesResourceManagerDriver:
    """The driver of the JobManager pod whose staged configuration is ``config``.

    Reads the cluster id the descriptor pinned, the TaskManager options, the
    TaskManager pod template (``kubernetes.pod-template-file.taskmanager``, a
    path in the JobManager pod), the pod's IP (``JOBCLUSTER_POD_IP``, the
    downward API) and the API server (in-cluster, the pod's service account).

    Raises:
        IllegalConfigurationError: no ``kubernetes.cluster-id`` in ``config``, no
            pod IP in the environment, or an option the parameters refuse.
    """
    cluster_id = config.get(KUBERNETES_CLUSTER_ID)
    if not cluster_id:
        raise IllegalConfigurationError(f"{KUBERNETES_CLUSTER_ID.key} must be set in the staged configuration of a Kubernetes job cluster")
    pod_ip = os.environ.get(object_names.ENV_POD_IP)
    if not pod_ip:
        raise IllegalConfigurationError(f"${object_names.ENV_POD_IP} is not set: the Kubernetes driver runs only in a JobManager pod")
    params = task_manager_parameters(config, job_id=cluster_id)
    template_file = params.pod_template_file
    template = load_pod_template(template_file, KUBERNETES_TASK_MANAGER_POD_TEMPLATE_FILE.key) if template_file else None
    attempts = job_manager_attempts(config)
    return KubernetesResourceManagerDriver(load_api_client(config), params, pod_ip, template=template, attempts=attempts)
