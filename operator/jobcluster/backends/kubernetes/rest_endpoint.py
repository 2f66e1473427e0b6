"""How the client reaches a Kubernetes job cluster's REST API: an explicit choice, ``jobcluster.kubernetes.rest.endpoint``.

Why a choice: Flink's client always goes through the REST Service
``<cluster-id>-rest``, which is reachable only where the Service is routable
(inside the cluster for ClusterIP; a node address for NodePort; the load
balancer's for LoadBalancer).  A client next to the pods (the FlinkJob operator
in its own pod, or a machine that routes the pod network) reaches the
JobManager pod directly, with no Service or DNS involved; any other client
reaches it through the API server, as ``kubectl port-forward`` does.  So:

* ``pod-ip`` (default): ``http://<JobManager pod IP>:<rest.port>``, or, when
  that address does not route from the client (``port_forward.routes_to``),
  a local port-forward through the API server (``port_forward.py``);
* ``port-forward``: always that port-forward;
* ``service``: the REST Service as Flink's client resolves it, by
  ``kubernetes.rest-service.exposed.type``: ``ClusterIP`` and
  ``Headless_ClusterIP`` → ``http://<cluster-id>-rest.<namespace>.svc:<port>``
  (in-cluster DNS), ``NodePort`` → the JobManager's node (``status.hostIP``)
  and the node port, ``LoadBalancer`` → the first ingress IP or host name.

The functions here are pure: pods and Services as the API server returns them (JSON dicts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobcluster.backends.kubernetes import object_names
from jobcluster.errors import DeploymentError

POD_IP = "pod-ip"
PORT_FORWARD = "port-forward"
SERVICE = "service"
ENDPOINT_CHOICES = (POD_IP, PORT_FORWARD, SERVICE)


def pod_rest_url(pod: Mapping[str, Any], port: int) -> str | None:
    """``http://<pod IP>:<port>`` once the pod has an IP, else None."""
    ip = (pod.get("status") or {}).get("podIP")
    return f"http://{_host(ip)}:{port}" if ip else None


def service_rest_url(service: Mapping[str, Any], pod: Mapping[str, Any] | None) -> str | None:
    """The URL of the REST Service ``service`` (see the module docstring); None while it has no address yet.

    ``pod``: the JobManager pod (its node's IP serves a NodePort), or None.

    Raises:
        DeploymentError: the Service has no port named ``rest``, or a type this module does not know.
    """
    metadata, spec = service.get("metadata") or {}, service.get("spec") or {}
    port = next((p for p in spec.get("ports") or [] if p.get("name") == object_names.REST_PORT_NAME), None)
    if port is None:
        raise DeploymentError(f"Service {metadata.get('name')} has no port named {object_names.REST_PORT_NAME!r}")
    kind = spec.get("type", "ClusterIP")
    if kind == "ClusterIP":
        return f"http://{metadata.get('name')}.{metadata.get('namespace')}.svc:{port['port']}"
    if kind == "NodePort":
        host_ip = ((pod or {}).get("status") or {}).get("hostIP")
        return f"http://{_host(host_ip)}:{port['nodePort']}" if host_ip and port.get("nodePort") else None
    if kind == "LoadBalancer":
        ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        if not ingress:
            return None
        address = ingress[0].get("ip") or ingress[0].get("hostname")
        return f"http://{_host(address)}:{port['port']}" if address else None
    raise DeploymentError(f"Service {metadata.get('name')} has type {kind!r}; cannot reach the REST API through it")


def _host(address: str) -> str:
    """An IPv6 address in brackets, as URLs need it."""
    return f"[{address}]" if ":" in address else address
