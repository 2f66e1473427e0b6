"""The Helm chart: `helm lint`, what `helm template` renders, and `helm install` on the real test cluster.

The template tests need only the helm binary that tests/infra/k8s builds (marked
``k8s`` so that it is built before they run). The install tests run the
operator as users run it: a pod of the project's image (the ``k8s_image``
fixture, on the node, never pulled), installed with ``ci/test-values.yaml``
and the image's repository and tag; its job clusters' pods run from the same
image. The examples of manifests/examples are applied exactly as they are.
"""

from __future__ import annotations

import base64
import re
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import kubernetes
import pytest
import requests
import yaml

from jobcluster.backends.yarn.hadoop_conf import SITE_FILES, HadoopConfiguration
from jobcluster.backends.yarn.rm_rest import ResourceManagerRest
from jobcluster.backends.yarn.staging import HdfsPaths, StagingDirectory, webhdfs_client
from tests.infra.k8s.cluster import build_tools, free_port
from tests.integration.k8s.pods import RESTRICTED, host_path_template
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "jobcluster-operator"
TEST_VALUES = CHART / "ci" / "test-values.yaml"
TIMEOUT = (5, 30)
OPERATOR_PODS = "app.kubernetes.io/name=jobcluster-operator"
HADOOP_USER = "analytics"  # the Hadoop user the chart maps the YARN example's namespace to (not the operator pod's)


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([str(build_tools() / "helm"), *args], capture_output=True, text=True, timeout=120, check=check)


ALL_NAMESPACES = "--set=watchAllNamespaces=true"


def render(*values: str, namespace: str = "jobcluster-system") -> list[dict]:
    out = helm("template", "jobcluster", str(CHART), "-n", namespace, *values).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def by_kind(documents: list[dict], kind: str) -> list[dict]:
    return [d for d in documents if d["kind"] == kind]


def test_the_chart_lints_clean_with_every_kind_of_values():
    for values in (
        [],
        ["-f", str(TEST_VALUES)],
        ["--set", "watchNamespaces={a,b}", "--set", "metrics.serviceMonitor.enabled=true"],
        ["--set", "imagePullSecrets[0].name=registry", "--set", "jobServiceAccount.create=false"],
        ["--set", "leaderElection.enabled=false", "--set", "replicas=1"],
        ["--set", "yarn.hadoopUsers.a=b", "--set", "yarn.kerberos.principal=p@R", "--set", "yarn.kerberos.keytabSecret=k"],
    ):
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
    assert spec["replicas"] == 2
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["python", "-m", "jobcluster.controller"]
    assert container["image"] == "jobcluster-operator:0.1.0", "its own image (no Spark, no Java) while it serves Kubernetes only"
    (on_yarn,) = by_kind(render("--set", "yarn.hadoopUsers.analytics=etl"), "Deployment")
    assert on_yarn["spec"]["template"]["spec"]["containers"][0]["image"] == "jobcluster:0.1.0", "YARN's client needs the job image"
    assert container["args"] == [
        "--port=8080",
        "--log-level=info",
        "--default-configuration=/etc/jobcluster/flink-conf.yaml",
        "--cluster-secret-key-file=/etc/jobcluster-key/key",
        "--namespace=analytics",
        "--leader-election",
        "--lease-name=jobcluster-operator",
        "--lease-duration=15s",
        "--renew-deadline=10s",
        "--retry-period=2s",
    ]
    downward = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"] if "valueFrom" in e}
    assert downward == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
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
        "jobcluster.operator.service-accounts.allowed": "jobcluster",
        "taskmanager.numberOfTaskSlots": "2",
    }

    # watching all namespaces, the operator makes the JobManager's ServiceAccount where a FlinkJob runs, and refuses
    # the FlinkJobs of its own namespace unless told
    (everywhere,) = by_kind(render(ALL_NAMESPACES), "Deployment")
    arguments = everywhere["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--job-cluster-role=jobcluster-operator-jobmanager" in arguments and "--exclude-namespace=jobcluster-system" in arguments
    (own,) = by_kind(render(ALL_NAMESPACES, "--set", "watchReleaseNamespace=true"), "Deployment")
    assert not [a for a in own["spec"]["template"]["spec"]["containers"][0]["args"] if a.startswith("--exclude-namespace")]
    (nowhere,) = by_kind(render(ALL_NAMESPACES, "--set", "jobServiceAccount.create=false"), "Deployment")
    assert not [a for a in nowhere["spec"]["template"]["spec"]["containers"][0]["args"] if a.startswith("--job-cluster-role")]


def test_without_leader_election_one_replica_is_replaced_by_recreate_and_more_are_refused():
    (single,) = by_kind(render("--set", "leaderElection.enabled=false", "--set", "replicas=1"), "Deployment")
    assert single["spec"]["replicas"] == 1 and single["spec"]["strategy"] == {"type": "Recreate"}
    args = single["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--no-leader-election" in args and not [a for a in args if a.startswith("--lease")]
    refused = helm("template", "jobcluster", str(CHART), "--set", "leaderElection.enabled=false", check=False)
    assert refused.returncode != 0 and "replicas: 2 operator pods without leader election" in refused.stderr, refused.stderr
    # in the node's network a new pod cannot bind the metrics port beside the old one: Recreate
    (host,) = by_kind(render("--set", "hostNetwork=true", "--set", "replicas=1"), "Deployment")
    assert host["spec"]["strategy"] == {"type": "Recreate"}
    # the Lease's name follows the release, or the value
    (other,) = by_kind(render("--set", "leaderElection.leaseName=ops-lease"), "Deployment")
    assert "--lease-name=ops-lease" in other["spec"]["template"]["spec"]["containers"][0]["args"]


def test_allowed_program_urls_become_the_operators_options():
    prefixes = ["https://artifacts.example.com/jobs/", "http://programs.analytics:8000"]
    (deployment,) = by_kind(render("--set", f"allowedProgramUrls={{{','.join(prefixes)}}}"), "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [a for a in args if a.startswith("--allow-program-url")] == [f"--allow-program-url={p}" for p in prefixes]
    (default,) = by_kind(render(), "Deployment")
    assert not [a for a in default["spec"]["template"]["spec"]["containers"][0]["args"] if a.startswith("--allow-program-url")]


def test_the_operators_kerberos_login_comes_from_a_secret_and_its_realm_from_a_config_map():
    on_yarn = ("--set", "yarn.hadoopUsers.analytics=etl", "--set", "yarn.kerberos.principal=jobcluster/ops@EXAMPLE.COM")
    (deployment,) = by_kind(
        render(*on_yarn, "--set", "yarn.kerberos.keytabSecret=ops-keytab", "--set", "yarn.kerberos.krb5ConfigMap=realm"), "Deployment"
    )
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"][-2:] == [
        "--kerberos-principal=jobcluster/ops@EXAMPLE.COM",
        "--kerberos-keytab=/etc/jobcluster-kerberos/krb5.keytab",
    ]
    assert {"name": "KRB5_CONFIG", "value": "/etc/jobcluster-krb5/krb5.conf"} in container["env"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["kerberos-keytab"] == "/etc/jobcluster-kerberos" and mounts["krb5-conf"] == "/etc/jobcluster-krb5"
    volumes = {v["name"]: v for v in pod["volumes"]}
    keytab = volumes["kerberos-keytab"]["secret"]
    assert keytab["secretName"] == "ops-keytab" and keytab["items"] == [{"key": "krb5.keytab", "path": "krb5.keytab"}]
    assert keytab["defaultMode"] == 0o440, "readable by the pod's group only"
    assert volumes["krb5-conf"]["configMap"] == {"name": "realm", "items": [{"key": "krb5.conf", "path": "krb5.conf"}]}

    (plain,) = by_kind(render("--set", "yarn.hadoopUsers.analytics=etl"), "Deployment")
    (container,) = plain["spec"]["template"]["spec"]["containers"]
    assert not [a for a in container["args"] if a.startswith("--kerberos")] and "KRB5_CONFIG" not in str(container["env"])

    for values, says in [
        (on_yarn, "yarn.kerberos.keytabSecret is not"),
        (("--set", "yarn.hadoopUsers.a=b", "--set", "yarn.kerberos.keytabSecret=k"), "yarn.kerberos.principal is not"),
        (("--set", "yarn.kerberos.principal=p", "--set", "yarn.kerberos.keytabSecret=k"), "which yarn.hadoopUsers enables"),
    ]:
        refused = helm("template", "jobcluster", str(CHART), *values, check=False)
        assert refused.returncode != 0 and says in refused.stderr, refused.stderr


def test_image_pull_secrets_reach_the_operator_pod_and_the_job_clusters_configuration():
    documents = render("--set", "imagePullSecrets[0].name=registry-a", "--set", "imagePullSecrets[1].name=registry-b")
    (deployment,) = by_kind(documents, "Deployment")
    assert deployment["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "registry-a"}, {"name": "registry-b"}]
    (config,) = by_kind(documents, "ConfigMap")
    defaults = yaml.safe_load(config["data"]["flink-conf.yaml"])
    assert defaults["kubernetes.container.image.pull-secrets"] == "registry-a;registry-b"  # Flink's key and separator
    (config,) = by_kind(render(), "ConfigMap")
    assert "kubernetes.container.image.pull-secrets" not in yaml.safe_load(config["data"]["flink-conf.yaml"])
    # defaultConfiguration may override what the chart derives (one key, not two)
    (config,) = by_kind(
        render("--set", "imagePullSecrets[0].name=a", "--set", "defaultConfiguration.kubernetes\\.container\\.image\\.pull-secrets=b"),
        "ConfigMap",
    )
    assert config["data"]["flink-conf.yaml"].count("pull-secrets") == 1
    assert yaml.safe_load(config["data"]["flink-conf.yaml"])["kubernetes.container.image.pull-secrets"] == "b"


def test_the_default_ingress_becomes_the_ingress_options_and_the_operator_may_create_ingresses():
    documents = render(
        "--set-string",
        "ingress.template=/{{namespace}}/{{name}}(/|$)(.*)",
        "--set",
        "ingress.className=nginx",
        "--set",
        "ingress.annotations.nginx\\.ingress\\.kubernetes\\.io/rewrite-target=/$2",
        "--set",
        "ingress.tls[0].hosts[0]=flink.example.com",
        "--set",
        "ingress.tls[0].secretName=flink-tls",
    )
    (config,) = by_kind(documents, "ConfigMap")
    defaults = yaml.safe_load(config["data"]["flink-conf.yaml"])
    assert {key: value for key, value in defaults.items() if ".ingress." in key} == {
        "jobcluster.kubernetes.ingress.template": "/{{namespace}}/{{name}}(/|$)(.*)",
        "jobcluster.kubernetes.ingress.class-name": "nginx",
        "jobcluster.kubernetes.ingress.annotations": "nginx.ingress.kubernetes.io/rewrite-target:/$2",
        "jobcluster.kubernetes.ingress.tls": '[{"hosts":["flink.example.com"],"secretName":"flink-tls"}]',
    }
    # an empty template (the default) is no Ingress, whatever else is set
    (config,) = by_kind(render("--set", "ingress.className=nginx"), "ConfigMap")
    assert ".ingress." not in config["data"]["flink-conf.yaml"]
    comma = ("--set", "ingress.template=/x", "--set", "ingress.annotations.a=1\\,2")
    refused = helm("template", "jobcluster", str(CHART), *comma, check=False)
    assert refused.returncode != 0 and "ingress.annotations: 'a: 1,2' holds a ','" in refused.stderr, refused.stderr
    ingresses = {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["get", "list", "create", "delete"]}
    (role,) = [r for r in by_kind(documents, "Role") if r["metadata"]["name"] == "jobcluster-operator"]
    assert ingresses in role["rules"], "in each watched namespace"
    everywhere = render(ALL_NAMESPACES, "--set-string", "ingress.template=/x")
    (role,) = [r for r in by_kind(everywhere, "ClusterRole") if r["metadata"]["name"] == "jobcluster-operator-discovery"]
    assert ingresses in role["rules"], "in every namespace"


def test_the_network_policy_is_the_one_of_manifests_in_each_watched_namespace():
    reference = yaml.safe_load((REPO / "manifests" / "networkpolicy.yaml").read_text())
    policies = by_kind(render("--set", "networkPolicy.enabled=true", "--set", "watchNamespaces={team-a,team-b}"), "NetworkPolicy")
    assert sorted(p["metadata"]["namespace"] for p in policies) == ["team-a", "team-b"]
    assert all(p["spec"] == reference["spec"] for p in policies)
    assert not by_kind(render("--set", "watchNamespaces={team-a}"), "NetworkPolicy"), "optional: off by default"
    everywhere = helm("template", "jobcluster", str(CHART), ALL_NAMESPACES, "--set", "networkPolicy.enabled=true", check=False)
    assert everywhere.returncode != 0 and "kubectl apply -n NS -f manifests/networkpolicy.yaml" in everywhere.stderr


def test_rbac_is_cluster_wide_only_when_all_namespaces_are_chosen_and_the_job_role_is_manifests_rbac():
    reference = {d["kind"]: d for d in yaml.safe_load_all((REPO / "manifests" / "rbac.yaml").read_text()) if d}

    # by default, one namespace (default) through Roles: nothing cluster-wide but what kopf needs to start
    (default_role,) = [r for r in by_kind(render(), "Role") if r["metadata"]["name"] == "jobcluster-operator"]
    assert default_role["metadata"]["namespace"] == "default"
    assert [r["metadata"]["name"] for r in by_kind(render(), "ClusterRole")] == ["jobcluster-operator-discovery"]
    empty = helm("template", "jobcluster", str(CHART), "--set", "watchNamespaces={}", check=False)
    assert empty.returncode != 0 and "or set watchAllNamespaces=true" in empty.stderr, (
        "all namespaces is never what an empty list falls into"
    )
    both = helm("template", "jobcluster", str(CHART), ALL_NAMESPACES, "--set", "watchNamespaces={a}", check=False)
    assert both.returncode != 0 and "choose one" in both.stderr

    # all namespaces: the operator's rights cluster-wide, and the JobManager's rules as a ClusterRole that the
    # operator binds (and only that one) to the JobManager's ServiceAccount in each FlinkJob's namespace
    everywhere = render(ALL_NAMESPACES)
    roles = {r["metadata"]["name"]: r for r in by_kind(everywhere, "ClusterRole")}
    assert sorted(roles) == ["jobcluster-operator-discovery", "jobcluster-operator-jobmanager"]
    operator_rules = roles["jobcluster-operator-discovery"]["rules"]
    assert any("flinkjobs" in rule["resources"] for rule in operator_rules)
    assert {
        "apiGroups": ["rbac.authorization.k8s.io"],
        "resources": ["clusterroles"],
        "resourceNames": ["jobcluster-operator-jobmanager"],
        "verbs": ["get", "bind"],
    } in operator_rules
    for resource in ("serviceaccounts", "rolebindings"):
        (rule,) = [r for r in operator_rules if r["resources"] == [resource]]
        assert rule["verbs"] == ["get", "create"]
    assert not [r for r in operator_rules if r["resources"] in (["roles"], ["clusterrolebindings"])]
    # no Secret is ever read: the clusters' secrets are derived from the operator's key, mounted from its own Secret
    (secrets,) = [r for r in operator_rules if r["resources"] == ["secrets"]]
    assert secrets["verbs"] == ["create"]
    (key,) = by_kind(everywhere, "Secret")
    assert key["metadata"]["name"] == "jobcluster-operator-cluster-key" and len(base64.b64decode(key["data"]["key"])) == 64
    # the JobManager's rights are never the namespace's default account's
    refused = helm("template", "jobcluster", str(CHART), "--set", "jobServiceAccount.name=default", check=False)
    assert refused.returncode != 0 and "jobServiceAccount.name: 'default' would give the JobManager's rights" in refused.stderr
    assert roles["jobcluster-operator-jobmanager"]["rules"] == reference["Role"]["rules"]
    assert [b["metadata"]["name"] for b in by_kind(everywhere, "ClusterRoleBinding")] == ["jobcluster-operator-discovery"]
    # in namespaces, only the leader election's (below)
    assert [r["metadata"]["name"] for r in by_kind(everywhere, "Role")] == ["jobcluster-operator-leader-election"]
    assert [b["metadata"]["name"] for b in by_kind(everywhere, "RoleBinding")] == ["jobcluster-operator-leader-election"]
    assert [a["metadata"]["name"] for a in by_kind(everywhere, "ServiceAccount")] == ["jobcluster-operator"]
    none = render(ALL_NAMESPACES, "--set", "jobServiceAccount.create=false")
    assert [r["metadata"]["name"] for r in by_kind(none, "ClusterRole")] == ["jobcluster-operator-discovery"]
    assert not [r for r in by_kind(none, "ClusterRole")[0]["rules"] if r["resources"] == ["serviceaccounts"]]

    # the leader election's Lease: a Role in the release's namespace, get and update for that one Lease only
    (lease_role,) = [r for r in by_kind(everywhere, "Role") if r["metadata"]["name"] == "jobcluster-operator-leader-election"]
    assert lease_role["metadata"]["namespace"] == "jobcluster-system"
    assert lease_role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["jobcluster-operator"],
            "verbs": ["get", "update"],
        },
    ]
    (lease_binding,) = [b for b in by_kind(everywhere, "RoleBinding") if b["metadata"]["name"] == "jobcluster-operator-leader-election"]
    assert lease_binding["subjects"] == [{"kind": "ServiceAccount", "name": "jobcluster-operator", "namespace": "jobcluster-system"}]
    single = render("--set", "leaderElection.enabled=false", "--set", "replicas=1")
    assert not [r for r in by_kind(single, "Role") if r["metadata"]["name"].endswith("-leader-election")]

    watched = render("--set", "watchNamespaces={team-a,team-b}")
    (discovery,) = by_kind(watched, "ClusterRole")
    assert {tuple(rule["resources"]) for rule in discovery["rules"]} == {("customresourcedefinitions",), ("namespaces",)}
    operator_roles = [r for r in by_kind(watched, "Role") if r["metadata"]["name"] == "jobcluster-operator"]
    assert sorted(r["metadata"]["namespace"] for r in operator_roles) == ["team-a", "team-b"]
    assert not [r for r in operator_roles[0]["rules"] if "serviceaccounts" in r["resources"] or "rolebindings" in r["resources"]]

    job_roles = [r for r in by_kind(watched, "Role") if r["metadata"]["name"] == "jobcluster-jobmanager"]
    assert sorted(r["metadata"]["namespace"] for r in job_roles) == ["team-a", "team-b"]
    for role in job_roles:
        assert role["rules"] == reference["Role"]["rules"]
    accounts = [a["metadata"]["namespace"] for a in by_kind(watched, "ServiceAccount") if a["metadata"]["name"] == "jobcluster"]
    assert sorted(accounts) == ["team-a", "team-b"]


def test_a_watched_namespace_that_does_not_exist_is_refused_with_the_fix_and_nothing_is_installed(k8s_cluster, k8s_api):
    missing = f"analytics-{uuid.uuid4().hex[:6]}"
    system = f"jobcluster-system-{uuid.uuid4().hex[:4]}"
    release = f"refused-{uuid.uuid4().hex[:4]}"
    core = kubernetes.client.CoreV1Api(k8s_api)
    try:
        result = k8s_cluster.helm(
            "install",
            release,
            str(CHART),
            "-n",
            system,
            "--create-namespace",
            "-f",
            str(TEST_VALUES),
            "--set",
            f"watchNamespaces={{{missing}}}",
            check=False,
        )
        assert result.returncode != 0
        assert (
            f"watchNamespaces: namespace {missing} does not exist. The chart never creates the namespaces it watches: "
            f"create it first (kubectl create namespace {missing}), then install again."
        ) in result.stderr, result.stderr
        assert k8s_cluster.helm("status", release, "-n", system, check=False).returncode != 0  # no release, not even a failed one
        rbac = kubernetes.client.RbacAuthorizationV1Api(k8s_api)
        assert not [r for r in rbac.list_cluster_role(_request_timeout=TIMEOUT).items if r.metadata.name.startswith(release)]
        assert kubernetes.client.AppsV1Api(k8s_api).list_namespaced_deployment(system, _request_timeout=TIMEOUT).items == []
        # the release's own namespace may be watched: --create-namespace makes it
        own = k8s_cluster.helm(
            "install", release, str(CHART), "-n", system, "--create-namespace", "--dry-run=server", "--set", f"watchNamespaces={{{system}}}"
        )
        assert "STATUS: pending-install" in own.stdout, own.stdout
        # without a cluster to look at (helm template), the same values render
        assert helm("template", release, str(CHART), "--set", f"watchNamespaces={{{missing}}}").returncode == 0
    finally:
        k8s_cluster.helm("uninstall", release, "-n", system, check=False)
        try:
            core.delete_namespace(system, _request_timeout=TIMEOUT)
        except kubernetes.client.ApiException:
            pass


def image_values(image: str, value: str = "image") -> list[str]:
    """--set the chart's ``value`` (image: the job clusters', and the operator's when it serves YARN; operatorImage)
    to ``image`` on the node; the test values never pull it."""
    repository, tag = image.rsplit(":", 1)
    return ["--set", f"{value}.repository={repository}", "--set", f"{value}.tag={tag}"]


def host_path_pod_template(tmp_path: Path, directories: list[Path], writable: list[Path]) -> dict:
    """host_path_template's pod as a FlinkJob's podTemplate: the operator runs in a pod, where no file of this
    machine is, so the template travels inline in the FlinkJob."""
    template = yaml.safe_load(host_path_template(tmp_path / "pod-template.yaml", directories, writable=writable).read_text())
    return {"spec": template["spec"]}


def operator_pods(core, namespace: str) -> list:
    return core.list_namespaced_pod(namespace, label_selector=OPERATOR_PODS, _request_timeout=TIMEOUT).items


def wait_for_the_operator(core, namespace: str) -> None:
    def running() -> bool:
        pods = operator_pods(core, namespace)
        statuses = pods[0].status.container_statuses if pods else None
        return bool(statuses) and pods[0].status.phase == "Running" and bool(statuses[0].ready)

    wait_for(running, timeout=180, what="the operator pod running and ready")


def the_leader(k8s_api, core, namespace: str) -> str | None:
    """The operator pod that holds the leader Lease while two run; None otherwise."""
    running = [p.metadata.name for p in operator_pods(core, namespace) if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
    try:
        lease = kubernetes.client.CoordinationV1Api(k8s_api).read_namespaced_lease(
            "jobcluster-operator", namespace, _request_timeout=TIMEOUT
        )
    except kubernetes.client.ApiException:
        return None
    holder = (lease.spec.holder_identity or "").rsplit("_", 1)[0]
    return holder if len(running) == 2 and holder in running else None


def restart_the_operator(core, namespace: str) -> None:
    """Delete the operator's pod and wait until its replacement alone runs: an operator that keeps nothing in memory."""
    (old,) = operator_pods(core, namespace)
    core.delete_namespaced_pod(old.metadata.name, namespace, _request_timeout=TIMEOUT)

    def replaced() -> bool:
        pods = operator_pods(core, namespace)
        statuses = pods[0].status.container_statuses if len(pods) == 1 else None
        return bool(statuses) and pods[0].metadata.name != old.metadata.name and bool(statuses[0].ready)

    wait_for(replaced, timeout=120, interval=0.5, what="the operator pod replaced, running and ready")


def watch_job_pods(core, namespace: str, seen: dict[str, dict]) -> None:
    """Record what matters of each pod of a job cluster seen in ``namespace`` (they go when the job ends)."""
    for pod in core.list_namespaced_pod(namespace, label_selector="component", _request_timeout=TIMEOUT).items:
        seen.setdefault(
            pod.metadata.name,
            {
                "component": pod.metadata.labels.get("component"),
                "image": pod.spec.containers[0].image,
                "pull_secrets": [s.name for s in pod.spec.image_pull_secrets or []],
                "service_account": pod.spec.service_account_name,
                "labels": pod.metadata.labels,
            },
        )


@pytest.mark.hadoop
def test_helm_install_runs_the_operator_which_runs_the_examples_then_uninstall_leaves_nothing(
    k8s_cluster, k8s_api, k8s_image, hadoop_cluster, tmp_path
):
    """The operator as a pod of the image, watching one namespace, in the node's network (hostNetwork: the Hadoop
    test cluster listens on 127.0.0.1 only); at once, the Kubernetes example's job cluster in pods of the same
    image, which pull it with the chart's imagePullSecrets, and the YARN example, which ships the image's
    virtualenv to YARN; the operator pod deleted mid-job; a FlinkJob on YARN deleted mid-run after its Hadoop
    ConfigMap, with the operator restarted in between; uninstall."""
    jobs = f"jobs-{uuid.uuid4().hex[:6]}"
    system = f"jobcluster-system-{uuid.uuid4().hex[:4]}"
    core = kubernetes.client.CoreV1Api(k8s_api)
    for namespace in (jobs, system):
        core.create_namespace({"metadata": {"name": namespace}}, _request_timeout=TIMEOUT)
        # the chart's imagePullSecrets, as a registry's would be (the node has the image: nothing is pulled)
        k8s_cluster.kubectl(
            "create",
            "secret",
            "docker-registry",
            "registry-cred",
            "-n",
            namespace,
            "--docker-server=registry.example.com",
            "--docker-username=ci",
            "--docker-password=not-used",
        )
    on_yarn = yarn_example(k8s_cluster, hadoop_cluster, jobs)
    release = ["jobcluster", "-n", system]
    try:
        installed = k8s_cluster.helm(
            "install",
            *release,
            str(CHART),
            "-f",
            str(TEST_VALUES),
            *image_values(k8s_image),
            "--set",
            f"watchNamespaces={{{jobs}}}",
            "--set",
            "imagePullSecrets[0].name=registry-cred",
            "--set",
            "hostNetwork=true",
            "--set",
            f"yarn.hadoopUsers.{jobs}={HADOOP_USER}",
            "--set",
            f"metrics.port={free_port()}",  # a port of this machine, in the node's network
            "--set",
            "replicas=1",  # the one node has the metrics port once (test_operator_leader.py tests the hand-overs)
            "--set",
            "networkPolicy.enabled=true",  # stored and the jobs run beside it (this node's network enforces no policy)
        )
        assert "STATUS: deployed" in installed.stdout, installed.stdout
        policy = kubernetes.client.NetworkingV1Api(k8s_api).read_namespaced_network_policy("jobcluster", jobs, _request_timeout=TIMEOUT)
        assert policy.spec.pod_selector.match_labels == {"type": "jobcluster-native-kubernetes"}

        wait_for_the_operator(core, system)
        time.sleep(12)  # two liveness periods of the test values: the probe must keep passing
        (pod,) = operator_pods(core, system)
        assert pod.status.container_statuses[0].restart_count == 0
        assert pod.spec.containers[0].image == k8s_image and pod.spec.containers[0].image_pull_policy == "Never"
        assert pod.spec.security_context.run_as_user == 9999 and pod.spec.host_network

        # least privilege: the operator may run FlinkJobs where it watches, and nothing elsewhere
        account = f"system:serviceaccount:{system}:jobcluster-operator"
        for verb, resource, namespace, expected in (
            ("patch", "flinkjobs.jobcluster.io/status", jobs, "yes"),
            ("create", "deployments.apps", jobs, "yes"),
            ("create", "deployments.apps", "default", "no"),
            ("get", "secrets", "default", "no"),
            ("get", "secrets", jobs, "no"),
            ("create", "serviceaccounts", jobs, "no"),
            ("delete", "nodes", "", "no"),
        ):
            where = ["-n", namespace] if namespace else []
            answer = k8s_cluster.kubectl("auth", "can-i", verb, resource, *where, "--as", account, check=False).stdout.strip()
            assert answer == expected, (verb, resource, namespace, answer)

        # the example, with input and output where the test cluster's pods see them (host directories, mounted by
        # pod templates in the FlinkJob: the operator's pod has no file of this machine)
        corpus, out = tmp_path / "corpus", tmp_path / "out"
        corpus.mkdir()
        out.mkdir()
        (corpus / "a.txt").write_text("to be or not to be\nthat is the question\n")
        template = host_path_pod_template(tmp_path, [corpus, out], writable=[out])
        example = yaml.safe_load((REPO / "manifests" / "examples" / "wordcount.yaml").read_text())
        example["metadata"]["namespace"] = jobs
        example["spec"]["job"]["args"] = ["--input", str(corpus), "--output", str(out / "counts")]
        example["spec"]["jobManager"] = {"podTemplate": template}
        example["spec"]["taskManager"] = {"podTemplate": template}
        for document in (example, on_yarn.flinkjob):
            with tempfile.NamedTemporaryFile("w", suffix=".yaml") as manifest:
                manifest.write(yaml.safe_dump(document))
                manifest.flush()
                k8s_cluster.kubectl("apply", "-f", manifest.name)

        # the operator pod deleted while its job cluster starts: the job goes on, and the operator's next
        # pod (the chart's Deployment makes it) adopts the cluster and brings the status up to date
        custom = kubernetes.client.CustomObjectsApi(k8s_api)
        job_pods: dict[str, dict] = {}

        def deployed() -> bool:
            watch_job_pods(core, jobs, job_pods)
            status = custom.get_namespaced_custom_object("jobcluster.io", "v1alpha1", jobs, "flinkjobs", "wordcount").get("status") or {}
            return status.get("lifecycleState") in ("DEPLOYED", "STABLE", "FINISHED")

        wait_for(deployed, timeout=240, interval=1, what="the job cluster deployed")
        core.delete_namespaced_pod(pod.metadata.name, system, _request_timeout=TIMEOUT)

        def succeeded(name: str) -> bool:
            watch_job_pods(core, jobs, job_pods)
            document = custom.get_namespaced_custom_object("jobcluster.io", "v1alpha1", jobs, "flinkjobs", name)
            conditions = {c["type"]: c for c in (document.get("status") or {}).get("conditions", [])}
            assert conditions.get("Failed", {}).get("status") != "True", document["status"]
            return conditions.get("Succeeded", {}).get("status") == "True"

        # the first FlinkJob on YARN packs the image's virtualenv and uploads it (a minute or two)
        for name in ("wordcount", on_yarn.name):
            try:
                wait_for(lambda name=name: succeeded(name), timeout=420, interval=1, what=f"FlinkJob {name} Succeeded")
            except AssertionError as exc:
                flinkjob = k8s_cluster.kubectl("get", "flinkjob", "-n", jobs, name, "-o", "yaml").stdout
                log = k8s_cluster.kubectl("logs", "-n", system, "deployment/jobcluster-operator", "--tail=60", check=False).stdout
                raise AssertionError(f"{exc}\n{flinkjob}\n{log}") from None
        on_yarn.check(k8s_cluster, custom.get_namespaced_custom_object("jobcluster.io", "v1alpha1", jobs, "flinkjobs", on_yarn.name))
        counts = Counter()
        for part in (out / "counts").glob("part-*"):
            for line in part.read_text().splitlines():
                word, count = line.rsplit("\t", 1)
                counts[word] = int(count)
        assert counts == Counter(re.findall(r"[a-z]+", (corpus / "a.txt").read_text()))

        # the job cluster's pods: the operator's image, pulled (were it pulled) with the chart's imagePullSecrets
        components = Counter(p["component"] for p in job_pods.values())
        assert components["jobmanager"] >= 1 and components["taskmanager"] >= 1, job_pods
        for name, seen in job_pods.items():
            assert seen["image"] == k8s_image and seen["pull_secrets"] == ["registry-cred"], (name, seen)

        (replacement,) = operator_pods(core, system)
        assert replacement.metadata.name != pod.metadata.name
        on_yarn.deleted_mid_run(
            k8s_cluster,
            custom,
            jobs,
            lambda: restart_the_operator(core, system),
            lambda: k8s_cluster.kubectl("logs", "-n", system, "deployment/jobcluster-operator", "--tail=60", check=False).stdout,
        )
        k8s_cluster.kubectl("delete", "flinkjob", "-n", jobs, "wordcount", on_yarn.name, timeout=60)
    finally:
        k8s_cluster.helm("uninstall", *release, "--wait", check=False)
        on_yarn.close()
    apps = kubernetes.client.AppsV1Api(k8s_api)
    rbac = kubernetes.client.RbacAuthorizationV1Api(k8s_api)
    assert apps.list_namespaced_deployment(system, _request_timeout=TIMEOUT).items == []
    assert [a.metadata.name for a in core.list_namespaced_service_account(jobs, _request_timeout=TIMEOUT).items] == ["default"]
    assert rbac.list_namespaced_role(jobs, _request_timeout=TIMEOUT).items == []
    assert not [r for r in rbac.list_cluster_role(_request_timeout=TIMEOUT).items if r.metadata.name.startswith("jobcluster-operator")]
    assert k8s_cluster.kubectl("get", "crd", "flinkjobs.jobcluster.io", check=False).returncode == 0  # CRDs stay (Helm's rule)
    wait_for(lambda: operator_pods(core, system) == [], timeout=60, what="the operator pod gone")
    core.delete_namespace(jobs, _request_timeout=TIMEOUT)
    core.delete_namespace(system, _request_timeout=TIMEOUT)


class YarnExample:
    """manifests/examples/wordcount-yarn.yaml as its header says to run it, on the Hadoop test cluster: the
    ConfigMap hadoop-conf, a corpus on HDFS in the home directory of the Hadoop user the chart maps the namespace to
    (``analytics``, yarn.hadoopUsers; not the operator pod's own), which a Hadoop admin makes."""

    def __init__(self, hadoop_cluster, namespace: str) -> None:
        hadoop = HadoopConfiguration.load(hadoop_cluster.hadoop_conf_dir)
        self.paths = HdfsPaths(webhdfs_client(hadoop), hadoop.default_fs)
        self.yarn = ResourceManagerRest(hadoop.resourcemanager_webapp_url())
        # what the operator keeps of the ConfigMap: the site files, not the cluster's capacity-scheduler.xml
        self.site_files = {name: (Path(hadoop_cluster.hadoop_conf_dir) / name).read_text() for name in SITE_FILES}
        self.root = f"/user/{HADOOP_USER}/wordcount-{uuid.uuid4().hex[:6]}"
        self.expected: Counter = Counter()
        self.flinkjob = yaml.safe_load((REPO / "manifests" / "examples" / "wordcount-yarn.yaml").read_text())
        self.name = self.flinkjob["metadata"]["name"]
        self.flinkjob["metadata"]["namespace"] = namespace
        corpus, out = self.paths.qualify(f"{self.root}/corpus"), self.paths.qualify(f"{self.root}/out")
        self.flinkjob["spec"]["job"]["args"] = ["--input", corpus, "--output", out]
        self.flinkjob["spec"]["job"]["parallelism"] = 2

    def prepare(self) -> None:
        client = self.paths.client  # the test's user: the HDFS superuser
        client.makedirs(f"/user/{HADOOP_USER}")
        client.set_owner(f"/user/{HADOOP_USER}", owner=HADOOP_USER)
        for n in range(3):
            text = f"Hadoop and YARN {n}\nthe fox and the hadoop dog\n" * (n + 2)
            client.write(f"{self.root}/corpus/part{n}.txt", data=text.encode(), overwrite=True)
            self.expected.update(re.findall(r"[a-z0-9_]+", text.lower()))
        client.set_owner(self.root, owner=HADOOP_USER)

    def check(self, k8s_cluster, document: dict) -> None:
        """The counts on HDFS; the status and `kubectl get`; YARN's own view of the application: submitted by the
        namespace's Hadoop user, SUCCEEDED, tagged with the FlinkJob and its job."""
        status, namespace = document["status"], document["metadata"]["namespace"]
        application = status["clusterId"]
        assert re.fullmatch(r"application_\d+_\d+", application), status
        assert status["lifecycleState"] == "FINISHED" and status["jobStatus"]["state"] == "FINISHED", status
        assert status["taskManagers"]["count"] == 1 and status["taskManagers"]["slotsPerTaskManager"] == 2, status
        columns = k8s_cluster.kubectl("get", "flinkjobs", "-n", namespace, self.name).stdout.splitlines()
        assert columns[1].split()[:5] == [self.name, "FINISHED", "FINISHED", "2", "yarn-application"]
        counts: Counter = Counter()
        for part in (p for p in self.paths.client.list(f"{self.root}/out") if p.startswith("part-")):
            with self.paths.client.read(f"{self.root}/out/{part}", encoding="utf-8") as reader:
                for line in reader.read().splitlines():
                    word, count = line.rsplit("\t", 1)
                    counts[word] = int(count)
        assert counts == self.expected
        # the application ends SUCCEEDED: it unregisters while the cluster shuts down, just after the job's result
        report = wait_for(
            lambda: (r := self.yarn.application(application)).state != "RUNNING" and r, timeout=60, what="the application ended"
        )
        assert (report.state, report.final_status) == ("FINISHED", "SUCCEEDED"), report
        app = requests.get(f"{self.yarn.url}/ws/v1/cluster/apps/{application}", timeout=10).json()["app"]
        assert app["user"] == HADOOP_USER, app
        assert f"flinkjob-uid:{document['metadata']['uid']}" in report.tags
        assert f"jobcluster-job-id:{status['jobStatus']['jobId']}" in report.tags

    def deleted_mid_run(
        self, k8s_cluster, custom, namespace: str, restart_operator: Callable[[], None], operator_log: Callable[[], str]
    ) -> None:
        """A long job on YARN whose FlinkJob is deleted while it runs, after its Hadoop ConfigMap (as ``kubectl delete
        namespace`` does) and with an operator restarted in between (nothing in its memory): the site files kept in
        the status reach YARN; the application is KILLED and its staging directory removed within 30 s, and the
        FlinkJob is gone."""
        name = "waits-yarn"
        waits = {
            "apiVersion": "jobcluster.io/v1alpha1",
            "kind": "FlinkJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "target": "yarn-per-job",
                "hadoopConfigMap": "hadoop-conf",
                "job": {"source": (REPO / "tests" / "e2e" / "programs" / "waits.py").read_text(), "args": ["600"]},
                "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "1"},
            },
        }
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as manifest:
            manifest.write(yaml.safe_dump(waits))
            manifest.flush()
            k8s_cluster.kubectl("apply", "-f", manifest.name)
        wait = ["wait", "-n", namespace, "--for=condition=Running", f"flinkjob/{name}", "--timeout=300s"]
        assert k8s_cluster.kubectl(*wait, timeout=330, check=False).returncode == 0
        status = custom.get_namespaced_custom_object("jobcluster.io", "v1alpha1", namespace, "flinkjobs", name)["status"]
        running = status["clusterId"]
        assert self.yarn.application(running).state == "RUNNING"
        assert status["clusterAccess"] == self.site_files, sorted(status.get("clusterAccess") or {})
        assert len(status["clusterAccessSignature"]) == 64, "signed: kept files count only with the operator's signature"
        staging = StagingDirectory(self.paths, f"/user/{HADOOP_USER}", running)
        assert self.paths.client.status(staging.path, strict=False) is not None
        k8s_cluster.kubectl("delete", "configmap", "-n", namespace, "hadoop-conf")
        restart_operator()
        k8s_cluster.kubectl("delete", "flinkjob", "-n", namespace, name, "--wait=false")

        def killed() -> bool:
            return self.yarn.application(running).state == "KILLED" and self.paths.client.status(staging.path, strict=False) is None

        wait_for(killed, timeout=30, interval=0.5, what="the YARN application KILLED and its staging directory removed")
        gone = ["wait", "-n", namespace, "--for=delete", f"flinkjob/{name}", "--timeout=30s"]
        assert k8s_cluster.kubectl(*gone, timeout=40, check=False).returncode == 0, f"the finalizer was not released:\n{operator_log()}"

    def close(self) -> None:
        self.paths.client.delete(self.root, recursive=True)
        self.yarn.close()


def yarn_example(k8s_cluster, hadoop_cluster, namespace: str) -> YarnExample:
    example = YarnExample(hadoop_cluster, namespace)
    example.prepare()
    k8s_cluster.kubectl("create", "configmap", "hadoop-conf", "-n", namespace, f"--from-file={hadoop_cluster.hadoop_conf_dir}")
    return example


def test_watching_all_namespaces_an_example_runs_as_it_is_in_a_namespace_of_its_own(k8s_cluster, k8s_api, k8s_image, k8s_operator_image):
    """The chart watching every namespace; the sized example of manifests/examples applied exactly as it is in a
    namespace that is not the release's and that has nothing of jobcluster: the operator creates the JobManager's
    ServiceAccount and its RoleBinding there, the example runs from the image to Succeeded, and uninstalling
    removes what the operator created; that namespace enforces Pod Security "restricted". A FlinkJob in the
    release's own namespace is refused, and so is one whose
    ServiceAccount exists but was not made by the operator (it binds no rights to it); that namespace, deleted with its
    FlinkJob in it, goes."""
    system = f"jobcluster-system-{uuid.uuid4().hex[:4]}"

    def reported(namespace: str) -> str:
        document = custom.get_namespaced_custom_object("jobcluster.io", "v1alpha1", namespace, "flinkjobs", "wordcount-memory")
        return (document.get("status") or {}).get("error") or ""

    team = f"team-{uuid.uuid4().hex[:6]}"
    core = kubernetes.client.CoreV1Api(k8s_api)
    rbac = kubernetes.client.RbacAuthorizationV1Api(k8s_api)
    custom = kubernetes.client.CustomObjectsApi(k8s_api)
    # the FlinkJob's pods must pass Pod Security "restricted", as every job pod does
    core.create_namespace({"metadata": {"name": team, "labels": RESTRICTED}}, _request_timeout=TIMEOUT)
    borrowed = f"borrowed-{uuid.uuid4().hex[:6]}"
    release = ["jobcluster", "-n", system]
    names, names_in = [], {}
    try:
        installed = k8s_cluster.helm(
            "install",
            *release,
            str(CHART),
            "--create-namespace",
            "-f",
            str(TEST_VALUES),
            ALL_NAMESPACES,
            *image_values(k8s_image),
            *image_values(k8s_operator_image, "operatorImage"),
        )
        assert "STATUS: deployed" in installed.stdout and "all namespaces (watchAllNamespaces)" in installed.stdout, installed.stdout
        wait_for_the_operator(core, system)
        # the operator's own image: no Java and no Spark in it
        operator = operator_pods(core, system)[0]
        assert operator.spec.containers[0].image == k8s_operator_image
        probe = "import importlib.util, shutil; print(shutil.which('java'), importlib.util.find_spec('pyspark'))"
        inside = k8s_cluster.kubectl("exec", "-n", system, operator.metadata.name, "--", "python", "-c", probe)
        assert inside.stdout.strip() == "None None", inside.stdout
        assert [a.metadata.name for a in core.list_namespaced_service_account(team, _request_timeout=TIMEOUT).items] == ["default"]
        # the chart's default: two operator pods, one holding the Lease (it reconciles), the other standing by
        wait_for(lambda: the_leader(k8s_api, core, system), timeout=120, what="two operator pods and one holding the Lease")

        # wordcount.yaml runs as it is in the operator quick start (test_docs_quickstarts.py)
        for file in ("wordcount-memory.yaml",):
            path = REPO / "manifests" / "examples" / file
            name = yaml.safe_load(path.read_text())["metadata"]["name"]
            names.append(name)
            started = time.monotonic()
            k8s_cluster.kubectl("apply", "-n", team, "-f", str(path))
            job_pods: dict[str, dict] = {}

            def succeeded(name: str = name, job_pods: dict = job_pods) -> bool:
                watch_job_pods(core, team, job_pods)
                document = custom.get_namespaced_custom_object("jobcluster.io", "v1alpha1", team, "flinkjobs", name)
                conditions = {c["type"]: c for c in (document.get("status") or {}).get("conditions", [])}
                assert conditions.get("Failed", {}).get("status") != "True", document["status"]
                return conditions.get("Succeeded", {}).get("status") == "True"

            try:
                wait_for(succeeded, timeout=420, interval=1, what=f"{file} Succeeded")
            except AssertionError as exc:
                flinkjob = k8s_cluster.kubectl("get", "flinkjob", "-n", team, name, "-o", "yaml").stdout
                log = k8s_cluster.kubectl("logs", "-n", system, "deployment/jobcluster-operator", "--tail=60", check=False).stdout
                raise AssertionError(f"{exc}\n{flinkjob}\n{log}") from None
            print(f"{file}: Succeeded {time.monotonic() - started:.0f} s after kubectl apply")
            status = custom.get_namespaced_custom_object("jobcluster.io", "v1alpha1", team, "flinkjobs", name)["status"]
            assert status["lifecycleState"] == "FINISHED" and status["jobStatus"]["state"] == "FINISHED", status
            managers = [p for p in job_pods.values() if p["component"] == "jobmanager"]
            assert managers and all(p["service_account"] == "jobcluster" and p["image"] == k8s_image for p in managers), job_pods
            if file == "wordcount-memory.yaml":  # its pod templates reach both kinds of pods
                assert {p["component"] for p in job_pods.values() if p["labels"].get("team") == "analytics"} == {
                    "jobmanager",
                    "taskmanager",
                }

        # what the operator created, once, in the FlinkJobs' namespace: owned by the chart's ClusterRole
        (account,) = [
            a for a in core.list_namespaced_service_account(team, _request_timeout=TIMEOUT).items if a.metadata.name == "jobcluster"
        ]
        binding = rbac.read_namespaced_role_binding("jobcluster-jobmanager", team, _request_timeout=TIMEOUT)
        assert (binding.role_ref.kind, binding.role_ref.name) == ("ClusterRole", "jobcluster-operator-jobmanager")
        assert [(s.kind, s.name, s.namespace) for s in binding.subjects] == [("ServiceAccount", "jobcluster", team)]
        for created in (account, binding):
            assert [(o.kind, o.name) for o in created.metadata.owner_references] == [("ClusterRole", "jobcluster-operator-jobmanager")]
        job_account = f"system:serviceaccount:{team}:jobcluster"
        for verb, resource, namespace, expected in (("create", "pods", team, "yes"), ("create", "pods", system, "no")):
            answer = k8s_cluster.kubectl("auth", "can-i", verb, resource, "-n", namespace, "--as", job_account, check=False).stdout.strip()
            assert answer == expected, (verb, resource, namespace, answer)
        for name in names:
            k8s_cluster.kubectl("delete", "flinkjob", "-n", team, name, timeout=60)

        # what a FlinkJob cannot have the operator do: run in the operator's own namespace (where it could name the
        # operator's ServiceAccount), or have it bind the JobManager's rights to an account someone else made
        core.create_namespace({"metadata": {"name": borrowed}}, _request_timeout=TIMEOUT)
        core.create_namespaced_service_account(borrowed, {"metadata": {"name": "jobcluster"}}, _request_timeout=TIMEOUT)
        refused = {system: "NamespaceNotWatched", borrowed: "ServiceAccountNotBound"}
        for namespace in refused:
            k8s_cluster.kubectl("apply", "-n", namespace, "-f", str(REPO / "manifests" / "examples" / "wordcount-memory.yaml"))
            names_in[namespace] = "wordcount-memory"
        for namespace, reason in refused.items():

            def warned(namespace: str = namespace, reason: str = reason) -> bool:  # kopf posts events from a queue: a moment later
                events = k8s_cluster.kubectl("get", "events", "-n", namespace, "--field-selector", f"reason={reason}").stdout
                return "wordcount-memory" in events and bool(reported(namespace))

            wait_for(warned, timeout=60, what=f"the refusal in {namespace}: {reason}")
        assert "was not made by the operator" in reported(borrowed) and "namespace " + system in reported(system)
        assert rbac.list_namespaced_role_binding(borrowed, _request_timeout=TIMEOUT).items == []
        assert core.list_namespaced_pod(system, label_selector="app=wordcount-memory", _request_timeout=TIMEOUT).items == []
        k8s_cluster.kubectl("delete", "flinkjob", "-n", system, "wordcount-memory", timeout=60)
        del names_in[system]
        # a watched namespace deleted with a FlinkJob in it: the operator still sees the FlinkJob's deletion and removes
        # its finalizer, so the namespace goes (kopf before 1.42.1 lost the namespace's events: it stayed Terminating)
        held = custom.get_namespaced_custom_object("jobcluster.io", "v1alpha1", borrowed, "flinkjobs", "wordcount-memory")
        assert held["metadata"].get("finalizers"), held["metadata"]
        core.delete_namespace(borrowed, _request_timeout=TIMEOUT)
        wait_for(
            lambda: borrowed not in [n.metadata.name for n in core.list_namespace(_request_timeout=TIMEOUT).items],
            timeout=120,
            what=f"the deleted namespace {borrowed} gone, its FlinkJob's finalizer removed by the operator",
        )
        del names_in[borrowed]
    finally:
        for namespace, name in [
            *((team, name) for name in names),
            *names_in.items(),
        ]:  # the operator gone, nothing would remove its finalizer
            try:
                custom.patch_namespaced_custom_object(
                    "jobcluster.io", "v1alpha1", namespace, "flinkjobs", name, {"metadata": {"finalizers": None}}, _request_timeout=TIMEOUT
                )
            except kubernetes.client.ApiException:
                pass
        k8s_cluster.helm("uninstall", *release, "--wait", check=False)
        k8s_cluster.kubectl("delete", "namespace", borrowed, "--ignore-not-found", "--wait=false", check=False)
    # uninstalling deletes the ClusterRole, and with it (the garbage collector) what the operator created
    wait_for(
        lambda: (
            [a.metadata.name for a in core.list_namespaced_service_account(team, _request_timeout=TIMEOUT).items] == ["default"]
            and rbac.list_namespaced_role_binding(team, _request_timeout=TIMEOUT).items == []
        ),
        timeout=60,
        what="the JobManager's ServiceAccount and RoleBinding gone",
    )
    assert not [r for r in rbac.list_cluster_role(_request_timeout=TIMEOUT).items if r.metadata.name.startswith("jobcluster-operator")]
    wait_for(lambda: operator_pods(core, system) == [], timeout=60, what="the operator pod gone")
    core.delete_namespace(team, _request_timeout=TIMEOUT)
    core.delete_namespace(system, _request_timeout=TIMEOUT)
