"""Smoke tests of the Kubernetes test cluster's real node.

They prove that what the backend and operator tests rely on is real, each
check one that a broken node would fail: a pod of the project's image runs in
a container as the image's user (uid 9999) with the downward API's
environment, on a pod IP of the CNI bridge, inside the kubelet's cgroups with
the pod's limits enforced (a process beyond its memory limit is OOMKilled);
a ClusterIP Service is reached from another pod by its cluster DNS name
(CoreDNS) and from this machine by its ClusterIP (kube-proxy); the API server
reaches the kubelet (`kubectl logs`, `exec`, `port-forward`); the Deployment
and ReplicaSet controllers and the garbage collector act on owner references,
and the kubelet stops the containers of deleted pods; kubectl and helm answer.

One Deployment of two `python3 -m http.server` pods behind a Service, and one
client pod, are started once for the module and shared by the checks.
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import kubernetes
import pytest
import requests

from tests.infra.k8s.node import POD_CIDR
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

TIMEOUT = (5, 30)
MiB = 1 << 20
# The web pods' container: small requests (the node has 2 cores, shared with other tests), limits the cgroup must hold.
WEB_RESOURCES = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}
WEB_MEMORY_LIMIT = 64 * MiB
WEB_CPU_QUOTA_US = 20_000  # 200m of a 100 ms CFS period
# Serves /tmp/www, where the pod's name is in the file `name`: a response tells which pod answered.
WEB_COMMAND = 'mkdir -p /tmp/www && echo "$POD_NAME" > /tmp/www/name && exec python3 -m http.server 8080 --directory /tmp/www'
# Fetches a URL (argv[1]) from inside a pod: the image has python3, not curl.
FETCH = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode().strip())"


@dataclass
class Web:
    namespace: str
    pods: list[dict]  # the Deployment's pods, as the API server has them
    cluster_ip: str  # of the Service `web`, port 80 -> the pods' 8080
    client: str  # a pod that only sleeps, to reach the Service from

    def pod_names(self) -> set[str]:
        return {p["metadata"]["name"] for p in self.pods}


def as_dict(response) -> dict:
    """The JSON body of a ``_preload_content=False`` response."""
    return json.loads(response.data)


def get_pod(core: kubernetes.client.CoreV1Api, namespace: str, name: str) -> dict | None:
    try:
        return as_dict(core.read_namespaced_pod(name, namespace, _request_timeout=TIMEOUT, _preload_content=False))
    except kubernetes.client.ApiException as e:
        if e.status == 404:
            return None
        raise


def pod_phase(core, namespace: str, name: str) -> str | None:
    return ((get_pod(core, namespace, name) or {}).get("status") or {}).get("phase")


def container(name: str, image: str, command: list[str], **fields) -> dict:
    """A container of the project's image (present on the node, never pulled)."""
    return {"name": name, "image": image, "imagePullPolicy": "Never", "command": command, **fields}


def exec_in(k8s_cluster, namespace: str, pod: str, *command: str, check: bool = True) -> subprocess.CompletedProcess:
    return k8s_cluster.kubectl("exec", "-n", namespace, pod, "--", *command, check=check)


def logged(k8s_cluster, namespace: str, pod: str, text: str) -> bool:
    return text in k8s_cluster.pod_log(namespace, pod)


@pytest.fixture(scope="module")
def core(k8s_api) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(k8s_api)


@pytest.fixture(scope="module")
def apps(k8s_api) -> kubernetes.client.AppsV1Api:
    return kubernetes.client.AppsV1Api(k8s_api)


@pytest.fixture(scope="module")
def smoke_namespace(core) -> Iterator[str]:
    """The module's namespace, deleted afterwards (its pods with it)."""
    name = f"smoke-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}}, _request_timeout=TIMEOUT)
    yield name
    try:
        core.delete_namespace(name, _request_timeout=TIMEOUT)
    except kubernetes.client.ApiException:
        pass


@pytest.fixture(scope="module")
def web(core, apps, smoke_namespace, k8s_image) -> Web:
    """The Deployment `web` (two http.server pods, Ready by a readiness probe), the Service `web`, and the pod `client`."""
    ns = smoke_namespace
    env = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "GREETING", "value": "hello $(POD_NAME)"},
    ]
    http = container(
        "http",
        k8s_image,
        ["/bin/sh", "-c", WEB_COMMAND],
        env=env,
        ports=[{"name": "http", "containerPort": 8080}],
        readinessProbe={"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1},
        resources=WEB_RESOURCES,
    )
    deployment = {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"terminationGracePeriodSeconds": 1, "containers": [http]},
            },
        },
    }
    service = {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}}
    client = {
        "metadata": {"name": "client"},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [container("client", k8s_image, ["sleep", "3600"], resources={"requests": {"cpu": "10m", "memory": "32Mi"}})],
        },
    }
    apps.create_namespaced_deployment(ns, deployment, _request_timeout=TIMEOUT)
    created = core.create_namespaced_service(ns, service, _request_timeout=TIMEOUT)
    core.create_namespaced_pod(ns, client, _request_timeout=TIMEOUT)

    def available() -> bool:
        d = apps.read_namespaced_deployment_status("web", ns, _request_timeout=TIMEOUT)
        return (d.status.available_replicas or 0) == 2

    # generous: the node's 2 cores are shared with other tests, whose pods' requests may hold up the scheduling of these
    wait_for(available, timeout=180, what="deployment web available")
    wait_for(lambda: pod_phase(core, ns, "client") == "Running", timeout=180, what="pod client Running")
    pods = as_dict(core.list_namespaced_pod(ns, label_selector="app=web", _request_timeout=TIMEOUT, _preload_content=False))["items"]
    return Web(ns, pods, created.spec.cluster_ip, "client")


def test_kubectl_and_helm_answer(k8s_cluster):
    version = json.loads(k8s_cluster.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["gitVersion"].startswith("v1.")
    nodes = json.loads(k8s_cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert [n["metadata"]["name"] for n in nodes] == [k8s_cluster.node_name]
    ready = {c["type"]: c["status"] for c in nodes[0]["status"]["conditions"]}["Ready"]
    assert ready == "True"
    assert k8s_cluster.helm("version", "--short").stdout.startswith("v3.")


def test_a_pod_of_the_image_runs_as_its_user_with_the_downward_api_env(k8s_cluster, core, web):
    pod = web.pods[0]
    name, status = pod["metadata"]["name"], pod["status"]
    # what the container's main process (PID 1 in its PID namespace: the http.server) has, read with `kubectl exec`
    seen = json.loads(
        exec_in(
            k8s_cluster,
            web.namespace,
            name,
            "python3",
            "-c",
            "import json, os; "
            "env = dict(e.split('=', 1) for e in open('/proc/1/environ').read().split('\\0') if e); "
            "uid = [l.split()[1] for l in open('/proc/1/status') if l.startswith('Uid:')][0]; "
            "print(json.dumps({'env': env, 'uid': int(uid), 'exec_uid': os.getuid(), 'cgroup': open('/proc/1/cgroup').read()}))",
        ).stdout
    )
    assert (seen["uid"], seen["exec_uid"]) == (9999, 9999)  # the image's user, not root
    wanted = {
        "POD_NAME": name,
        "POD_NAMESPACE": web.namespace,
        "POD_IP": status["podIP"],
        "NODE_NAME": k8s_cluster.node_name,
        "GREETING": f"hello {name}",
    }
    assert {k: seen["env"].get(k) for k in wanted} == wanted
    assert seen["env"]["PATH"].startswith("/opt/jobcluster/venv/bin:")  # the image's environment
    # a pod IP of the CNI bridge, not the node's
    assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network(POD_CIDR)
    assert status["podIP"] != status["hostIP"]
    assert len({p["status"]["podIP"] for p in web.pods}) == 2
    # a containerd container in the kubelet's cgroup of this pod
    container_id = status["containerStatuses"][0]["containerID"]
    assert container_id.startswith("containerd://")
    assert f"/kubepods/burstable/pod{pod['metadata']['uid']}/{container_id.removeprefix('containerd://')}" in seen["cgroup"]
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert (conditions["PodScheduled"], conditions["Ready"]) == ("True", "True")  # the kubelet's readiness probe passed


def test_the_containers_cgroup_holds_the_pods_limits(k8s_cluster, web):
    name = web.pods[0]["metadata"]["name"]
    assert web.pods[0]["spec"]["containers"][0]["resources"]["limits"] == WEB_RESOURCES["limits"]
    read = exec_in(
        k8s_cluster,
        web.namespace,
        name,
        "cat",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
        "/sys/fs/cgroup/cpu/cpu.cfs_quota_us",
    ).stdout.split()
    assert [int(v) for v in read] == [WEB_MEMORY_LIMIT, WEB_CPU_QUOTA_US]


def test_a_process_beyond_the_memory_limit_is_oom_killed(k8s_cluster, core, smoke_namespace, k8s_image):
    hog = (
        "import time; print('allocating', flush=True); "
        "data = b'x' * (256 << 20); "  # touched pages: 256 MiB resident in a 32 MiB container
        "print('survived', flush=True); time.sleep(60)"
    )
    pod = {
        "metadata": {"name": "hog"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                container(
                    "hog",
                    k8s_image,
                    ["python3", "-c", hog],
                    resources={"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "32Mi"}},
                )
            ],
        },
    }
    core.create_namespaced_pod(smoke_namespace, pod, _request_timeout=TIMEOUT)
    wait_for(lambda: pod_phase(core, smoke_namespace, "hog") == "Failed", what="pod hog Failed")
    terminated = get_pod(core, smoke_namespace, "hog")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)
    log = k8s_cluster.pod_log(smoke_namespace, "hog")
    assert "allocating" in log and "survived" not in log


def test_a_service_is_reached_by_its_dns_name_from_a_pod_and_by_its_cluster_ip_from_this_machine(k8s_cluster, web):
    ns = web.namespace
    dns_name = f"web.{ns}.svc.cluster.local"

    # from the client pod: CoreDNS resolves the Service's name to its ClusterIP, which kube-proxy forwards to a pod
    resolved = exec_in(k8s_cluster, ns, web.client, "python3", "-c", f"import socket; print(socket.gethostbyname({dns_name!r}))")
    assert resolved.stdout.strip() == web.cluster_ip

    def fetch_from_client() -> str | None:
        result = exec_in(k8s_cluster, ns, web.client, "python3", "-c", FETCH, f"http://{dns_name}/name?via=dns", check=False)
        return result.stdout.strip() if result.returncode == 0 else None

    answered = wait_for(fetch_from_client, timeout=30, what=f"http://{dns_name}/ from the client pod")
    assert answered in web.pod_names()
    wait_for(
        lambda: logged(k8s_cluster, ns, answered, '"GET /name?via=dns HTTP/1.1" 200'), timeout=10, what=f"the request in {answered}'s log"
    )

    # from this machine (the node): the ClusterIP through kube-proxy's rules
    http = requests.Session()
    http.trust_env = False  # cluster addresses: never via a proxy

    def fetch_from_host() -> str | None:
        try:
            response = http.get(f"http://{web.cluster_ip}/name?via=cluster-ip", timeout=5)
        except requests.RequestException:
            return None
        return response.text.strip() if response.status_code == 200 else None

    answered = wait_for(fetch_from_host, timeout=30, what=f"http://{web.cluster_ip}/ from this machine")
    assert answered in web.pod_names()
    wait_for(
        lambda: logged(k8s_cluster, ns, answered, '"GET /name?via=cluster-ip HTTP/1.1" 200'),
        timeout=10,
        what=f"the request in {answered}'s log",
    )


def test_kubectl_port_forward_reaches_a_pod(k8s_cluster, web):
    name = web.pods[1]["metadata"]["name"]
    forward = subprocess.Popen(
        [str(k8s_cluster.bin_dir / "kubectl"), "port-forward", "-n", web.namespace, f"pod/{name}", ":8080", "--address", "127.0.0.1"],
        env=k8s_cluster.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert forward.stdout is not None
        first = forward.stdout.readline()  # "Forwarding from 127.0.0.1:<port> -> 8080"
        match = re.search(r"127\.0\.0\.1:(\d+) -> 8080", first)
        assert match, first
        http = requests.Session()
        http.trust_env = False
        response = http.get(f"http://127.0.0.1:{match.group(1)}/name?via=port-forward", timeout=10)
        assert (response.status_code, response.text.strip()) == (200, name)
    finally:
        forward.terminate()
        forward.wait(timeout=10)
    wait_for(lambda: logged(k8s_cluster, web.namespace, name, '"GET /name?via=port-forward HTTP/1.1" 200'), timeout=10, what="the log")


def test_the_controllers_and_the_garbage_collector_act_on_owner_references(k8s_cluster, core, apps, smoke_namespace, k8s_image):
    ns = smoke_namespace
    deployment = {
        "metadata": {"name": "sleeper"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "sleeper"}},
            "template": {
                "metadata": {"labels": {"app": "sleeper"}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [container("main", k8s_image, ["sleep", "3600"], resources={"requests": {"cpu": "10m"}})],
                },
            },
        },
    }
    created = apps.create_namespaced_deployment(ns, deployment, _request_timeout=TIMEOUT)

    def running_pods() -> list[dict]:
        pods = as_dict(core.list_namespaced_pod(ns, label_selector="app=sleeper", _request_timeout=TIMEOUT, _preload_content=False))
        return [p for p in pods["items"] if p["status"].get("phase") == "Running" and "deletionTimestamp" not in p["metadata"]]

    wait_for(lambda: len(running_pods()) == 1, what="one sleeper pod Running")
    # the ReplicaSet controller follows a scale of the Deployment
    apps.patch_namespaced_deployment_scale("sleeper", ns, {"spec": {"replicas": 2}}, _request_timeout=TIMEOUT)
    pods = wait_for(lambda: (lambda p: p if len(p) == 2 else None)(running_pods()), what="two sleeper pods Running")
    (replica_set,) = apps.list_namespaced_replica_set(ns, label_selector="app=sleeper", _request_timeout=TIMEOUT).items
    assert [(r.kind, r.uid) for r in replica_set.metadata.owner_references] == [("Deployment", created.metadata.uid)]
    for pod in pods:
        assert [(r["kind"], r["uid"]) for r in pod["metadata"]["ownerReferences"]] == [("ReplicaSet", replica_set.metadata.uid)]
    pod_uids = {p["metadata"]["uid"] for p in pods}

    # deleting the Deployment removes its ReplicaSet and pods (the garbage collector), and the kubelet their containers
    apps.delete_namespaced_deployment("sleeper", ns, propagation_policy="Background", _request_timeout=TIMEOUT)
    wait_for(
        lambda: not apps.list_namespaced_replica_set(ns, label_selector="app=sleeper", _request_timeout=TIMEOUT).items,
        what="the ReplicaSet garbage-collected",
    )
    wait_for(
        lambda: not core.list_namespaced_pod(ns, label_selector="app=sleeper", _request_timeout=TIMEOUT).items,
        what="the pods garbage-collected",
    )

    def containers_running() -> list[str]:
        """The containers the node's containerd still runs for the deleted pods (`crictl ps`: running ones only)."""
        found = []
        for uid in pod_uids:
            listed = subprocess.run(
                [str(k8s_cluster.bin_dir / "crictl"), "ps", "-q", "--label", f"io.kubernetes.pod.uid={uid}"],
                env=k8s_cluster.env(),
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            )
            found += listed.stdout.split()
        return found

    wait_for(lambda: not containers_running(), timeout=30, what="the sleeper pods' containers stopped")
