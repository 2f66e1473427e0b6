"""The layout of a staged job cluster, shared by every ClusterDescriptor and the entrypoint.

A descriptor stages these files wherever its containers can fetch them
(a local directory, HDFS, a ConfigMap); the entrypoint and TaskExecutors
find them in their working directory under the same names.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

CONFIG_FILE = "jobcluster.yaml"  # effective configuration, flat keys
JOB_GRAPH_FILE = "jobgraph.json"  # the serialized JobGraph
ARTIFACTS_DIR = "artifacts"  # the program and user artifacts
SCRATCH_DIR = "tmp"  # Spark's scratch space (spark.local.dir, java.io.tmpdir), one directory per process tree
SECRET_FILE = "cluster-secret"  # the cluster secret, where a platform ships it as a private file (YARN)
REST_INFO_FILE = "rest.json"  # written by the entrypoint once it serves: {"rest_url", "pid"}
STARTUP_FAILURE_PREFIX = "JOBCLUSTER STARTUP FAILED: "  # the line an entrypoint prints when it cannot start

# Environment of the entrypoint and TaskExecutor processes (a TaskExecutor's whole contract: runtime/taskexecutor/launch.py).
ENV_CLUSTER_ID = "JOBCLUSTER_CLUSTER_ID"
ENV_CLUSTER_DIR = "JOBCLUSTER_CLUSTER_DIR"
ENV_LOG_DIR = "JOBCLUSTER_LOG_DIR"
ENV_CLUSTER_SECRET = "JOBCLUSTER_CLUSTER_SECRET"
ENV_BIND_HOST = "JOBCLUSTER_BIND_HOST"


def take_cluster_secret(env: MutableMapping[str, str], cluster_dir: Path | None = None) -> str:
    """The cluster secret: from ``env`` (``os.environ``), removed there, else from :data:`SECRET_FILE`
    in ``cluster_dir``; KeyError when neither has it.

    Removing it from the environment keeps it with the process that was given it:
    the processes it starts (Spark daemons, the driver and the user's program) get
    an environment without it, and the TaskExecutors are handed it explicitly.
    A platform that localizes files privately into the container (YARN) ships it
    as a file instead, so it never appears in a container's launch script.
    """
    if ENV_CLUSTER_SECRET in env:
        return env.pop(ENV_CLUSTER_SECRET)
    if cluster_dir is not None:
        try:
            return (cluster_dir / SECRET_FILE).read_text().strip()
        except FileNotFoundError:
            pass
    raise KeyError(f"{ENV_CLUSTER_SECRET} (or the file {SECRET_FILE} of the cluster directory)")


def config_file(cluster_dir: Path) -> Path:
    return cluster_dir / CONFIG_FILE


def job_graph_file(cluster_dir: Path) -> Path:
    return cluster_dir / JOB_GRAPH_FILE


def scratch_dir(cluster_dir: Path, owner: str) -> Path:
    """Scratch space of one process tree of the cluster (``owner``: ``jobmanager`` or a ResourceID).

    Spark's local dirs (shuffle and spill files, executor directories) and the
    JVMs' ``java.io.tmpdir`` go here, inside the cluster's own directory, so
    nothing outlives the cluster and a lost TaskExecutor's files can be removed.
    """
    return cluster_dir / SCRATCH_DIR / owner


def scratch_env(directory: Path) -> dict[str, str]:
    """Environment that points a Spark daemon and its children (executors, PySpark workers) at ``directory``.

    ``SPARK_LOCAL_DIRS`` for Spark's local dirs (a worker hands subdirectories of
    it to its executors), ``TMPDIR`` for Python, and ``java.io.tmpdir`` through
    ``JAVA_TOOL_OPTIONS`` (which executors inherit from their worker) for native
    libraries Spark's codecs unpack there.
    """
    tool_options = " ".join(filter(None, (os.environ.get("JAVA_TOOL_OPTIONS"), f"-Djava.io.tmpdir={directory}")))
    return {"SPARK_LOCAL_DIRS": str(directory), "TMPDIR": str(directory), "JAVA_TOOL_OPTIONS": tool_options}
