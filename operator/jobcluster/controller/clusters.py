"""The operator's view of job clusters on Kubernetes: deploy, observe, remove (blocking calls; run them off the loop).

Deployment goes through the same KubernetesClusterDescriptor as ``jobcluster
run -t kubernetes-application``, in this process with the operator's own API
client: no CLI subprocess per job.  Observation reads what the cluster says
about itself (its REST API, with the token derived from its Secret), its
TaskManager pods (why they are pending), and, once it is gone, the result its
JobManager left for the FlinkJob (``backends/kubernetes/job_result.py``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import kubernetes

from jobcluster.backends.kubernetes.cluster_objects import delete_cluster
from jobcluster.backends.kubernetes.descriptor import KubernetesClusterDescriptor
from jobcluster.backends.kubernetes.job_result import JobResultRecord
from jobcluster.backends.kubernetes.kube_client import api_call
from jobcluster.backends.kubernetes.labels import selector_text, task_manager_selector
from jobcluster.backends.kubernetes.pod_layout import job_result_name
from jobcluster.backends.kubernetes.pod_status import unscheduled_reason
from jobcluster.backends.kubernetes.pod_watch import list_pods
from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.client.descriptor import PackagedProgram
from jobcluster.client.executor import PipelineExecutor
from jobcluster.client.program import build_job_graph
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.errors import ClusterClientError, DeploymentError
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config

log = logging.getLogger(__name__)

REST_TIMEOUT = 5.0  # seconds for one REST call of an observation


@dataclass(frozen=True)
class Deployed:
    """A job cluster just deployed: its JobID and where its REST API answers."""

    job_id: str
    rest_url: str


@dataclass
class Observation:
    """What one look at a FlinkJob's cluster found.

    ``exists``: its JobManager Deployment is there; ``job``: ``GET /jobs/{id}``
    when REST answered; ``task_managers``: ``GET /taskmanagers``; ``result``:
    the record a finished cluster left (after the Deployment is gone);
    ``failure_cause``: the end of the execution result's cause, fetched once
    the job is terminal (which also lets the attached cluster shut down);
    ``pending``: why a TaskManager pod cannot be scheduled, if one cannot.
    """

    exists: bool
    rest_url: str | None = None
    job: dict[str, Any] | None = None
    task_managers: list[dict[str, Any]] = field(default_factory=list)
    result: JobResultRecord | None = None
    failure_cause: str | None = None
    pending: str | None = None


class KubernetesClusters:
    """Job clusters of FlinkJobs on this Kubernetes cluster, through ``api`` (the operator's ApiClient)."""

    def __init__(self, api: kubernetes.client.ApiClient) -> None:
        self.api = api

    def _descriptor(self, namespace: str, config: Configuration | None = None) -> KubernetesClusterDescriptor:
        config = config if config is not None else Configuration({options.KUBERNETES_NAMESPACE.key: namespace})
        return KubernetesClusterDescriptor(config, api=self.api)

    def deploy(self, config: Configuration, program: PackagedProgram) -> Deployed:
        """Deploy the job of ``program`` under ``config`` and wait until its JobManager serves REST.

        Raises:
            JobClusterError: the JobGraph, configuration or deployment is refused (nothing is left behind).
        """
        namespace, cluster_id = config.get(options.KUBERNETES_NAMESPACE), config.get(options.KUBERNETES_CLUSTER_ID)
        self.remove_result(str(namespace), str(cluster_id))  # a result of an earlier run is not this run's
        graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
        descriptor = self._descriptor(str(namespace), config)
        job_client = PipelineExecutor(descriptor).execute(graph, program, config)
        try:
            return Deployed(graph.job_id, job_client.cluster_client.rest_url)
        finally:
            job_client.cluster_client.close()

    def observe(self, namespace: str, cluster_id: str, job_id: str | None) -> Observation:
        """A look at the cluster (see :class:`Observation`).

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        descriptor = self._descriptor(namespace)
        handle = descriptor.cluster_handle(cluster_id)
        if handle is None:
            return Observation(exists=False, result=descriptor.job_result(cluster_id))
        observation = Observation(exists=True, rest_url=handle.rest_url, pending=self._pending_reason(namespace, cluster_id))
        if handle.rest_url is None or not job_id:
            return observation
        client = RestClusterClient(handle.rest_url, cluster_id, timeout=REST_TIMEOUT, token=handle.rest_token)
        try:
            observation.job = client.job_details(job_id)
            observation.task_managers = client.task_managers()
            if observation.job["state"] in ("FINISHED", "FAILED", "CANCELED"):
                result = client.execution_result(job_id)
                cause = (result or {}).get("failure-cause") or {}
                observation.failure_cause = cause.get("stack-trace")
        except ClusterClientError as exc:
            log.debug("job cluster %s/%s does not answer: %s", namespace, cluster_id, exc)
        finally:
            client.close()
        return observation

    def _pending_reason(self, namespace: str, cluster_id: str) -> str | None:
        core = kubernetes.client.CoreV1Api(self.api)
        pods, _ = list_pods(core, namespace, selector_text(task_manager_selector(cluster_id)))
        for pod in pods:
            reason = unscheduled_reason(pod)
            if reason:
                return f"TaskManager pod {pod['metadata']['name']} cannot be scheduled: {reason}"
        return None

    def remove(self, namespace: str, cluster_id: str) -> bool:
        """Delete the cluster's Deployment (everything it owns follows); False when there was none.

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        return delete_cluster(self.api, namespace, cluster_id)

    def remove_result(self, namespace: str, cluster_id: str) -> None:
        """Delete the result an earlier run of the cluster left, if any.

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        core = kubernetes.client.CoreV1Api(self.api)
        try:
            api_call("delete", "configmaps", namespace, core.delete_namespaced_config_map, job_result_name(cluster_id), namespace)
        except kubernetes.client.ApiException as exc:
            if exc.status != 404:
                raise DeploymentError(f"cannot delete the old job result of {cluster_id}: {exc.status} {exc.reason}") from exc
