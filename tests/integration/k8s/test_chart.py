"""The Helm chart: `helm lint`, what `helm template` renders, and `helm install` on the real test cluster.

The template tests need only the helm binary that tests/infra/k8s builds (marked
``k8s`` so that it is built before they run); the install test runs the
operator as a pod through the test cluster's node agent, with exactly
``ci/test-values.yaml``.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import kubernetes
import pytest
import yaml

from tests.infra.k8s.cluster import build_tools
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "jobcluster-operator"
TEST_VALUES = CHART / "ci" / "test-values.yaml"
TIMEOUT = (5, 30)


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([str(build_tools() / "helm"), *args], capture_output=True, text=True, timeout=120, check=check)


def render(*values: str, namespace: str = "jobcluster-system") -> list[dict]:
    out = helm("template", "jobcluster", str(CHART), "-n", namespace, *values).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def by_kind(documents: list[dict], kind: str) -> list[dict]:
    return [d for d in documents if d["kind"] == kind]


def test_the_chart_lints_clean_with_every_kind_of_values():
    for values in ([], ["-f", str(TEST_VALUES)], ["--set", "watchNamespaces={a,b}", "--set", "metrics.serviceMonitor.enabled=true"]):
        result = helm("lint", "--strict", str(CHART), *values, check=False)
        assert result.returncode == 0 and "0 chart(s) failed" in result.stdout, result.stdout + result.stderr


def test_the_crd_in_the_chart_is_the_one_in_manifests():
    assert (CHART / "crds" / "flinkjobs.jobcluster.io.yaml").read_bytes() == (
        REPO / "manifests" / "crd" / "flinkjobs.jobcluster.io.yaml"
    ).read_bytes()


def test_the_operator_deployment():
    documents = render("--set", "watchNamespaces={analytics}", "--set", "defaultConfiguration.taskmanager\\.numberOfTaskSlots=2")
    (deployment,) = by_kind(documents, "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["python", "-m", "jobcluster.controller"]
    assert container["args"] == [
        "--port=8080",
        "--log-level=info",
        "--default-configuration=/etc/jobcluster/flink-conf.yaml",
        "--namespace=analytics",
    ]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["serviceAccountName"] == "jobcluster-operator"
    (config,) = [c for c in by_kind(documents, "ConfigMap") if c["metadata"]["name"] == "jobcluster-operator-config"]
    defaults = yaml.safe_load(config["data"]["flink-conf.yaml"])
    assert defaults == {
        "kubernetes.container.image.ref": "jobcluster:0.1.0",
        "kubernetes.container.image.pull-policy": "IfNotPresent",
        "taskmanager.numberOfTaskSlots": "2",
    }


def test_rbac_is_cluster_wide_only_without_watched_namespaces_and_the_job_role_is_manifests_rbac():
    everywhere = render()
    (cluster_role,) = by_kind(everywhere, "ClusterRole")
    assert any("flinkjobs" in rule["resources"] for rule in cluster_role["rules"])
    assert by_kind(everywhere, "Role") == [r for r in by_kind(everywhere, "Role") if r["metadata"]["name"] == "jobcluster-jobmanager"]

    watched = render("--set", "watchNamespaces={team-a,team-b}")
    (discovery,) = by_kind(watched, "ClusterRole")
    assert {tuple(rule["resources"]) for rule in discovery["rules"]} == {("customresourcedefinitions",), ("namespaces",)}
    operator_roles = [r for r in by_kind(watched, "Role") if r["metadata"]["name"] == "jobcluster-operator"]
    assert sorted(r["metadata"]["namespace"] for r in operator_roles) == ["team-a", "team-b"]

    reference = {d["kind"]: d for d in yaml.safe_load_all((REPO / "manifests" / "rbac.yaml").read_text()) if d}
    job_roles = [r for r in by_kind(watched, "Role") if r["metadata"]["name"] == "jobcluster-jobmanager"]
    assert sorted(r["metadata"]["namespace"] for r in job_roles) == ["team-a", "team-b"]
    for role in job_roles:
        assert role["rules"] == reference["Role"]["rules"]
    accounts = [a["metadata"]["namespace"] for a in by_kind(watched, "ServiceAccount") if a["metadata"]["name"] == "jobcluster"]
    assert sorted(accounts) == ["team-a", "team-b"]


def test_helm_install_runs_the_operator_which_runs_the_example_then_uninstall_leaves_nothing(k8s_cluster, k8s_api, tmp_path):
    jobs = f"jobs-{uuid.uuid4().hex[:6]}"
    system = f"jobcluster-system-{uuid.uuid4().hex[:4]}"
    core = kubernetes.client.CoreV1Api(k8s_api)
    core.create_namespace({"metadata": {"name": jobs}}, _request_timeout=TIMEOUT)
    release = ["jobcluster", "-n", system]
    try:
        installed = k8s_cluster.helm(
            "install", *release, str(CHART), "--create-namespace", "-f", str(TEST_VALUES), "--set", f"watchNamespaces={{{jobs}}}"
        )
        assert "STATUS: deployed" in installed.stdout, installed.stdout

        def operator_running() -> bool:
            pods = core.list_namespaced_pod(
                system, label_selector="app.kubernetes.io/name=jobcluster-operator", _request_timeout=TIMEOUT
            ).items
            return bool(pods) and pods[0].status.phase == "Running" and bool(pods[0].status.container_statuses[0].ready)

        wait_for(operator_running, timeout=120, what="the operator pod running")
        time.sleep(12)  # two liveness periods of the test values: the probe must keep passing
        (pod,) = core.list_namespaced_pod(
            system, label_selector="app.kubernetes.io/name=jobcluster-operator", _request_timeout=TIMEOUT
        ).items
        assert pod.status.container_statuses[0].restart_count == 0

        # least privilege: the operator may run FlinkJobs where it watches, and nothing elsewhere
        account = f"system:serviceaccount:{system}:jobcluster-operator"
        for verb, resource, namespace, expected in (
            ("patch", "flinkjobs.jobcluster.io/status", jobs, "yes"),
            ("create", "deployments.apps", jobs, "yes"),
            ("create", "deployments.apps", "default", "no"),
            ("get", "secrets", "default", "no"),
            ("delete", "nodes", "", "no"),
        ):
            where = ["-n", namespace] if namespace else []
            answer = k8s_cluster.kubectl("auth", "can-i", verb, resource, *where, "--as", account, check=False).stdout.strip()
            assert answer == expected, (verb, resource, namespace, answer)

        # the example, with input and output where the test cluster's pods see them
        corpus, out = tmp_path / "corpus", tmp_path / "out"
        corpus.mkdir()
        (corpus / "a.txt").write_text("to be or not to be\nthat is the question\n")
        example = yaml.safe_load((REPO / "manifests" / "examples" / "wordcount.yaml").read_text())
        example["metadata"]["namespace"] = jobs
        example["spec"]["job"]["args"] = ["--input", str(corpus), "--output", str(out)]
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as manifest:
            manifest.write(yaml.safe_dump(example))
            manifest.flush()
            k8s_cluster.kubectl("apply", "-f", manifest.name)

        # the operator pod deleted while its job cluster starts: the job goes on, and the operator's next
        # pod (the chart's Deployment makes it) adopts the cluster and brings the status up to date
        custom = kubernetes.client.CustomObjectsApi(k8s_api)

        def deployed() -> bool:
            status = custom.get_namespaced_custom_object("jobcluster.io", "v1alpha1", jobs, "flinkjobs", "wordcount").get("status") or {}
            return status.get("lifecycleState") in ("DEPLOYED", "STABLE", "FINISHED")

        wait_for(deployed, timeout=120, what="the job cluster deployed")
        core.delete_namespaced_pod(pod.metadata.name, system, _request_timeout=TIMEOUT)
        waited = k8s_cluster.kubectl(
            "wait", "-n", jobs, "--for=condition=Succeeded", "flinkjob/wordcount", "--timeout=240s", timeout=270, check=False
        )
        assert waited.returncode == 0, k8s_cluster.kubectl("get", "flinkjob", "-n", jobs, "wordcount", "-o", "yaml").stdout
        counts = Counter()
        for part in out.glob("part-*"):
            for line in part.read_text().splitlines():
                word, count = line.rsplit("\t", 1)
                counts[word] = int(count)
        assert counts == Counter(re.findall(r"[a-z]+", (corpus / "a.txt").read_text()))
        (replacement,) = core.list_namespaced_pod(
            system, label_selector="app.kubernetes.io/name=jobcluster-operator", _request_timeout=TIMEOUT
        ).items
        assert replacement.metadata.name != pod.metadata.name
        k8s_cluster.kubectl("delete", "flinkjob", "-n", jobs, "wordcount", timeout=60)
    finally:
        k8s_cluster.helm("uninstall", *release, "--wait", check=False)
    apps = kubernetes.client.AppsV1Api(k8s_api)
    rbac = kubernetes.client.RbacAuthorizationV1Api(k8s_api)
    assert apps.list_namespaced_deployment(system, _request_timeout=TIMEOUT).items == []
    assert [a.metadata.name for a in core.list_namespaced_service_account(jobs, _request_timeout=TIMEOUT).items] == ["default"]
    assert rbac.list_namespaced_role(jobs, _request_timeout=TIMEOUT).items == []
    assert not [r for r in rbac.list_cluster_role(_request_timeout=TIMEOUT).items if r.metadata.name.startswith("jobcluster-operator")]
    assert k8s_cluster.kubectl("get", "crd", "flinkjobs.jobcluster.io", check=False).returncode == 0  # CRDs stay (Helm's rule)
    wait_for(lambda: core.list_namespaced_pod(system, _request_timeout=TIMEOUT).items == [], timeout=60, what="the operator pod gone")
    core.delete_namespace(jobs, _request_timeout=TIMEOUT)
    core.delete_namespace(system, _request_timeout=TIMEOUT)
