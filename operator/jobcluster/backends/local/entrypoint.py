"""The ``local-cluster`` target's JobManager process, ``python -m jobcluster.backends.local.entrypoint``.

The JobClusterEntrypoint with the LocalProcessDriver: the LocalClusterDescriptor
starts this module as a child process of the client, in the cluster directory,
with the environment of ``runtime/entrypoint/layout.py``.  As in Flink,
where each deployment has its own entry point class, the entry point is what
picks the ResourceManagerDriver.
"""

from __future__ import annotations

from jobcluster.backends.local.driver import LocalProcessDriver
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.runtime.entrypoint.bootstrap import run_entrypoint
from jobcluster.runtime.entrypoint.job_cluster_entrypoint import EntrypointContext


def create_driver(config: Configuration, rest_url: str) -> LocalProcessDriver:
    """The local driver, measuring its TaskExecutors' memory every ``jobcluster.local.memory-check-interval``; it needs no
    address: its TaskExecutors are this process's children on this machine."""
    return LocalProcessDriver(config.get(options.LOCAL_MEMORY_CHECK_INTERVAL))


if __name__ == "__main__":
    run_entrypoint(EntrypointContext.from_env, create_driver)
