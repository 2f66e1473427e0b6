"""Startup, liveness and readiness probes with the kubelet's semantics.

Why: the job cluster's readiness and self-healing are tested through probes,
so they must behave as on a real node: a probe runs every ``periodSeconds``
after ``initialDelaySeconds``; liveness and readiness wait for the startup
probe; ``successThreshold``/``failureThreshold`` count consecutive results;
readiness failures only flip ``ready``, liveness or startup failures kill the
container (its restartPolicy decides the rest). exec, tcpSocket and httpGet
probes run for real (exec in the container's environment, the others against
the pod IP); any other kind (grpc) passes.
"""

from __future__ import annotations

import http.client
import logging
import os
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Callable
from typing import Any

from tests.infra.k8s.node_agent.container_run import ContainerRun
from tests.infra.k8s.node_agent.environment import expand_vars
from tests.infra.k8s.node_agent.mounts import Mounts, rewrite
from tests.infra.k8s.node_agent.processes import ProcessTable

log = logging.getLogger("node-agent")


class Prober:
    """Runs the probes of one pod's containers."""

    def __init__(self, procs: ProcessTable, namespace: str, pod_name: str) -> None:
        self.procs = procs
        self.namespace = namespace
        self.pod_name = pod_name

    def probe(
        self,
        run: ContainerRun,
        *,
        env: dict[str, str],
        mounts: Mounts,
        pod_ip: str,
        pod_grace: Any,
        kill: Callable[[ContainerRun, float], None],
    ) -> None:
        """Run the container's startup, liveness and readiness probes that are due (kubelet semantics).

        pod_grace is the pod's terminationGracePeriodSeconds; kill(run, grace) stops a container
        whose liveness or startup probe failed.
        """
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
            ok = self.run_probe(run, probe, env=env, mounts=mounts, pod_ip=pod_ip)
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
                grace = probe.get("terminationGracePeriodSeconds", pod_grace)
                kill(run, float(grace))
                return

    def run_probe(self, run: ContainerRun, probe: dict, *, env: dict[str, str], mounts: Mounts, pod_ip: str) -> bool:
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
                argv = [rewrite(expand_vars(a, env), mounts) for a in probe["exec"].get("command") or []]
                proc = self.procs.spawn(
                    argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
                )
                try:
                    return proc.wait(timeout=timeout) == 0
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    return False
                finally:
                    self.procs.forget(proc.pid)
            if "tcpSocket" in probe:
                host = probe["tcpSocket"].get("host") or pod_ip
                with socket.create_connection((host, port_of(probe["tcpSocket"]["port"])), timeout=timeout):
                    return True
            if "httpGet" in probe:
                get = probe["httpGet"]
                host = get.get("host") or pod_ip
                port = port_of(get["port"])
                conn: http.client.HTTPConnection
                if get.get("scheme") == "HTTPS":
                    conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=ssl._create_unverified_context())
                else:
                    conn = http.client.HTTPConnection(host, port, timeout=timeout)
                try:
                    headers = {h["name"]: h["value"] for h in get.get("httpHeaders") or []}
                    conn.request("GET", get.get("path") or "/", headers=headers)
                    return 200 <= conn.getresponse().status < 400
                finally:
                    conn.close()
        except (OSError, ValueError, http.client.HTTPException):
            return False
        log.warning(
            "pod %s/%s container %s: unsupported probe %s, treated as passing", self.namespace, self.pod_name, run.name, sorted(probe)
        )
        return True
