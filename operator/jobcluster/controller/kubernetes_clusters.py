"""FlinkJobs' job clusters on Kubernetes: deploy, observe, remove (blocking calls; run them off the loop).

Deployment goes through the same KubernetesClusterDescriptor as ``jobcluster
run -t kubernetes-application``, in this process with the operator's own API
client: no CLI subprocess per job.  Observation reads what the cluster says
about itself (its REST API, with the token derived from its Secret), its
TaskManager pods (why they are pending), and, once it is gone, the result its
JobManager left for the FlinkJob (``backends/kubernetes/job_result.py``).
"""

from __future__ import annotations

import logging

import kubernetes

from jobcluster.backends.kubernetes.cluster_objects import delete_cluster
from jobcluster.backends.kubernetes.config_options import KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT, KUBERNETES_NAMESPACE
from jobcluster.backends.kubernetes.descriptor import KubernetesClusterDescriptor
from jobcluster.backends.kubernetes.kube_client import api_call
from jobcluster.backends.kubernetes.labels import selector_text, task_manager_selector
from jobcluster.backends.kubernetes.object_names import job_result_name
from jobcluster.backends.kubernetes.pod_status import unscheduled_reason
from jobcluster.backends.kubernetes.pod_watch import list_pods
from jobcluster.client.descriptor import PackagedProgram
from jobcluster.client.executor import PipelineExecutor
from jobcluster.client.program import build_job_graph
from jobcluster.config.configuration import Configuration
from jobcluster.controller.clusters import ClusterRef, Deployed, Observation, observe_job
from jobcluster.controller.job_rbac import ensure_job_service_account
from jobcluster.errors import NotFoundError
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config

log = logging.getLogger(__name__)


class KubernetesClusters:
    """Job clusters of FlinkJobs on this Kubernetes cluster, through ``api`` (the operator's ApiClient);
    a :class:`~jobcluster.controller.clusters.TargetClusters`."""

    def __init__(self, api: kubernetes.client.ApiClient, job_cluster_role: str | None = None) -> None:
        self.api = api
        self.job_cluster_role = job_cluster_role

    def _descriptor(self, namespace: str, config: Configuration | None = None) -> KubernetesClusterDescriptor:
        config = config if config is not None else Configuration({KUBERNETES_NAMESPACE.key: namespace})
        return KubernetesClusterDescriptor(config, api=self.api)

    def deploy(self, ref: ClusterRef, config: Configuration, program: PackagedProgram) -> Deployed:
        """Deploy the job of ``program`` under ``config`` (cluster id: the FlinkJob's name) and wait until its
        JobManager serves REST.

        Raises:
            JobClusterError: the JobGraph, configuration or deployment is refused (nothing is left behind).
        """
        self.remove_result(ref)  # a result of an earlier run is not this run's
        if self.job_cluster_role:  # the JobManager's ServiceAccount where no chart made it (job_rbac.py)
            account = str(config.get(KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT))
            ensure_job_service_account(self.api, ref.namespace, account, self.job_cluster_role)
        graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
        job_client = PipelineExecutor(self._descriptor(ref.namespace, config)).execute(graph, program, config)
        try:
            return Deployed(graph.job_id, job_client.cluster_client.rest_url, ref.name)
        finally:
            job_client.cluster_client.close()

    def observe(self, ref: ClusterRef, job_id: str | None) -> Observation:
        """A look at the cluster: its Deployment, its REST API, its pending TaskManager pods, or the result it left.

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        descriptor = self._descriptor(ref.namespace)
        handle = descriptor.retrieve(ref.name)
        if handle is None:
            return Observation(exists=False, result=descriptor.job_result(ref.name))
        pending = self._pending_reason(ref.namespace, ref.name)
        return observe_job(Observation(exists=True, cluster_id=ref.name, rest_url=handle.rest_url, pending=pending), handle, job_id)

    def _pending_reason(self, namespace: str, cluster_id: str) -> str | None:
        core = kubernetes.client.CoreV1Api(self.api)
        pods, _ = list_pods(core, namespace, selector_text(task_manager_selector(cluster_id)))
        for pod in pods:
            reason = unscheduled_reason(pod)
            if reason:
                return f"TaskManager pod {pod['metadata']['name']} cannot be scheduled: {reason}"
        return None

    def remove(self, ref: ClusterRef) -> bool:
        """Delete the cluster's Deployment (everything it owns follows); False when there was none.

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        return delete_cluster(self.api, ref.namespace, ref.name)

    def remove_result(self, ref: ClusterRef) -> None:
        """Delete the result ConfigMap an earlier run of the cluster left, if any.

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        core = kubernetes.client.CoreV1Api(self.api)
        try:
            api_call("delete", "configmaps", ref.namespace, core.delete_namespaced_config_map, job_result_name(ref.name), ref.namespace)
        except NotFoundError:
            pass
