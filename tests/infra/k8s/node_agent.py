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

Run by hand: ``python tests/infra/k8s/node_agent.py --kubeconfig KC --work-dir DIR``.
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import http.client
import datetime as dt
import ipaddress
import json
import logging
import math
import os
import platform
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes
import psutil
from kubernetes.client.rest import ApiException
from kubernetes.utils.quantity import parse_quantity

log = logging.getLogger("node-agent")

# Every API call has a (connect, read) timeout in seconds.
API_TIMEOUT = (5, 30)
# Server-side watch duration; the client read timeout must exceed it.
WATCH_SECONDS = 30
WATCH_TIMEOUT = (5, WATCH_SECONDS + 15)
# Lease renewal like the kubelet (nodeLeaseDurationSeconds=40, renew every 10 s).
LEASE_DURATION_SECONDS = 40
LEASE_RENEW_SECONDS = 10
# Full node status is re-sent at least this often (kubelet: 5 min); the Lease is the heartbeat.
NODE_STATUS_SECONDS = 60
# Restart back-off: first restart after BASE, doubling, capped at MAX; reset after a long good run.
BACKOFF_BASE_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 60.0
BACKOFF_RESET_SECONDS = 120.0
# How long to wait for processes after SIGKILL before giving up on them.
KILL_WAIT_SECONDS = 5.0
# Pod IPs are taken from this range (one per pod) unless --pod-cidr says otherwise;
# the test cluster picks a random 127.N.0.0/16 so that concurrent clusters do not collide.
DEFAULT_POD_CIDR = "127.1.0.0/16"
HOST_IP = "127.0.0.1"

# Set in every process the agent starts; inherited by their children. Lets the
# agent find a pod's processes even after they daemonised or changed groups.
POD_UID_ENV = "JOBCLUSTER_K8S_POD_UID"
VOLUME_ROOT_ENV = "POD_VOLUME_ROOT"
# Not passed from the agent's environment to pods.
ENV_DENY = ("KUBECONFIG",)
ENV_DENY_PREFIXES = ("KUBERNETES_", "PYTEST_")

_PR_SET_CHILD_SUBREAPER = 36


def now_rfc3339() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def setpriv_prefix(signame: str) -> list[str]:
    """Prefix that makes a child die with signame when its parent thread dies (PR_SET_PDEATHSIG)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, f"--pdeathsig={signame}", "--"] if setpriv else []


class PodConfigError(Exception):
    """The pod cannot start yet (missing ConfigMap/Secret, unsupported volume); retried."""


# ---------------------------------------------------------------------------------------------
# Process bookkeeping


class ProcessTable:
    """Tracks the processes the agent spawned and reaps orphans re-parented to it.

    The agent is a child subreaper, so a pod's daemonised grandchildren stay its
    descendants (and are killed with the pod) instead of escaping to init.
    Exit statuses of spawned processes belong to their Popen objects; only
    untracked zombies are reaped here.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tracked: set[int] = set()

    def spawn(self, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        with self.lock:
            proc = subprocess.Popen(argv, **kwargs)
            self.tracked.add(proc.pid)
            return proc

    def forget(self, pid: int) -> None:
        with self.lock:
            self.tracked.discard(pid)

    def reap_orphans(self) -> None:
        with self.lock:
            try:
                children = psutil.Process().children()
            except psutil.Error:
                return
            for child in children:
                if child.pid in self.tracked:
                    continue
                try:
                    if child.status() == psutil.STATUS_ZOMBIE:
                        os.waitpid(child.pid, os.WNOHANG)
                except (psutil.Error, ChildProcessError, OSError):
                    pass


def descendants_with_env(pod_uid: str) -> list[psutil.Process]:
    """All descendants of this agent that carry the pod's marker in their environment."""
    found = []
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return found
    for proc in children:
        try:
            if proc.environ().get(POD_UID_ENV) == pod_uid:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def kill_processes(procs: list[psutil.Process], grace: float, popens: list[subprocess.Popen] = ()) -> None:
    """SIGTERM, wait up to grace seconds, then SIGKILL whatever is left (process groups too).

    Processes this agent spawned are reaped through their Popen objects (in popens)
    so that their exit status is not lost; nothing here calls waitpid on them.
    """

    def alive() -> list[psutil.Process]:
        for popen in popens:
            popen.poll()
        out = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    out.append(p)
            except psutil.Error:
                pass
        return out

    procs = alive()
    if not procs:
        return
    groups = set()
    for p in procs:
        try:
            groups.add(os.getpgid(p.pid))
        except OSError:
            pass
    groups.discard(os.getpgrp())
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, KILL_WAIT_SECONDS)):
        for pgid in groups:
            try:
                os.killpg(pgid, sig)
            except OSError:
                pass
        for p in procs:
            try:
                p.send_signal(sig)
            except psutil.Error:
                pass
        deadline = time.monotonic() + wait
        while procs and time.monotonic() < deadline:
            time.sleep(0.05)
            procs = alive()
        if not procs:
            return
    log.warning("processes survived SIGKILL: %s", [p.pid for p in procs])


# ---------------------------------------------------------------------------------------------
# Small Kubernetes helpers


def expand_vars(text: str, env: dict[str, str]) -> str:
    """Kubernetes $(VAR) expansion: defined vars are replaced, $$ escapes, the rest stays."""
    out = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i):
            end = text.find(")", i + 2)
            name = text[i + 2 : end] if end != -1 else None
            if name is not None and name in env:
                out.append(env[name])
                i = end + 1
            else:
                out.append("$(")
                i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def quantity(value: Any) -> float:
    return float(parse_quantity(str(value)))


def field_value(pod: dict, path: str, pod_ip: str) -> str:
    meta = pod.get("metadata", {})
    spec = pod.get("spec", {})
    m = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if m:
        return (meta.get(m.group(1)) or {}).get(m.group(2), "")
    values = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "metadata.labels": "\n".join(f'{k}="{v}"' for k, v in sorted((meta.get("labels") or {}).items())),
        "metadata.annotations": "\n".join(f'{k}="{v}"' for k, v in sorted((meta.get("annotations") or {}).items())),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.hostIP": HOST_IP,
        "status.hostIPs": HOST_IP,
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
    }
    if path not in values:
        raise PodConfigError(f"unsupported fieldRef {path!r}")
    return values[path]


def resource_value(container: dict, ref: dict, node_allocatable: dict[str, str]) -> str:
    resource = ref["resource"]
    kind, _, name = resource.partition(".")
    resources = container.get("resources") or {}
    value = (resources.get(kind) or {}).get(name)
    if value is None and kind == "limits":
        value = node_allocatable.get(name, "0")
    if value is None:
        value = "0"
    divisor = quantity(ref.get("divisor") or "1")
    return str(math.ceil(quantity(value) / divisor))


# ---------------------------------------------------------------------------------------------
# Containers and pods


@dataclass
class ContainerRun:
    spec: dict
    kind: str  # "init", "sidecar" or "main"
    restart_count: int = 0
    proc: subprocess.Popen | None = None
    psproc: psutil.Process | None = None
    started_at: str | None = None
    started_mono: float = 0.0
    state: dict = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: dict = field(default_factory=dict)
    ever_ran: bool = False
    done: bool = False  # terminated and will not run again
    next_start: float = 0.0
    failures: int = 0
    ready: bool = False  # readiness probe passed (or no readiness probe)
    startup_ok: bool = False  # startup probe passed (or no startup probe)
    probes: dict = field(default_factory=dict)  # probe kind -> {"next", "succ", "fail"}

    @property
    def name(self) -> str:
        return self.spec["name"]

    @property
    def running(self) -> bool:
        return self.proc is not None

    def status(self) -> dict:
        out = {
            "name": self.name,
            "image": self.spec.get("image", ""),
            "imageID": "",
            "restartCount": self.restart_count,
            "ready": self.running and self.ready,
            "started": self.running and self.startup_ok,
            "state": self.state,
            "lastState": self.last_state,
        }
        if self.proc is not None:
            out["containerID"] = f"process://{self.proc.pid}"
        elif "terminated" in self.state and "containerID" in self.state["terminated"]:
            out["containerID"] = self.state["terminated"]["containerID"]
        return out


class PodWorker(threading.Thread):
    """Owns one pod (by UID): volumes, processes, restarts, status, deletion.

    All processes of the pod are spawned from this thread (their PDEATHSIG is
    tied to it), and the thread ends only after they are dead.
    """

    def __init__(self, agent: NodeAgent, pod: dict) -> None:
        meta = pod["metadata"]
        super().__init__(name=f"pod-{meta['namespace']}/{meta['name']}", daemon=True)
        self.agent = agent
        self.pod = pod
        self.uid = meta["uid"]
        self.namespace = meta["namespace"]
        self.pod_name = meta["name"]
        self.wake = threading.Event()
        self.gone = False  # the API object is gone: kill, nothing to report
        self.dir = agent.work_dir / "pods" / self.namespace / self.pod_name / self.uid
        self.pod_ip = ""
        self.start_time = now_rfc3339()
        self.runs_init: list[ContainerRun] = []
        self.runs_main: list[ContainerRun] = []
        self.initialized = False
        self.failed = False  # terminal Failed (init failure or final exit != 0)
        self.config_error: str | None = None
        self.terminal_phase: str | None = None
        self.condition_times: dict[str, tuple[str, str]] = {}
        self.last_pushed: dict | None = None
        self.container_env: dict[str, dict[str, str]] = {}
        self.container_mounts: dict[str, list[tuple[str, str]]] = {}

    # -- called from the watch thread
    def update(self, pod: dict) -> None:
        self.pod = pod
        self.wake.set()

    def removed(self) -> None:
        self.gone = True
        self.wake.set()

    # -- thread body
    def run(self) -> None:
        try:
            self._run()
        except Exception:
            log.exception("pod %s/%s: worker failed", self.namespace, self.pod_name)
        finally:
            self.kill_all(grace=2.0)
            self.agent.worker_done(self)

    def _run(self) -> None:
        phase = (self.pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            # Finished before this agent saw it (e.g. agent restart): never run again.
            self.terminal_phase = phase
        else:
            spec = self.pod["spec"]
            self.pod_ip = HOST_IP if spec.get("hostNetwork") else self.agent.allocate_ip(self.uid)
            for c in spec.get("initContainers") or []:
                kind = "sidecar" if c.get("restartPolicy") == "Always" else "init"
                self.runs_init.append(ContainerRun(c, kind))
            self.runs_main = [ContainerRun(c, "main") for c in spec.get("containers") or []]
            log.info("pod %s/%s (%s): starting with IP %s", self.namespace, self.pod_name, self.uid, self.pod_ip)
        while True:
            if self.gone or self.agent.stopping.is_set():
                return
            if self.pod["metadata"].get("deletionTimestamp"):
                self.finish_deletion()
                return
            if self.terminal_phase is None:
                if not self.container_env and self.runs_main:
                    try:
                        self.prepare()
                        self.config_error = None
                    except Exception as e:  # PodConfigError, or the API server unreachable: retried
                        if not isinstance(e, PodConfigError):
                            e = PodConfigError(f"{type(e).__name__}: {e}")
                        if self.config_error != str(e):
                            log.warning("pod %s/%s: %s", self.namespace, self.pod_name, e)
                        self.config_error = str(e)
                if self.container_env:
                    self.step()
                self.push_status()
            busy = any(r.running or (not r.done and r.ever_ran) for r in self.runs_init + self.runs_main)
            self.wake.wait(0.2 if busy else 1.0)
            self.wake.clear()

    # -- setup
    def prepare(self) -> None:
        """Volumes, env and path mappings for every container; raises PodConfigError to retry later."""
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "logs").mkdir(exist_ok=True)
        volumes = {}
        for vol in self.pod["spec"].get("volumes") or []:
            volumes[vol["name"]] = self.materialise_volume(vol)
        envs = {}
        for run in self.runs_init + self.runs_main:
            c = run.spec
            root = self.dir / "rootfs" / c["name"]
            if root.exists():
                shutil.rmtree(root)
            root.mkdir(parents=True)
            pairs = []
            for m in c.get("volumeMounts") or []:
                if m["name"] not in volumes:
                    raise PodConfigError(f"container {c['name']}: volume {m['name']!r} not found")
                target = volumes[m["name"]]
                if m.get("subPath"):
                    target = target / m["subPath"]
                    if not target.exists():
                        target.mkdir(parents=True)
                mount_path = os.path.normpath(m["mountPath"])
                if mount_path == "/":
                    raise PodConfigError(f"container {c['name']}: mountPath / is not supported")
                link = root / mount_path.lstrip("/")
                link.parent.mkdir(parents=True, exist_ok=True)
                if not link.is_symlink():
                    link.symlink_to(target)
                pairs.append((mount_path, str(link)))
            self.container_mounts[c["name"]] = sorted(pairs, key=lambda p: len(p[0]), reverse=True)
            envs[c["name"]] = self.container_environment(c, root)
        self.container_env = envs

    def materialise_volume(self, vol: dict) -> Path:
        name = vol["name"]
        path = self.dir / "volumes" / name
        if "hostPath" in vol:
            host = Path(vol["hostPath"]["path"])
            if vol["hostPath"].get("type") in ("DirectoryOrCreate",) and not host.exists():
                host.mkdir(parents=True)
            return host
        if "emptyDir" in vol:
            path.mkdir(parents=True, exist_ok=True)
            return path
        files: dict[str, tuple[bytes, int | None]] = {}
        if "configMap" in vol:
            files = self.object_files("configmap", vol["configMap"])
        elif "secret" in vol:
            src = dict(vol["secret"])
            src["name"] = src.get("secretName")
            files = self.object_files("secret", src)
        elif "downwardAPI" in vol:
            files = self.downward_files(vol["downwardAPI"].get("items") or [])
        elif "projected" in vol:
            for source in vol["projected"].get("sources") or []:
                if "configMap" in source:
                    files.update(self.object_files("configmap", source["configMap"]))
                elif "secret" in source:
                    files.update(self.object_files("secret", source["secret"]))
                elif "downwardAPI" in source:
                    files.update(self.downward_files(source["downwardAPI"].get("items") or []))
                elif "serviceAccountToken" in source:
                    tok = source["serviceAccountToken"]
                    files[tok["path"]] = (self.service_account_token(tok).encode(), None)
                else:
                    raise PodConfigError(f"volume {name}: unsupported projected source {sorted(source)}")
        else:
            kinds = sorted(k for k in vol if k != "name")
            raise PodConfigError(f"volume {name}: unsupported volume type {kinds} (node agent)")
        tmp = path.with_name(path.name + ".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        for rel, (data, mode) in files.items():
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            if mode is not None:
                dest.chmod(mode)
        if path.exists():
            shutil.rmtree(path)
        tmp.rename(path)
        return path

    def object_files(self, kind: str, src: dict) -> dict[str, tuple[bytes, int | None]]:
        obj = self.agent.read_object(kind, self.namespace, src["name"])
        if obj is None:
            if src.get("optional"):
                return {}
            raise PodConfigError(f"{kind} {self.namespace}/{src['name']} not found")
        data: dict[str, bytes] = {}
        for k, v in (obj.get("data") or {}).items():
            data[k] = base64.b64decode(v) if kind == "secret" else v.encode()
        for k, v in (obj.get("binaryData") or {}).items():
            data[k] = base64.b64decode(v)
        mode = src.get("defaultMode")
        items = src.get("items")
        if not items:
            return {k: (v, mode) for k, v in data.items()}
        out = {}
        for item in items:
            if item["key"] not in data:
                if src.get("optional"):
                    continue
                raise PodConfigError(f"{kind} {self.namespace}/{src['name']} has no key {item['key']!r}")
            out[item["path"]] = (data[item["key"]], item.get("mode", mode))
        return out

    def downward_files(self, items: list[dict]) -> dict[str, tuple[bytes, int | None]]:
        out = {}
        for item in items:
            if "fieldRef" in item:
                value = field_value(self.pod, item["fieldRef"]["fieldPath"], self.pod_ip)
            else:
                ref = item["resourceFieldRef"]
                container = next(
                    (c for c in self.pod["spec"]["containers"] if c["name"] == ref.get("containerName")),
                    self.pod["spec"]["containers"][0],
                )
                value = resource_value(container, ref, self.agent.allocatable)
            out[item["path"]] = (value.encode(), item.get("mode"))
        return out

    def service_account_token(self, source: dict) -> str:
        sa = self.pod["spec"].get("serviceAccountName") or "default"
        spec: dict[str, Any] = {
            "expirationSeconds": source.get("expirationSeconds", 3600),
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": self.pod_name, "uid": self.uid},
        }
        if source.get("audience"):
            spec["audiences"] = [source["audience"]]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        try:
            resp = self.agent.core.create_namespaced_service_account_token(
                sa, self.namespace, body, _request_timeout=API_TIMEOUT, _preload_content=False
            )
        except ApiException as e:
            raise PodConfigError(f"token for service account {self.namespace}/{sa}: {e.status} {e.reason}") from e
        return json.loads(resp.data)["status"]["token"]

    def container_environment(self, c: dict, root: Path) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ENV_DENY and not k.startswith(ENV_DENY_PREFIXES)
        }
        host, port = self.agent.api_host_port
        env.update(
            {
                "HOSTNAME": self.pod["spec"].get("hostname") or self.pod_name,
                "KUBERNETES_SERVICE_HOST": host,
                "KUBERNETES_SERVICE_PORT": str(port),
                "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
                "KUBERNETES_PORT": f"tcp://{host}:{port}",
                VOLUME_ROOT_ENV: str(root),
                POD_UID_ENV: self.uid,
            }
        )
        pod_env: dict[str, str] = {}
        for src in c.get("envFrom") or []:
            prefix = src.get("prefix", "")
            for kind, key in (("configmap", "configMapRef"), ("secret", "secretRef")):
                if key not in src:
                    continue
                obj = self.agent.read_object(kind, self.namespace, src[key]["name"])
                if obj is None:
                    if src[key].get("optional"):
                        continue
                    raise PodConfigError(f"{kind} {self.namespace}/{src[key]['name']} not found")
                for k, v in (obj.get("data") or {}).items():
                    pod_env[prefix + k] = base64.b64decode(v).decode() if kind == "secret" else v
        for var in c.get("env") or []:
            name = var["name"]
            if "valueFrom" not in var:
                pod_env[name] = expand_vars(var.get("value", ""), {**env, **pod_env})
                continue
            vf = var["valueFrom"]
            if "fieldRef" in vf:
                pod_env[name] = field_value(self.pod, vf["fieldRef"]["fieldPath"], self.pod_ip)
            elif "resourceFieldRef" in vf:
                pod_env[name] = resource_value(c, vf["resourceFieldRef"], self.agent.allocatable)
            else:
                kind, ref = ("configmap", vf["configMapKeyRef"]) if "configMapKeyRef" in vf else ("secret", vf["secretKeyRef"])
                obj = self.agent.read_object(kind, self.namespace, ref["name"])
                data = (obj or {}).get("data") or {}
                if ref["key"] not in data:
                    if ref.get("optional"):
                        continue
                    raise PodConfigError(f"env {name}: {kind} {self.namespace}/{ref['name']} key {ref['key']!r} not found")
                value = data[ref["key"]]
                pod_env[name] = base64.b64decode(value).decode() if kind == "secret" else value
        env.update({k: self.rewrite(c["name"], v) for k, v in pod_env.items()})
        return env

    def rewrite(self, container: str, text: str) -> str:
        """Map mountPaths at the start of a word (or after = : ,) to the container's host paths."""
        for mount_path, host_path in self.container_mounts.get(container, []):
            pattern = r"(?:^|(?<=[\s=:,]))" + re.escape(mount_path) + r"(?=/|$|[\s:,])"
            text = re.sub(pattern, lambda _m, h=host_path: h, text)
        return text

    # -- running
    def start_container(self, run: ContainerRun) -> None:
        c = run.spec
        env = self.container_env[c["name"]]
        argv = [expand_vars(a, env) for a in (c.get("command") or []) + (c.get("args") or [])]
        argv = [self.rewrite(c["name"], a) for a in argv]
        log_path = self.dir / "logs" / f"{c['name']}.log"
        error = None
        if not c.get("command"):
            error = "no command: the node agent does not pull images, so the container must set command"
        else:
            exe = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
            if exe is None or not os.access(exe, os.X_OK):
                error = f"executable {argv[0]!r} not found on this machine (PATH={env.get('PATH')})"
        cwd = self.rewrite(c["name"], c.get("workingDir") or "") or str(self.dir)
        if error is None:
            try:
                Path(cwd).mkdir(parents=True, exist_ok=True)
            except OSError as e:
                error = f"workingDir {cwd}: {e}"
        run.started_at = now_rfc3339()
        run.started_mono = time.monotonic()
        run.ever_ran = True
        if error is None:
            if log_path.exists():
                log_path.replace(log_path.with_suffix(".previous.log"))
            try:
                with open(log_path, "ab") as out:
                    run.proc = self.agent.procs.spawn(
                        setpriv_prefix("KILL") + argv,
                        cwd=cwd,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
            except OSError as e:
                error = f"{argv[0]}: {e}"
        if error is not None:
            log.warning("pod %s/%s container %s: %s", self.namespace, self.pod_name, c["name"], error)
            self.exited(run, 128, None, reason="StartError", message=error)
            return
        try:
            run.psproc = psutil.Process(run.proc.pid)
        except psutil.Error:
            run.psproc = None
        run.state = {"running": {"startedAt": run.started_at}}
        run.ready = "readinessProbe" not in c
        run.startup_ok = "startupProbe" not in c
        run.probes = {}
        log.info("pod %s/%s container %s: started pid %d: %s", self.namespace, self.pod_name, c["name"], run.proc.pid, argv)

    def exited(self, run: ContainerRun, code: int, sig: int | None, reason: str | None = None, message: str | None = None) -> None:
        pid = run.proc.pid if run.proc else None
        if run.proc is not None:
            self.agent.procs.forget(run.proc.pid)
            # Kill what the container left behind in its process group.
            try:
                os.killpg(run.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        run.proc = None
        run.psproc = None
        term: dict[str, Any] = {
            "exitCode": code,
            "reason": reason or ("Completed" if code == 0 else "Error"),
            "startedAt": run.started_at,
            "finishedAt": now_rfc3339(),
        }
        if sig:
            term["signal"] = sig
        if message:
            term["message"] = message
        if pid:
            term["containerID"] = f"process://{pid}"
        run.state = {"terminated": term}
        ran = time.monotonic() - run.started_mono
        run.failures = 0 if ran > BACKOFF_RESET_SECONDS else run.failures + 1
        log.info("pod %s/%s container %s: exited %s after %.1fs", self.namespace, self.pod_name, run.name, code, ran)

    def poll(self, run: ContainerRun) -> None:
        if run.proc is None:
            return
        rc = run.proc.poll()
        if rc is None:
            return
        if rc < 0:
            self.exited(run, 128 - rc, -rc)
        else:
            self.exited(run, rc, None)

    def probe(self, run: ContainerRun) -> None:
        """Run the container's startup, liveness and readiness probes that are due (kubelet semantics)."""
        if run.proc is None:
            return
        now = time.monotonic()
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            probe = run.spec.get(kind)
            if not probe or (kind == "startupProbe") == run.startup_ok:
                continue
            st = run.probes.setdefault(kind, {"next": run.started_mono + probe.get("initialDelaySeconds", 0), "succ": 0, "fail": 0})
            if now < st["next"]:
                continue
            st["next"] = now + probe.get("periodSeconds", 10)
            ok = self.run_probe(run, probe)
            st["succ"], st["fail"] = (st["succ"] + 1, 0) if ok else (0, st["fail"] + 1)
            failed = st["fail"] >= probe.get("failureThreshold", 3)
            if kind == "readinessProbe":
                if ok and st["succ"] >= probe.get("successThreshold", 1):
                    run.ready = True
                elif failed:
                    run.ready = False
            elif ok:
                run.startup_ok = run.startup_ok or kind == "startupProbe"
            elif failed:
                log.info("pod %s/%s container %s: %s failed, killing it", self.namespace, self.pod_name, run.name, kind)
                grace = probe.get("terminationGracePeriodSeconds", self.pod["spec"].get("terminationGracePeriodSeconds", 30))
                self.kill_container(run, float(grace))
                return

    def run_probe(self, run: ContainerRun, probe: dict) -> bool:
        timeout = float(probe.get("timeoutSeconds", 1))

        def port_of(value: Any) -> int:
            if isinstance(value, int) or str(value).isdigit():
                return int(value)
            for p in run.spec.get("ports") or []:
                if p.get("name") == value:
                    return int(p["containerPort"])
            raise ValueError(f"unknown port name {value!r}")

        try:
            if "exec" in probe:
                env = self.container_env[run.name]
                argv = [self.rewrite(run.name, expand_vars(a, env)) for a in probe["exec"].get("command") or []]
                proc = self.agent.procs.spawn(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL, start_new_session=True)
                try:
                    return proc.wait(timeout=timeout) == 0
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    return False
                finally:
                    self.agent.procs.forget(proc.pid)
            if "tcpSocket" in probe:
                host = probe["tcpSocket"].get("host") or self.pod_ip
                with socket.create_connection((host, port_of(probe["tcpSocket"]["port"])), timeout=timeout):
                    return True
            if "httpGet" in probe:
                get = probe["httpGet"]
                host = get.get("host") or self.pod_ip
                conn_cls = http.client.HTTPSConnection if get.get("scheme") == "HTTPS" else http.client.HTTPConnection
                kwargs = {"context": ssl._create_unverified_context()} if conn_cls is http.client.HTTPSConnection else {}
                conn = conn_cls(host, port_of(get["port"]), timeout=timeout, **kwargs)
                try:
                    headers = {h["name"]: h["value"] for h in get.get("httpHeaders") or []}
                    conn.request("GET", get.get("path") or "/", headers=headers)
                    return 200 <= conn.getresponse().status < 400
                finally:
                    conn.close()
        except (OSError, ValueError, http.client.HTTPException):
            return False
        log.warning("pod %s/%s container %s: unsupported probe %s, treated as passing", self.namespace, self.pod_name, run.name, sorted(probe))
        return True

    def kill_container(self, run: ContainerRun, grace: float) -> None:
        if run.psproc is None:
            return
        try:
            procs = [run.psproc, *run.psproc.children(recursive=True)]
        except psutil.Error:
            procs = [run.psproc]
        kill_processes(procs, grace, [run.proc] if run.proc else [])

    def should_restart(self, run: ContainerRun) -> bool:
        if run.kind == "sidecar":
            return True
        code = run.state.get("terminated", {}).get("exitCode", 0)
        policy = self.pod["spec"].get("restartPolicy", "Always")
        if run.kind == "init":
            return code != 0 and policy != "Never"
        return policy == "Always" or (policy == "OnFailure" and code != 0)

    def schedule_restart(self, run: ContainerRun) -> None:
        delay = min(BACKOFF_BASE_SECONDS * 2 ** max(run.failures - 1, 0), BACKOFF_MAX_SECONDS)
        run.next_start = time.monotonic() + delay
        run.last_state = run.state
        run.restart_count += 1
        run.state = {"waiting": {"reason": "CrashLoopBackOff", "message": f"back-off {delay:.0f}s restarting failed container={run.name} pod={self.pod_name}_{self.namespace}({self.uid})"}}

    def advance(self, run: ContainerRun) -> None:
        """Poll; on exit either mark done or schedule a restart; start when due."""
        if run.done:
            return
        if run.proc is not None:
            self.poll(run)
            if run.proc is not None:
                self.probe(run)
                return
        if "terminated" in run.state:
            if self.should_restart(run):
                self.schedule_restart(run)
            else:
                run.done = True
                return
        if time.monotonic() >= run.next_start:
            self.start_container(run)
            if run.proc is None:  # failed to start: decide on the next step
                self.advance(run)

    def step(self) -> None:
        if not self.initialized:
            for run in self.runs_init:
                if run.kind == "sidecar":
                    self.advance(run)
                    if not (run.running and run.startup_ok):
                        return
                    continue
                if run.done:
                    if run.state["terminated"]["exitCode"] != 0:
                        self.failed = True
                        self.finish(failed=True)
                        return
                    continue
                self.advance(run)
                if not run.done:
                    return
                if run.state["terminated"]["exitCode"] != 0:
                    self.failed = True
                    self.finish(failed=True)
                    return
            self.initialized = True
        for run in self.runs_main:
            self.advance(run)
        for run in self.runs_init:
            if run.kind == "sidecar":
                self.advance(run)
        if self.runs_main and all(r.done for r in self.runs_main):
            failed = any(r.state["terminated"]["exitCode"] != 0 for r in self.runs_main)
            self.finish(failed=failed)

    def finish(self, failed: bool) -> None:
        """Terminal phase: stop sidecars and anything left, never start again."""
        self.kill_all(grace=self.grace_period())
        self.terminal_phase = "Failed" if failed else "Succeeded"
        for run in self.runs_init + self.runs_main:
            if run.state.get("waiting"):
                # Never ran or waiting for a restart that will not come.
                run.state = run.last_state or {"terminated": {"exitCode": 0 if not run.ever_ran else 1, "reason": "ContainerStatusUnknown" if run.ever_ran else "Completed", "finishedAt": now_rfc3339()}}
            run.done = True
        log.info("pod %s/%s: %s", self.namespace, self.pod_name, self.terminal_phase)

    def grace_period(self) -> float:
        meta_grace = self.pod["metadata"].get("deletionGracePeriodSeconds")
        grace = meta_grace if meta_grace is not None else self.pod["spec"].get("terminationGracePeriodSeconds", 30)
        return float(max(grace or 0, 0))

    def kill_all(self, grace: float) -> None:
        procs = []
        for run in self.runs_init + self.runs_main:
            if run.psproc is not None:
                procs.append(run.psproc)
                try:
                    procs.extend(run.psproc.children(recursive=True))
                except psutil.Error:
                    pass
        procs.extend(descendants_with_env(self.uid))
        unique = {p.pid: p for p in procs}
        kill_processes(list(unique.values()), grace, [r.proc for r in self.runs_init + self.runs_main if r.proc])
        for run in self.runs_init + self.runs_main:
            if run.proc is not None:
                try:
                    rc = run.proc.wait(timeout=KILL_WAIT_SECONDS)
                except subprocess.TimeoutExpired:
                    rc = -signal.SIGKILL
                self.exited(run, 128 - rc if rc < 0 else rc, -rc if rc < 0 else None)
                run.done = True

    def finish_deletion(self) -> None:
        """Graceful deletion: SIGTERM, SIGKILL after the grace period, final status, delete with grace 0."""
        grace = self.grace_period()
        log.info("pod %s/%s: deleting (grace %.0fs)", self.namespace, self.pod_name, grace)
        self.kill_all(grace)
        if self.terminal_phase is None and self.runs_main:
            self.push_status()
        self.agent.delete_pod(self.namespace, self.pod_name, self.uid)

    # -- status
    def phase(self) -> str:
        if self.terminal_phase:
            return self.terminal_phase
        if not self.initialized or not self.container_env:
            return "Pending"
        if any(not r.ever_ran for r in self.runs_main):
            return "Pending"
        return "Running"

    def condition(self, type_: str, status: bool, reason: str | None = None) -> dict:
        value = "True" if status else "False"
        prev = self.condition_times.get(type_)
        if prev is None or prev[0] != value:
            self.condition_times[type_] = (value, now_rfc3339())
        cond = {"type": type_, "status": value, "lastProbeTime": None, "lastTransitionTime": self.condition_times[type_][1]}
        if reason and not status:
            cond["reason"] = reason
        return cond

    def push_status(self) -> None:
        phase = self.phase()
        if self.terminal_phase and not self.runs_main:
            return  # finished before we saw it: the status is already final
        ready = phase == "Running" and all(r.running and r.ready for r in self.runs_main) and all(
            r.running and r.ready for r in self.runs_init if r.kind == "sidecar"
        )
        not_ready = "PodCompleted" if self.terminal_phase else "ContainersNotReady"
        init_done = self.initialized or not self.runs_init or bool(self.terminal_phase and not self.failed)
        ours = [
            self.condition("PodReadyToStartContainers", bool(self.container_env) and not self.terminal_phase),
            self.condition("Initialized", init_done, None if init_done else "ContainersNotInitialized"),
            self.condition("Ready", ready, not_ready),
            self.condition("ContainersReady", ready, not_ready),
        ]
        owned = {c["type"] for c in ours}
        others = [c for c in (self.pod.get("status") or {}).get("conditions") or [] if c.get("type") not in owned]
        main = [r.status() for r in self.runs_main]
        init = [r.status() for r in self.runs_init]
        if self.config_error:
            for s in main + init:
                if "waiting" in s["state"] and s["state"]["waiting"].get("reason") == "ContainerCreating":
                    s["state"] = {"waiting": {"reason": "CreateContainerConfigError", "message": self.config_error}}
        status: dict[str, Any] = {
            "phase": phase,
            "conditions": others + ours,
            "hostIP": HOST_IP,
            "hostIPs": [{"ip": HOST_IP}],
            "podIP": self.pod_ip,
            "podIPs": [{"ip": self.pod_ip}],
            "startTime": self.start_time,
            "containerStatuses": main,
            "initContainerStatuses": init,
        }
        status["message"] = self.config_error  # None removes a stale message (merge patch)
        if status == self.last_pushed:
            return
        if self.agent.patch_pod_status(self.namespace, self.pod_name, status):
            self.last_pushed = status


# ---------------------------------------------------------------------------------------------
# The agent


class NodeAgent:
    def __init__(
        self,
        kubeconfig: str,
        node_name: str,
        work_dir: Path,
        cpu: str | None = None,
        memory: str | None = None,
        max_pods: int = 110,
        pod_cidr: str = DEFAULT_POD_CIDR,
    ) -> None:
        self.node_name = node_name
        self.pod_cidr = ipaddress.ip_network(pod_cidr)
        if not self.pod_cidr.subnet_of(ipaddress.ip_network("127.0.0.0/8")) or ipaddress.ip_address(HOST_IP) in self.pod_cidr:
            raise ValueError(f"pod CIDR {pod_cidr} must be inside 127.0.0.0/8 and not contain {HOST_IP}")
        self.work_dir = work_dir
        self.stopping = threading.Event()
        self.procs = ProcessTable()
        self.workers: dict[str, PodWorker] = {}
        self.workers_lock = threading.Lock()
        self.ips: dict[str, str] = {}
        self.ip_lock = threading.Lock()
        api_config = kubernetes.client.Configuration()
        kubernetes.config.load_kube_config(config_file=kubeconfig, client_configuration=api_config)
        api_config.connection_pool_maxsize = 32
        api_config.proxy = None  # loopback: ignore HTTPS_PROXY from the environment
        self.api = kubernetes.client.ApiClient(api_config)
        self.core = kubernetes.client.CoreV1Api(self.api)
        self.coordination = kubernetes.client.CoordinationV1Api(self.api)
        url = urllib.parse.urlsplit(api_config.host)
        self.api_host_port = (url.hostname or HOST_IP, url.port or 443)
        mem_kib = psutil.virtual_memory().total // 1024
        disk = shutil.disk_usage(work_dir).total
        self.capacity = {
            "cpu": cpu or str(os.cpu_count() or 1),
            "memory": memory or f"{mem_kib}Ki",
            "pods": str(max_pods),
            "ephemeral-storage": str(disk),
        }
        self.allocatable = dict(self.capacity)
        self.node_uid: str | None = None
        self.last_node_status = 0.0

    # -- API helpers (each call bounded by a timeout)
    def read_object(self, kind: str, namespace: str, name: str) -> dict | None:
        read = self.core.read_namespaced_config_map if kind == "configmap" else self.core.read_namespaced_secret
        try:
            resp = read(name, namespace, _request_timeout=API_TIMEOUT, _preload_content=False)
        except ApiException as e:
            if e.status == 404:
                return None
            raise PodConfigError(f"reading {kind} {namespace}/{name}: {e.status} {e.reason}") from e
        return json.loads(resp.data)

    def patch_pod_status(self, namespace: str, name: str, status: dict) -> bool:
        try:
            self.core.patch_namespaced_pod_status(
                name, namespace, {"status": status},
                _content_type="application/merge-patch+json", _request_timeout=API_TIMEOUT,
            )
            return True
        except ApiException as e:
            if e.status != 404:
                log.warning("status of pod %s/%s: %s %s", namespace, name, e.status, e.reason)
        except Exception as e:  # network hiccup: retried on the next change
            log.warning("status of pod %s/%s: %s", namespace, name, e)
        return False

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        for _ in range(5):
            try:
                self.core.delete_namespaced_pod(name, namespace, body=body, _request_timeout=API_TIMEOUT)
                return
            except ApiException as e:
                if e.status in (404, 409):
                    return
                log.warning("deleting pod %s/%s: %s %s", namespace, name, e.status, e.reason)
            except Exception as e:
                log.warning("deleting pod %s/%s: %s", namespace, name, e)
            time.sleep(1)

    def allocate_ip(self, uid: str) -> str:
        with self.ip_lock:
            if uid in self.ips:
                return self.ips[uid]
            used = set(self.ips.values())
            for addr in self.pod_cidr.hosts():
                ip = str(addr)
                if ip.endswith(".0") or ip.endswith(".255") or ip in used:
                    continue
                self.ips[uid] = ip
                return ip
        raise RuntimeError("pod IP range exhausted")

    def worker_done(self, worker: PodWorker) -> None:
        with self.workers_lock:
            if self.workers.get(worker.uid) is worker:
                del self.workers[worker.uid]
        with self.ip_lock:
            self.ips.pop(worker.uid, None)

    # -- node registration and heartbeats
    def node_conditions(self) -> list[dict]:
        now = now_rfc3339()

        def cond(type_: str, status: str, reason: str, message: str) -> dict:
            return {"type": type_, "status": status, "reason": reason, "message": message,
                    "lastHeartbeatTime": now, "lastTransitionTime": self.started_at}

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
                "machineID": "", "systemUUID": "", "bootID": "",
                "kernelVersion": platform.release(), "osImage": f"{platform.system()} (jobcluster node agent)",
                "containerRuntimeVersion": "process://jobcluster-node-agent",
                "kubeletVersion": "v0.0.0-jobcluster-node-agent", "kubeProxyVersion": "",
                "operatingSystem": "linux", "architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine()),
            },
        }

    def register(self) -> None:
        self.started_at = now_rfc3339()
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
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
        while True:
            try:
                resp = self.core.create_node(node, _request_timeout=API_TIMEOUT, _preload_content=False)
                self.node_uid = json.loads(resp.data)["metadata"]["uid"]
                break
            except ApiException as e:
                if e.status != 409:
                    raise
                try:
                    resp = self.core.read_node(self.node_name, _request_timeout=API_TIMEOUT, _preload_content=False)
                except ApiException as e2:
                    if e2.status == 404:
                        continue
                    raise
                self.node_uid = json.loads(resp.data)["metadata"]["uid"]
                break
        self.update_node_status()
        self.renew_lease()
        log.info("node %s registered: %s", self.node_name, self.capacity)

    def update_node_status(self) -> None:
        self.core.patch_node_status(
            self.node_name, {"status": self.node_status()},
            _content_type="application/merge-patch+json", _request_timeout=API_TIMEOUT,
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
            self.coordination.patch_namespaced_lease(
                self.node_name, "kube-node-lease", {"spec": body["spec"]},
                _content_type="application/merge-patch+json", _request_timeout=API_TIMEOUT,
            )
        except ApiException as e:
            if e.status != 404:
                raise
            self.coordination.create_namespaced_lease("kube-node-lease", body, _request_timeout=API_TIMEOUT)

    def heartbeat_loop(self) -> None:
        while not self.stopping.wait(LEASE_RENEW_SECONDS):
            try:
                self.renew_lease()
                if time.monotonic() - self.last_node_status >= NODE_STATUS_SECONDS:
                    self.update_node_status()
            except Exception as e:
                log.warning("heartbeat: %s", e)

    def reaper_loop(self) -> None:
        while not self.stopping.wait(1.0):
            self.procs.reap_orphans()

    # -- pods
    def handle(self, event_type: str, pod: dict) -> None:
        uid = pod["metadata"]["uid"]
        with self.workers_lock:
            worker = self.workers.get(uid)
            if event_type == "DELETED":
                if worker:
                    worker.removed()
                return
            if worker is None:
                if self.stopping.is_set():
                    return
                worker = PodWorker(self, pod)
                self.workers[uid] = worker
                worker.start()
            else:
                worker.update(pod)

    def watch_loop(self) -> None:
        selector = f"spec.nodeName={self.node_name}"
        while not self.stopping.is_set():
            try:
                resp = self.core.list_pod_for_all_namespaces(
                    field_selector=selector, _request_timeout=API_TIMEOUT, _preload_content=False
                )
                listing = json.loads(resp.data)
                seen = set()
                for pod in listing["items"]:
                    seen.add(pod["metadata"]["uid"])
                    self.handle("MODIFIED", pod)
                with self.workers_lock:
                    vanished = [w for uid, w in self.workers.items() if uid not in seen]
                for w in vanished:
                    w.removed()
                rv = listing["metadata"]["resourceVersion"]
                while not self.stopping.is_set():
                    w = kubernetes.watch.Watch()
                    for event in w.stream(
                        self.core.list_pod_for_all_namespaces,
                        field_selector=selector,
                        resource_version=rv,
                        allow_watch_bookmarks=True,
                        timeout_seconds=WATCH_SECONDS,
                        _request_timeout=WATCH_TIMEOUT,
                        deserialize=False,
                    ):
                        obj = event["object"]
                        rv = obj.get("metadata", {}).get("resourceVersion", rv)
                        if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                            self.handle(event["type"], obj)
                        if self.stopping.is_set():
                            w.stop()
                            break
            except ApiException as e:
                if e.status != 410:
                    log.warning("pod watch: %s %s", e.status, e.reason)
                    self.stopping.wait(1)
            except Exception as e:
                if not self.stopping.is_set():
                    log.warning("pod watch: %s", e)
                    self.stopping.wait(1)

    # -- lifecycle
    def run(self) -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except Exception:
            log.warning("could not become a child subreaper; daemonised pod processes may escape")
        self.register()
        for target in (self.heartbeat_loop, self.reaper_loop, self.watch_loop):
            threading.Thread(target=target, name=target.__name__, daemon=True).start()
        self.stopping.wait()
        self.shutdown()

    def shutdown(self) -> None:
        """Kill every pod process (pods stay in the API: the cluster is going away)."""
        self.stopping.set()
        with self.workers_lock:
            workers = list(self.workers.values())
        for w in workers:
            w.wake.set()
        deadline = time.monotonic() + 15
        for w in workers:
            w.join(timeout=max(0.1, deadline - time.monotonic()))
        try:
            leftovers = psutil.Process().children(recursive=True)
        except psutil.Error:
            leftovers = []
        kill_processes(leftovers, grace=2)
        log.info("node agent stopped")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True, help="credentials of the node (system:node:<name>)")
    parser.add_argument("--node-name", default=socket.gethostname().lower())
    parser.add_argument("--work-dir", required=True, type=Path, help="pod directories, volumes and logs")
    parser.add_argument("--cpu", help="node CPU capacity (default: this machine's CPU count)")
    parser.add_argument("--memory", help="node memory capacity (default: this machine's RAM)")
    parser.add_argument("--max-pods", type=int, default=110)
    parser.add_argument("--pod-cidr", default=DEFAULT_POD_CIDR, help="pod IPs, inside 127.0.0.0/8")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(threadName)s %(message)s", stream=sys.stderr)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    agent = NodeAgent(args.kubeconfig, args.node_name, args.work_dir, args.cpu, args.memory, args.max_pods, args.pod_cidr)

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("signal %d: stopping", signum)
        agent.stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    agent.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
