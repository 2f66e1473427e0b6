"""The operator's policy on what a FlinkJob's pod templates may ask for (Pod Security baseline unless its
administrator allows more): each escape refused with the field and the fix, the allowance only from the operator's
defaults, and a refused edit of a running FlinkJob leaving its job running."""

import pytest

from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.controller.flinkjob_status import Lifecycle
from jobcluster.controller.pod_policy import allowed_kinds, check_pod_templates
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
