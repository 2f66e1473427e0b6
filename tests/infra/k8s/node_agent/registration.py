"""The Node object: registration, capacity, status and the Lease heartbeat.

Why: the scheduler binds pods only to a registered, Ready node with room for
them, and the node lifecycle controller taints a node whose Lease goes stale.
So, like the kubelet, the agent creates (or adopts) its Node sized like this
machine, renews its Lease every 10 s and re-sends its full status now and then.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import threading
import time
from pathlib import Path

import psutil
from kubernetes.client.exceptions import ApiException

from tests.infra.k8s.node_agent.addresses import HOST_IP
from tests.infra.k8s.node_agent.apiserver import API_TIMEOUT, ApiServer
from tests.infra.k8s.node_agent.timestamps import now_micro, now_rfc3339

log = logging.getLogger("node-agent")

# Lease renewal like the kubelet (nodeLeaseDurationSeconds=40, renew every 10 s).
LEASE_DURATION_SECONDS = 40
LEASE_RENEW_SECONDS = 10
# Full node status is re-sent at least this often (kubelet: 5 min); the Lease is the heartbeat.
NODE_STATUS_SECONDS = 60


def machine_capacity(work_dir: Path, cpu: str | None, memory: str | None, max_pods: int) -> dict[str, str]:
    """The node's capacity: this machine's CPUs, RAM and work-dir disk, unless cpu/memory say otherwise."""
    mem_kib = psutil.virtual_memory().total // 1024
    disk = shutil.disk_usage(work_dir).total
    return {
        "cpu": cpu or str(os.cpu_count() or 1),
        "memory": memory or f"{mem_kib}Ki",
        "pods": str(max_pods),
        "ephemeral-storage": str(disk),
    }


def node_arch() -> str:
    """This machine's architecture as Kubernetes names it (GOARCH)."""
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


class NodeRegistration:
    """Registers the Node, keeps its Lease fresh and its status current."""

    def __init__(
        self, api: ApiServer, node_name: str, capacity: dict[str, str], allocatable: dict[str, str], stopping: threading.Event
    ) -> None:
        self.api = api
        self.node_name = node_name
        self.capacity = capacity
        self.allocatable = allocatable
        self.stopping = stopping
        self.node_uid: str | None = None
        self.last_node_status = 0.0
        self.started_at: str | None = None

    def node_conditions(self) -> list[dict]:
        now = now_rfc3339()

        def cond(type_: str, status: str, reason: str, message: str) -> dict:
            return {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": now,
                "lastTransitionTime": self.started_at,
            }

        return [
            cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "node agent does not track memory pressure"),
            cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "node agent does not track disk pressure"),
            cond("PIDPressure", "False", "KubeletHasSufficientPID", "node agent does not track PIDs"),
            cond("Ready", "True", "KubeletReady", "jobcluster node agent is posting ready status"),
        ]

    def node_status(self) -> dict:
        return {
            "capacity": self.capacity,
            "allocatable": self.allocatable,
            "conditions": self.node_conditions(),
            "addresses": [{"type": "InternalIP", "address": HOST_IP}, {"type": "Hostname", "address": self.node_name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kernelVersion": platform.release(),
                "osImage": f"{platform.system()} (jobcluster node agent)",
                "containerRuntimeVersion": "process://jobcluster-node-agent",
                "kubeletVersion": "v0.0.0-jobcluster-node-agent",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": node_arch(),
            },
        }

    def register(self) -> None:
        self.started_at = now_rfc3339()
        arch = node_arch()
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node_name,
                "labels": {"kubernetes.io/hostname": self.node_name, "kubernetes.io/os": "linux", "kubernetes.io/arch": arch},
            },
            "spec": {},
            "status": self.node_status(),
        }
        core = self.api.core
        while True:
            try:
                resp = core.create_node(node, _request_timeout=API_TIMEOUT, _preload_content=False)  # type: ignore[arg-type]  # the client sends a dict body as it is
                self.node_uid = json.loads(resp.data)["metadata"]["uid"]  # type: ignore[attr-defined]  # _preload_content=False: the raw urllib3 response
                break
            except ApiException as e:
                if e.status != 409:
                    raise
                try:
                    resp = core.read_node(self.node_name, _request_timeout=API_TIMEOUT, _preload_content=False)
                except ApiException as e2:
                    if e2.status == 404:
                        continue
                    raise
                self.node_uid = json.loads(resp.data)["metadata"]["uid"]  # type: ignore[attr-defined]  # _preload_content=False: the raw urllib3 response
                break
        self.update_node_status()
        self.renew_lease()
        log.info("node %s registered: %s", self.node_name, self.capacity)

    def update_node_status(self) -> None:
        self.api.core.patch_node_status(
            self.node_name,
            {"status": self.node_status()},
            _content_type="application/merge-patch+json",
            _request_timeout=API_TIMEOUT,
        )
        self.last_node_status = time.monotonic()

    def renew_lease(self) -> None:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.node_name,
                "namespace": "kube-node-lease",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": self.node_name, "uid": self.node_uid}],
            },
            "spec": {"holderIdentity": self.node_name, "leaseDurationSeconds": LEASE_DURATION_SECONDS, "renewTime": now_micro()},
        }
        try:
            self.api.coordination.patch_namespaced_lease(
                self.node_name,
                "kube-node-lease",
                {"spec": body["spec"]},
                _content_type="application/merge-patch+json",
                _request_timeout=API_TIMEOUT,
            )
        except ApiException as e:
            if e.status != 404:
                raise
            self.api.coordination.create_namespaced_lease("kube-node-lease", body, _request_timeout=API_TIMEOUT)  # type: ignore[arg-type]  # the client sends a dict body as it is

    def heartbeat_loop(self) -> None:
        while not self.stopping.wait(LEASE_RENEW_SECONDS):
            try:
                self.renew_lease()
                if time.monotonic() - self.last_node_status >= NODE_STATUS_SECONDS:
                    self.update_node_status()
            except Exception as e:  # noqa: BLE001 - the heartbeat thread must outlive any error: logged, retried
                log.warning("heartbeat: %s", e)
