"""Names shared by the manifests and the container entry points (``entrypoints/``).

Why one place: the builders set these names (objects, mount paths, environment
variables) and the entry-point scripts in the pods read them; the scripts get
every path from the environment, so they need no copy of this module.
"""

from __future__ import annotations

#: The container that runs jobcluster in every pod; a pod template's container of this name is merged with it.
MAIN_CONTAINER_NAME = "jobcluster-main-container"

#: Where the ConfigMap with the staged files is mounted (read-only) in JobManager and TaskManager pods.
STAGED_MOUNT_PATH = "/opt/jobcluster/staged"
STAGED_VOLUME = "jobcluster-staged"
#: A writable emptyDir: the JobManager's working copy of the staged files, and the logs of every pod.
WORK_MOUNT_PATH = "/opt/jobcluster/work"
WORK_VOLUME = "jobcluster-work"

#: Where the Secret with the cluster's secret is mounted (read-only); the entry points copy it into
#: the cluster directory (``cluster-secret``, mode 0600), where the bootstraps read it.  A file, not an
#: environment variable: a process's initial environment stays readable in ``/proc/<pid>/environ``.
SECRET_MOUNT_PATH = "/opt/jobcluster/secret"
SECRET_VOLUME = "jobcluster-secret"

#: Entry-point scripts in ``jobcluster.kubernetes.entrypoint.dir``.
JOB_MANAGER_ENTRYPOINT = "jobmanager"
TASK_MANAGER_ENTRYPOINT = "taskmanager"

#: The key of the cluster's secret in the Secret ``<cluster-id>-secret``.
SECRET_KEY = "cluster-secret"
#: The port name of the REST endpoint (container port and Service port).
REST_PORT_NAME = "rest"

# Environment the entry points read (besides jobcluster's own, runtime/entrypoint/layout.py).
ENV_STAGED_DIR = "JOBCLUSTER_STAGED_DIR"
ENV_WORK_DIR = "JOBCLUSTER_WORK_DIR"
ENV_SECRET_DIR = "JOBCLUSTER_SECRET_DIR"
ENV_POD_IP = "JOBCLUSTER_POD_IP"
ENV_POD_NAME = "JOBCLUSTER_POD_NAME"
ENV_NAMESPACE = "JOBCLUSTER_NAMESPACE"
ENV_JOB_MANAGER_ADDRESS = "JOBCLUSTER_JOBMANAGER_ADDRESS"


def deployment_name(cluster_id: str) -> str:
    """The JobManager Deployment: ``<cluster-id>`` (Flink's name)."""
    return cluster_id


def rest_service_name(cluster_id: str) -> str:
    """The REST Service: ``<cluster-id>-rest`` (Flink's name)."""
    return f"{cluster_id}-rest"


def ingress_name(cluster_id: str) -> str:
    """The Ingress to the REST Service: ``<cluster-id>``, the resource's name (the Flink Kubernetes Operator's)."""
    return cluster_id


def config_map_name(cluster_id: str) -> str:
    """The ConfigMap of staged files: ``jobcluster-config-<cluster-id>`` (Flink: ``flink-config-<cluster-id>``)."""
    return f"jobcluster-config-{cluster_id}"


def secret_name(cluster_id: str) -> str:
    """The Secret holding the cluster's secret: ``<cluster-id>-secret``."""
    return f"{cluster_id}-secret"


def job_result_name(cluster_id: str) -> str:
    """The ConfigMap a finished cluster leaves for its owner: ``<cluster-id>-job-result`` (Flink's job result store)."""
    return f"{cluster_id}-job-result"
