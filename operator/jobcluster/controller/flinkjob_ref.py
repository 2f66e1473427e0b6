"""One FlinkJob as the reconciler sees it: its identity, spec and status, and where its cluster is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobcluster.client.operator_hook import ClusterRef
from jobcluster.controller.access_seal import AccessSeal
from jobcluster.controller.resource import TARGET_KUBERNETES


@dataclass(frozen=True)
class FlinkJobRef:
    """The FlinkJob being reconciled: name, namespace, uid, generation, spec and status as the API server has
    them; ``deleting`` once it is marked for deletion."""

    name: str
    namespace: str
    uid: str
    generation: int | None
    spec: Mapping[str, Any]
    status: Mapping[str, Any]
    deleting: bool = False

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> FlinkJobRef:
        """The reference of a FlinkJob object (as JSON from the API server)."""
        metadata = body.get("metadata") or {}
        return cls(
            name=metadata["name"],
            namespace=metadata.get("namespace") or "default",
            uid=metadata.get("uid") or "",
            generation=metadata.get("generation"),
            spec=body.get("spec") or {},
            status=body.get("status") or {},
            deleting=bool(metadata.get("deletionTimestamp")),
        )

    def cluster(self, seal: AccessSeal) -> ClusterRef:
        """Where this FlinkJob's cluster is (from the raw spec and status: valid or not, a cluster may exist); on the
        target it was last deployed to, which the spec may since have changed. The cluster access kept in the status
        counts only when ``seal`` finds the operator's own signature on it (``access_seal.py``)."""
        return ClusterRef(
            target=str(self.status.get("deployedTarget") or self.spec.get("target") or TARGET_KUBERNETES),
            namespace=self.namespace,
            name=self.name,
            uid=self.uid,
            cluster_id=str(self.status.get("clusterId") or ""),
            hadoop_config_map=self.spec.get("hadoopConfigMap"),
            access=seal.opened(self.uid, self.status.get("clusterAccess"), self.status.get("clusterAccessSignature")),
        )
