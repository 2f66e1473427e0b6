"""The values of ``execution.target``: where a job cluster runs.

Why one definition: the option's choices, the backend registry, the CLI, each
backend's ClusterDescriptor and the FlinkJob model all name targets, and a
name spelled differently in one of them would be a target that cannot be
reached.  The FlinkJob CRD's YAML enum is checked against this by a unit test.
"""

from __future__ import annotations

from enum import StrEnum


class DeploymentTarget(StrEnum):
    """A target's name, as ``-t`` and ``execution.target`` take it.

    Flink's names: ``YarnDeploymentTarget.PER_JOB`` and
    ``KubernetesDeploymentTarget.APPLICATION``; ``local`` runs the job cluster
    as processes on this machine.  A member is its name (``str``), so it can be
    compared with and stored as configuration text directly.
    """

    LOCAL = "local"
    YARN_PER_JOB = "yarn-per-job"
    KUBERNETES_APPLICATION = "kubernetes-application"
