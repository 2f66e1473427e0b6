"""Process bootstrap of the JobClusterEntrypoint (a composition root: it picks the driver by target)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from typing import NoReturn

from jobcluster.backends import registry
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.errors import JobClusterError
from jobcluster.logging_setup import configure_process_logging
from jobcluster.processes import PRIVATE_UMASK
from jobcluster.runtime.entrypoint.cluster_dir import STARTUP_FAILURE_PREFIX
from jobcluster.runtime.entrypoint.job_cluster_entrypoint import DriverFactory, EntrypointContext, JobClusterEntrypoint
from jobcluster.runtime.resourcemanager.driver import ResourceManagerDriver

log = logging.getLogger(__name__)


def driver_of_target(config: Configuration, rest_url: str) -> ResourceManagerDriver:
    """The ResourceManagerDriver of the configuration's ``execution.target``."""
    return registry.resource_manager_driver(config.get(options.EXECUTION_TARGET), config, rest_url)


def run_entrypoint(context: Callable[[], EntrypointContext], create_driver: DriverFactory = driver_of_target) -> NoReturn:
    """Run a job cluster in this process and exit with its ApplicationStatus code (1 when it cannot start).

    ``context`` reads where the cluster is from the process's environment; a
    platform's own entry point (YARN's ApplicationMaster) passes its own.
    """
    os.umask(PRIVATE_UMASK)  # on every target, whatever launched us: the cluster's files are the user's only
    configure_process_logging()
    cluster_id = "?"
    try:
        ctx = context()
        cluster_id = ctx.cluster_id
        status = asyncio.run(JobClusterEntrypoint(ctx, create_driver).run())
    except JobClusterError as exc:
        log.exception("job cluster %s failed", cluster_id)
        print(f"{STARTUP_FAILURE_PREFIX}{exc}", file=sys.stderr, flush=True)
        sys.exit(1)
    sys.exit(status.exit_code)


def main() -> NoReturn:
    run_entrypoint(EntrypointContext.from_env)
