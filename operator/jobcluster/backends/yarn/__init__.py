"""The ``yarn-per-job`` target: job clusters as YARN applications.

YARN is reached through its official Java clients (YarnClient, AMRMClient,
NMClient from the Hadoop client jars that ship with pyspark), driven from
Python through the py4j gateway in :mod:`jobcluster.backends.yarn.gateway`;
HDFS through WebHDFS (the ``hdfs`` package). The client side is
``descriptor.py``, the ApplicationMaster's side ``entrypoint.py`` and ``driver.py``.
"""

from __future__ import annotations

from jobcluster.backends.yarn.descriptor import YarnClusterDescriptor
from jobcluster.config.configuration import Configuration


def create_cluster_descriptor(config: Configuration) -> YarnClusterDescriptor:
    return YarnClusterDescriptor(config)
