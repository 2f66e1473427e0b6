"""FlinkJobs and the operator on the Kubernetes test cluster: the helpers the operator's end-to-end tests share.

The operator runs as a process of this machine (``python -m jobcluster.controller``, as
``jobcluster operator`` runs for development) with the test cluster's kubeconfig, in a namespace
of its own with the job clusters' RBAC (manifests/rbac.yaml) and the CRD of manifests/crd.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import kubernetes
import requests
import yaml

from jobcluster.backends.yarn.staging import hadoop_user
from tests.infra.k8s.cluster import free_port
from tests.integration.k8s.pods import TEST_NODE_CPU, host_path_template, image_options
from tests.integration.k8s.waiting import wait_for

REPO = Path(__file__).resolve().parents[3]
CRD = REPO / "manifests" / "crd" / "flinkjobs.jobcluster.io.yaml"
PROGRAMS = REPO / "tests" / "e2e" / "programs"
WAITS = PROGRAMS / "waits.py"
POD_TEMPLATE = "kubernetes.pod-template-file.default"
TIMEOUT = (5, 30)
GROUP, VERSION, PLURAL = "jobcluster.io", "v1alpha1", "flinkjobs"


class Operator:
    """The operator as a process: started, killed and started again by the tests."""

    def __init__(self, env: dict[str, str], namespace: str, defaults: Path, log: Path) -> None:
        self.env, self.namespace, self.defaults, self.log = env, namespace, defaults, log
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        argv = [
            sys.executable,
            "-m",
            "jobcluster.controller",
            "--namespace",
            self.namespace,
            "--port",
            str(self.port),
            "--no-leader-election",
        ]
        argv += ["--default-configuration", str(self.defaults)]
        # as the chart runs it: the clusters' secrets derived from the operator's key, never read from their Secrets
        key = self.defaults.with_name("cluster-key")
        if not key.exists():
            key.write_text(secrets.token_urlsafe(48))
        argv += ["--cluster-secret-key-file", str(key)]
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(argv, env=self.env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(self.healthy, timeout=60, what="the operator's /healthz")

    def healthy(self) -> bool:
        assert self.process is not None and self.process.poll() is None, self.log.read_text()[-3000:]
        try:
            return requests.get(f"http://127.0.0.1:{self.port}/healthz", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)


def strip_finalizers(custom, namespace: str, name: str) -> None:
    """What docs/operations/troubleshooting.md says to do when the operator is gone: without it nothing would remove its finalizer."""
    try:
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, name, {"metadata": {"finalizers": None}}, _request_timeout=TIMEOUT
        )
    except kubernetes.client.ApiException:
        pass


def pods(template: dict) -> dict:
    """The spec fields that give both the JobManager's and the TaskManagers' pods ``template``."""
    return {"jobManager": {"podTemplate": template}, "taskManager": {"podTemplate": template}}


def flinkjob(name: str, namespace: str, job: dict, **spec) -> dict:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "FlinkJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"job": job, **spec},
    }


def apply(k8s_cluster, document: dict, check: bool = True) -> subprocess.CompletedProcess:
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as manifest:
        manifest.write(yaml.safe_dump(document))
        manifest.flush()
        return k8s_cluster.kubectl("apply", "-f", manifest.name, check=check)


def get(k8s_api, namespace: str, name: str) -> dict:
    return kubernetes.client.CustomObjectsApi(k8s_api).get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, _request_timeout=TIMEOUT
    )


def job_status(k8s_api, namespace: str, name: str) -> dict:
    return get(k8s_api, namespace, name).get("status", {}).get("jobStatus") or {}


def condition(document: dict, kind: str) -> dict:
    (found,) = [c for c in (document.get("status") or {}).get("conditions", []) if c["type"] == kind]
    return found


def kubectl_wait(k8s_cluster, namespace: str, name: str, kind: str, timeout: int = 240) -> None:
    result = k8s_cluster.kubectl(
        "wait", "-n", namespace, f"--for=condition={kind}", f"flinkjob/{name}", f"--timeout={timeout}s", timeout=timeout + 30, check=False
    )
    assert result.returncode == 0, f"{result.stderr}\n{k8s_cluster.kubectl('get', 'flinkjob', '-n', namespace, name, '-o', 'yaml').stdout}"


def events_of(k8s_api, namespace: str, name: str) -> list[str]:
    core = kubernetes.client.CoreV1Api(k8s_api)
    items = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}", _request_timeout=TIMEOUT).items
    return [f"{e.type} {e.reason}: {e.message}" for e in items]


def labelled_objects(k8s_api, namespace: str, selector: str) -> list[str]:
    """Every Deployment, pod, Service, Ingress, ConfigMap and Secret of ``namespace`` that ``selector`` matches, as
    kind/name, sorted."""
    core, apps = kubernetes.client.CoreV1Api(k8s_api), kubernetes.client.AppsV1Api(k8s_api)
    networking = kubernetes.client.NetworkingV1Api(k8s_api)
    found = [
        f"deployment/{d.metadata.name}"
        for d in apps.list_namespaced_deployment(namespace, label_selector=selector, _request_timeout=TIMEOUT).items
    ]
    for kind, lister in (
        ("pod", core.list_namespaced_pod),
        ("service", core.list_namespaced_service),
        ("ingress", networking.list_namespaced_ingress),
        ("configmap", core.list_namespaced_config_map),
        ("secret", core.list_namespaced_secret),
    ):
        found += [f"{kind}/{o.metadata.name}" for o in lister(namespace, label_selector=selector, _request_timeout=TIMEOUT).items]
    return sorted(found)


def cluster_objects(k8s_api, namespace: str, name: str) -> list[str]:
    """Every object of the job cluster of FlinkJob ``name``."""
    return labelled_objects(k8s_api, namespace, f"app={name}")


@contextlib.contextmanager
def operator_namespace(k8s_cluster, k8s_api, prefix: str = "op") -> Iterator[str]:
    """A namespace of its own with the CRD and the job clusters' RBAC; deleted afterwards (finalizers stripped first)."""
    core = kubernetes.client.CoreV1Api(k8s_api)
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}}, _request_timeout=TIMEOUT)
    k8s_cluster.kubectl("apply", "-f", str(CRD))
    k8s_cluster.kubectl("apply", "-n", name, "-f", str(REPO / "manifests" / "rbac.yaml"))
    try:
        yield name
    finally:
        custom = kubernetes.client.CustomObjectsApi(k8s_api)
        for item in custom.list_namespaced_custom_object(GROUP, VERSION, name, PLURAL, _request_timeout=TIMEOUT)["items"]:
            strip_finalizers(custom, name, item["metadata"]["name"])
        core.delete_namespace(name, _request_timeout=TIMEOUT)


@contextlib.contextmanager
def running_operator(k8s_cluster, k8s_image: str, namespace: str, work: Path, **defaults: str) -> Iterator[Operator]:
    """The operator watching ``namespace``, its job clusters on the project's image with the test node's CPU
    sizes and a pod template that mounts the test programs; ``defaults``: more of its default configuration."""
    configuration = work / "flink-conf.yaml"
    configuration.write_text(
        yaml.safe_dump(
            {
                **image_options(k8s_image),
                **TEST_NODE_CPU,
                POD_TEMPLATE: str(host_path_template(work / "programs-pod-template.yaml", [PROGRAMS])),
                # the FlinkJobs mount this machine's directories (input, output) by hostPath: the test node is this machine
                "jobcluster.operator.pod-template.allowed": "host-path",
                # FlinkJobs on YARN as the Hadoop user of this process, as before there was a map (test_chart.py maps another)
                "jobcluster.operator.yarn.hadoop-users": f"{namespace}:{hadoop_user()}",
                **defaults,
            }
        )
    )
    process = Operator(k8s_cluster.env(), namespace, configuration, work / "operator.log")
    process.start()
    try:
        yield process
    finally:
        process.kill()
        print(f"operator log: {process.log}")
