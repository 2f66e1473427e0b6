"""The ``yarn-per-job`` target: job clusters as YARN applications.

YARN is reached through its official Java clients (YarnClient, AMRMClient,
NMClient from the Hadoop client jars that ship with pyspark), driven from
Python through the py4j gateway in :mod:`jobcluster.backends.yarn.gateway`.
"""
