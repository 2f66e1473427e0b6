"""FlinkJobs on this Kubernetes cluster: what the operator knows of the kubernetes-application target.

The cluster id is the FlinkJob's name, in its namespace; the descriptor is the
same KubernetesClusterDescriptor as ``jobcluster run -t kubernetes-application``,
with the operator's own API client. Before a deployment the JobManager's
ServiceAccount is made where no chart made it (``job_rbac.py``). Everything else
(the pending TaskManager pods' reason, the result an ended cluster leaves) is the
descriptor's.
"""

from __future__ import annotations

import logging

import kubernetes

from jobcluster.backends.kubernetes.config_options import KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT, KUBERNETES_NAMESPACE
from jobcluster.backends.kubernetes.descriptor import KubernetesClusterDescriptor
from jobcluster.backends.kubernetes.job_rbac import ensure_job_service_account
from jobcluster.backends.kubernetes.kube_client import api_call
from jobcluster.client.descriptor import ClusterDescriptor
from jobcluster.client.operator_hook import ClusterRef
from jobcluster.config.configuration import Configuration
from jobcluster.errors import NotFoundError
from jobcluster.security import derived_cluster_secret

log = logging.getLogger(__name__)


def read_config_map(api: kubernetes.client.ApiClient, namespace: str, name: str) -> dict[str, str] | None:
    """The data of ConfigMap ``namespace/name``, None when it does not exist.

    Raises:
        DeploymentError: the API server refuses or cannot be reached.
    """
    core = kubernetes.client.CoreV1Api(api)
    try:
        config_map = api_call("get", "configmaps", namespace, core.read_namespaced_config_map, name, namespace)
    except NotFoundError:
        return None
    return dict(config_map.data or {})


class KubernetesOperatorHook:
    """The :class:`~jobcluster.client.operator_hook.OperatorHook` of FlinkJobs on this cluster, through ``api``
    (the operator's ApiClient); ``job_cluster_role``: the ClusterRole of the JobManagers' ServiceAccounts the
    operator makes in every namespace (all-namespaces mode), None where the chart made them; ``cluster_secret_key``:
    the operator's key each FlinkJob's cluster secret is derived from (``security.derived_cluster_secret``), so that
    it needs no right to read Secrets; None: random secrets, read back from the clusters' Secrets."""

    def __init__(
        self, api: kubernetes.client.ApiClient, job_cluster_role: str | None = None, cluster_secret_key: str | None = None
    ) -> None:
        self.api = api
        self.job_cluster_role = job_cluster_role
        self.cluster_secret_key = cluster_secret_key

    def descriptor(self, ref: ClusterRef, config: Configuration | None = None) -> ClusterDescriptor:
        config = config if config is not None else Configuration({KUBERNETES_NAMESPACE.key: ref.namespace})
        key = self.cluster_secret_key
        owner = f"{ref.namespace}/{ref.name}/{ref.uid}"
        secrets = (lambda _cluster_id: derived_cluster_secret(key, owner)) if key else None
        return KubernetesClusterDescriptor(config, api=self.api, cluster_secrets=secrets)

    def prepare(self, ref: ClusterRef, config: Configuration) -> Configuration:
        if self.job_cluster_role:
            account = config.get(KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT)
            ensure_job_service_account(self.api, ref.namespace, account, self.job_cluster_role)
        return config

    def cluster_id(self, ref: ClusterRef, descriptor: ClusterDescriptor) -> str:
        return ref.name

    def running(self, ref: ClusterRef, descriptor: ClusterDescriptor) -> list[str]:
        """The FlinkJob's cluster while its Deployment exists and is owned by the FlinkJob (its uid): a job cluster
        of the same name deployed otherwise (``jobcluster run``) is not this FlinkJob's to remove."""
        assert isinstance(descriptor, KubernetesClusterDescriptor)
        deployment = descriptor.job_manager_deployment(ref.name)
        if deployment is None:
            return []
        owners = [owner.get("uid") for owner in deployment["metadata"].get("ownerReferences") or []]
        if ref.uid not in owners:
            log.warning("job cluster %s/%s is not owned by FlinkJob %s (uid %s): left alone", ref.namespace, ref.name, ref.name, ref.uid)
            return []
        return [ref.name]

    def access(self, ref: ClusterRef) -> dict[str, str]:
        """Nothing: the cluster is reached through the operator's own API client."""
        return {}
