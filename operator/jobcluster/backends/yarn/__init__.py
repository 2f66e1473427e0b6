"""The ``yarn-application`` target: job clusters as YARN applications.

YARN is reached through its official Java clients (YarnClient, AMRMClient,
NMClient from the Hadoop client jars that ship with pyspark), driven from
Python through the py4j gateway in :mod:`jobcluster.backends.yarn.gateway`;
HDFS through WebHDFS (the ``hdfs`` package). The client side is
``descriptor.py``, the ApplicationMaster's side ``entrypoint.py`` and ``driver.py``;
the options are declared in ``config_options.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobcluster.backends.yarn.descriptor import YarnClusterDescriptor
    from jobcluster.config.configuration import Configuration


def create_cluster_descriptor(config: Configuration) -> YarnClusterDescriptor:
    """The client's descriptor.

    Imported when called: this package is imported for its options (every configuration is checked
    against them), which must not load py4j, pyspark or WebHDFS.
    """
    from jobcluster.backends.yarn.descriptor import YarnClusterDescriptor

    return YarnClusterDescriptor(config)
