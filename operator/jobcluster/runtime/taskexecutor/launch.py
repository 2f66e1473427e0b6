"""The launch contract of a TaskExecutor process, typed, and its one encoding as environment variables.

The JobManager tells every TaskExecutor it starts the same few things (Flink's
``ContaineredTaskManagerParameters`` and the TaskManager's environment): the
cluster, the ResourceManager's address and fencing token, the job's Spark master;
per worker its ResourceID; and where it runs. Every driver builds a process's
environment with :meth:`TaskExecutorLaunchSettings.environment`, and the
TaskExecutor's runner reads it back with :meth:`TaskExecutorLaunch.from_environ`:
no other code names these variables.

Where a platform decides the location itself it is left out, and the platform
sets it in the container: YARN's launch script (the container's directory, log
directory and ``$NM_HOST``), a pod's entry script (its emptyDir and pod IP).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

from jobcluster.errors import IllegalConfigurationError
from jobcluster.runtime.entrypoint import layout
from jobcluster.spark.processes import SparkMasterAddress

ENV_RESOURCE_ID = "JOBCLUSTER_RESOURCE_ID"
ENV_RESOURCE_MANAGER_ADDRESS = "JOBCLUSTER_RESOURCE_MANAGER_ADDRESS"
ENV_RESOURCE_MANAGER_ID = "JOBCLUSTER_RESOURCE_MANAGER_ID"
# The job's Spark master (``spark://`` and web URL): a TaskExecutor starts its Spark worker as soon as the master is ALIVE.
ENV_SPARK_MASTER_URL = "JOBCLUSTER_SPARK_MASTER_URL"
ENV_SPARK_MASTER_WEB_URL = "JOBCLUSTER_SPARK_MASTER_WEB_URL"


@dataclass(frozen=True)
class TaskExecutorLocation:
    """Where a process of the cluster runs: its cluster directory (the staged configuration, its scratch space),
    its log directory and the host it binds to."""

    cluster_dir: Path
    log_dir: Path
    bind_host: str


@dataclass(frozen=True)
class TaskExecutorLaunchSettings:
    """What the JobManager tells every TaskExecutor of its cluster.

    ``resource_manager_address``: the RpcService URL of the ResourceManager;
    ``resource_manager_id``: its fencing token; ``spark_master``: the job's Spark
    master, None when the TaskExecutor learns it from the JobMaster instead.
    """

    cluster_id: str
    resource_manager_address: str
    resource_manager_id: str
    spark_master: SparkMasterAddress | None = None

    def environment(self, resource_id: str, *, secret: str | None = None, location: TaskExecutorLocation | None = None) -> dict[str, str]:
        """The environment of the TaskExecutor ``resource_id``.

        ``secret``: the cluster secret, only where the platform has no private file
        for it (YARN ships it as a LocalResource, Kubernetes as a Secret volume);
        ``location``: only where the platform does not set it (a local process).
        """
        env = {
            layout.ENV_CLUSTER_ID: self.cluster_id,
            ENV_RESOURCE_ID: resource_id,
            ENV_RESOURCE_MANAGER_ADDRESS: self.resource_manager_address,
            ENV_RESOURCE_MANAGER_ID: self.resource_manager_id,
        }
        if self.spark_master is not None:
            env |= {ENV_SPARK_MASTER_URL: self.spark_master.url, ENV_SPARK_MASTER_WEB_URL: self.spark_master.web_url}
        if secret is not None:
            env[layout.ENV_CLUSTER_SECRET] = secret
        if location is not None:
            env |= {
                layout.ENV_CLUSTER_DIR: str(location.cluster_dir),
                layout.ENV_LOG_DIR: str(location.log_dir),
                layout.ENV_BIND_HOST: location.bind_host,
            }
        return env


@dataclass(frozen=True)
class TaskExecutorLaunch:
    """What one TaskExecutor process was told at launch: the cluster's settings, its ResourceID, location and secret."""

    settings: TaskExecutorLaunchSettings
    resource_id: str
    location: TaskExecutorLocation
    secret: str

    @classmethod
    def from_environ(cls, env: MutableMapping[str, str]) -> TaskExecutorLaunch:
        """Read the launch from ``env`` (``os.environ``), taking the secret out of it (``cluster_dir.take_cluster_secret``).

        Raises:
            IllegalConfigurationError: a variable of the contract is missing: this process
                was not started by a driver (or its platform did not set its location).
        """
        missing = [
            name
            for name in (ENV_RESOURCE_ID, ENV_RESOURCE_MANAGER_ADDRESS, ENV_RESOURCE_MANAGER_ID, layout.ENV_CLUSTER_DIR, layout.ENV_LOG_DIR)
            if not env.get(name)
        ]
        if missing:
            raise IllegalConfigurationError(f"not started as a TaskExecutor of a job cluster: {', '.join(missing)} not set")
        cluster_dir = Path(env[layout.ENV_CLUSTER_DIR])
        try:
            secret = layout.take_cluster_secret(env, cluster_dir)
        except KeyError as exc:
            raise IllegalConfigurationError(f"not started as a TaskExecutor of a job cluster: no cluster secret ({exc})") from None
        master_url, master_web_url = env.get(ENV_SPARK_MASTER_URL), env.get(ENV_SPARK_MASTER_WEB_URL)
        settings = TaskExecutorLaunchSettings(
            cluster_id=env.get(layout.ENV_CLUSTER_ID, ""),
            resource_manager_address=env[ENV_RESOURCE_MANAGER_ADDRESS],
            resource_manager_id=env[ENV_RESOURCE_MANAGER_ID],
            spark_master=SparkMasterAddress(master_url, master_web_url) if master_url and master_web_url else None,
        )
        location = TaskExecutorLocation(cluster_dir, Path(env[layout.ENV_LOG_DIR]), env.get(layout.ENV_BIND_HOST, "127.0.0.1"))
        return cls(settings, env[ENV_RESOURCE_ID], location, secret)
