"""The operator's side of a target: where a FlinkJob's cluster is, and what the operator must know of the target.

A FlinkJob's cluster is deployed and found through the target's ClusterDescriptor
alone; an :class:`OperatorHook` per target (``backends/<name>/operator_hook.py``)
adds the little the descriptor cannot know: the descriptor for a FlinkJob (its
namespace, its Hadoop configuration), what its cluster carries to be found again
(an owner, a tag), which cluster ids are the FlinkJob's, and what the operator keeps
(in the FlinkJob's status) to reach the cluster once the objects its spec names are gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from jobcluster.client.descriptor import ClusterDescriptor
from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError


class InvalidSpecError(IllegalConfigurationError):
    """A FlinkJob spec that cannot be deployed; ``reason`` is a CamelCase word for conditions and events;
    ``transient`` when what the spec names may come to exist (a ConfigMap applied after the FlinkJob, a program
    URL that did not answer), so that the operator tries again."""

    def __init__(self, message: str, reason: str = "InvalidSpec", transient: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.transient = transient


@dataclass(frozen=True)
class ClusterRef:
    """Where the job cluster of one FlinkJob is.

    ``name``/``uid``: the FlinkJob's (on Kubernetes the name is the cluster id);
    ``cluster_id``: the cluster id as last deployed or found (on YARN the application
    id; empty while unknown); ``hadoop_config_map``: the ConfigMap of the FlinkJob's
    namespace that holds the Hadoop client configuration (YARN); ``access``: what
    :meth:`OperatorHook.access` gave when the cluster was deployed, as kept in the
    FlinkJob's status (file name → content; empty when nothing was kept).
    """

    target: str
    namespace: str
    name: str
    uid: str
    cluster_id: str = ""
    hadoop_config_map: str | None = None
    access: Mapping[str, str] = field(default_factory=dict)


class OperatorHook(Protocol):
    """What the FlinkJob operator must know of one target: how its FlinkJobs map onto the target's ClusterDescriptor
    (blocking calls). Each backend has one (``backends/<name>/operator_hook.py``); the operator does the rest
    through the descriptor."""

    def descriptor(self, ref: ClusterRef, config: Configuration | None = None) -> ClusterDescriptor:
        """The descriptor for the FlinkJob's clusters; ``config`` is the one to deploy with (None: only to look).

        Raises:
            JobClusterError: what the target needs of the FlinkJob is missing (e.g. YARN's Hadoop ConfigMap).
        """

    def prepare(self, ref: ClusterRef, config: Configuration) -> Configuration:
        """``config`` with what the FlinkJob's cluster must carry to be found again (a tag, an owner), after
        making what it needs exist (e.g. the JobManager's ServiceAccount).

        Raises:
            JobClusterError: the platform refuses.
        """

    def cluster_id(self, ref: ClusterRef, descriptor: ClusterDescriptor) -> str:
        """The id of the FlinkJob's cluster (as deployed or found, running or not); ``""`` when none is known."""

    def running(self, ref: ClusterRef, descriptor: ClusterDescriptor) -> list[str]:
        """The ids of every cluster of the FlinkJob that has not ended (the ones a removal stops)."""

    def access(self, ref: ClusterRef) -> dict[str, str]:
        """What to keep to reach the cluster about to be deployed for ``ref`` later without the objects its spec
        names (which may be deleted first, e.g. by ``kubectl delete namespace``): file name → text, ``{}`` when the
        target needs nothing of them (Kubernetes). Read when a deployment begins; handed back as ``ref.access``.

        Raises:
            InvalidSpecError: what the spec names is missing (the deployment would be refused the same way).
            JobClusterError: the platform refuses or cannot be reached.
        """
