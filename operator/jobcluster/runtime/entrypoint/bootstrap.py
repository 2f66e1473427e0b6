"""Process bootstrap of the JobClusterEntrypoint, shared by every backend's entry point.

Why the driver factory is an argument: which ResourceManagerDriver a JobManager
uses is decided by the program that starts it, as in Flink, where each
deployment has its own entry point class (``YarnJobClusterEntrypoint``,
``KubernetesApplicationClusterEntrypoint``).  Each backend's
``backends/<name>/entrypoint.py`` is a process's ``__main__`` and passes its own
``create_driver``; the runtime never picks a backend.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from jobcluster.errors import JobClusterError
from jobcluster.logging_setup import configure_process_logging
from jobcluster.processes import PRIVATE_UMASK
from jobcluster.runtime.entrypoint.job_cluster_entrypoint import DriverFactory, EntrypointContext, JobClusterEntrypoint
from jobcluster.runtime.entrypoint.layout import STARTUP_FAILURE_PREFIX

log = logging.getLogger(__name__)


def run_entrypoint(context: Callable[[], EntrypointContext], create_driver: DriverFactory, *, spark_local_mode: bool = False) -> NoReturn:
    """Run a job cluster in this process and exit with its ApplicationStatus code (1 when it cannot start).

    ``context`` reads where the cluster is from the process's environment
    (:meth:`EntrypointContext.from_env`, or a platform's own, like YARN's
    ApplicationMaster); ``create_driver(config, rest_url)`` makes the backend's
    ResourceManagerDriver once the staged configuration is read; ``spark_local_mode``: the program runs in
    Spark's local mode (the MiniCluster, see :class:`JobClusterEntrypoint`).
    """
    os.umask(PRIVATE_UMASK)  # on every target, whatever launched us: the cluster's files are the user's only
    configure_process_logging()
    cluster_id = "?"
    try:
        ctx = context()
        cluster_id = ctx.cluster_id
        status = asyncio.run(JobClusterEntrypoint(ctx, create_driver, spark_local_mode).run())
    except JobClusterError as exc:
        log.exception("job cluster %s failed", cluster_id)
        print(f"{STARTUP_FAILURE_PREFIX}{exc}", file=sys.stderr, flush=True)
        sys.exit(1)
    sys.exit(status.exit_code)
