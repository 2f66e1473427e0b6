"""The local targets: job clusters on this machine.

``local`` (the embedded default) is Flink's MiniCluster: one process with the
JobManager's components and the TaskExecutors (``mini_cluster.py``,
``mini_cluster_entrypoint.py``), the program's Spark in local mode.
``local-cluster`` (Spark's name) is a standalone cluster of processes: an
entrypoint (``entrypoint.py``) whose driver starts TaskExecutor processes,
each with its Spark worker (``driver.py``; its descriptor: ``local_cluster.py``).
The client side of both is ``descriptor.py``.
"""

from __future__ import annotations

from jobcluster.backends.local.descriptor import MiniClusterDescriptor
from jobcluster.config.configuration import Configuration


def create_cluster_descriptor(config: Configuration) -> MiniClusterDescriptor:
    return MiniClusterDescriptor()
