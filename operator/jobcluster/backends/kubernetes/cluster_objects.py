"""Creating and deleting a job cluster's objects in the API server (the descriptor's API calls).

Flink's order (``KubernetesClusterDescriptor`` / ``Fabric8FlinkKubeClient``):
the JobManager Deployment first, then the ConfigMap, Secret and REST Service
(and the Ingress, when one is configured), each owned by the Deployment (its
uid is known only once it exists).  So one deletion of the Deployment removes
everything, and that is also the cleanup when a later step fails: nothing of a
failed deployment stays in the namespace.  Checks that need no API server (file
names, ConfigMap size) run before the first object is created.

A cluster id is reused only once the garbage collector has removed every pod,
ReplicaSet and the Service (and, when the new cluster has one, the Ingress) of
the cluster deleted under it, as Flink's operator waits for a cluster's shutdown
before it redeploys: a JobManager pod of the old Deployment that still starts
would read the new Deployment by its name, take it for its owner and start
TaskManagers for it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import kubernetes

from jobcluster.backends.kubernetes import object_names
from jobcluster.backends.kubernetes.config_options import KUBERNETES_CLUSTER_ID, KUBERNETES_NAMESPACE
from jobcluster.backends.kubernetes.jobmanager import build_ingress, build_job_manager_deployment, build_rest_service
from jobcluster.backends.kubernetes.kube_client import ForeignObjectError, ObjectChangedError, ObjectExistsError, api_call
from jobcluster.backends.kubernetes.labels import LABEL_TYPE, TYPE_VALUE, common_labels, selector_text
from jobcluster.backends.kubernetes.parameters import KubernetesJobManagerParameters
from jobcluster.backends.kubernetes.staging import build_config_map, build_secret, check_config_map_size, staged_items
from jobcluster.errors import AlreadyExistsError, DeploymentError, NotFoundError

log = logging.getLogger(__name__)

#: Seconds a new cluster waits for the pods and ReplicaSets of a deleted cluster of the same id to go.
PREVIOUS_CLUSTER_TIMEOUT = 60.0
_POLL_SECONDS = 1.0


def create_job_manager_objects(
    api: kubernetes.client.ApiClient,
    params: KubernetesJobManagerParameters,
    files: Mapping[str, bytes],
    secret: str,
    template: dict[str, Any] | None = None,
    previous_cluster_timeout: float = PREVIOUS_CLUSTER_TIMEOUT,
    progress: Callable[[str], None] = log.info,
) -> dict[str, Any]:
    """Create the Deployment, then the ConfigMap of ``files``, the Secret, the REST Service and the Ingress, if any;
    return the Deployment.

    ``files``: path below the cluster dir → content (config, JobGraph,
    artifacts); ``secret``: the cluster's secret; ``template``: the JobManager
    pod template, if any.  What the garbage collector has yet to remove of a
    deleted cluster of the same id is waited for, up to ``previous_cluster_timeout``
    seconds; ``progress`` is told once when that wait begins.

    Raises:
        DeploymentError: a file name or size a ConfigMap cannot hold (nothing
            created); the cluster id is in use or the namespace does not exist
            (nothing created); an ObjectExistsError (transient) when a deleted
            cluster's pods are still there after the wait (nothing created);
            any later failure, after the Deployment was deleted again (its
            owned objects go with it).
    """
    namespace, cluster_id = params.namespace, params.cluster_id
    items = staged_items(list(files))
    check_config_map_size(cluster_id, files)
    apps, core, networking = kubernetes.client.AppsV1Api(api), kubernetes.client.CoreV1Api(api), kubernetes.client.NetworkingV1Api(api)
    _check_unused(apps, params)
    _wait_for_deleted_cluster(apps, core, networking, params, previous_cluster_timeout, progress)
    deployment = build_job_manager_deployment(params, items, template)
    try:
        response = api_call("create", "deployments", namespace, apps.create_namespaced_deployment, namespace, deployment)
    except AlreadyExistsError as exc:
        raise _in_use(params) from exc
    except NotFoundError as exc:
        raise DeploymentError(
            f"namespace {namespace} does not exist; create it or set {KUBERNETES_NAMESPACE.key} to an existing one"
        ) from exc
    created: dict[str, Any] = api.sanitize_for_serialization(response)  # type: ignore[no-untyped-call]  # untyped in the client; the stored object as JSON, uid included
    log.info("created Deployment %s in namespace %s", cluster_id, namespace)
    try:
        owned: list[tuple[str, Callable[..., Any], dict[str, Any]]] = [
            ("configmaps", core.create_namespaced_config_map, build_config_map(cluster_id, namespace, files, created)),
            ("secrets", core.create_namespaced_secret, build_secret(cluster_id, namespace, secret, created)),
            ("services", core.create_namespaced_service, build_rest_service(params, created)),
        ]
        ingress = build_ingress(params, created)
        if ingress is not None:
            owned.append(("ingresses", networking.create_namespaced_ingress, ingress))
        for resource, create, body in owned:
            try:
                api_call("create", resource, namespace, create, namespace, body)
            except AlreadyExistsError as exc:
                # e.g. the previous cluster's, which the garbage collector has not removed yet: an operator tries again
                kind, name = body["kind"], body["metadata"]["name"]
                raise ObjectExistsError(f"could not create {kind} {name}: {kind} {name} already exists in namespace {namespace}") from exc
            log.info("created %s %s", body["kind"], body["metadata"]["name"])
    except BaseException:
        delete_cluster(api, namespace, cluster_id, created["metadata"]["uid"])
        raise
    return created


def delete_cluster(api: kubernetes.client.ApiClient, namespace: str, cluster_id: str, uid: str) -> bool:
    """Delete the Deployment ``cluster_id`` whose uid is ``uid`` (the one created or read, not another made under its
    name since); the garbage collector removes what it owns.  False if it was gone or is another.

    Background propagation (Flink's cascading delete): the call returns at once.

    Raises:
        DeploymentError: the API server refused or is unreachable.
    """
    apps = kubernetes.client.AppsV1Api(api)
    name = object_names.deployment_name(cluster_id)
    options = kubernetes.client.V1DeleteOptions(propagation_policy="Background", preconditions=kubernetes.client.V1Preconditions(uid=uid))
    try:
        api_call("delete", "deployments", namespace, apps.delete_namespaced_deployment, name, namespace, body=options)
    except (NotFoundError, ObjectChangedError):
        return False
    log.info("deleted Deployment %s in namespace %s (its objects follow)", name, namespace)
    return True


def _check_unused(apps: kubernetes.client.AppsV1Api, params: KubernetesJobManagerParameters) -> None:
    """The cluster exists when its Deployment does and is not being deleted (create would refuse it too); a
    Deployment of that name without the job clusters' label is another workload's, and said to be."""
    namespace, name = params.namespace, object_names.deployment_name(params.cluster_id)
    try:
        found: Any = api_call("get", "deployments", namespace, apps.read_namespaced_deployment, name, namespace)
    except NotFoundError:
        return
    if found.metadata.deletion_timestamp is not None:
        return
    if (found.metadata.labels or {}).get(LABEL_TYPE) != TYPE_VALUE:
        raise ForeignObjectError(
            f"Deployment {name} of namespace {namespace} is another workload's, not a job cluster's: "
            f"choose another {KUBERNETES_CLUSTER_ID.key} (a FlinkJob: another name)"
        )
    raise _in_use(params)


def _deleted_deployment(apps: kubernetes.client.AppsV1Api, params: KubernetesJobManagerParameters) -> str | None:
    """``deployment/<name>`` while the cluster's Deployment exists and is being deleted."""
    namespace, name = params.namespace, object_names.deployment_name(params.cluster_id)
    try:
        found: Any = api_call("get", "deployments", namespace, apps.read_namespaced_deployment, name, namespace)
    except NotFoundError:
        return None
    return f"deployment/{name}" if found.metadata.deletion_timestamp is not None else None


def _wait_for_deleted_cluster(
    apps: kubernetes.client.AppsV1Api,
    core: kubernetes.client.CoreV1Api,
    networking: kubernetes.client.NetworkingV1Api,
    params: KubernetesJobManagerParameters,
    timeout: float,
    progress: Callable[[str], None],
) -> None:
    """Return once nothing of a deleted cluster of the id is left (ObjectExistsError after ``timeout`` seconds)."""
    namespace, cluster_id = params.namespace, params.cluster_id
    deadline = time.monotonic() + timeout
    left = _leftovers(apps, core, networking, params)
    if left:
        progress(f"Waiting up to {timeout:g} s for {', '.join(left)} of the deleted job cluster {cluster_id} to go")
    kinds = "deployments,replicasets,pods,services" + (",ingresses" if params.ingress else "")
    while left:
        if time.monotonic() >= deadline:
            raise ObjectExistsError(
                f"{', '.join(left)} of a deleted job cluster {cluster_id} still exist in namespace {namespace} after "
                f"{timeout:g} s; deploy again once `kubectl get {kinds} -n {namespace} "
                f"-l app={cluster_id}` shows none, or choose another {KUBERNETES_CLUSTER_ID.key}"
            )
        time.sleep(_POLL_SECONDS)
        left = _leftovers(apps, core, networking, params)


def _leftovers(
    apps: kubernetes.client.AppsV1Api,
    core: kubernetes.client.CoreV1Api,
    networking: kubernetes.client.NetworkingV1Api,
    params: KubernetesJobManagerParameters,
) -> list[str]:
    """``kind/name`` of what the garbage collector has yet to remove of a deleted cluster: a Deployment deleted in the
    foreground, ReplicaSets and pods with the cluster's labels, the REST Service (Flink's sign of a cluster), and,
    when the new cluster has an Ingress, the old one's: creating the new one would fail on its name.  Only then, so
    that a user who configures none needs no rights on Ingresses."""
    namespace, selector = params.namespace, selector_text(common_labels(params.cluster_id))
    left = [found] if (found := _deleted_deployment(apps, params)) else []
    for kind, list_call in (("replicaset", apps.list_namespaced_replica_set), ("pod", core.list_namespaced_pod)):
        listed: Any = api_call("list", f"{kind}s", namespace, list_call, namespace, label_selector=selector)
        left += [f"{kind}/{item.metadata.name}" for item in listed.items]
    named: list[tuple[str, str, str, Callable[..., Any]]] = [
        ("service", "services", object_names.rest_service_name(params.cluster_id), core.read_namespaced_service)
    ]
    if params.ingress is not None:
        named.append(("ingress", "ingresses", object_names.ingress_name(params.cluster_id), networking.read_namespaced_ingress))
    for kind, resource, name, read in named:
        try:
            api_call("get", resource, namespace, read, name, namespace)
            left.append(f"{kind}/{name}")
        except NotFoundError:
            pass
    return left


def _in_use(params: KubernetesJobManagerParameters) -> ObjectExistsError:
    return ObjectExistsError(
        f"the job cluster {params.cluster_id} already exists in namespace {params.namespace}; choose another "
        f"{KUBERNETES_CLUSTER_ID.key}, or delete it with: kubectl delete deployment/{params.cluster_id} -n {params.namespace}"
    )
