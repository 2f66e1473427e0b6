"""The operator's policy on what a FlinkJob's pods may ask for (Pod Security baseline unless its administrator allows
more, and only the ServiceAccounts it allows): each escape refused with the field and the fix, the allowance only from
the operator's defaults, and a refused edit of a running FlinkJob leaving its job running."""

import pytest

from jobcluster.backends.kubernetes.config_options import KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT, KUBERNETES_TASK_MANAGER_SERVICE_ACCOUNT
from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.controller.flinkjob_status import Lifecycle
from jobcluster.controller.job_config import job_configuration
from jobcluster.controller.pod_policy import KINDS, allowed_accounts, allowed_kinds, check_pod_templates, check_service_accounts
from jobcluster.controller.reconciler import Reconciler
from jobcluster.controller.resource import parse_spec
from tests.support.operator_start import start_operator
from tests.unit.test_reconciler import SPEC, FakeClusters, FlinkJob, _stable, reconcile, reconciler_of

MAIN = "jobcluster-main-container"
ESCAPES = [
    (
        "privileged",
        {"containers": [{"name": MAIN, "securityContext": {"privileged": True}}]},
        "containers[jobcluster-main-container].securityContext.privileged",
    ),
    (
        "capabilities",
        {"initContainers": [{"name": "i", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]},
        "initContainers[i].securityContext.capabilities.add",
    ),
    ("host-namespaces", {"hostPID": True}, "spec.hostPID"),
    ("host-namespaces", {"hostNetwork": True}, "spec.hostNetwork"),
    ("host-ports", {"containers": [{"name": "side", "ports": [{"containerPort": 80, "hostPort": 80}]}]}, "ports[80].hostPort"),
    ("host-path", {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, "spec.volumes[root].hostPath"),
]


def spec_with(role: str, pod_spec: dict) -> dict:
    return {**SPEC, role: {"podTemplate": {"spec": pod_spec}}}


@pytest.mark.parametrize(("kind", "pod_spec", "field"), ESCAPES)
@pytest.mark.parametrize("role", ["jobManager", "taskManager"])
def test_each_escape_is_refused_naming_the_field_and_the_option_unless_the_operator_allows_it(kind, pod_spec, field, role):
    spec = parse_spec(spec_with(role, pod_spec))
    with pytest.raises(InvalidSpecError) as refused:
        check_pod_templates(spec, {})
    assert refused.value.reason == "PodTemplateNotAllowed"
    assert f"spec.{role}.podTemplate." in str(refused.value) and field in str(refused.value)
    assert f"add {kind} to jobcluster.operator.pod-template.allowed" in str(refused.value)
    check_pod_templates(spec, {"jobcluster.operator.pod-template.allowed": f"host-path, {kind}"})  # allowed: no error


def test_a_flinkjob_cannot_allow_itself_anything():
    raw = spec_with("jobManager", {"hostNetwork": True})
    raw["flinkConfiguration"] = {"jobcluster.operator.pod-template.allowed": "host-namespaces"}
    clusters, job = FakeClusters(), FlinkJob(raw)
    assert reconcile(reconciler_of(clusters), job) == Lifecycle.FAILED
    assert job.status["failureReason"] == "PodTemplateNotAllowed" and "deploy" not in [c for c, _ in clusters.calls]


def test_a_running_flinkjob_edited_to_escape_runs_on_and_reports_the_refusal():
    clusters = FakeClusters()
    job, reconciler = _stable(clusters, SPEC)
    job.spec, job.generation = spec_with("taskManager", {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}), 2
    assert reconcile(reconciler, job) == Lifecycle.STABLE
    assert job.status["failureReason"] == "PodTemplateNotAllowed" and "the job of the last valid spec runs on" in job.status["error"]
    assert [c for c, _ in clusters.calls].count("deploy") == 1 and "remove" not in [c for c, _ in clusters.calls]


def test_an_unknown_kind_in_the_operators_defaults_stops_it(tmp_path):
    with pytest.raises(InvalidSpecError, match="root-access is not one of privileged"):
        allowed_kinds({"jobcluster.operator.pod-template.allowed": "host-path,root-access"})
    started = start_operator(tmp_path, "jobcluster.operator.pod-template.allowed: root-access\n")
    assert started.returncode == 2 and "root-access is not one of" in started.stderr, started.stderr


def test_a_pod_template_file_in_a_flinkjobs_configuration_is_refused():
    """It would name a file of the operator's own file system, read past the policy above."""
    spec = parse_spec({**SPEC, "flinkConfiguration": {"kubernetes.pod-template-file.jobmanager": "/etc/jobcluster/any.yaml"}})
    with pytest.raises(
        InvalidSpecError, match=r"flinkConfiguration\.kubernetes\.pod-template-file\.jobmanager: .* are spec\.jobManager"
    ) as refused:
        check_pod_templates(spec, {"jobcluster.operator.pod-template.allowed": ",".join(KINDS)})
    assert refused.value.reason == "PodTemplateNotAllowed"


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"serviceAccount": "default"}, "spec.serviceAccount: the pods may not run as ServiceAccount 'default'"),
        ({"serviceAccount": "jobcluster-operator"}, "ServiceAccount 'jobcluster-operator'"),
        (
            {"flinkConfiguration": {"kubernetes.taskmanager.service-account": "ci-deployer"}},
            "spec.flinkConfiguration.kubernetes.taskmanager.service-account: the pods may not run as ServiceAccount 'ci-deployer'",
        ),
    ],
)
def test_pods_run_only_as_a_service_account_the_operator_allows(fields, named):
    spec = parse_spec({**SPEC, **fields})
    with pytest.raises(InvalidSpecError) as refused:
        check_service_accounts(spec, {})
    assert refused.value.reason == "ServiceAccountNotAllowed" and named in str(refused.value)
    assert "allows jobcluster (jobcluster.operator.service-accounts.allowed" in str(refused.value)
    account = fields.get("serviceAccount") or "ci-deployer"
    if account != "default":
        check_service_accounts(spec, {"jobcluster.operator.service-accounts.allowed": f"jobcluster, {account}"})  # allowed
    check_service_accounts(parse_spec({**SPEC, **fields, "target": "yarn-per-job", "hadoopConfigMap": "hadoop"}), {})  # no pods


def test_the_taskmanagers_run_as_the_flinkjobs_service_account(tmp_path):
    """Not as the namespace's ``default`` by omission (as in the Flink Kubernetes Operator)."""
    spec = parse_spec({**SPEC, "serviceAccount": "etl"})
    config = job_configuration(spec, "wc", "ns", "uid-1", {}, tmp_path)
    assert config.get(KUBERNETES_TASK_MANAGER_SERVICE_ACCOUNT) == config.get(KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT) == "etl"
    own = parse_spec({**SPEC, "flinkConfiguration": {"kubernetes.taskmanager.service-account": "workers"}})
    assert job_configuration(own, "wc", "ns", "uid-1", {}, tmp_path).get(KUBERNETES_TASK_MANAGER_SERVICE_ACCOUNT) == "workers"


def test_default_among_the_allowed_accounts_stops_the_operator(tmp_path):
    for listed in ("jobcluster,default", " , "):
        with pytest.raises(InvalidSpecError, match="never 'default'"):
            allowed_accounts({"jobcluster.operator.service-accounts.allowed": listed})
    started = start_operator(tmp_path, "jobcluster.operator.service-accounts.allowed: default\n")
    assert started.returncode == 2 and "never 'default'" in started.stderr, started.stderr


def test_a_flinkjob_of_an_excluded_namespace_is_refused_and_nothing_is_deployed():
    """The chart's operator, watching all namespaces, excludes its own (--exclude-namespace)."""
    clusters, job = FakeClusters(), FlinkJob(SPEC)  # in namespace "jobs"
    reconciler = Reconciler(clusters, {}, excluded_namespaces=["jobcluster-system", "jobs"])  # type: ignore[arg-type]
    assert reconcile(reconciler, job) == Lifecycle.FAILED
    assert job.status["failureReason"] == "NamespaceNotWatched" and "namespace jobs" in job.status["error"]
    assert [c for c, _ in clusters.calls if c == "deploy"] == []
    assert reconcile(Reconciler(clusters, {}, excluded_namespaces=["jobcluster-system"]), FlinkJob(SPEC)) == Lifecycle.DEPLOYED  # type: ignore[arg-type]


def test_the_exclusion_is_only_for_an_operator_watching_all_namespaces():
    from click.testing import CliRunner

    from jobcluster.controller.main import operator

    result = CliRunner().invoke(operator, ["--namespace", "jobs", "--exclude-namespace", "jobcluster-system"])
    assert result.exit_code == 2 and "--exclude-namespace is for an operator watching all namespaces" in result.output
