"""The JobManager's ServiceAccount in a FlinkJob's namespace, created by the operator when it is absent.

Why: an operator watching all namespaces (the chart with ``watchNamespaces``
empty) cannot have the chart create, at install time, the ServiceAccount the
JobManager pods run as in namespaces that may not exist yet. So, when started
with ``--job-cluster-role NAME``, before deploying a FlinkJob on Kubernetes it
creates in the FlinkJob's namespace, unless they exist:

- the ServiceAccount the JobManager runs as (``spec.serviceAccount``, by default ``jobcluster``);
- the RoleBinding ``<account>-jobmanager`` of it to the ClusterRole ``NAME``
  (the rules of manifests/rbac.yaml, which the chart installs), so the rights
  hold in that namespace only.

Both are owned by that ClusterRole: uninstalling the chart deletes the
ClusterRole and Kubernetes' garbage collector then deletes them in every
namespace. Objects that exist already (the user's own, or the chart's in the
watched namespaces) are left as they are; but the operator binds the
JobManager's rights only to an account it made itself (its ``managed-by``
label): an account some other workload runs as would gain them. The operator needs only ``get`` and
``create`` on ServiceAccounts and RoleBindings, and ``get`` and ``bind`` on
that one ClusterRole (it binds it without holding its rights).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import kubernetes

from jobcluster.backends.kubernetes.kube_client import api_call
from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.errors import AlreadyExistsError, DeploymentError, NotFoundError

log = logging.getLogger(__name__)

MANAGED_BY = "jobcluster-operator"


def binding_name(account: str) -> str:
    """The RoleBinding of ``account`` (``jobcluster-jobmanager`` for ``jobcluster``, as in manifests/rbac.yaml)."""
    return f"{account}-jobmanager"[:253]


def ensure_job_service_account(api: kubernetes.client.ApiClient, namespace: str, account: str, cluster_role: str) -> list[str]:
    """Create what is missing of ``account`` and its binding to ``cluster_role`` in ``namespace``; what was created.

    Raises:
        DeploymentError: the operator may not read or create them, or the API server cannot be reached
            (the ClusterRole missing: its message says so).
        InvalidSpecError: (transient, reason ``ServiceAccountNotBound``) the account exists, was not made by the
            operator and has no binding: the operator does not bind it; someone who may must.
    """
    core, rbac = kubernetes.client.CoreV1Api(api), kubernetes.client.RbacAuthorizationV1Api(api)
    created: list[str] = []
    existing = _read("get", "serviceaccounts", namespace, core.read_namespaced_service_account, account, namespace)
    binding = binding_name(account)
    missing_binding = _read("get", "rolebindings", namespace, rbac.read_namespaced_role_binding, binding, namespace) is None
    if existing is not None and not missing_binding:
        return created
    if existing is not None and _labels(existing).get("app.kubernetes.io/managed-by") != MANAGED_BY:
        raise InvalidSpecError(
            f"ServiceAccount {account} of namespace {namespace} was not made by the operator and has no RoleBinding "
            f"{binding}: the operator gives the JobManager's rights only to an account it made (others run other "
            f"workloads); bind it to ClusterRole {cluster_role} yourself (as manifests/rbac.yaml does), or delete it "
            "and the operator makes it",
            reason="ServiceAccountNotBound",
            transient=True,
        )
    missing_account = existing is None
    owner = _owner(rbac, cluster_role)
    labels = {"app.kubernetes.io/name": "jobcluster", "app.kubernetes.io/managed-by": MANAGED_BY}
    metadata: dict[str, Any] = {"namespace": namespace, "labels": labels, "ownerReferences": [owner]}
    if missing_account:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, **metadata}}
        if _create("serviceaccounts", namespace, core.create_namespaced_service_account, namespace, body):
            created.append(f"serviceaccount/{account}")
    if missing_binding:
        body = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": binding, **metadata},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        }
        if _create("rolebindings", namespace, rbac.create_namespaced_role_binding, namespace, body):
            created.append(f"rolebinding/{binding}")
    if created:
        log.info("created %s in namespace %s for the JobManager pods", ", ".join(created), namespace)
    return created


def _read(verb: str, resource: str, namespace: str, call: Callable[..., Any], *args: Any) -> Any:
    """The object, None when it does not exist."""
    try:
        return api_call(verb, resource, namespace, call, *args)
    except NotFoundError:
        return None


def _labels(found: Any) -> dict[str, str]:
    return dict((found.metadata.labels if found.metadata else None) or {})


def _create(resource: str, namespace: str, call: Callable[..., Any], *args: Any) -> bool:
    """Create; False when another reconciliation (or someone) created it meanwhile."""
    try:
        api_call("create", resource, namespace, call, *args)
    except AlreadyExistsError:
        return False
    return True


def _owner(rbac: kubernetes.client.RbacAuthorizationV1Api, cluster_role: str) -> dict[str, str]:
    try:
        role = api_call("get", "clusterroles", None, rbac.read_cluster_role, cluster_role)
    except NotFoundError as exc:
        raise DeploymentError(
            f"the ClusterRole {cluster_role} of the JobManager pods (--job-cluster-role) does not exist: "
            "reinstall the chart, or start the operator without --job-cluster-role and apply manifests/rbac.yaml "
            "in the FlinkJob's namespace"
        ) from exc
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "name": cluster_role,
        "uid": str(role.metadata.uid if role.metadata else ""),
    }
