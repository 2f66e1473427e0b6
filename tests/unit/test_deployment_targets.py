"""The target names: one definition (config/targets.py), and every place that lists targets agrees with it."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
import yaml

from jobcluster.backends import registry
from jobcluster.config import options
from jobcluster.config.targets import DeploymentTarget
from jobcluster.controller.resource import TARGET_KUBERNETES, TARGET_YARN, FlinkJobSpec

REPO = Path(__file__).resolve().parents[2]
CRDS = [
    REPO / "manifests" / "crd" / "flinkjobs.jobcluster.io.yaml",
    REPO / "charts" / "jobcluster-operator" / "crds" / "flinkjobs.jobcluster.io.yaml",
]


def test_execution_target_accepts_exactly_the_targets_and_defaults_to_local():
    assert options.EXECUTION_TARGET.choices == ("local", "local-cluster", "yarn-per-job", "kubernetes-application")
    assert options.EXECUTION_TARGET.choices == tuple(DeploymentTarget)
    assert options.EXECUTION_TARGET.default == DeploymentTarget.LOCAL


def test_registry_has_a_backend_for_every_target():
    assert set(registry.TARGETS) == set(DeploymentTarget)
    assert registry.known_targets() == ["kubernetes-application", "local", "local-cluster", "yarn-per-job"]


def test_a_target_is_its_name_as_configuration_text():
    assert str(DeploymentTarget.YARN_PER_JOB) == "yarn-per-job"
    assert DeploymentTarget("kubernetes-application") is DeploymentTarget.KUBERNETES_APPLICATION


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

    assert schema["enum"] == model_targets == [DeploymentTarget.KUBERNETES_APPLICATION, DeploymentTarget.YARN_PER_JOB]
    assert schema["default"] == FlinkJobSpec.model_fields["target"].default == TARGET_KUBERNETES
    assert (TARGET_KUBERNETES, TARGET_YARN) == (DeploymentTarget.KUBERNETES_APPLICATION, DeploymentTarget.YARN_PER_JOB)
