"""Process bootstrap of the JobClusterEntrypoint (a composition root: it picks the driver by target)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from jobcluster.backends import registry
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.errors import JobClusterError
from jobcluster.logging_setup import configure_process_logging
from jobcluster.processes import PRIVATE_UMASK
from jobcluster.runtime.entrypoint.cluster_dir import STARTUP_FAILURE_PREFIX
from jobcluster.runtime.entrypoint.job_cluster_entrypoint import EntrypointContext, JobClusterEntrypoint
from jobcluster.runtime.resourcemanager.driver import ResourceManagerDriver

log = logging.getLogger(__name__)


def main() -> None:
    os.umask(PRIVATE_UMASK)  # on every target, whatever launched us: the cluster's files are the user's only
    configure_process_logging()
    context = EntrypointContext.from_env()

    def create_driver(config: Configuration, rest_url: str) -> ResourceManagerDriver:
        return registry.resource_manager_driver(config.get(options.EXECUTION_TARGET), config, rest_url)

    try:
        status = asyncio.run(JobClusterEntrypoint(context, create_driver).run())
    except JobClusterError as exc:
        log.exception("job cluster %s failed", context.cluster_id)
        print(f"{STARTUP_FAILURE_PREFIX}{exc}", file=sys.stderr, flush=True)
        sys.exit(1)
    sys.exit(status.exit_code)
