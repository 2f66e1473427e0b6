"""The target names: one definition (config/targets.py), and every place that lists targets agrees with it."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
import yaml

from jobcluster.backends import registry
from jobcluster.config import options
from jobcluster.config.targets import YARN_PER_JOB, DeploymentTarget, canonical
from jobcluster.controller.resource import TARGET_KUBERNETES, TARGET_YARN, FlinkJobSpec

REPO = Path(__file__).resolve().parents[2]
CRDS = [
    REPO / "manifests" / "crd" / "flinkjobs.jobcluster.io.yaml",
    REPO / "charts" / "jobcluster-operator" / "crds" / "flinkjobs.jobcluster.io.yaml",
]


def test_execution_target_accepts_exactly_the_targets_and_defaults_to_local():
    assert options.EXECUTION_TARGET.choices == ("local", "local-cluster", "yarn-application", "kubernetes-application", "yarn-per-job")
    assert options.EXECUTION_TARGET.choices == (*DeploymentTarget, "yarn-per-job")
    assert options.EXECUTION_TARGET.default == DeploymentTarget.LOCAL


def test_registry_has_a_backend_for_every_target():
    assert set(registry.TARGETS) == set(DeploymentTarget)
    assert registry.known_targets() == ["kubernetes-application", "local", "local-cluster", "yarn-application"]


def test_a_target_is_its_name_as_configuration_text():
    assert str(DeploymentTarget.YARN_APPLICATION) == "yarn-application"
    assert DeploymentTarget("kubernetes-application") is DeploymentTarget.KUBERNETES_APPLICATION


def test_yarn_per_job_is_the_yarn_targets_other_name():
    """Flink 1.x's name of its YARN mode is accepted wherever a target is named, for the same target."""
    assert DeploymentTarget("yarn-per-job") is DeploymentTarget("yarn-application") is DeploymentTarget.YARN_APPLICATION
    assert canonical("yarn-per-job") == canonical("yarn-application") == "yarn-application" and canonical("local") == "local"
    with pytest.raises(ValueError, match="yarn-session"):
        DeploymentTarget("yarn-session")


def flinkjob_target_schema(crd_path: Path) -> dict:
    crd = yaml.safe_load(crd_path.read_text(encoding="utf-8"))
    (version,) = crd["spec"]["versions"]
    target: dict = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["target"]
    return target


@pytest.mark.parametrize("crd_path", CRDS, ids=lambda path: str(path.relative_to(REPO)))
def test_flinkjob_crd_enum_is_the_operators_targets(crd_path):
    # The operator deploys to YARN and Kubernetes (not local); the CRD, the FlinkJob model and the controller's names agree.
    schema = flinkjob_target_schema(crd_path)
    model_targets = list(typing.get_args(FlinkJobSpec.model_fields["target"].annotation))

    assert schema["enum"] == model_targets == [DeploymentTarget.KUBERNETES_APPLICATION, DeploymentTarget.YARN_APPLICATION, YARN_PER_JOB]
    assert schema["default"] == FlinkJobSpec.model_fields["target"].default == TARGET_KUBERNETES
    assert (TARGET_KUBERNETES, TARGET_YARN) == (DeploymentTarget.KUBERNETES_APPLICATION, DeploymentTarget.YARN_APPLICATION)
