"""The test cluster's node: what a kubelet needs around it on this machine, and its configuration.

Why: pods of the Kubernetes tests run in real containers, with the memory and
CPU limits the kernel enforces, pod IPs on a bridge, Services routed by
kube-proxy and names resolved by CoreDNS, as on any cluster. The daemons are
the real ones (built by build.sh; runc and the CNI plugins from Debian), and
cluster.py starts them; this module holds what is particular to running them
on one machine next to the control plane:

- ``build_*``: pure functions that return each daemon's configuration (tested
  as data in tests/unit/test_k8s_node.py);
- the host's network: an address of the node (``NODE_IP``, on ``lo``, so that
  it exists before any pod and whatever the machine's own interfaces are) on
  which the API server, the kubelet and CoreDNS listen and which pods reach
  through the bridge's gateway; the bridge ``BRIDGE`` of the pod network;
  IP forwarding and bridged traffic through iptables (kube-proxy needs both);
- the clean-up of what the kernel keeps when daemons die: processes in the
  ``kubepods`` cgroups, mounts under the node's directories, the bridge and
  the node address;
- ``NodeLock``: iptables chains, the kubelet's port and the cgroups are the
  machine's, so one node runs on a machine at a time.

This machine mounts cgroup v1, which Kubernetes 1.35+ refuses unless the
kubelet is told ``failCgroupV1: false``; cgroupfs is the cgroup driver
(no systemd here).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import signal
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

NODE_IP = "10.250.0.1"
POD_CIDR = "10.244.0.0/24"
POD_GATEWAY = "10.244.0.1"
BRIDGE = "jcbr0"
CLUSTER_DOMAIN = "cluster.local"
KUBELET_PORT = 10250
CNI_BIN_DIR = "/usr/lib/cni"  # Debian's containernetworking-plugins
RUNC = "/usr/sbin/runc"  # Debian's runc
PAUSE_IMAGE = "localhost/jobcluster-pause:1"
LOCK_FILE = Path("/run/lock/jobcluster-k8s-node.lock")
# The kernel's cgroup v1 controllers the kubelet puts pods under (cgroupfs driver, cgroupsPerQOS).
CGROUP_ROOT = Path("/sys/fs/cgroup")
KUBEPODS = "kubepods"


class NodeError(RuntimeError):
    """The node cannot run on this machine (a missing tool, a second node, a kernel setting)."""


# -- pure configuration builders


def build_containerd_config(root: Path, state: Path, socket: Path, cni_conf_dir: Path) -> str:
    """containerd 2.x configuration (version 3) for the kubelet's CRI.

    ``root`` (content and snapshots) may outlive the cluster so that images are
    imported once; ``state`` (tasks, mounts, the socket's directory) is the
    cluster's own.
    """
    cri_runtime = 'plugins."io.containerd.cri.v1.runtime"'
    return "\n".join(
        [
            "version = 3",
            f'root = "{root}"',
            f'state = "{state}"',
            "[grpc]",
            f'  address = "{socket}"',
            "[ttrpc]",
            f'  address = "{socket}.ttrpc"',
            f"[{cri_runtime}]",
            # Lowering a process's oom_score_adj needs CAP_SYS_RESOURCE, which a root without it (a
            # sandboxed VM like the test machines) lacks; runc would fail on the sandbox's -998.
            "  restrict_oom_score_adj = true",
            f"[{cri_runtime}.containerd]",
            '  default_runtime_name = "runc"',
            f"[{cri_runtime}.containerd.runtimes.runc]",
            '  runtime_type = "io.containerd.runc.v2"',
            f"[{cri_runtime}.containerd.runtimes.runc.options]",
            f'  BinaryName = "{RUNC}"',
            "  SystemdCgroup = false",
            f"[{cri_runtime}.cni]",
            f'  bin_dirs = ["{CNI_BIN_DIR}"]',
            f'  conf_dir = "{cni_conf_dir}"',
            '[plugins."io.containerd.cri.v1.images"]',
            '  snapshotter = "overlayfs"',
            # The sandbox image is imported, never pulled (no registry here).
            '[plugins."io.containerd.cri.v1.images".pinned_images]',
            f'  sandbox = "{PAUSE_IMAGE}"',
            "",
        ]
    )


def build_cni_config(ipam_dir: Path) -> dict[str, Any]:
    """The pod network: one bridge with a gateway on the host, host-local addresses, masquerade out, hostPorts."""
    return {
        "cniVersion": "1.0.0",
        "name": "jobcluster",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": True,
                # A pod reaching itself through a Service (kube-proxy DNAT back to the same pod).
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_CIDR, "gateway": POD_GATEWAY}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(ipam_dir),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def build_kubelet_config(
    *,
    runtime_socket: Path,
    client_ca: Path,
    tls_cert: Path,
    tls_key: Path,
    healthz_port: int,
    resolv_conf: Path,
    pod_logs_dir: Path,
) -> dict[str, Any]:
    """KubeletConfiguration (kubelet.config.k8s.io/v1beta1) of the one test node."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # This machine's kernel mounts cgroup v1; Kubernetes 1.35+ needs this to run on it.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": f"unix://{runtime_socket}",
        "address": NODE_IP,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "tlsCertFile": str(tls_cert),
        "tlsPrivateKeyFile": str(tls_key),
        # Only holders of a certificate of the cluster's CA (the API server for logs, exec and
        # port-forward) reach the kubelet's API; a test cluster has no need for finer rules.
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False}, "x509": {"clientCAFile": str(client_ca)}},
        "authorization": {"mode": "AlwaysAllow"},
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [NODE_IP],
        "resolvConf": str(resolv_conf),
        "podLogsDir": str(pod_logs_dir),
        "failSwapOn": False,
        "serializeImagePulls": False,
        # Tests fill neither memory nor disk on purpose; evicting their pods would only hide what they check.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        # Status and pod updates promptly: tests wait on them.
        "nodeStatusUpdateFrequency": "5s",
        "syncFrequency": "10s",
        "fileCheckFrequency": "5s",
        "shutdownGracePeriod": "0s",
        "logging": {"verbosity": 1},
    }


def build_kube_proxy_config(kubeconfig: Path, node_name: str, healthz_port: int, metrics_port: int) -> dict[str, Any]:
    """KubeProxyConfiguration: iptables mode, leaving the machine's conntrack sysctls alone."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": node_name,
        "mode": "iptables",
        "clusterCIDR": POD_CIDR,
        "healthzBindAddress": f"127.0.0.1:{healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{metrics_port}",
        "nodePortAddresses": [f"{NODE_IP}/32"],
        # 0 = do not change the machine's conntrack table sizes and timeouts.
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
        "iptables": {"syncPeriod": "10s", "minSyncPeriod": "0s"},
        "oomScoreAdj": 0,  # as the machine's (lowering it needs CAP_SYS_RESOURCE)
    }


def build_corefile(kubeconfig: Path, health_port: int, ready_port: int, upstream: list[str]) -> str:
    """CoreDNS's Corefile: cluster names from the API server, everything else forwarded upstream."""
    forward = f"    forward . {' '.join(upstream)}\n" if upstream else ""
    return (
        ".:53 {\n"
        f"    bind {NODE_IP}\n"
        "    errors\n"
        f"    health 127.0.0.1:{health_port}\n"
        f"    ready 127.0.0.1:{ready_port}\n"
        f"    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{\n"
        f"        kubeconfig {kubeconfig}\n"
        "        pods insecure\n"
        "        fallthrough in-addr.arpa ip6.arpa\n"
        "    }\n"
        f"{forward}"
        "    cache 30\n"
        "}\n"
    )


def upstream_nameservers(resolv_conf: str) -> list[str]:
    """The nameservers of a resolv.conf, minus loopback ones (unreachable from a pod, and a loop for CoreDNS)."""
    servers = []
    for line in resolv_conf.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver" and not parts[1].startswith("127."):
            servers.append(parts[1])
    return servers


def build_pause_archive(pause_binary: bytes, ref: str = PAUSE_IMAGE) -> bytes:
    """A docker-archive of the pod sandbox image: one layer holding ``/pause``.

    Why here: CRI runs every pod's network namespace in a sandbox container of
    this image, and registry.k8s.io cannot be reached; the binary is built from
    pause/ by build.sh.
    """
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        info = tarfile.TarInfo("pause")
        info.size, info.mode = len(pause_binary), 0o755
        tar.addfile(info, io.BytesIO(pause_binary))
    layer_bytes = layer.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": ["/pause"], "User": "65535:65535"},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        }
    ).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [ref], "Layers": ["layer.tar"]}]).encode()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name, data in (("layer.tar", layer_bytes), (config_name, config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive.getvalue()


# -- the host


class NodeLock:
    """An exclusive lock on running a node on this machine, held for the cluster's lifetime."""

    def __init__(self, path: Path = LOCK_FILE) -> None:
        self.path = path
        self._file: io.TextIOWrapper | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = open(self.path, "a+")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "unknown"
            f.close()
            raise NodeError(
                f"another Kubernetes test node runs on this machine (held by {holder}, lock {self.path}); "
                "stop it first: one node per machine, because iptables, the kubelet's port and the cgroups are shared"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}\n")
        f.flush()
        self._file = f

    def release(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def require_root_tools() -> None:
    """Refuse early, naming the Debian package, when something the node needs is missing."""
    if os.geteuid() != 0:
        raise NodeError("the Kubernetes test node needs root (containers, cgroups, iptables, network namespaces)")
    needs = {
        RUNC: "runc",
        f"{CNI_BIN_DIR}/bridge": "containernetworking-plugins",
        "/usr/sbin/iptables": "iptables",
        "/usr/sbin/conntrack": "conntrack",
    }
    missing = sorted({pkg for path, pkg in needs.items() if not os.access(path, os.X_OK)})
    if missing:
        raise NodeError(f"missing on this machine: {', '.join(missing)} (apt-get install {' '.join(missing)}; `make test` does)")
    if not (CGROUP_ROOT / "memory").is_dir():
        raise NodeError(f"no cgroup v1 memory controller at {CGROUP_ROOT / 'memory'}: memory limits cannot be enforced")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


def _sysctl(key: str, value: str) -> None:
    path = Path("/proc/sys") / key.replace(".", "/")
    try:
        path.write_text(value)
    except OSError as e:
        raise NodeError(f"cannot set {key}={value} ({e}); the pod network needs it") from e


def setup_host_network() -> None:
    """The node address on lo, the pod bridge with its gateway, forwarding and bridged traffic through iptables."""
    teardown_host_network()  # what a killed earlier run left
    _ip("addr", "add", f"{NODE_IP}/32", "dev", "lo")
    # Made here rather than by the CNI bridge plugin at the first pod, so that the gateway exists from the start.
    _ip("link", "add", BRIDGE, "type", "bridge")
    _ip("addr", "add", f"{POD_GATEWAY}/{POD_CIDR.split('/')[1]}", "dev", BRIDGE)
    _ip("link", "set", BRIDGE, "up")
    _sysctl("net.ipv4.ip_forward", "1")
    _sysctl("net.bridge.bridge-nf-call-iptables", "1")


def teardown_host_network() -> None:
    _ip("link", "del", BRIDGE, check=False)
    _ip("addr", "del", f"{NODE_IP}/32", "dev", "lo", check=False)


def kill_pod_processes(timeout: float = 10.0) -> int:
    """SIGKILL every process in the kubepods cgroups (containers a killed runtime left behind); return how many."""
    killed = 0
    deadline = time.monotonic() + timeout
    while True:
        pids = _kubepods_pids()
        if not pids or time.monotonic() > deadline:
            return killed
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.2)


def pod_pids(uid: str) -> set[int]:
    """The processes of every container of the pod with ``uid`` (its cgroup is ``pod<uid>`` below kubepods)."""
    top = CGROUP_ROOT / "memory" / KUBEPODS
    return {pid for pod in top.rglob(f"pod{uid}") for pid in _cgroup_pids(pod)} if top.is_dir() else set()


def _kubepods_pids() -> set[int]:
    return _cgroup_pids(CGROUP_ROOT / "memory" / KUBEPODS)


def _cgroup_pids(top: Path) -> set[int]:
    """The processes of cgroup ``top`` and of every cgroup below it."""
    pids: set[int] = set()
    if top.is_dir():
        for procs in top.rglob("cgroup.procs"):
            with contextlib.suppress(OSError):
                pids.update(int(p) for p in procs.read_text().split())
    return pids


def unmount_under(directory: Path) -> None:
    """Lazily unmount every mount below directory, deepest first (kubelet volumes, container root filesystems)."""
    prefix = str(directory.resolve()) + "/"
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        target = line.split()[4].replace("\\040", " ")
        if target.startswith(prefix):
            mounts.append(target)
    for target in sorted(set(mounts), key=len, reverse=True):
        subprocess.run(["umount", "-l", target], capture_output=True, timeout=30, check=False)


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path
