"""KubernetesClusterDescriptor: a job cluster as a JobManager Deployment whose ResourceManager starts TaskManager pods.

Flink's ``KubernetesClusterDescriptor`` in application mode, for one JobGraph:

1. read every ``kubernetes.*`` option into parameters (a bad cluster id, map,
   factor or template is refused before the API server is contacted);
2. stage the cluster-side configuration (``cluster_config.py``), the
   serialized JobGraph, the program with its ``--py-files`` and the
   TaskManager pod template (if any) as files of one ConfigMap;
3. create the Deployment ``<cluster-id>``, then the ConfigMap, the Secret with
   the cluster's secret, the REST Service and the Ingress (when
   ``jobcluster.kubernetes.ingress.template`` is set), all owned by the Deployment
   (``cluster_objects.py``; a cluster id in use or a missing namespace is
   refused before anything is created);
4. wait for the JobManager pod to run and serve REST at the address
   ``jobcluster.kubernetes.rest.endpoint`` chooses (``rest_endpoint.py``).

Any failure after step 3 deletes the Deployment, and the garbage collector
removes what it owns: a failed deployment leaves nothing in the namespace.
The descriptor is a plain object with blocking calls, so an operator can use
it in-process (off its event loop).  ``progress`` receives one line per step
(the CLI prints them on stderr).

Why one module of this size: it is the ClusterDescriptor's whole contract for
one namespace (deploy with its wait on the JobManager pod, retrieve, list,
kill, the job result); the rules it applies live in pure modules beside it
(``job_manager_pod.py``, ``rest_endpoint.py``, ``staging.py``).
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import kubernetes
import requests

from jobcluster.backends.kubernetes import job_manager_pod, object_names, rest_endpoint
from jobcluster.backends.kubernetes.cluster_config import cluster_side_configuration
from jobcluster.backends.kubernetes.cluster_id import check_cluster_id
from jobcluster.backends.kubernetes.cluster_objects import create_job_manager_objects, delete_cluster
from jobcluster.backends.kubernetes.config_options import (
    KUBERNETES_CONFIG_FILE,
    KUBERNETES_CONTEXT,
    KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE,
    KUBERNETES_JOB_MANAGER_STARTUP_TIMEOUT,
    KUBERNETES_NAMESPACE,
    KUBERNETES_REST_ENDPOINT,
)
from jobcluster.backends.kubernetes.job_result import read_job_result
from jobcluster.backends.kubernetes.kube_client import ObjectNotFoundError, api_call, load_api_client
from jobcluster.backends.kubernetes.labels import (
    COMPONENT_JOB_MANAGER,
    LABEL_COMPONENT,
    LABEL_JOB_ID,
    LABEL_TYPE,
    TYPE_VALUE,
    job_manager_selector,
    selector_text,
    task_manager_selector,
)
from jobcluster.backends.kubernetes.parameters import (
    KubernetesJobManagerParameters,
    job_manager_parameters,
    task_manager_parameters,
)
from jobcluster.backends.kubernetes.pod_template import load_pod_template
from jobcluster.backends.kubernetes.pod_watch import list_pods
from jobcluster.backends.kubernetes.port_forward import PodPortForward, routes_to
from jobcluster.backends.kubernetes.staging import config_map_files
from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.client.descriptor import ClusterDescriptor, ClusterHandle, ClusterSpecification, JobResult, PackagedProgram
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.config.targets import DeploymentTarget
from jobcluster.errors import DeploymentError, NotFoundError, PlatformUnavailableError
from jobcluster.jobgraph.model import JobGraph
from jobcluster.runtime.entrypoint import layout
from jobcluster.security import new_cluster_secret, rest_token

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
PROBE_TIMEOUT = 3.0  # seconds for one REST probe while waiting

Progress = Callable[[str], None]


class KubernetesClusterDescriptor(ClusterDescriptor):
    """Deploys, lists and kills the job clusters of ``kubernetes.namespace`` (see the module docstring).

    ``config``: the client's configuration (kubeconfig, context, namespace,
    REST endpoint choice); ``api``: an ApiClient to use instead of loading one
    from ``config`` (the operator's); ``progress``: where step lines go;
    ``cluster_secrets``: the cluster secret of a cluster id, derived by the
    deployer (the operator, from its key), instead of a random one read back
    from the cluster's Secret (which the operator may not read).
    """

    target = DeploymentTarget.KUBERNETES_APPLICATION
    runs_client_spark = False  # the image's Spark, which carries the S3A connector
    client_options = (KUBERNETES_NAMESPACE, KUBERNETES_CONTEXT, KUBERNETES_CONFIG_FILE, KUBERNETES_REST_ENDPOINT)

    def __init__(
        self,
        config: Configuration,
        api: kubernetes.client.ApiClient | None = None,
        progress: Progress | None = None,
        cluster_secrets: Callable[[str], str] | None = None,
    ) -> None:
        self._config = config
        self._api = api
        self._cluster_secrets = cluster_secrets
        if progress is not None:
            self.progress = progress
        self.namespace = config.get(KUBERNETES_NAMESPACE)
        self.rest_endpoint = config.get(KUBERNETES_REST_ENDPOINT)
        # Port-forwards opened for pods off this client's network, by (namespace, pod): one per JobManager pod.
        self._forwards: dict[tuple[str, str], PodPortForward] = {}

    @property
    def api(self) -> kubernetes.client.ApiClient:
        """The ApiClient, loaded on first use (IllegalConfigurationError when no kubeconfig can be used)."""
        if self._api is None:
            self._api = load_api_client(self._config)
        return self._api

    # -- deploy

    def deploy_job_cluster(
        self, spec: ClusterSpecification, graph: JobGraph, program: PackagedProgram, config: Configuration
    ) -> RestClusterClient:
        """Create the cluster's objects and wait until its JobManager serves REST.

        Raises:
            IllegalConfigurationError: an option the parameters refuse (nothing created).
            DeploymentError: the files do not fit a ConfigMap, the cluster id is in use,
                the namespace does not exist, the API server refuses or cannot be reached,
                or the JobManager does not start within
                ``jobcluster.kubernetes.jobmanager.startup-timeout`` (the cluster is deleted).
        """
        jm = job_manager_parameters(config, graph.job_id)
        tm = task_manager_parameters(config, graph.job_id)
        staged_config = cluster_side_configuration(config, jm, tm)
        secret = self._cluster_secrets(jm.cluster_id) if self._cluster_secrets else new_cluster_secret()
        files = config_map_files(graph, program, staged_config, tm, secret)
        jm_template = (
            load_pod_template(jm.pod_template_file, KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE.key) if jm.pod_template_file else None
        )
        api = self.api
        deployment = create_job_manager_objects(api, jm, files, secret, jm_template, progress=self.progress)
        owned = [
            f"ConfigMap {object_names.config_map_name(jm.cluster_id)}",
            f"Secret {object_names.secret_name(jm.cluster_id)}",
            f"Service {object_names.rest_service_name(jm.cluster_id)}",
        ]
        if jm.ingress is not None:
            owned.append(f"Ingress {object_names.ingress_name(jm.cluster_id)} ({jm.ingress.address})")
        self.progress(
            f"Created Deployment {jm.cluster_id} (JobManager: {jm.memory_mib} MiB, {jm.cpu:g} CPU), "
            f"{', '.join(owned[:-1])} and {owned[-1]} in namespace {jm.namespace}"
        )
        try:
            rest_url = self._wait_until_serving(jm, config.get(KUBERNETES_JOB_MANAGER_STARTUP_TIMEOUT))
        except BaseException:
            try:
                delete_cluster(api, jm.namespace, jm.cluster_id, deployment["metadata"]["uid"])
            except DeploymentError as exc:
                log.error("could not delete the job cluster %s after its failed start: %s", jm.cluster_id, exc)
            raise
        return RestClusterClient(
            rest_url,
            jm.cluster_id,
            token=rest_token(secret),
            liveness=functools.partial(self._deployment_exists, jm.cluster_id),
            log_location=_log_location(jm.namespace, jm.cluster_id),
            locate=functools.partial(self._serving_rest_url, jm),
            on_close=self.close,
        )

    def _wait_until_serving(self, jm: KubernetesJobManagerParameters, timeout: float) -> str:
        """The REST URL once the JobManager pod runs and answers there; DeploymentError on a failed start or timeout.

        An API server that does not answer a look (PlatformUnavailableError) is waited for like the pod, until
        the deadline: a blip of the platform never tears down a cluster that starts well."""
        core = kubernetes.client.CoreV1Api(self.api)
        deadline = time.monotonic() + timeout
        seen: set[str] = set()
        waiting_for = "the JobManager pod to be created"
        while time.monotonic() < deadline:
            try:
                url, waiting_for = self._look_at_start(core, jm, seen)
            except PlatformUnavailableError as exc:
                waiting_for = f"the Kubernetes API server, which did not answer ({exc})"
            else:
                if url is not None:
                    return url
            time.sleep(POLL_SECONDS)
        raise DeploymentError(
            f"job cluster {jm.cluster_id} did not start within {timeout:.0f} s: still waiting for {waiting_for} "
            f"({KUBERNETES_JOB_MANAGER_STARTUP_TIMEOUT.key}); the cluster was deleted"
        )

    def _look_at_start(self, core: Any, jm: KubernetesJobManagerParameters, seen: set[str]) -> tuple[str | None, str]:
        """One look at a starting JobManager: ``(its REST URL once it answers, else None; what the start waits for)``.

        DeploymentError when the pod cannot be created or did not start, or the Deployment is gone."""
        pods, _ = list_pods(core, jm.namespace, selector_text(job_manager_selector(jm.cluster_id)))
        pod = job_manager_pod.newest_pod(pods)
        if pod is None:
            deployment = self._read_deployment(jm.cluster_id)
            if not deployment:  # deleted while it started (its FlinkJob deleted, a kill): nothing is left to wait for
                raise DeploymentError(f"job cluster {jm.cluster_id} was deleted while it started")
            refused = job_manager_pod.creation_failure(deployment)
            if refused:
                raise DeploymentError(
                    f"the JobManager pod of job cluster {jm.cluster_id} cannot be created: {refused}; the cluster was deleted"
                )
            return None, "the JobManager pod to be created"
        name = pod["metadata"]["name"]
        failure = job_manager_pod.startup_failure(pod)
        if failure:
            reason = _startup_failure_line(core, jm.namespace, name)
            failure = f"{failure}: {reason}" if reason else failure
            raise DeploymentError(
                f"the JobManager pod {name} of job cluster {jm.cluster_id} did not start: {failure} "
                f"(its log: kubectl logs -n {jm.namespace} {name}); the cluster was deleted"
            )
        unscheduled = job_manager_pod.unscheduled_reason(pod)
        if unscheduled:
            return None, f"the JobManager pod {name} to be scheduled: {unscheduled}"
        if job_manager_pod.is_running(pod):
            node = pod["spec"].get("nodeName")
            self._say_once(seen, "running", f"JobManager pod {name} is running on node {node} at {pod['status']['podIP']}")
            url = self._rest_url(core, jm, pod)
            if url and _serves(url):
                return url, ""
            return None, f"the JobManager's REST API at {url}" if url else "the REST Service's address"
        if pod["spec"].get("nodeName"):
            self._say_once(seen, "scheduled", f"JobManager pod {name} is scheduled on node {pod['spec']['nodeName']}")
        waiting = job_manager_pod.waiting_reason(pod)
        return None, f"the JobManager pod {name} to run" + (f" ({waiting})" if waiting else "")

    def _serving_rest_url(self, jm: KubernetesJobManagerParameters) -> str | None:
        """Where the newest JobManager pod serves REST now, or None (no pod runs and answers yet).

        The Deployment replaces a deleted or failed JobManager pod by one with a
        new IP; an attached client follows it there (``RestClusterClient.locate``).
        """
        core = kubernetes.client.CoreV1Api(self.api)
        try:
            pods, _ = list_pods(core, jm.namespace, selector_text(job_manager_selector(jm.cluster_id)))
            pod = job_manager_pod.newest_pod(pods)
            url = self._rest_url(core, jm, pod) if pod is not None and job_manager_pod.is_running(pod) else None
        except DeploymentError as exc:
            log.warning("cannot find the JobManager of job cluster %s: %s", jm.cluster_id, exc)
            return None
        return url if url and _serves(url) else None

    def _say_once(self, seen: set[str], key: str, line: str) -> None:
        if key not in seen:
            seen.add(key)
            self.progress(line)

    def _rest_url(self, core: kubernetes.client.CoreV1Api, jm: KubernetesJobManagerParameters, pod: Mapping[str, Any]) -> str | None:
        return self._rest_url_of(core, jm.cluster_id, pod, jm.rest_port)

    def _pod_url(self, pod: Mapping[str, Any], port: int) -> str | None:
        """The pod's own address, or a port-forward to it when the option asks for one or the address does not route."""
        url = rest_endpoint.pod_rest_url(pod, port)
        if url is None:
            return None
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        if key in self._forwards:
            return self._forwards[key].url
        if self.rest_endpoint == rest_endpoint.POD_IP and routes_to(pod["status"]["podIP"], port):
            return url
        forward = PodPortForward(self.api, key[0], key[1], port).start()
        self._forwards[key] = forward
        reason = "" if self.rest_endpoint == rest_endpoint.PORT_FORWARD else f"{pod['status']['podIP']} cannot be reached from here; "
        self.progress(f"Reaching the JobManager pod {key[1]} through the API server ({reason}port-forward {forward.url})")
        return forward.url

    def close(self) -> None:
        """Close the port-forwards this descriptor opened (their connections end)."""
        for forward in self._forwards.values():
            forward.close()
        self._forwards.clear()

    def _read_deployment(self, cluster_id: str) -> dict[str, Any]:
        """The cluster's Deployment as a dict; {} when it is gone.

        Raises:
            DeploymentError: the API server refuses (other than 404) or cannot be reached.
        """
        apps = kubernetes.client.AppsV1Api(self.api)
        try:
            response: Any = api_call(
                "get", "deployments", self.namespace, apps.read_namespaced_deployment, cluster_id, self.namespace, _preload_content=False
            )
        except NotFoundError:
            return {}
        return _json(response)

    def _deployment_exists(self, cluster_id: str) -> bool:
        """False once the Deployment is gone; True while it exists or when the API server cannot tell."""
        try:
            return bool(self._read_deployment(cluster_id))
        except DeploymentError:
            return True

    # -- list and kill

    def list_clusters(self) -> list[ClusterHandle]:
        """The job clusters of the namespace (their JobManager Deployments), with REST URL and token where known.

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        apps, core = kubernetes.client.AppsV1Api(self.api), kubernetes.client.CoreV1Api(self.api)
        selector = selector_text({LABEL_TYPE: TYPE_VALUE, LABEL_COMPONENT: COMPONENT_JOB_MANAGER})
        try:
            response: Any = api_call(
                "list",
                "deployments",
                self.namespace,
                apps.list_namespaced_deployment,
                self.namespace,
                label_selector=selector,
                _preload_content=False,
            )
        except NotFoundError:
            return []
        handles = []
        for deployment in _json(response).get("items") or []:
            if (deployment.get("metadata") or {}).get("deletionTimestamp"):
                continue
            handles.append(self._handle(core, deployment))
        return handles

    def retrieve(self, cluster_id: str) -> ClusterHandle | None:
        """The job cluster ``cluster_id`` of the namespace (REST URL and token where known), or None when it is gone.

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        deployment = self.job_manager_deployment(cluster_id)
        return self._handle(kubernetes.client.CoreV1Api(self.api), deployment) if deployment else None

    def job_manager_deployment(self, cluster_id: str) -> dict[str, Any] | None:
        """The JobManager Deployment of job cluster ``cluster_id`` as a dict; None when there is none, it is being
        deleted, or the Deployment of that name is not a job cluster's (it lacks the jobcluster labels: another
        workload's, never adopted nor deleted).

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        deployment = self._read_deployment(cluster_id)
        metadata = deployment.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if metadata.get("deletionTimestamp") or (labels.get(LABEL_TYPE), labels.get(LABEL_COMPONENT)) != (
            TYPE_VALUE,
            COMPONENT_JOB_MANAGER,
        ):
            return None
        return deployment

    def _handle(self, core: kubernetes.client.CoreV1Api, deployment: Mapping[str, Any]) -> ClusterHandle:
        metadata = deployment["metadata"]
        cluster_id = metadata["name"]
        pods, _ = list_pods(core, self.namespace, selector_text(job_manager_selector(cluster_id)))
        pod = job_manager_pod.newest_pod(pods)
        rest_url = None
        if pod is not None and job_manager_pod.is_running(pod):
            port = job_manager_pod.rest_port(deployment, self._config.get(options.REST_PORT) or 8081)
            try:
                rest_url = self._rest_url_of(core, cluster_id, pod, port)
            except DeploymentError as exc:
                log.warning("cannot find the REST address of job cluster %s: %s", cluster_id, exc)
        return ClusterHandle(
            cluster_id=cluster_id,
            target=self.target,
            rest_url=rest_url,
            job_id=(metadata.get("labels") or {}).get(LABEL_JOB_ID, ""),
            job_name=cluster_id,
            log_dir=_log_location(self.namespace, cluster_id),
            rest_token=self._read_rest_token(core, cluster_id),
        )

    def _rest_url_of(self, core: kubernetes.client.CoreV1Api, cluster_id: str, pod: Mapping[str, Any], port: int) -> str | None:
        if self.rest_endpoint in (rest_endpoint.POD_IP, rest_endpoint.PORT_FORWARD):
            return self._pod_url(pod, port)
        name = object_names.rest_service_name(cluster_id)
        response: Any = api_call(
            "get", "services", self.namespace, core.read_namespaced_service, name, self.namespace, _preload_content=False
        )
        return rest_endpoint.service_rest_url(_json(response), pod)

    def _read_rest_token(self, core: kubernetes.client.CoreV1Api, cluster_id: str) -> str | None:
        """The cluster's REST token, derived from its cluster secret (``cluster_secrets``, else its Secret); None when
        this user may not read the Secret."""
        if self._cluster_secrets is not None:
            return rest_token(self._cluster_secrets(cluster_id))
        name = object_names.secret_name(cluster_id)
        try:
            response: Any = api_call(
                "get", "secrets", self.namespace, core.read_namespaced_secret, name, self.namespace, _preload_content=False
            )
        except DeploymentError:
            return None
        encoded = (_json(response).get("data") or {}).get(object_names.SECRET_KEY)
        return rest_token(base64.b64decode(encoded).decode()) if encoded else None

    def job_result(self, cluster_id: str) -> JobResult | None:
        """How the job of cluster ``cluster_id`` ended, as its JobManager left it for the Deployment's owners
        (``job_result.py``); None when there is no such record (yet).

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        return read_job_result(self.api, self.namespace, cluster_id)

    def pending_reason(self, cluster_id: str) -> str | None:
        """The scheduler's reason for the first TaskManager pod of the cluster that cannot be placed, if any.

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        pods, _ = list_pods(kubernetes.client.CoreV1Api(self.api), self.namespace, selector_text(task_manager_selector(cluster_id)))
        for pod in pods:
            reason = job_manager_pod.unscheduled_reason(pod)
            if reason:
                return f"TaskManager pod {pod['metadata']['name']} cannot be scheduled: {reason}"
        return None

    def remove_job_result(self, cluster_id: str) -> None:
        """Delete the result ConfigMap an earlier run of the cluster left, if any.

        Raises:
            DeploymentError: the API server refuses or cannot be reached.
        """
        core = kubernetes.client.CoreV1Api(self.api)
        name = object_names.job_result_name(cluster_id)
        try:
            api_call("delete", "configmaps", self.namespace, core.delete_namespaced_config_map, name, self.namespace)
        except NotFoundError:
            pass

    def kill_cluster(self, cluster_id: str) -> None:
        """Delete the JobManager Deployment ``cluster_id`` (everything it owns follows): only a job cluster's (see
        :meth:`job_manager_deployment`), and only the one read (a uid precondition).

        Raises:
            IllegalConfigurationError: ``cluster_id`` is not a valid cluster id.
            DeploymentError: there is no such job cluster in the namespace, or the API server refuses.
        """
        check_cluster_id(cluster_id)
        deployment = self.job_manager_deployment(cluster_id)
        if deployment is None or not delete_cluster(self.api, self.namespace, cluster_id, deployment["metadata"]["uid"]):
            raise ObjectNotFoundError(f"no job cluster {cluster_id} in namespace {self.namespace}")


def _startup_failure_line(core: kubernetes.client.CoreV1Api, namespace: str, pod: str) -> str | None:
    """The reason the JobManager printed when it could not start, from its container's log (this or the last run);
    None when the log cannot be read (no permission, or a node that does not serve logs)."""
    for previous in (False, True):
        try:
            text: Any = api_call(
                "get",
                "pods/log",
                namespace,
                core.read_namespaced_pod_log,
                pod,
                namespace,
                previous=previous,
                tail_lines=50,
                _request_timeout=(2.0, 5.0),
            )
        except DeploymentError:
            continue
        for line in reversed(str(text).splitlines()):
            if line.startswith(layout.STARTUP_FAILURE_PREFIX):
                return line[len(layout.STARTUP_FAILURE_PREFIX) :]
    return None


def _serves(url: str) -> bool:
    """Whether the job cluster answers ``GET /jobs/overview`` with 200 (503 while it starts)."""
    try:
        with requests.Session() as session:
            session.trust_env = False  # the pod network is never reached through an HTTP proxy
            return bool(session.get(f"{url}/jobs/overview", timeout=PROBE_TIMEOUT).status_code == 200)
    except requests.RequestException:
        return False


def _json(response: Any) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(response.data)
    return document


def _log_location(namespace: str, cluster_id: str) -> str:
    return (
        f"kubectl logs -n {namespace} deployment/{cluster_id}, and of the TaskManagers: "
        f"kubectl logs -n {namespace} -l app={cluster_id},component=taskmanager"
    )
