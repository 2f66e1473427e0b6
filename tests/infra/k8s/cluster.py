"""A real Kubernetes control plane on loopback, started and stopped by the test suite.

Why: the Kubernetes backend, the operator and the Helm chart are tested against
the real API server, controller manager and scheduler (built from the Go module
proxy by build.sh), not a mock. Pods are run by a node agent (the node_agent package)
as local processes, each on its own 127.x address.

What start() does, on free loopback ports, each daemon in its own process group
with its log under <work_dir>/logs:

1. certificates (openssl CLI): a CA, the API server's serving cert, client certs
   for the admin (system:masters), controller manager, scheduler and node, and
   the service-account signing key pair;
2. etcd (plain HTTP on 127.0.0.1, no fsync: the data is thrown away);
3. kube-apiserver (Node,RBAC authorization, NodeRestriction), waits for /readyz;
4. kube-controller-manager (all controllers, per-controller service-account
   credentials, no leader election) and kube-scheduler, waits for /healthz and
   for the `default` service account (pods cannot be created before it exists);
5. the node agent, as system:node:<name>; waits for the Node to be Ready.

stop() terminates them in reverse order (the node agent kills its pods), then
kills anything still carrying this cluster's marker in its environment, so no
process outlives the cluster. Daemons also die with the thread that started them
(PR_SET_PDEATHSIG via setpriv), so start the cluster from a long-lived thread.

By hand, for debugging (from the repository root):

    .venv/bin/python -m tests.infra.k8s.cluster        # Ctrl-C stops it

It prints the KUBECONFIG and PATH to export for kubectl and helm.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import os
import random
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

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build.sh"
# A package directory, run as a script (its __main__.py makes the repository root importable).
NODE_AGENT = HERE / "node_agent"

# Every process this cluster starts (and their children) carries this variable
# with the cluster's id; stop() kills whatever still has it.
CLUSTER_ENV = "JOBCLUSTER_K8S_CLUSTER"
SERVICE_CIDR = "10.0.0.0/24"
KUBERNETES_SERVICE_IP = "10.0.0.1"
DEFAULT_NODE_NAME = "jobcluster-node"
# Seconds: readiness of each component on a loaded 2-core machine.
START_TIMEOUT = 180.0
# Seconds a daemon gets between SIGTERM and SIGKILL on stop (the node agent more:
# it first stops its pods).
STOP_GRACE = 10.0
NODE_AGENT_STOP_GRACE = 30.0


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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler + node agent on loopback."""

    def __init__(
        self,
        work_dir: Path | None = None,
        bin_dir: Path | None = None,
        node_name: str = DEFAULT_NODE_NAME,
        node_cpu: str | None = None,
        node_memory: str | None = None,
    ) -> None:
        self._own_work_dir = work_dir is None
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="jobcluster-k8s-")).resolve()
        self._bin_dir = bin_dir
        self.node_name = node_name
        self.node_cpu = node_cpu
        self.node_memory = node_memory
        self.cluster_id = uuid.uuid4().hex
        # Pods get IPs from a random 127.N.0.0/16 so that clusters of concurrent test sessions do not collide.
        self.pod_cidr = f"127.{random.randint(16, 254)}.0.0/16"
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
        """The node agent's work dir: pods/<namespace>/<pod>/<uid>/{logs,volumes,rootfs}."""
        return self.work_dir / "node"

    def env(self) -> dict[str, str]:
        """Environment for kubectl/helm subprocesses: KUBECONFIG set, the tools first on PATH."""
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
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
        """Output of a container (the latest pod of that name), as the node agent recorded it."""
        pattern = f"pods/{namespace}/{name}/*/logs/{container or '*'}.log"
        files = sorted(self.node_dir.glob(pattern), key=lambda p: p.stat().st_mtime)
        files = [f for f in files if not f.name.endswith(".previous.log")]
        return files[-1].read_text(errors="replace") if files else ""

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

        etcd_port, etcd_peer, api_port, kcm_port, sched_port = (free_port() for _ in range(5))
        self._server = f"https://127.0.0.1:{api_port}"
        write_kubeconfig(self.kubeconfig, self.server, pki.ca_crt, *admin, "jobcluster-admin")
        kcm_kc = write_kubeconfig(pki.dir / "kube-controller-manager.kubeconfig", self.server, pki.ca_crt, *kcm, "kube-controller-manager")
        sched_kc = write_kubeconfig(pki.dir / "kube-scheduler.kubeconfig", self.server, pki.ca_crt, *sched, "kube-scheduler")
        node_kc = write_kubeconfig(pki.dir / "node.kubeconfig", self.server, pki.ca_crt, *node, f"system:node:{self.node_name}")
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
                "127.0.0.1",
                "--advertise-address",
                "127.0.0.1",
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
                # The `kubernetes` Service's endpoints cannot be a loopback address (validation
                # refuses it); nothing routes Service IPs here anyway (no kube-proxy).
                "--endpoint-reconciler-type",
                "none",
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

        agent_args: list[Any] = [
            sys.executable,
            NODE_AGENT,
            "--kubeconfig",
            node_kc,
            "--node-name",
            self.node_name,
            "--work-dir",
            self.node_dir,
            "--pod-cidr",
            self.pod_cidr,
        ]
        if self.node_cpu:
            agent_args += ["--cpu", self.node_cpu]
        if self.node_memory:
            agent_args += ["--memory", self.node_memory]
        self._spawn("node-agent", agent_args, pdeathsig="TERM", stop_grace=NODE_AGENT_STOP_GRACE)

        def node_ready() -> bool:
            r = session.get(f"{self.server}/api/v1/nodes/{self.node_name}", timeout=5)
            if r.status_code != 200:
                return False
            node = r.json()
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
            blocking = [t for t in node["spec"].get("taints", []) if t.get("effect") in ("NoSchedule", "NoExecute")]
            return ready and not blocking

        self._wait("node-agent", node_ready, deadline, what=f"node {self.node_name} Ready")

    def _spawn(self, name: str, argv: list[Any], pdeathsig: str = "KILL", stop_grace: float = STOP_GRACE) -> None:
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - the daemon's log for its lifetime; closed in stop()
        self._logs.append(log)
        env = dict(os.environ)
        env[CLUSTER_ENV] = self.cluster_id
        env.pop("KUBECONFIG", None)
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
        for _name, proc, grace in reversed(self._procs):
            try:
                root = psutil.Process(proc.pid)
            except psutil.Error:
                root = None
            kill_tree(root, grace)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._procs.clear()
        kill_tree(None, 2.0, marked_processes(self.cluster_id))
        for log in self._logs:
            log.close()
        self._logs.clear()
        atexit.unregister(self.stop)
        if self._own_work_dir if remove_work_dir is None else remove_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

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
    parser.add_argument("--node-cpu", help="node CPU capacity (default: this machine's)")
    parser.add_argument("--node-memory", help="node memory capacity, e.g. 8Gi (default: this machine's)")
    args = parser.parse_args(argv)
    if args.work_dir:
        args.work_dir.mkdir(parents=True, exist_ok=True)
    cluster = KubernetesCluster(work_dir=args.work_dir, node_cpu=args.node_cpu, node_memory=args.node_memory)
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
        f"  logs: {cluster.log_dir}   pods: {cluster.node_dir}/pods\n"
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
