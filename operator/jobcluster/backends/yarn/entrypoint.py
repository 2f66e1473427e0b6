"""YarnJobClusterEntrypoint: the ApplicationMaster's command, ``python -m jobcluster.backends.yarn.entrypoint``.

The same JobClusterEntrypoint as on ``local``, started the way a NodeManager
starts a container (``container_env.application_master_command``): from the
container's working directory, where YARN localized the staged files
(configuration, JobGraph, program, the cluster secret as a private file), with
every log in the container's log directory. What only YARN decides is set here
(Flink's ``YarnEntrypointUtils``): the cluster id is the application id, and the
REST endpoint binds to the NodeManager's host on a free port (several
ApplicationMasters may share a node), which the driver registers with the
ResourceManager as the application's host, RPC port and tracking URL; and the
web dashboard the client shipped (dashboard_files.py) is the one it serves.
"""

from __future__ import annotations

import os
from pathlib import Path

from jobcluster.backends.yarn.container_env import ContainerEnvironment
from jobcluster.backends.yarn.dashboard_files import container_dashboard_dir
from jobcluster.backends.yarn.driver import create_driver
from jobcluster.config import options
from jobcluster.runtime.entrypoint.bootstrap import run_entrypoint
from jobcluster.runtime.entrypoint.job_cluster_entrypoint import EntrypointContext
from jobcluster.runtime.entrypoint.layout import ENV_CLUSTER_ID
from jobcluster.runtime.rest.dashboard import dashboard_installed


def application_master_context() -> EntrypointContext:
    """The entrypoint's context in this ApplicationMaster container.

    Raises:
        YarnDeploymentError: this process does not run in a YARN container.
    """
    container = ContainerEnvironment.from_environ(os.environ)
    os.environ[ENV_CLUSTER_ID] = container.application_id
    overrides = {options.REST_ADDRESS.key: container.node_host, options.REST_PORT.key: "0"}
    shipped = container_dashboard_dir(Path.cwd())
    if dashboard_installed(shipped):  # localized by the NodeManager: the client ships it only when the option is unset
        overrides[options.WEB_DASHBOARD_DIR.key] = str(shipped)
    return EntrypointContext.from_env(overrides)


if __name__ == "__main__":
    run_entrypoint(application_master_context, create_driver)
