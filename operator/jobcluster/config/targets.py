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
    in one process on this machine, as Flink's MiniCluster does (``execution.target:
    local``), and ``local-cluster`` as a cluster of processes on this machine (Spark's
    ``local-cluster`` master).  A member is its name (``str``), so it can be
    compared with and stored as configuration text directly.
    """

    LOCAL = "local"
    LOCAL_CLUSTER = "local-cluster"
    YARN_PER_JOB = "yarn-per-job"
    KUBERNETES_APPLICATION = "kubernetes-application"
