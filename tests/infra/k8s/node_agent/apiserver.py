"""The agent's calls to the API server, each bounded by a timeout.

Why: the agent talks to the API server as its node (``system:node:<name>``)
from several threads; this module owns the client configuration (a pool big
enough for them, never a proxy: the server is on loopback) and the pod-level
calls whose errors the rest of the agent must not have to interpret (404 means
gone, a refused ConfigMap read or token request means "retry later").
"""

from __future__ import annotations

import json
import logging
import time
import urllib.parse

import kubernetes
from kubernetes.client.exceptions import ApiException

from tests.infra.k8s.node_agent.addresses import HOST_IP
from tests.infra.k8s.node_agent.errors import PodConfigError

log = logging.getLogger("node-agent")

# Every API call has a (connect, read) timeout in seconds.
API_TIMEOUT = (5, 30)


class ApiServer:
    """Clients for the core and coordination APIs, and the calls pod workers make."""

    def __init__(self, kubeconfig: str) -> None:
        api_config = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=api_config)
        api_config.connection_pool_maxsize = 32
        api_config.proxy = None  # loopback: ignore HTTPS_PROXY from the environment
        self.client = kubernetes.client.ApiClient(api_config)
        self.core = kubernetes.client.CoreV1Api(self.client)
        self.coordination = kubernetes.client.CoordinationV1Api(self.client)
        url = urllib.parse.urlsplit(api_config.host)
        # Where pods reach the API server (KUBERNETES_SERVICE_HOST/PORT).
        self.host_port = (url.hostname or HOST_IP, url.port or 443)

    def read_object(self, kind: str, namespace: str, name: str) -> dict | None:
        """A ConfigMap or Secret (kind "configmap" or "secret"), None if it does not exist."""
        read = self.core.read_namespaced_config_map if kind == "configmap" else self.core.read_namespaced_secret
        try:
            resp = read(name, namespace, _request_timeout=API_TIMEOUT, _preload_content=False)
        except ApiException as e:
            if e.status == 404:
                return None
            raise PodConfigError(f"reading {kind} {namespace}/{name}: {e.status} {e.reason}") from e
        return json.loads(resp.data)  # type: ignore[arg-type]  # _preload_content=False: the raw body, not the object's .data

    def create_token(self, namespace: str, service_account: str, body: dict) -> str:
        """A service-account token from a TokenRequest body."""
        try:
            resp = self.core.create_namespaced_service_account_token(
                service_account,
                namespace,
                body,  # type: ignore[arg-type]  # the client sends a dict body as it is
                _request_timeout=API_TIMEOUT,
                _preload_content=False,
            )
        except ApiException as e:
            raise PodConfigError(f"token for service account {namespace}/{service_account}: {e.status} {e.reason}") from e
        return json.loads(resp.data)["status"]["token"]  # type: ignore[attr-defined]  # _preload_content=False: the raw urllib3 response

    def patch_pod_status(self, namespace: str, name: str, status: dict) -> bool:
        try:
            self.core.patch_namespaced_pod_status(
                name,
                namespace,
                {"status": status},
                _content_type="application/merge-patch+json",
                _request_timeout=API_TIMEOUT,
            )
            return True
        except ApiException as e:
            if e.status != 404:
                log.warning("status of pod %s/%s: %s %s", namespace, name, e.status, e.reason)
        except Exception as e:  # noqa: BLE001 - network hiccup: logged, retried on the next change
            log.warning("status of pod %s/%s: %s", namespace, name, e)
        return False

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        for _ in range(5):
            try:
                self.core.delete_namespaced_pod(name, namespace, body=body, _request_timeout=API_TIMEOUT)  # type: ignore[arg-type]  # the client sends a dict body as it is
                return
            except ApiException as e:
                if e.status in (404, 409):
                    return
                log.warning("deleting pod %s/%s: %s %s", namespace, name, e.status, e.reason)
            except Exception as e:  # noqa: BLE001 - any failure is logged and the delete retried
                log.warning("deleting pod %s/%s: %s", namespace, name, e)
            time.sleep(1)
