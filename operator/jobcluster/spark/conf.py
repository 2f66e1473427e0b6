"""The user's ``spark.*`` settings: passed to the job's Spark application, except those the cluster decides.

Why: ``-D spark.x=y`` should mean to ``jobcluster run`` what ``--conf spark.x=y``
means to ``spark-submit``.  But some Spark settings are derived from the memory
model, the slots and the cluster itself (executor and driver sizes, cores,
master, addresses, scratch directories); a user value for one of them would
break the invariant that every limit fits its container, or the cluster.  Those
are refused before anything is deployed, naming the jobcluster option that sets
them.  The JVM options of executor and driver are merged instead: the user's
come first, the memory model's limits last (the JVM takes the last occurrence),
and the options that would set a limit are refused.
"""

from __future__ import annotations

from jobcluster.config import options as o
from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError

SPARK_PREFIX = "spark."

_TM_SIZE = f"{o.TASK_MANAGER_TOTAL_PROCESS_MEMORY.key} (see `jobcluster memory`)"
_JM_SIZE = f"{o.JOB_MANAGER_TOTAL_PROCESS_MEMORY.key} (see `jobcluster memory --jobmanager`)"
_CORES = f"-p ({o.PARALLELISM_DEFAULT.key}) and {o.NUM_TASK_SLOTS.key}"
_CLUSTER = "it is decided by the job cluster"
_WEIGHTS = o.TASK_MANAGER_MANAGED_MEMORY_CONSUMER_WEIGHTS.key
_PYSPARK_MEMORY = (
    f"PYTHON's weight in {_WEIGHTS} (with {o.PYTHON_USE_MANAGED_MEMORY.key}), {o.TASK_MANAGER_MANAGED_MEMORY_SIZE.key} "
    f"or {o.TASK_MANAGER_TASK_OFF_HEAP_MEMORY.key}; the PySpark workers' limit is their share divided by the slots"
)
_OFF_HEAP_MEMORY = f"{o.TASK_MANAGER_MANAGED_MEMORY_SIZE.key} or OPERATOR's weight in {_WEIGHTS}"
_CLUSTER_PYTHON = (
    "nothing: the cluster runs the client's Python (the one `jobcluster` runs on) on the local targets and, shipped, on "
    "YARN (or python.executable there), the image's on Kubernetes"
)
_UI_ROOT = "the REST endpoint serves the driver's UI under /spark/ and gives it its root with each request"

#: Spark keys the cluster decides, and what to set instead.
RESERVED_SPARK_KEYS: dict[str, str] = {
    "spark.master": f"-t ({o.EXECUTION_TARGET.key}); the job runs against its own cluster's Spark master",
    "spark.submit.deployMode": f"-t ({o.EXECUTION_TARGET.key}); the driver runs in the JobManager (client mode)",
    "spark.app.name": o.PIPELINE_NAME.key,
    "spark.cores.max": _CORES,
    "spark.executor.cores": _CORES,
    "spark.executor.instances": _CORES,
    "spark.task.cpus": _CORES,
    "spark.dynamicAllocation.enabled": _CORES,
    "spark.deploy.defaultCores": _CORES,
    "spark.executor.memory": f"{o.TASK_MANAGER_TASK_HEAP_MEMORY.key} or {_TM_SIZE}",
    "spark.executor.memoryOverhead": f"{o.TASK_MANAGER_JVM_OVERHEAD_MIN.key}/.max/.fraction",
    "spark.executor.memoryOverheadFactor": f"{o.TASK_MANAGER_JVM_OVERHEAD_MIN.key}/.max/.fraction",
    "spark.executor.pyspark.memory": _PYSPARK_MEMORY,
    "spark.python.daemon.module": f"nothing: the cluster's daemon sets each PySpark worker's memory limit ({_PYSPARK_MEMORY})",
    "spark.memory.offHeap.enabled": _OFF_HEAP_MEMORY,
    "spark.memory.offHeap.size": _OFF_HEAP_MEMORY,
    "spark.network.maxRemoteBlockSizeFetchToMem": f"{o.TASK_MANAGER_NETWORK_MEMORY_MIN.key}/.max/.fraction",
    "spark.driver.memory": f"{o.JOB_MANAGER_JVM_HEAP_MEMORY.key} or {_JM_SIZE}",
    "spark.driver.memoryOverhead": f"{o.JOB_MANAGER_JVM_OVERHEAD_MIN.key}/.max/.fraction",
    "spark.driver.memoryOverheadFactor": f"{o.JOB_MANAGER_JVM_OVERHEAD_MIN.key}/.max/.fraction",
    "spark.driver.cores": f"nothing: {_CLUSTER} (the driver runs in the JobManager container)",
    "spark.driver.host": f"nothing: {_CLUSTER} (its bind host)",
    "spark.driver.bindAddress": f"nothing: {_CLUSTER} (its bind host)",
    "spark.driver.port": f"nothing: {_CLUSTER}",
    "spark.ui.port": f"nothing: {_CLUSTER} (the JobMaster follows the job through it)",
    "spark.ui.enabled": f"nothing: {_CLUSTER} (the JobMaster follows the job through the driver's UI)",
    "spark.ui.proxyBase": f"nothing: {_UI_ROOT}",
    "spark.ui.reverseProxy": f"nothing: {_UI_ROOT}",  # it makes the driver set spark.ui.proxyBase itself
    "spark.local.dir": f"nothing: {_CLUSTER} (scratch space lives and dies with the cluster)",
    "spark.pyspark.python": _CLUSTER_PYTHON,
    "spark.pyspark.driver.python": _CLUSTER_PYTHON,
    "spark.authenticate": f"nothing: {_CLUSTER} (its own secret)",
    "spark.authenticate.secret": f"nothing: {_CLUSTER} (its own secret)",
}

#: Spark Connect instead of classic PySpark (Spark 4's ``spark.api.mode``, ``spark.remote``), and why a job cluster refuses it.
_CONNECT = (
    "Spark Connect: the job's driver runs in the JobManager as a classic PySpark driver, where checkpoints, savepoints, "
    "stop and -s apply, and serves no Spark Connect endpoint; leave it out, the same DataFrame program runs unchanged"
)

#: JVM options that would override a limit of the memory model, and the option that sets the limit.
_RESERVED_JVM_OPTIONS: dict[str, dict[str, str]] = {
    "spark.executor.extraJavaOptions": {
        "-Xmx": o.TASK_MANAGER_TASK_HEAP_MEMORY.key,
        "-Xms": o.TASK_MANAGER_TASK_HEAP_MEMORY.key,
        "-XX:MaxDirectMemorySize": o.TASK_MANAGER_NETWORK_MEMORY_MIN.key,
        "-XX:MaxMetaspaceSize": o.TASK_MANAGER_JVM_METASPACE.key,
        "-Djava.io.tmpdir": "nothing (scratch space lives and dies with the cluster)",
    },
    "spark.driver.extraJavaOptions": {
        "-Xmx": o.JOB_MANAGER_JVM_HEAP_MEMORY.key,
        "-Xms": o.JOB_MANAGER_JVM_HEAP_MEMORY.key,
        "-XX:MaxDirectMemorySize": o.JOB_MANAGER_OFF_HEAP_MEMORY.key,
        "-XX:MaxMetaspaceSize": o.JOB_MANAGER_JVM_METASPACE.key,
        "-Djava.io.tmpdir": "nothing (scratch space lives and dies with the cluster)",
        "-Dspark.ui.proxyBase": f"nothing ({_UI_ROOT})",
    },
}


def user_spark_conf(config: Configuration) -> dict[str, str]:
    """Every ``spark.*`` key of ``config`` with its text, checked.

    Raises:
        IllegalConfigurationError: a key the cluster decides (``RESERVED_SPARK_KEYS``),
            JVM options that set a memory limit, or Spark Connect (``spark.api.mode``
            other than ``classic``, ``spark.remote``); the message names each offending
            key and the jobcluster option to use instead.
    """
    conf = {key: config[key] for key in config if key.startswith(SPARK_PREFIX)}
    problems = [f"{key} (set {RESERVED_SPARK_KEYS[key]} instead)" for key in conf if key in RESERVED_SPARK_KEYS]
    connect = [f"{key}={conf[key]}" for key in ("spark.api.mode", "spark.remote") if key in conf]
    if "spark.remote" in conf or conf.get("spark.api.mode", "classic").strip().lower() != "classic":
        problems.append(f"{' and '.join(connect)} ({_CONNECT})")
    for key, reserved in _RESERVED_JVM_OPTIONS.items():
        for flag in conf.get(key, "").split():
            for prefix, instead in reserved.items():
                if flag.startswith(prefix):
                    problems.append(f"{flag} in {key} (set {instead} instead)")
    if problems:
        raise IllegalConfigurationError(
            "these Spark settings are decided by the job cluster and cannot be given with -D: " + "; ".join(problems) + "."
        )
    return conf


def merge_spark_conf(user: dict[str, str], cluster: dict[str, str]) -> dict[str, str]:
    """The application's Spark settings: ``user``'s (checked by :func:`user_spark_conf`), then the cluster's.

    The cluster's settings win, except JVM options (``*.extraJavaOptions``), which
    are joined: the user's first, the cluster's limits last, so the limits hold.
    """
    merged = {**user, **cluster}
    for key in _RESERVED_JVM_OPTIONS:
        if key in user and key in cluster:
            merged[key] = f"{user[key]} {cluster[key]}"
    return merged
