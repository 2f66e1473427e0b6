"""A kubelet stand-in that runs the pods bound to one Node as local processes.

Why: the integration tests need pods that really run (job clusters whose
JobManager and TaskManagers talk to each other and to the API server), on one
machine, without a container runtime, root, or image downloads. This agent
plays the kubelet's part against the real API server: it registers a Node
sized like this machine, keeps its Lease fresh, runs each container's
``command`` + ``args`` as a local process with the pod's environment and a pod
IP of its own in 127.0.0.0/8 (so two pods can bind the same port), writes the
pod status the kubelet would write, follows ``restartPolicy``, and kills the
processes when the pod is deleted (then finalises the deletion, as the kubelet
does).

Limits (by design; the README's testing section lists them too):

- Images are not pulled or unpacked. ``image`` is reported, never used: the
  command must be runnable on this machine, and ``command`` must be set (there
  is no image ENTRYPOINT to fall back on). The process inherits this agent's
  environment (the machine stands in for the image) minus ``KUBECONFIG`` and
  ``KUBERNETES_*``/``PYTEST_*`` variables, then gets the pod's env on top.
- No filesystem isolation. Volumes (emptyDir, configMap, secret, downwardAPI,
  projected incl. service-account tokens, hostPath) are materialised under the
  pod's directory; each container sees them under
  ``$POD_VOLUME_ROOT/<mountPath>``. Occurrences of a mountPath at the start of a
  word (or after ``=``, ``:`` or ``,``) in command, args, env values and
  workingDir are rewritten to that host path. Other volume types (PVCs, CSI)
  leave the pod Pending with ``CreateContainerConfigError`` and a message.
- No network isolation: a pod gets its own loopback address (``status.podIP``,
  also in the downward API), but nothing stops a process from binding another
  address. Service ClusterIPs are not routed (no kube-proxy);
  ``KUBERNETES_SERVICE_HOST``/``PORT`` point at the real API server.
- Probes: exec, tcpSocket and httpGet startup/liveness/readiness probes run with
  the kubelet's semantics (grpc probes pass). Lifecycle hooks, resource limits
  (cgroups) and ``kubectl logs/exec/port-forward`` (no kubelet API) are not
  implemented. Container output goes to
  ``<work-dir>/pods/<namespace>/<pod>/<uid>/logs/<container>.log``.
- Restart back-off is 1 s doubling to 60 s (the kubelet uses 10 s to 300 s), so
  tests see restarts quickly.

Run by hand: ``python tests/infra/k8s/node_agent --kubeconfig KC --work-dir DIR`` (how cluster.py
starts it), or ``python -m tests.infra.k8s.node_agent ...`` from the repository root.

Modules, each importing only those listed after it:

- ``cli``: the command line (``__main__`` runs it);
- ``agent``: NodeAgent, the composition root: Node, background loops, pod workers;
- ``registration``: the Node object, capacity, status and Lease heartbeats;
- ``pod_watch``: list + watch of the pods bound to the node;
- ``pod_worker``: PodWorker, one thread per pod, from start to deletion;
- ``pod_status``: phase, conditions and the pod status to write;
- ``probes``: startup/liveness/readiness probes;
- ``containers``: container processes: start, exit, kill;
- ``restarts``: restartPolicy and back-off;
- ``container_run``: ContainerRun, the per-container record;
- ``volumes``: volumes materialised under the pod's directory;
- ``environment``: a container's environment and ``$(VAR)`` expansion;
- ``mounts``: mountPath symlinks and the rewriting of mountPaths to host paths;
- ``downward_api``: fieldRef/resourceFieldRef values;
- ``apiserver``: the API client and the pod-level calls;
- ``processes``: spawning, tracking, reaping and killing processes;
- ``addresses``: the host IP and pod IPs in 127.0.0.0/8;
- ``errors``, ``timestamps``.
"""

from __future__ import annotations

from tests.infra.k8s.node_agent.addresses import DEFAULT_POD_CIDR, HOST_IP, PodAddresses
from tests.infra.k8s.node_agent.agent import NodeAgent
from tests.infra.k8s.node_agent.apiserver import API_TIMEOUT, ApiServer
from tests.infra.k8s.node_agent.cli import main
from tests.infra.k8s.node_agent.container_run import ContainerRun
from tests.infra.k8s.node_agent.downward_api import field_value, quantity, resource_value
from tests.infra.k8s.node_agent.environment import ENV_DENY, ENV_DENY_PREFIXES, VOLUME_ROOT_ENV, expand_vars
from tests.infra.k8s.node_agent.errors import PodConfigError
from tests.infra.k8s.node_agent.pod_watch import WATCH_SECONDS, WATCH_TIMEOUT
from tests.infra.k8s.node_agent.pod_worker import PodWorker
from tests.infra.k8s.node_agent.processes import (
    KILL_WAIT_SECONDS,
    POD_UID_ENV,
    ProcessTable,
    descendants_with_env,
    kill_processes,
    setpriv_prefix,
)
from tests.infra.k8s.node_agent.registration import LEASE_DURATION_SECONDS, LEASE_RENEW_SECONDS, NODE_STATUS_SECONDS
from tests.infra.k8s.node_agent.restarts import BACKOFF_BASE_SECONDS, BACKOFF_MAX_SECONDS, BACKOFF_RESET_SECONDS
from tests.infra.k8s.node_agent.timestamps import now_micro, now_rfc3339

__all__ = [
    "API_TIMEOUT",
    "BACKOFF_BASE_SECONDS",
    "BACKOFF_MAX_SECONDS",
    "BACKOFF_RESET_SECONDS",
    "DEFAULT_POD_CIDR",
    "ENV_DENY",
    "ENV_DENY_PREFIXES",
    "HOST_IP",
    "KILL_WAIT_SECONDS",
    "LEASE_DURATION_SECONDS",
    "LEASE_RENEW_SECONDS",
    "NODE_STATUS_SECONDS",
    "POD_UID_ENV",
    "VOLUME_ROOT_ENV",
    "WATCH_SECONDS",
    "WATCH_TIMEOUT",
    "ApiServer",
    "ContainerRun",
    "NodeAgent",
    "PodAddresses",
    "PodConfigError",
    "PodWorker",
    "ProcessTable",
    "descendants_with_env",
    "expand_vars",
    "field_value",
    "kill_processes",
    "main",
    "now_micro",
    "now_rfc3339",
    "quantity",
    "resource_value",
    "setpriv_prefix",
]
