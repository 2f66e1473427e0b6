"""The ``local-cluster`` target's ClusterDescriptor (the backend registry's entry for it; see ``__init__.py``)."""

from __future__ import annotations

from jobcluster.backends.local.descriptor import LocalClusterDescriptor
from jobcluster.config.configuration import Configuration


def create_cluster_descriptor(config: Configuration) -> LocalClusterDescriptor:
    return LocalClusterDescriptor()
