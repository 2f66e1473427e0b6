"""The ``local`` target: the embedded default, job clusters as local processes.

The client side is ``descriptor.py``, the JobManager's side ``entrypoint.py`` and ``driver.py``.
"""

from __future__ import annotations

from jobcluster.backends.local.descriptor import LocalClusterDescriptor
from jobcluster.config.configuration import Configuration


def create_cluster_descriptor(config: Configuration) -> LocalClusterDescriptor:
    return LocalClusterDescriptor()
