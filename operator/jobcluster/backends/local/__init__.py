"""The ``local`` target: the embedded default, job clusters as local processes."""

from __future__ import annotations

from jobcluster.backends.local.descriptor import LocalClusterDescriptor
from jobcluster.backends.local.driver import LocalProcessDriver
from jobcluster.config.configuration import Configuration


def create_cluster_descriptor(config: Configuration) -> LocalClusterDescriptor:
    return LocalClusterDescriptor()


def create_driver(config: Configuration, rest_url: str) -> LocalProcessDriver:
    return LocalProcessDriver()
