"""The MiniCluster's process (``-t local``), ``python -m jobcluster.backends.local.mini_cluster_entrypoint``.

The JobClusterEntrypoint with the MiniClusterDriver, in Spark's local mode: the
JobManager's components (dispatcher, ResourceManager, SlotManager, JobMaster,
REST) and the TaskExecutors in this one process, and the program's Spark in
local mode with as many threads as the job has slots. The MiniClusterDescriptor
starts it as the local-cluster's entrypoint is started (descriptor.py), so
``jobcluster list``, ``info`` and ``cancel`` find it the same way.
"""

from __future__ import annotations

from jobcluster.backends.local.mini_cluster import create_driver
from jobcluster.runtime.entrypoint.bootstrap import run_entrypoint
from jobcluster.runtime.entrypoint.job_cluster_entrypoint import EntrypointContext

if __name__ == "__main__":
    run_entrypoint(EntrypointContext.from_env, create_driver, spark_local_mode=True)
