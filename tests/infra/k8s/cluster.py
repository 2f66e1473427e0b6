"""A real Kubernetes cluster of one node on this machine, started and stopped by the test suite.

Why: the Kubernetes backend, the operator and the Helm chart are tested against
the real API server, controller manager and scheduler, and their pods run in
real containers under a real kubelet (all built from the Go module proxy by
build.sh; runc and the CNI plugins from Debian), not a mock. The node's
particulars (network, configuration, clean-up) are in node.py.

What start() does, each daemon in its own process group with its log under
<work_dir>/logs (needs root: containers, cgroups, iptables):

1. certificates (openssl CLI): a CA, the API server's serving cert, client certs
   for the admin (system:masters), controller manager, scheduler, node and
   kube-proxy, the kubelet's serving cert, and the service-account key pair;
2. the host's network (node.setup_host_network): the node address NODE_IP,
   the pod bridge, forwarding;
3. etcd (plain HTTP on 127.0.0.1, no fsync: the data is thrown away);
4. kube-apiserver on NODE_IP (Node,RBAC authorization, NodeRestriction), waits
   for /readyz; the `kubernetes` Service points at it, so pods reach it;
5. kube-controller-manager (all controllers, per-controller service-account
   credentials, no leader election) and kube-scheduler, waits for /healthz and
   for the `default` service account (pods cannot be created before it exists);
6. containerd (CRI, runc, CNI bridge), the pause image and the given images
   imported (once: containerd's image store lives in the cache), the kubelet
   (cgroup v1, cgroupfs driver), kube-proxy (iptables) and CoreDNS (cluster
   DNS on NODE_IP); waits for the Node to be Ready and for DNS to answer.

stop() stops the kubelet, removes every pod sandbox through CRI (containers
stop, CNI releases the addresses), terminates the daemons in reverse order,
kills whatever still carries this cluster's marker or sits in the kubepods
cgroups, unmounts what is left under the node's directories and removes the
bridge and node address, so nothing outlives the cluster. Daemons also die
with the thread that started them (PR_SET_PDEATHSIG via setpriv), so start the
cluster from a long-lived thread.

By hand, for debugging (from the repository root):

    .venv/bin/python -m tests.infra.k8s.cluster        # Ctrl-C stops it

It builds and imports the project's image, and prints the KUBECONFIG and PATH to
export for kubectl and helm. Tests run against it, instead of a cluster of their
own, with JOBCLUSTER_K8S_CLUSTER_DIR=<its work dir> (they import the working
tree's image again first).
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil
import requests
import urllib3
import yaml

from tests.infra.k8s import node as k8s_node
from tests.infra.k8s.node import NODE_IP, NodeLock

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build.sh"
IMAGE_BUILD_SCRIPT = HERE.parent / "image" / "build.sh"

# Every process this cluster starts (and their children) carries this variable
# with the cluster's id; stop() kills whatever still has it.
CLUSTER_ENV = "JOBCLUSTER_K8S_CLUSTER"
SERVICE_CIDR = "10.0.0.0/24"
KUBERNETES_SERVICE_IP = "10.0.0.1"
DEFAULT_NODE_NAME = "jobcluster-node"
# Seconds: readiness of each component on a loaded 2-core machine.
START_TIMEOUT = 180.0
# Seconds a daemon gets between SIGTERM and SIGKILL on stop.
STOP_GRACE = 10.0
# What attach() reads: the API server's address, the tools and the images of a running cluster.
ATTACH_FILE = "cluster.json"
# Seconds for removing every pod sandbox through CRI when the cluster stops.
POD_REMOVAL_TIMEOUT = 60.0


class KubernetesClusterError(RuntimeError):
    """The test cluster could not be built, started, or is unhealthy."""


def build_tools() -> Path:
    """Run build.sh (a no-op when the binaries are cached) and return the bin dir."""
    try:
        result = subprocess.run([str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False)
    except OSError as e:
        raise KubernetesClusterError(f"cannot run {BUILD_SCRIPT}: {e}") from e
    if result.returncode != 0:
        raise KubernetesClusterError(f"{BUILD_SCRIPT} failed with exit code {result.returncode} (see its output above)")
    return Path(result.stdout.strip().splitlines()[-1])


def build_project_image(kind: str = "job") -> tuple[str, Path]:
    """Run tests/infra/image/build.sh for the ``kind`` of image, ``job`` or ``operator`` (a no-op when the image of the
    working tree is cached): its ref and docker-archive."""
    result = subprocess.run(["bash", str(IMAGE_BUILD_SCRIPT), kind], stdout=subprocess.PIPE, text=True, check=False)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or len(lines) < 2:
        raise KubernetesClusterError(f"{IMAGE_BUILD_SCRIPT} failed with exit code {result.returncode} (see its output above)")
    return lines[-2], Path(lines[-1])


def normalized_image_name(ref: str) -> str:
    """An image reference as containerd stores it: ``jobcluster:0.1.0`` is ``docker.io/library/jobcluster:0.1.0``."""
    first = ref.split("/", 1)[0]
    if "/" not in ref:
        return f"docker.io/library/{ref}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{ref}"
    return ref


def with_project_image(attach: Path | None = None) -> KubernetesCluster:
    """A cluster with the working tree's image on its node: the one running in ``attach`` (the image
    imported into it now), else a new one to start."""
    image = build_project_image()
    if attach is None:
        return KubernetesCluster(images=[image])
    cluster = KubernetesCluster.attach(attach)
    cluster.load_images([image])
    return cluster


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def cache_root() -> Path:
    return Path(os.environ.get("JOBCLUSTER_CACHE") or Path.home() / ".cache" / "jobcluster")


def setpriv_prefix(signame: str) -> list[str]:
    """Prefix that makes a child get signame when its parent thread dies (PR_SET_PDEATHSIG)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, f"--pdeathsig={signame}", "--"] if setpriv else []


def kill_tree(root: psutil.Process | None, grace: float, extra: Sequence[psutil.Process] = ()) -> None:
    """SIGTERM a process, its descendants and extra; SIGKILL what is left after grace seconds."""
    procs = list(extra)
    if root is not None:
        try:
            procs = [root, *root.children(recursive=True), *procs]
        except psutil.Error:
            pass
    procs = [p for p in {p.pid: p for p in procs}.values() if p.is_running()]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        for p in procs:
            try:
                p.send_signal(sig)
            except psutil.Error:
                pass
        _, procs = psutil.wait_procs(procs, timeout=wait)
        if not procs:
            return


def marked_processes(cluster_id: str) -> list[psutil.Process]:
    me = os.getpid()
    found = []
    for p in psutil.process_iter():
        if p.pid == me:
            continue
        try:
            if p.environ().get(CLUSTER_ENV) == cluster_id:
                found.append(p)
        except psutil.Error:
            continue
    return found


class _Pki:
    """A throw-away CA and the certificates of one cluster, made with the openssl CLI."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.openssl = shutil.which("openssl")
        if self.openssl is None:
            raise KubernetesClusterError("the openssl command is needed to make the test cluster's certificates")
        self.ca_crt, self.ca_key = self.dir / "ca.crt", self.dir / "ca.key"
        self.serial = 1

    def run(self, *args: str | Path) -> None:
        assert self.openssl is not None  # checked in __init__
        result = subprocess.run([self.openssl, *map(str, args)], capture_output=True, text=True)
        if result.returncode != 0:
            raise KubernetesClusterError(f"openssl {' '.join(map(str, args))}: {result.stderr.strip()}")

    def make_ca(self) -> None:
        cnf = self.dir / "ca.cnf"
        cnf.write_text(
            "[req]\ndistinguished_name=dn\nprompt=no\nx509_extensions=ext\n[dn]\nCN=jobcluster-test-ca\n"
            "[ext]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\n"
            "subjectKeyIdentifier=hash\n"
        )
        self.run(
            "req",
            "-x509",
            "-new",
            "-nodes",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-keyout",
            self.ca_key,
            "-out",
            self.ca_crt,
            "-days",
            "3650",
            "-config",
            cnf,
        )

    def make_cert(self, name: str, cn: str, org: str | None = None, sans: list[str] | None = None) -> tuple[Path, Path]:
        key, csr, crt, cnf = (self.dir / f"{name}.{ext}" for ext in ("key", "csr", "crt", "cnf"))
        dn = f"CN={cn}\n" + (f"O={org}\n" if org else "")
        ext = "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        ext += "extendedKeyUsage=serverAuth,clientAuth\n" if sans else "extendedKeyUsage=clientAuth\n"
        if sans:
            ext += "subjectAltName=" + ",".join(sans) + "\n"
        cnf.write_text(f"[req]\ndistinguished_name=dn\nprompt=no\n[dn]\n{dn}[ext]\n{ext}")
        self.run(
            "req",
            "-new",
            "-nodes",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-keyout",
            key,
            "-out",
            csr,
            "-config",
            cnf,
        )
        self.serial += 1
        self.run(
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            self.ca_crt,
            "-CAkey",
            self.ca_key,
            "-set_serial",
            str(self.serial),
            "-days",
            "3650",
            "-out",
            crt,
            "-extfile",
            cnf,
            "-extensions",
            "ext",
        )
        return crt, key

    def make_service_account_keys(self) -> tuple[Path, Path]:
        key, pub = self.dir / "sa.key", self.dir / "sa.pub"
        self.run("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key)
        self.run("pkey", "-in", key, "-pubout", "-out", pub)
        return key, pub


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, ca: Path, crt: Path, key: Path, user: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "jobcluster-test", "cluster": {"server": server, "certificate-authority-data": _b64(ca)}}],
        "users": [{"name": user, "user": {"client-certificate-data": _b64(crt), "client-key-data": _b64(key)}}],
        "contexts": [{"name": "jobcluster-test", "context": {"cluster": "jobcluster-test", "user": user, "namespace": "default"}}],
        "current-context": "jobcluster-test",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


class KubernetesCluster:
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler + one node (containerd, kubelet,
    kube-proxy, CoreDNS).

    ``images``: docker-archive files whose images the node has without a pull
    (imported into containerd once; a registry is not reachable here).
    """

    def __init__(
        self,
        work_dir: Path | None = None,
        bin_dir: Path | None = None,
        node_name: str = DEFAULT_NODE_NAME,
        images: Sequence[tuple[str, Path]] = (),
    ) -> None:
        self._own_work_dir = work_dir is None
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="jobcluster-k8s-")).resolve()
        self._bin_dir = bin_dir
        self.node_name = node_name
        self.images = list(images)
        self.cluster_id = uuid.uuid4().hex
        self._lock = NodeLock()
        self._host_network = False
        self._attached = False
        self._procs: list[tuple[str, subprocess.Popen, float]] = []
        self._logs: list[Any] = []
        self._server: str | None = None
        self._started = False

    # -- public properties
    @property
    def bin_dir(self) -> Path:
        if self._bin_dir is None:
            self._bin_dir = build_tools()
        return self._bin_dir

    @property
    def kubeconfig(self) -> Path:
        """Admin (system:masters) kubeconfig with embedded credentials."""
        return self.work_dir / "kubeconfig"

    @property
    def server(self) -> str:
        if self._server is None:
            raise KubernetesClusterError("cluster not started")
        return self._server

    @property
    def log_dir(self) -> Path:
        return self.work_dir / "logs"

    @property
    def node_dir(self) -> Path:
        """The node's own state: containerd's, the kubelet's, CNI's, and the pods' logs under pod-logs/."""
        return self.work_dir / "node"

    @property
    def runtime_socket(self) -> Path:
        return self.node_dir / "containerd" / "containerd.sock"

    def env(self) -> dict[str, str]:
        """Environment for kubectl/helm subprocesses: KUBECONFIG set, the tools first on PATH."""
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        env["CONTAINER_RUNTIME_ENDPOINT"] = f"unix://{self.runtime_socket}"  # crictl
        env.setdefault("HELM_CACHE_HOME", str(self.work_dir / "helm" / "cache"))
        env.setdefault("HELM_CONFIG_HOME", str(self.work_dir / "helm" / "config"))
        env.setdefault("HELM_DATA_HOME", str(self.work_dir / "helm" / "data"))
        return env

    def kubectl(self, *args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
        return self._tool("kubectl", args, timeout, check)

    def helm(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
        return self._tool("helm", args, timeout, check)

    def api_client(self):
        """A kubernetes.client.ApiClient with admin credentials."""
        import kubernetes

        config = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=str(self.kubeconfig), client_configuration=config)
        config.proxy = None  # loopback: ignore HTTPS_PROXY from the environment
        return kubernetes.client.ApiClient(config)

    def pod_log(self, namespace: str, name: str, container: str | None = None) -> str:
        """Output of a container of a pod that still exists (the kubelet removes a deleted pod's logs), as
        `kubectl logs` shows it; "" when there is none."""
        args = ["logs", "-n", namespace, name] + (["-c", container] if container else ["--all-containers"])
        result = self.kubectl(*args, check=False)
        return result.stdout if result.returncode == 0 else ""

    @classmethod
    def attach(cls, work_dir: Path) -> KubernetesCluster:
        """The cluster another process started in ``work_dir`` (see ``main``), to run tests against; stop() leaves it running."""
        info = json.loads((Path(work_dir) / ATTACH_FILE).read_text())
        cluster = cls(work_dir=Path(work_dir), bin_dir=Path(info["bin_dir"]), images=[(ref, Path(path)) for ref, path in info["images"]])
        cluster._server, cluster._started, cluster._attached = info["server"], True, True
        return cluster

    def daemon(self, name: str) -> psutil.Process:
        """The running daemon ``name`` (e.g. ``kube-apiserver``) of this cluster, found by its working directory
        (so also for an attached cluster), for tests that pause or kill it."""
        for process in psutil.process_iter(["name", "cwd"]):
            if process.info["name"] == name and process.info["cwd"] == str(self.work_dir):
                return process
        raise KubernetesClusterError(f"no {name} of the cluster in {self.work_dir} runs")

    # -- lifecycle
    def __enter__(self) -> KubernetesCluster:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self, timeout: float = START_TIMEOUT) -> None:
        if self._started:
            return
        self._started = True
        atexit.register(self.stop)
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> None:
        bin_dir = self.bin_dir
        self.log_dir.mkdir(parents=True, exist_ok=True)
        pki = _Pki(self.work_dir / "pki")
        pki.make_ca()
        sa_key, sa_pub = pki.make_service_account_keys()
        api_crt, api_key = pki.make_cert(
            "kube-apiserver",
            "kube-apiserver",
            sans=[
                "IP:127.0.0.1",
                f"IP:{NODE_IP}",
                f"IP:{KUBERNETES_SERVICE_IP}",
                "DNS:localhost",
                "DNS:kubernetes",
                "DNS:kubernetes.default",
                "DNS:kubernetes.default.svc",
                "DNS:kubernetes.default.svc.cluster.local",
            ],
        )
        admin = pki.make_cert("admin", "jobcluster-admin", org="system:masters")
        kcm = pki.make_cert("kube-controller-manager", "system:kube-controller-manager")
        sched = pki.make_cert("kube-scheduler", "system:kube-scheduler")
        node = pki.make_cert("node", f"system:node:{self.node_name}", org="system:nodes")
        proxy = pki.make_cert("kube-proxy", "system:kube-proxy")
        kubelet_serving = pki.make_cert("kubelet-serving", f"system:node:{self.node_name}", sans=[f"IP:{NODE_IP}"])
        self._lock.acquire()
        k8s_node.require_root_tools()
        k8s_node.kill_pod_processes()  # containers a killed earlier cluster left
        k8s_node.setup_host_network()
        self._host_network = True

        etcd_port, etcd_peer, kcm_port, sched_port = (free_port() for _ in range(4))
        api_port = free_port(NODE_IP)
        self._server = f"https://{NODE_IP}:{api_port}"
        write_kubeconfig(self.kubeconfig, self.server, pki.ca_crt, *admin, "jobcluster-admin")
        kcm_kc = write_kubeconfig(pki.dir / "kube-controller-manager.kubeconfig", self.server, pki.ca_crt, *kcm, "kube-controller-manager")
        sched_kc = write_kubeconfig(pki.dir / "kube-scheduler.kubeconfig", self.server, pki.ca_crt, *sched, "kube-scheduler")
        node_kc = write_kubeconfig(pki.dir / "node.kubeconfig", self.server, pki.ca_crt, *node, f"system:node:{self.node_name}")
        proxy_kc = write_kubeconfig(pki.dir / "kube-proxy.kubeconfig", self.server, pki.ca_crt, *proxy, "system:kube-proxy")
        deadline = time.monotonic() + timeout

        # Loopback only: never through a proxy, and REQUESTS_CA_BUNDLE must not override our CA.
        plain = requests.Session()
        plain.trust_env = False
        plain.verify = False
        session = requests.Session()
        session.trust_env = False
        session.cert = (str(admin[0]), str(admin[1]))
        session.verify = str(pki.ca_crt)

        etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._spawn(
            "etcd",
            [
                bin_dir / "etcd",
                "--name",
                "default",
                "--data-dir",
                self.work_dir / "etcd",
                "--listen-client-urls",
                etcd_url,
                "--advertise-client-urls",
                etcd_url,
                "--listen-peer-urls",
                f"http://127.0.0.1:{etcd_peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{etcd_peer}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{etcd_peer}",
                "--unsafe-no-fsync",
                "--log-level",
                "warn",
            ],
        )
        self._wait("etcd", lambda: plain.get(f"{etcd_url}/health", timeout=3).json().get("health") == "true", deadline)

        self._spawn(
            "kube-apiserver",
            [
                bin_dir / "kube-apiserver",
                "--etcd-servers",
                etcd_url,
                "--bind-address",
                NODE_IP,
                "--advertise-address",
                NODE_IP,
                "--secure-port",
                str(api_port),
                "--tls-cert-file",
                api_crt,
                "--tls-private-key-file",
                api_key,
                "--client-ca-file",
                pki.ca_crt,
                "--service-account-issuer",
                "https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file",
                sa_pub,
                "--service-account-signing-key-file",
                sa_key,
                "--service-cluster-ip-range",
                SERVICE_CIDR,
                # logs, exec and port-forward through the kubelet's API
                "--kubelet-client-certificate",
                admin[0],
                "--kubelet-client-key",
                admin[1],
                "--kubelet-preferred-address-types",
                "InternalIP",
                "--authorization-mode",
                "Node,RBAC",
                "--enable-admission-plugins",
                "NodeRestriction",
                "--allow-privileged=true",
                "--profiling=false",
                "--v=1",
            ],
        )
        self._wait("kube-apiserver", lambda: session.get(f"{self.server}/readyz", timeout=5).status_code == 200, deadline)

        self._spawn(
            "kube-controller-manager",
            [
                bin_dir / "kube-controller-manager",
                "--kubeconfig",
                kcm_kc,
                "--authentication-kubeconfig",
                kcm_kc,
                "--authorization-kubeconfig",
                kcm_kc,
                "--bind-address",
                "127.0.0.1",
                "--secure-port",
                str(kcm_port),
                "--controllers",
                "*",
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                "--service-account-private-key-file",
                sa_key,
                "--root-ca-file",
                pki.ca_crt,
                "--cluster-signing-cert-file",
                pki.ca_crt,
                "--cluster-signing-key-file",
                pki.ca_key,
                "--cluster-name",
                "jobcluster-test",
                "--profiling=false",
                "--v=1",
            ],
        )
        self._spawn(
            "kube-scheduler",
            [
                bin_dir / "kube-scheduler",
                "--kubeconfig",
                sched_kc,
                "--authentication-kubeconfig",
                sched_kc,
                "--authorization-kubeconfig",
                sched_kc,
                "--bind-address",
                "127.0.0.1",
                "--secure-port",
                str(sched_port),
                "--leader-elect=false",
                "--profiling=false",
                "--v=1",
            ],
        )
        for name, port in (("kube-controller-manager", kcm_port), ("kube-scheduler", sched_port)):
            self._wait(name, lambda port=port: plain.get(f"https://127.0.0.1:{port}/healthz", timeout=5).status_code == 200, deadline)
        self._wait(
            "kube-controller-manager",
            lambda: session.get(f"{self.server}/api/v1/namespaces/default/serviceaccounts/default", timeout=5).status_code == 200,
            deadline,
            what="the default service account",
        )

        self._start_node(bin_dir, pki, node_kc, proxy_kc, kubelet_serving, session, deadline)

    def _start_node(
        self, bin_dir: Path, pki: _Pki, node_kc: Path, proxy_kc: Path, serving: tuple[Path, Path], session, deadline: float
    ) -> None:
        """containerd, the images, kubelet, kube-proxy and CoreDNS; returns when the node is Ready and DNS answers."""
        node_dir = self.node_dir
        containerd_dir = node_dir / "containerd"
        cni_conf = node_dir / "cni" / "net.d"
        k8s_node.write_json(cni_conf / "10-jobcluster.conflist", k8s_node.build_cni_config(node_dir / "cni" / "ipam"))
        config = containerd_dir / "config.toml"
        containerd_dir.mkdir(parents=True, exist_ok=True)
        config.write_text(
            k8s_node.build_containerd_config(
                root=cache_root() / "k8s-node" / "containerd",
                state=containerd_dir / "state",
                socket=self.runtime_socket,
                cni_conf_dir=cni_conf,
            )
        )
        # containerd finds its shim on PATH.
        self._spawn("containerd", [bin_dir / "containerd", "--config", config, "--log-level", "warn"], path_first=bin_dir)
        self._wait("containerd", lambda: self._ctr("version", check=False).returncode == 0, deadline, what="containerd's socket")
        self._crictl("rmp", "--all", "--force", timeout=POD_REMOVAL_TIMEOUT)  # sandboxes an earlier cluster left in the image store
        pause = node_dir / "pause.tar"
        pause.write_bytes(k8s_node.build_pause_archive((bin_dir / "pause").read_bytes()))
        self.load_images([(k8s_node.PAUSE_IMAGE, pause), *self.images])

        resolv = node_dir / "resolv.conf"
        host_resolv = Path("/etc/resolv.conf").read_text() if Path("/etc/resolv.conf").exists() else ""
        resolv.write_text("".join(f"nameserver {ns}\n" for ns in k8s_node.upstream_nameservers(host_resolv)))
        kubelet_healthz = free_port()
        kubelet_config = k8s_node.write_json(
            node_dir / "kubelet" / "config.json",
            k8s_node.build_kubelet_config(
                runtime_socket=self.runtime_socket,
                client_ca=pki.ca_crt,
                tls_cert=serving[0],
                tls_key=serving[1],
                healthz_port=kubelet_healthz,
                resolv_conf=resolv,
                pod_logs_dir=node_dir / "pod-logs",
            ),
        )
        self._spawn(
            "kubelet",
            [
                bin_dir / "kubelet",
                "--config",
                kubelet_config,
                "--kubeconfig",
                node_kc,
                "--hostname-override",
                self.node_name,
                "--node-ip",
                NODE_IP,
                "--root-dir",
                node_dir / "kubelet" / "root",
                "--cert-dir",
                node_dir / "kubelet" / "pki",
            ],
        )
        proxy_config = k8s_node.write_json(
            node_dir / "kube-proxy.json", k8s_node.build_kube_proxy_config(proxy_kc, self.node_name, free_port(), free_port())
        )
        self._spawn("kube-proxy", [bin_dir / "kube-proxy", "--config", proxy_config, "--v=1"])
        dns_health, dns_ready = free_port(), free_port()
        corefile = node_dir / "Corefile"
        corefile.write_text(k8s_node.build_corefile(self.kubeconfig, dns_health, dns_ready, k8s_node.upstream_nameservers(host_resolv)))
        self._spawn("coredns", [bin_dir / "coredns", "-conf", corefile])

        def node_ready() -> bool:
            r = session.get(f"{self.server}/api/v1/nodes/{self.node_name}", timeout=5)
            if r.status_code != 200:
                return False
            node = r.json()
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
            blocking = [t for t in node["spec"].get("taints", []) if t.get("effect") in ("NoSchedule", "NoExecute")]
            return ready and not blocking

        self._wait("kubelet", node_ready, deadline, what=f"node {self.node_name} Ready")
        plain = requests.Session()
        plain.trust_env = False
        self._wait("coredns", lambda: plain.get(f"http://127.0.0.1:{dns_ready}/ready", timeout=3).status_code == 200, deadline)
        info = {"server": self.server, "bin_dir": str(bin_dir), "images": [(ref, str(path)) for ref, path in self.images]}
        (self.work_dir / ATTACH_FILE).write_text(json.dumps(info))

    def load_images(self, images: Sequence[tuple[str, Path]]) -> None:
        """Import docker-archive files into the node's containerd, unless an image of that ref is there."""
        present = set(self._ctr("images", "ls", "-q").stdout.split())
        for ref, archive in images:
            if ref not in present:
                self._ctr("images", "import", "--snapshotter", "overlayfs", archive, timeout=600)

    def tag_image(self, ref: str, alias: str) -> None:
        """Give the node's image ``ref`` a second name, e.g. the name the product's defaults use (``jobcluster:0.1.0``)."""
        self._ctr("images", "tag", "--force", ref, normalized_image_name(alias))

    def _ctr(self, *args: Any, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
        argv = [str(self.bin_dir / "ctr"), "--address", str(self.runtime_socket), "--namespace", "k8s.io", *map(str, args)]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise KubernetesClusterError(f"ctr {' '.join(map(str, args))} failed ({result.returncode}): {result.stderr.strip()}")
        return result

    def _crictl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        argv = [str(self.bin_dir / "crictl"), "--runtime-endpoint", f"unix://{self.runtime_socket}", "--timeout", "30s", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)

    def _spawn(
        self, name: str, argv: list[Any], pdeathsig: str = "KILL", stop_grace: float = STOP_GRACE, path_first: Path | None = None
    ) -> None:
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - the daemon's log for its lifetime; closed in stop()
        self._logs.append(log)
        env = dict(os.environ)
        env[CLUSTER_ENV] = self.cluster_id
        env.pop("KUBECONFIG", None)
        if path_first is not None:
            env["PATH"] = f"{path_first}{os.pathsep}{env.get('PATH', '')}"
        proc = subprocess.Popen(
            setpriv_prefix(pdeathsig) + [str(a) for a in argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.work_dir,
            start_new_session=True,
        )
        self._procs.append((name, proc, stop_grace))

    def _wait(self, name: str, probe, deadline: float, what: str | None = None) -> None:
        proc = next(p for n, p, _ in self._procs if n == name)
        last_error = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise KubernetesClusterError(f"{name} exited with {proc.returncode}\n{self.log_tail(name)}")
            try:
                with _quiet_insecure():
                    if probe():
                        return
            except (requests.RequestException, ValueError, KeyError) as e:
                last_error = e
            time.sleep(0.5)
        raise KubernetesClusterError(f"timed out waiting for {what or name} ({last_error})\n{self.log_tail(name)}")

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.log_dir / f"{name}.log"
        if not path.exists():
            return f"(no log at {path})"
        text = path.read_text(errors="replace").splitlines()[-lines:]
        return f"--- last lines of {path} ---\n" + "\n".join(text)

    def stop(self, remove_work_dir: bool | None = None) -> None:
        """Stop everything (idempotent). The work dir is removed only if this object created it,
        unless remove_work_dir says otherwise."""
        if self._attached:
            return
        # The kubelet first, so that it restarts nothing; then every pod sandbox through CRI while containerd
        # runs (containers stop, CNI releases their addresses and veths).
        self._stop_procs(lambda name: name == "kubelet")
        if any(name == "containerd" for name, _, _ in self._procs):
            self._crictl("rmp", "--all", "--force", timeout=POD_REMOVAL_TIMEOUT)
        self._stop_procs(lambda name: True)
        kill_tree(None, 2.0, marked_processes(self.cluster_id))
        if self._host_network:
            k8s_node.kill_pod_processes()
            if (self.bin_dir / "kube-proxy").exists():
                subprocess.run([str(self.bin_dir / "kube-proxy"), "--cleanup"], capture_output=True, timeout=60, check=False)
            k8s_node.unmount_under(self.node_dir)
            k8s_node.teardown_host_network()
            self._host_network = False
        self._lock.release()
        for log in self._logs:
            log.close()
        self._logs.clear()
        atexit.unregister(self.stop)
        if self._own_work_dir if remove_work_dir is None else remove_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def _stop_procs(self, which) -> None:
        """SIGTERM (then SIGKILL after its grace) each daemon that ``which(name)`` picks, newest first."""
        for entry in reversed(list(self._procs)):
            name, proc, grace = entry
            if not which(name):
                continue
            try:
                root = psutil.Process(proc.pid)
            except psutil.Error:
                root = None
            kill_tree(root, grace)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            self._procs.remove(entry)

    def _tool(self, tool: str, args: tuple[str, ...], timeout: float, check: bool) -> subprocess.CompletedProcess:
        result = subprocess.run([str(self.bin_dir / tool), *args], env=self.env(), capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise KubernetesClusterError(f"{tool} {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
        return result


@contextlib.contextmanager
def _quiet_insecure():
    """The controller manager and scheduler serve /healthz with self-signed certs; skip the warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
        yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start the jobcluster Kubernetes test cluster until Ctrl-C.")
    parser.add_argument("--work-dir", type=Path, help="certificates, etcd data, logs, pods (default: a new temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work dir after stopping")
    parser.add_argument("--image", nargs=2, action="append", default=[], metavar=("REF", "ARCHIVE"), help="import a docker-archive")
    parser.add_argument("--no-project-image", action="store_true", help="do not build and import the project's images")
    args = parser.parse_args(argv)
    if args.work_dir:
        args.work_dir.mkdir(parents=True, exist_ok=True)
    images = [(ref, Path(path)) for ref, path in args.image]
    if not args.no_project_image:
        images[:0] = [build_project_image(), build_project_image("operator")]
    cluster = KubernetesCluster(work_dir=args.work_dir, images=images)
    stop = False
    started = False

    def on_signal(signum: int, _frame: Any) -> None:
        nonlocal stop
        stop = True
        if not started:
            raise KeyboardInterrupt  # start() cleans up what it started

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"building or reusing the tools, starting the cluster in {cluster.work_dir} ...", file=sys.stderr)
    try:
        cluster.start()
    except KeyboardInterrupt:
        if not args.keep:
            cluster.stop(remove_work_dir=True)
        return 130
    except KubernetesClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    started = True
    print(
        f"\nKubernetes test cluster is up (API server {cluster.server}).\n"
        f"  export KUBECONFIG={cluster.kubeconfig}\n"
        f"  export PATH={cluster.bin_dir}:$PATH\n"
        f"  export CONTAINER_RUNTIME_ENDPOINT=unix://{cluster.runtime_socket}   # crictl\n"
        f"  logs: {cluster.log_dir}   pods' logs: {cluster.node_dir}/pod-logs\n"
        "Ctrl-C stops it.",
        flush=True,
    )
    try:
        while not stop:
            time.sleep(0.5)
    finally:
        print("stopping ...", file=sys.stderr)
        cluster.stop(remove_work_dir=not args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
