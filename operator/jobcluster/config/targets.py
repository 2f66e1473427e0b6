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

    Flink's names: ``yarn-application`` (Flink 2's ``YarnDeploymentTarget.APPLICATION``:
    the program runs in the ApplicationMaster, as it does here) and
    ``KubernetesDeploymentTarget.APPLICATION``; ``local`` runs the job cluster
    in one process on this machine, as Flink's MiniCluster does (``execution.target:
    local``), and ``local-cluster`` as a cluster of processes on this machine (Spark's
    ``local-cluster`` master).  ``yarn-per-job``, Flink 1.x's name of its per-job mode
    (removed in Flink 2.0), is accepted for the same target: ``DeploymentTarget("yarn-per-job")``
    is :attr:`YARN_APPLICATION`.  A member is its name (``str``), so it can be compared with
    and stored as configuration text directly; text that may hold the older name goes
    through :func:`canonical` first.
    """

    LOCAL = "local"
    LOCAL_CLUSTER = "local-cluster"
    YARN_APPLICATION = "yarn-application"
    KUBERNETES_APPLICATION = "kubernetes-application"

    @classmethod
    def _missing_(cls, value: object) -> DeploymentTarget | None:
        return cls.YARN_APPLICATION if value == YARN_PER_JOB else None


YARN_PER_JOB = "yarn-per-job"
"""The YARN target's other name (Flink 1.x's per-job mode), accepted wherever a target is named."""

NAMES = (*(target.value for target in DeploymentTarget), YARN_PER_JOB)
"""Every name a target is accepted by: the option's choices, the CRD's enum."""


def canonical(name: str) -> str:
    """``name``, or the target's own name when ``name`` is its other one (``yarn-per-job`` → ``yarn-application``)."""
    return DeploymentTarget.YARN_APPLICATION.value if name == YARN_PER_JOB else name
