"""ClusterDescriptor: deploys, finds and stops job clusters of one target.

Flink's contract, per target: compute and validate the ClusterSpecification,
stage the artifacts, serialized JobGraph and effective configuration where the
cluster's containers can fetch them, launch the job-cluster entrypoint, and
hand back a ClusterClient. A deployment that fails leaves nothing behind:
no process, container, pod or staged file.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.config.config_option import ConfigOption
from jobcluster.config.configuration import Configuration
from jobcluster.jobgraph.model import JobGraph
from jobcluster.spark.checkpoints import SavepointError, SavepointMetadata


@dataclass(frozen=True)
class PackagedProgram:
    """The user's program: the PySpark script, its arguments, extra Python files (``--py-files``) and JVM jars (``--jars``).

    ``artifacts``: the ``--py-files``; ``jars``: the ``--jars``, put on the
    driver's and the executors' classpath. ``provided``: the paths among
    ``script``, ``artifacts`` and ``jars`` that are already on the cluster's
    file system (given as ``local:///...``, Flink's scheme for a file in the
    image): absolute, never staged, read where they are by the JobManager.
    """

    script: Path
    args: tuple[str, ...] = ()
    artifacts: tuple[Path, ...] = ()
    provided: frozenset[Path] = frozenset()
    jars: tuple[Path, ...] = ()


@dataclass(frozen=True)
class ClusterSpecification:
    """Sizes of a job cluster's containers (Flink's ClusterSpecification).

    ``master_memory_mib``: the JobManager's total process memory, MiB;
    ``task_manager_memory_mib``: each TaskManager's total process memory, MiB
    (both floored to whole MiB, as Flink requests containers);
    ``slots_per_task_manager``: ``taskmanager.numberOfTaskSlots``.
    """

    master_memory_mib: int
    task_manager_memory_mib: int
    slots_per_task_manager: int


@dataclass(frozen=True)
class JobResult:
    """How the job of a cluster that is gone ended, as the cluster or its platform recorded it.

    ``state``: FINISHED, FAILED or CANCELED (Flink's terminal JobStatus; UNKNOWN when the
    cluster could not tell); ``end_time``: RFC 3339, UTC; ``diagnostics``: the failure cause, if any.
    """

    cluster_id: str
    job_id: str
    state: str
    end_time: str
    diagnostics: str


@dataclass(frozen=True)
class ClusterHandle:
    """A running job cluster as a descriptor finds it; ``rest_token``: the token its mutating REST calls need,
    when this user can read it."""

    cluster_id: str
    target: str
    rest_url: str | None
    job_id: str
    job_name: str
    log_dir: str
    rest_token: str | None = None
    via_proxy: bool = False  # rest_url is YARN's web proxy (RestClusterClient's via_proxy)
    proxy_auth: Any = field(default=None, repr=False, compare=False)  # RestClusterClient's proxy_auth

    def client(self) -> RestClusterClient:
        """A REST client of this cluster (with its token); the cluster must serve REST (``rest_url`` set)."""
        assert self.rest_url is not None, f"cluster {self.cluster_id} does not serve REST yet"
        return RestClusterClient(
            self.rest_url, self.cluster_id, token=self.rest_token, via_proxy=self.via_proxy, proxy_auth=self.proxy_auth
        )


def _silent(message: str) -> None:
    pass


class ClusterDescriptor(abc.ABC):
    """Deploys and manages the job clusters of one ``execution.target``.

    ``progress``: where a descriptor tells the user how a deployment goes, one
    line per step (the CLI prints them to stderr); silent unless set.
    ``runs_client_spark``: whether the cluster runs the client's own Spark (this
    machine's, or shipped from it), so jars it lacks come with the job; false
    where the cluster's Spark is the image's.
    """

    target: str
    progress: Callable[[str], None] = staticmethod(_silent)
    runs_client_spark: bool = True
    client_options: tuple[ConfigOption[Any], ...] = ()
    """The options by which a later client (``jobcluster list``, ``cancel``, ``stop``, ``savepoint``) finds this
    target's clusters: where it looks and how it logs in. A run's hints repeat those it was given."""

    @abc.abstractmethod
    def deploy_job_cluster(
        self, spec: ClusterSpecification, graph: JobGraph, program: PackagedProgram, config: Configuration
    ) -> RestClusterClient:
        """Stage and launch a cluster for ``graph``; DeploymentError (with nothing left behind) on failure."""

    @abc.abstractmethod
    def retrieve(self, cluster_id: str) -> ClusterHandle | None:
        """The running cluster ``cluster_id`` (Flink's ``retrieve``), or None once it is gone.

        Raises:
            JobClusterError: the platform refuses or cannot be reached (a subclass per target).
        """

    @abc.abstractmethod
    def job_result(self, cluster_id: str) -> JobResult | None:
        """How the job of cluster ``cluster_id`` ended, once the cluster is gone, as the cluster or its platform
        recorded it; None while it runs, or when nothing was recorded.

        Raises:
            JobClusterError: the platform refuses or cannot be reached (a subclass per target).
        """

    def pending_reason(self, cluster_id: str) -> str | None:
        """Why the cluster's TaskManagers wait for resources, in the platform's words (a pod the scheduler cannot
        place); None when nothing waits, or the target cannot tell.

        Raises:
            JobClusterError: the platform refuses or cannot be reached (a subclass per target).
        """
        return None

    def remove_job_result(self, cluster_id: str) -> None:
        """Delete the record ``job_result`` reads, where the target keeps one of its own (Kubernetes: a ConfigMap);
        a no-op where the platform keeps the result (YARN) or nothing is kept.

        Raises:
            JobClusterError: the platform refuses or cannot be reached (a subclass per target).
        """
        return None

    @abc.abstractmethod
    def list_clusters(self) -> list[ClusterHandle]:
        """Clusters of this target that are running now."""

    @abc.abstractmethod
    def kill_cluster(self, cluster_id: str) -> None:
        """Stop a cluster without asking its job (last resort; ``cancel`` is the polite way)."""

    def read_savepoint(self, path: str) -> SavepointMetadata | None:
        """The metadata of the savepoint ``path`` as the cluster will see it, read before anything is deployed;
        None where the client does not reach the cluster's file system (the job's driver then reads it when its
        first query starts, and fails the job with the same words).

        Raises:
            SavepointError: ``path`` does not exist or is not a savepoint.
        """
        return None

    def dispose_savepoint(self, path: str) -> None:
        """Delete the savepoint ``path`` (Flink's ``flink savepoint --dispose``) on the target's file system.

        Raises:
            SavepointError: ``path`` is not a savepoint (nothing is deleted), or the client does not reach
                the file system it is on (then a running cluster can: ``POST /savepoint-disposal``).
        """
        raise SavepointError(
            f"the {self.target} target cannot reach {path} from this machine: dispose of it through a running job cluster "
            "(POST /savepoint-disposal) or with the tools of its file system"
        )

    def prune_logs(self, max_age: float) -> list[str]:
        """Remove the logs of ended clusters older than ``max_age`` seconds; returns what was removed.

        Only targets that keep logs on the client's machine have any to prune
        (``local``); elsewhere the platform keeps them (YARN log aggregation,
        Kubernetes pod logs), so the default removes nothing.
        """
        return []

    def prune_shared_files(self, max_age: float | None = None) -> list[str]:
        """Remove the files that the target keeps for many jobs (``yarn-application``: the shipped Python environment's
        parts and the dashboard on HDFS) that no job used for ``max_age`` seconds (None: the target's retention
        option), never one a running cluster may use; returns what was removed. The default keeps none: nothing."""
        return []
