"""Smoke tests of the Kubernetes test cluster itself.

They prove that what the backend and operator tests rely on is real: the API
server stores objects, the scheduler binds pods to the node, the controller
manager's Deployment/ReplicaSet/Job controllers and garbage collector act, the
node agent runs containers as processes with the downward API and a pod IP of
their own, and kubectl and helm talk to the cluster.
"""

from __future__ import annotations

import ipaddress
import json
import sys
import textwrap

import kubernetes
import psutil
import pytest
import requests

from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

TIMEOUT = (5, 30)
SMALL = {"requests": {"cpu": "10m", "memory": "16Mi"}}


def get_pod(core: kubernetes.client.CoreV1Api, namespace: str, name: str) -> dict | None:
    try:
        resp = core.read_namespaced_pod(name, namespace, _request_timeout=TIMEOUT, _preload_content=False)
    except kubernetes.client.ApiException as e:
        if e.status == 404:
            return None
        raise
    return json.loads(resp.data)


def pod_phase(core, namespace: str, name: str) -> str | None:
    pod = get_pod(core, namespace, name)
    return (pod or {}).get("status", {}).get("phase")


def pod_pid(pod: dict) -> int:
    container_id = pod["status"]["containerStatuses"][0]["containerID"]
    assert container_id.startswith("process://")
    return int(container_id.removeprefix("process://"))


@pytest.fixture
def core(k8s_api) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(k8s_api)


@pytest.fixture
def apps(k8s_api) -> kubernetes.client.AppsV1Api:
    return kubernetes.client.AppsV1Api(k8s_api)


def test_pod_writing_a_marker_file_succeeds_with_downward_api_env(core, k8s_namespace, k8s_cluster, tmp_path):
    marker = tmp_path / "marker.json"
    script = (
        "import json, os, sys; "
        "json.dump({k: os.environ[k] for k in ('POD_NAME', 'POD_NAMESPACE', 'POD_IP', 'NODE_NAME', 'GREETING')}, "
        "open(sys.argv[1], 'w'))"
    )
    pod = {
        "metadata": {"name": "marker"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.11-slim",  # reported, never pulled
                    "command": [sys.executable, "-c", script],
                    "args": [str(marker)],
                    "env": [
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                        {"name": "GREETING", "value": "hello $(POD_NAME)"},
                    ],
                    "resources": SMALL,
                }
            ],
        },
    }
    core.create_namespaced_pod(k8s_namespace, pod, _request_timeout=TIMEOUT)

    wait_for(lambda: pod_phase(core, k8s_namespace, "marker") == "Succeeded", what="pod marker Succeeded")

    status = get_pod(core, k8s_namespace, "marker")["status"]
    written = json.loads(marker.read_text())
    assert written == {
        "POD_NAME": "marker",
        "POD_NAMESPACE": k8s_namespace,
        "POD_IP": status["podIP"],
        "NODE_NAME": k8s_cluster.node_name,
        "GREETING": "hello marker",
    }
    assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network("127.0.0.0/8")
    assert status["podIP"] != status["hostIP"]
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions["PodScheduled"] == "True"
    assert conditions["Ready"] == "False"


def test_restart_policy_is_followed(core, k8s_namespace, tmp_path):
    counter = tmp_path / "attempts"
    fail_once = f"echo x >> {counter}; [ $(wc -l < {counter}) -ge 2 ]"

    def pod(name: str, policy: str, command: str) -> dict:
        return {
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": policy,
                "containers": [{"name": "main", "image": "busybox", "command": ["/bin/sh", "-c", command], "resources": SMALL}],
            },
        }

    core.create_namespaced_pod(k8s_namespace, pod("never", "Never", "exit 3"), _request_timeout=TIMEOUT)
    core.create_namespaced_pod(k8s_namespace, pod("onfailure", "OnFailure", fail_once), _request_timeout=TIMEOUT)

    wait_for(lambda: pod_phase(core, k8s_namespace, "never") == "Failed", what="pod never Failed")
    never = get_pod(core, k8s_namespace, "never")["status"]["containerStatuses"][0]
    assert never["state"]["terminated"]["exitCode"] == 3
    assert never["restartCount"] == 0

    wait_for(lambda: pod_phase(core, k8s_namespace, "onfailure") == "Succeeded", what="pod onfailure Succeeded")
    onfailure = get_pod(core, k8s_namespace, "onfailure")["status"]["containerStatuses"][0]
    assert onfailure["restartCount"] == 1
    assert onfailure["lastState"]["terminated"]["exitCode"] == 1
    assert onfailure["state"]["terminated"]["exitCode"] == 0


def test_deployment_pods_run_through_controller_manager_and_scheduler(core, apps, k8s_namespace):
    # Two replicas bind the same port, each on its own pod IP.
    deployment = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "http",
                            "image": "python:3.11-slim",
                            "command": [sys.executable, "-m", "http.server", "8080", "--bind", "$(POD_IP)"],
                            "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                            "ports": [{"name": "http", "containerPort": 8080}],
                            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1},
                            "resources": SMALL,
                        }
                    ]
                },
            },
        },
    }
    apps.create_namespaced_deployment(k8s_namespace, deployment, _request_timeout=TIMEOUT)

    def available() -> bool:
        d = apps.read_namespaced_deployment_status("web", k8s_namespace, _request_timeout=TIMEOUT)
        return (d.status.available_replicas or 0) == 2

    wait_for(available, what="deployment web available")
    pods = core.list_namespaced_pod(k8s_namespace, label_selector="app=web", _request_timeout=TIMEOUT).items
    http = requests.Session()
    http.trust_env = False  # pod IPs are loopback addresses: never via a proxy
    assert len(pods) == 2
    assert {p.status.phase for p in pods} == {"Running"}
    assert all(p.status.container_statuses[0].ready for p in pods)
    assert pods[0].status.pod_ip != pods[1].status.pod_ip
    for p in pods:
        assert p.metadata.owner_references[0].kind == "ReplicaSet"
        assert http.get(f"http://{p.status.pod_ip}:8080/", timeout=5).status_code == 200

    # Deleting the Deployment removes its ReplicaSet and pods through the garbage collector.
    pids = [pod_pid(get_pod(core, k8s_namespace, p.metadata.name)) for p in pods]
    apps.delete_namespaced_deployment("web", k8s_namespace, propagation_policy="Background", _request_timeout=TIMEOUT)
    wait_for(lambda: not core.list_namespaced_pod(k8s_namespace, _request_timeout=TIMEOUT).items, what="pods of web gone")
    wait_for(lambda: not any(psutil.pid_exists(pid) for pid in pids), timeout=10, what="http.server processes gone")


def test_deleting_an_owner_garbage_collects_the_owned_pod_and_its_process(core, k8s_namespace):
    owner = core.create_namespaced_config_map(k8s_namespace, {"metadata": {"name": "owner"}, "data": {"k": "v"}}, _request_timeout=TIMEOUT)
    pod = {
        "metadata": {
            "name": "owned",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}],
        },
        "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"], "resources": SMALL}]},
    }
    core.create_namespaced_pod(k8s_namespace, pod, _request_timeout=TIMEOUT)
    wait_for(lambda: pod_phase(core, k8s_namespace, "owned") == "Running", what="pod owned Running")
    pid = pod_pid(get_pod(core, k8s_namespace, "owned"))
    assert psutil.Process(pid).cmdline()[-2:] == ["sleep", "3600"]

    core.delete_namespaced_config_map("owner", k8s_namespace, _request_timeout=TIMEOUT)

    wait_for(lambda: get_pod(core, k8s_namespace, "owned") is None, what="owned pod garbage-collected")
    wait_for(lambda: not psutil.pid_exists(pid), timeout=10, what=f"process {pid} gone")


def test_kubectl_lists_pods_and_nodes(k8s_cluster, core, k8s_namespace):
    core.create_namespaced_pod(
        k8s_namespace,
        {
            "metadata": {"name": "listed"},
            "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"], "resources": SMALL}]},
        },
        _request_timeout=TIMEOUT,
    )
    wait_for(lambda: pod_phase(core, k8s_namespace, "listed") == "Running", what="pod listed Running")

    out = k8s_cluster.kubectl("get", "pods", "-n", k8s_namespace, "-o", "wide").stdout
    assert "listed" in out and "Running" in out and k8s_cluster.node_name in out

    nodes = json.loads(k8s_cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert [n["metadata"]["name"] for n in nodes] == [k8s_cluster.node_name]
    version = json.loads(k8s_cluster.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"].startswith("v1.")


def test_helm_version_and_install_of_a_chart(k8s_cluster, core, k8s_namespace, tmp_path):
    assert k8s_cluster.helm("version", "--short").stdout.startswith("v3.")

    chart = tmp_path / "smoke"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: smoke\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("message: hello\n")
    (chart / "templates" / "configmap.yaml").write_text(
        textwrap.dedent("""\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {{ .Release.Name }}-config
        data:
          message: {{ .Values.message | quote }}
        """)
    )
    (chart / "templates" / "job.yaml").write_text(
        textwrap.dedent("""\
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: {{ .Release.Name }}-job
        spec:
          backoffLimit: 0
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: main
                  image: busybox
                  command: ["/bin/sh", "-c", "test \\"$MESSAGE\\" = hi"]
                  env:
                    - name: MESSAGE
                      valueFrom:
                        configMapKeyRef:
                          name: {{ .Release.Name }}-config
                          key: message
                  resources:
                    requests: {cpu: 10m, memory: 16Mi}
        """)
    )

    k8s_cluster.helm(
        "install",
        "smoke",
        str(chart),
        "-n",
        k8s_namespace,
        "--set",
        "message=hi",
        "--wait",
        "--wait-for-jobs",
        "--timeout",
        "2m",
        timeout=180,
    )

    releases = json.loads(k8s_cluster.helm("list", "-n", k8s_namespace, "-o", "json").stdout)
    assert [(r["name"], r["status"]) for r in releases] == [("smoke", "deployed")]
    cm = core.read_namespaced_config_map("smoke-config", k8s_namespace, _request_timeout=TIMEOUT)
    assert cm.data == {"message": "hi"}
    k8s_cluster.helm("uninstall", "smoke", "-n", k8s_namespace, "--wait", timeout=180)
    wait_for(
        lambda: (
            not core.list_namespaced_config_map(k8s_namespace, field_selector="metadata.name=smoke-config", _request_timeout=TIMEOUT).items
        ),
        what="chart resources removed",
    )
