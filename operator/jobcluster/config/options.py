"""The configuration keys of the shared runtime, with their types, defaults and meanings.

Why: the keys are Flink's, so a Flink user's configuration file means the same
thing here.  One constant per key, named after the field of Flink's options
class it mirrors (``TaskManagerOptions.TOTAL_PROCESS_MEMORY`` becomes
``TASK_MANAGER_TOTAL_PROCESS_MEMORY``), lets code refer to an option instead
of repeating a string, and gives the checks and the docs one place to read
descriptions from (:data:`CORE_OPTIONS`).  A target's own options live beside
its backend, as Flink keeps ``YarnConfigOptions`` in flink-yarn
(``backends/yarn/config_options.py``, ``backends/kubernetes/config_options.py``);
``backends/registry.py`` collects every option.

Defaults are typed values: memory sizes in bytes (int), durations in seconds
(float), fractions as the 32-bit float Flink uses, widened to a double.  A
default of ``None`` means "unset unless configured".  Keys that jobcluster
does not know are never rejected; they pass through the configuration
untouched.
"""

from __future__ import annotations

from typing import Any

from jobcluster.config.config_option import ConfigOption, ConfigPrefix, options_declared_in
from jobcluster.config.targets import NAMES, DeploymentTarget
from jobcluster.config.values import INT_MAX, LONG_MAX, parse_float32

_MiB = 1 << 20
_GiB = 1 << 30


def _fraction(text: str) -> float:
    """A fraction default as Flink holds it: the float32 nearest to ``text``, widened."""
    return parse_float32(text)


# --------------------------------------------------------------------------
# Deployment and job
# --------------------------------------------------------------------------

EXECUTION_TARGET = ConfigOption(
    "execution.target",
    "str",
    DeploymentTarget.LOCAL.value,
    description="Where the job cluster runs: 'local' (Flink's MiniCluster: the JobManager and the TaskExecutors in one "
    "process on this machine, the program's Spark in local mode), 'local-cluster' (a cluster of processes on this machine: "
    "TaskExecutors with Spark workers), 'yarn-application' (also accepted as 'yarn-per-job', Flink 1.x's name) or "
    "'kubernetes-application'. Picks the PipelineExecutor and ClusterDescriptor.",
    choices=NAMES,
)
EXECUTION_ATTACHED = ConfigOption(
    "execution.attached",
    "bool",
    False,
    description="If true the client waits for the job's result and prints it; if false it prints the cluster/application id and returns.",
)
PIPELINE_NAME = ConfigOption(
    "pipeline.name",
    "str",
    None,
    description="Name of the job; defaults to the program's file name when unset.",
)
PIPELINE_FIXED_JOB_ID = ConfigOption(
    "$internal.pipeline.job-id",
    "str",
    None,
    description="JobID of the job (32 hexadecimal digits) instead of a new one (Flink's internal option of the same "
    "key). The FlinkJob operator sets it to redeploy a streaming job in last-state mode: the job keeps its "
    "checkpoints, <execution.checkpointing.dir>/<job-id>, and resumes from them. Not for hand use.",
)
PARALLELISM_DEFAULT = ConfigOption(
    "parallelism.default",
    "int",
    1,
    description="Parallelism of the job: number of slots requested, and Spark's default parallelism.",
    minimum=1,
)

# --------------------------------------------------------------------------
# TaskManager (TaskExecutor) resources
# --------------------------------------------------------------------------

MAX_PARALLELISM = ConfigOption(
    "pipeline.max-parallelism",
    "int",
    -1,
    description="Upper bound the job's parallelism may be scaled to; -1 = max(128, parallelism).",
    minimum=-1,
    maximum=1 << 15,
)
NUM_TASK_SLOTS = ConfigOption(
    "taskmanager.numberOfTaskSlots",
    "int",
    1,
    description="Slots per TaskExecutor; each slot is one Spark core of the TaskExecutor's worker. "
    "Also the default CPU cores of a TaskExecutor.",
    minimum=1,
)
TASK_MANAGER_CPU_CORES = ConfigOption(
    "taskmanager.cpu.cores",
    "double",
    None,
    description="CPU cores of a TaskExecutor (container vcores). Unset: taskmanager.numberOfTaskSlots.",
    positive=True,
)

TASK_MANAGER_TOTAL_PROCESS_MEMORY = ConfigOption(
    "taskmanager.memory.process.size",
    "memory",
    None,
    description="Total Process Memory of a TaskExecutor container (bytes, Flink size syntax): "
    "Total Flink Memory + JVM Metaspace + JVM Overhead. The container is requested with this size.",
)
TASK_MANAGER_TOTAL_FLINK_MEMORY = ConfigOption(
    "taskmanager.memory.flink.size",
    "memory",
    None,
    description="Total Flink Memory of a TaskExecutor: framework and task heap and off-heap, "
    "network and managed memory. Excludes JVM Metaspace and JVM Overhead.",
)
TASK_MANAGER_FRAMEWORK_HEAP_MEMORY = ConfigOption(
    "taskmanager.memory.framework.heap.size",
    "memory",
    128 * _MiB,
    description="Framework Heap Memory of a TaskExecutor; becomes the Spark worker daemon heap.",
)
TASK_MANAGER_TASK_HEAP_MEMORY = ConfigOption(
    "taskmanager.memory.task.heap.size",
    "memory",
    None,
    description="Task Heap Memory of a TaskExecutor; becomes the Spark executor heap "
    "(spark.executor.memory). Unset: the rest of Total Flink Memory.",
)
TASK_MANAGER_FRAMEWORK_OFF_HEAP_MEMORY = ConfigOption(
    "taskmanager.memory.framework.off-heap.size",
    "memory",
    128 * _MiB,
    description="Framework Off-Heap Memory of a TaskExecutor; becomes the Spark worker daemon's direct-memory limit.",
)
TASK_MANAGER_TASK_OFF_HEAP_MEMORY = ConfigOption(
    "taskmanager.memory.task.off-heap.size",
    "memory",
    0,
    description="Task Off-Heap Memory of a TaskExecutor; goes to the PySpark workers, whose limit "
    "(RLIMIT_DATA, per worker) is it plus PYTHON's share of managed memory, divided by the slots.",
)
TASK_MANAGER_MANAGED_MEMORY_SIZE = ConfigOption(
    "taskmanager.memory.managed.size",
    "memory",
    None,
    deprecated_keys=("taskmanager.memory.size",),
    description="Managed Memory of a TaskExecutor (native memory), shared by its consumers "
    "(taskmanager.memory.managed.consumer-weights): OPERATOR's share becomes Spark's off-heap memory "
    "(spark.memory.offHeap.size), PYTHON's the PySpark workers' (their RLIMIT_DATA). "
    "Unset: taskmanager.memory.managed.fraction of Total Flink Memory.",
)
TASK_MANAGER_MANAGED_MEMORY_FRACTION = ConfigOption(
    "taskmanager.memory.managed.fraction",
    "float",
    _fraction("0.4"),
    description="Fraction of Total Flink Memory used as Managed Memory when "
    "taskmanager.memory.managed.size is unset (32-bit float, in [0, 1)).",
)
TASK_MANAGER_MANAGED_MEMORY_CONSUMER_WEIGHTS = ConfigOption(
    "taskmanager.memory.managed.consumer-weights",
    "map",
    {"OPERATOR": "70", "STATE_BACKEND": "70", "PYTHON": "30"},
    description="Weights by which the consumers of a job share Managed Memory (non-negative integers; a consumer "
    "left out weighs 0; DATAPROC stands for both OPERATOR and STATE_BACKEND). A PySpark job has two: OPERATOR "
    "(Spark's off-heap execution and storage memory) and, with python.fn-execution.memory.managed, PYTHON "
    "(the PySpark workers); STATE_BACKEND has no consumer in Spark.",
)
PYTHON_USE_MANAGED_MEMORY = ConfigOption(
    "python.fn-execution.memory.managed",
    "bool",
    True,
    description="Whether the PySpark workers take PYTHON's share of Managed Memory "
    "(taskmanager.memory.managed.consumer-weights) on top of Task Off-Heap Memory. "
    "If false, they get Task Off-Heap Memory only, and Spark's off-heap memory all of Managed Memory.",
)
TASK_MANAGER_NETWORK_MEMORY_MIN = ConfigOption(
    "taskmanager.memory.network.min",
    "memory",
    64 * _MiB,
    deprecated_keys=("taskmanager.network.memory.min",),
    description="Lower bound of the Network Memory of a TaskExecutor (JVM direct memory); "
    "the network becomes the Spark executor's direct-memory limit.",
)
TASK_MANAGER_NETWORK_MEMORY_MAX = ConfigOption(
    "taskmanager.memory.network.max",
    "memory",
    LONG_MAX,
    deprecated_keys=("taskmanager.network.memory.max",),
    description="Upper bound of the Network Memory of a TaskExecutor. Default: unlimited (2**63-1 bytes, as in Flink 1.17 and later).",
)
TASK_MANAGER_NETWORK_MEMORY_FRACTION = ConfigOption(
    "taskmanager.memory.network.fraction",
    "float",
    _fraction("0.1"),
    deprecated_keys=("taskmanager.network.memory.fraction",),
    description="Fraction of Total Flink Memory used as Network Memory, capped to [network.min, network.max] (32-bit float, in [0, 1)).",
)
TASK_MANAGER_JVM_METASPACE = ConfigOption(
    "taskmanager.memory.jvm-metaspace.size",
    "memory",
    256 * _MiB,
    description="JVM Metaspace of a TaskExecutor container; split between the Spark worker "
    "daemon (2/8) and the Spark executor (the rest) as -XX:MaxMetaspaceSize.",
)
TASK_MANAGER_JVM_OVERHEAD_MIN = ConfigOption(
    "taskmanager.memory.jvm-overhead.min",
    "memory",
    192 * _MiB,
    description="Lower bound of the JVM Overhead of a TaskExecutor container: native memory no "
    "limit covers (thread stacks, code cache, the TaskExecutor and PySpark Python processes).",
)
TASK_MANAGER_JVM_OVERHEAD_MAX = ConfigOption(
    "taskmanager.memory.jvm-overhead.max",
    "memory",
    1 * _GiB,
    description="Upper bound of the JVM Overhead of a TaskExecutor container.",
)
TASK_MANAGER_JVM_OVERHEAD_FRACTION = ConfigOption(
    "taskmanager.memory.jvm-overhead.fraction",
    "float",
    _fraction("0.1"),
    description="Fraction of Total Process Memory used as JVM Overhead, capped to "
    "[jvm-overhead.min, jvm-overhead.max] (32-bit float, in [0, 1)).",
)

# --------------------------------------------------------------------------
# JobManager resources
# --------------------------------------------------------------------------

JOB_MANAGER_TOTAL_PROCESS_MEMORY = ConfigOption(
    "jobmanager.memory.process.size",
    "memory",
    None,
    description="Total Process Memory of the JobManager container (bytes, Flink size syntax): "
    "Total Flink Memory + JVM Metaspace + JVM Overhead.",
)
JOB_MANAGER_TOTAL_FLINK_MEMORY = ConfigOption(
    "jobmanager.memory.flink.size",
    "memory",
    None,
    description="Total Flink Memory of the JobManager: JVM Heap + Off-Heap Memory.",
)
JOB_MANAGER_JVM_HEAP_MEMORY = ConfigOption(
    "jobmanager.memory.heap.size",
    "memory",
    None,
    description="JVM Heap of the JobManager; becomes the Spark driver heap (spark.driver.memory). Unset: the rest of Total Flink Memory.",
)
JOB_MANAGER_OFF_HEAP_MEMORY = ConfigOption(
    "jobmanager.memory.off-heap.size",
    "memory",
    128 * _MiB,
    description="Off-Heap Memory of the JobManager; becomes the Spark master daemon (heap and "
    "direct memory) and the Spark driver's direct-memory limit.",
)
JOB_MANAGER_JVM_DIRECT_MEMORY_LIMIT_ENABLED = ConfigOption(
    "jobmanager.memory.enable-jvm-direct-memory-limit",
    "bool",
    False,
    description="Whether the JobManager's Flink JVM arguments carry -XX:MaxDirectMemorySize "
    "(= Off-Heap Memory). The Spark JVMs are always limited.",
)
JOB_MANAGER_JVM_METASPACE = ConfigOption(
    "jobmanager.memory.jvm-metaspace.size",
    "memory",
    256 * _MiB,
    description="JVM Metaspace of the JobManager container; split between the Spark master daemon (2/8) and the Spark driver (the rest).",
)
JOB_MANAGER_JVM_OVERHEAD_MIN = ConfigOption(
    "jobmanager.memory.jvm-overhead.min",
    "memory",
    192 * _MiB,
    description="Lower bound of the JVM Overhead of the JobManager container: native memory no "
    "limit covers (thread stacks, the entrypoint and PySpark driver Python processes).",
)
JOB_MANAGER_JVM_OVERHEAD_MAX = ConfigOption(
    "jobmanager.memory.jvm-overhead.max",
    "memory",
    1 * _GiB,
    description="Upper bound of the JVM Overhead of the JobManager container.",
)
JOB_MANAGER_JVM_OVERHEAD_FRACTION = ConfigOption(
    "jobmanager.memory.jvm-overhead.fraction",
    "float",
    _fraction("0.1"),
    description="Fraction of Total Process Memory used as JVM Overhead, capped to "
    "[jvm-overhead.min, jvm-overhead.max] (32-bit float, in [0, 1)).",
)

# --------------------------------------------------------------------------
# Cluster services
# --------------------------------------------------------------------------

HEARTBEAT_INTERVAL = ConfigOption(
    "heartbeat.interval",
    "duration",
    10.0,
    description="Time between heartbeat requests (seconds; Flink duration syntax, plain number = ms).",
    positive=True,
)
HEARTBEAT_TIMEOUT = ConfigOption(
    "heartbeat.timeout",
    "duration",
    50.0,
    description="Time without a heartbeat after which the peer counts as lost (seconds).",
    positive=True,
)
RESOURCE_MANAGER_TASK_MANAGER_TIMEOUT = ConfigOption(
    "resourcemanager.taskmanager-timeout",
    "duration",
    30.0,
    description="Idle time after which the ResourceManager releases a TaskExecutor without allocated slots (seconds).",
    positive=True,
)
TASK_MANAGER_REGISTRATION_TIMEOUT = ConfigOption(
    "taskmanager.registration.timeout",
    "duration",
    300.0,
    description="Time a TaskExecutor keeps trying to register at the ResourceManager before it gives up and exits (seconds).",
    positive=True,
)
SLOT_REQUEST_TIMEOUT = ConfigOption(
    "slot.request.timeout",
    "duration",
    300.0,
    description="Time the JobMaster waits for the slots it requested before failing the job (seconds).",
    positive=True,
)
SLOT_MANAGER_MAX_SLOTS = ConfigOption(
    "slotmanager.number-of-slots.max",
    "int",
    INT_MAX,
    description="Upper bound of slots in the cluster; no worker is requested beyond it. Default: unlimited (2**31-1).",
    minimum=1,
)
RPC_ASK_TIMEOUT = ConfigOption(
    "pekko.ask.timeout",
    "duration",
    10.0,
    deprecated_keys=("akka.ask.timeout",),
    description="Timeout of every remote call between cluster components (seconds).",
    positive=True,
)
REST_ADDRESS = ConfigOption(
    "rest.address",
    "str",
    "127.0.0.1",
    description="Address the JobManager's REST endpoint binds to and advertises.",
)
REST_BIND_ADDRESS = ConfigOption(
    "rest.bind-address",
    "str",
    "",
    description="Addresses the JobManager's REST endpoint binds to, separated by ',' (Flink's option; Flink takes one); "
    "default: rest.address. A Kubernetes JobManager pod binds its pod IP and its own loopback, where "
    "kubectl port-forward and the client's port-forward arrive.",
)
REST_PORT = ConfigOption(
    "rest.port",
    "int",
    8081,
    description="Port of the JobManager's REST endpoint; 0 picks any free port (several per-job clusters can then share a machine).",
    minimum=0,
    maximum=65535,
)
REST_BIND_PORT = ConfigOption(
    "rest.bind-port",
    "str",
    None,
    description="Port(s) the JobManager's REST endpoint binds to, the first free one taken: a port, a range such as "
    "50100-50200, or a list of both separated by ',' (Flink's option). Unset: rest.port; on YARN, any free port of the "
    "ApplicationMaster's node, so set a range there that a firewall lets the client reach. Kubernetes binds rest.port, "
    "the REST Service's port, whatever this says.",
)

# --------------------------------------------------------------------------
# Failure handling
# --------------------------------------------------------------------------

RESTART_STRATEGY = ConfigOption(
    "restart-strategy.type",
    "str",
    "none",
    fallback_keys=("restart-strategy",),
    description="What the JobMaster does when the job fails: 'none' (fail the job) or "
    "'fixed-delay' (rerun up to restart-strategy.fixed-delay.attempts times).",
    choices=("none", "off", "disable", "fixed-delay"),
)
RESTART_ATTEMPTS = ConfigOption(
    "restart-strategy.fixed-delay.attempts",
    "int",
    1,
    description="Number of reruns with the fixed-delay restart strategy.",
    minimum=0,
)
RESTART_DELAY = ConfigOption(
    "restart-strategy.fixed-delay.delay",
    "duration",
    1.0,
    description="Pause before each rerun with the fixed-delay restart strategy (seconds).",
)

# --------------------------------------------------------------------------
# Checkpoints and savepoints (streaming queries)
# --------------------------------------------------------------------------

CHECKPOINTS_DIRECTORY = ConfigOption(
    "execution.checkpointing.dir",
    "str",
    None,
    deprecated_keys=("state.checkpoints.dir",),
    description="Directory (a path or URI: file:, hdfs://, a volume's path) under which each job checkpoints, in "
    "<dir>/<job-id>/; every streaming query of the program checkpoints in <dir>/<job-id>/<query name> "
    "(Spark's spark.sql.streaming.checkpointLocation). The driver and every executor must reach it: on YARN and "
    "Kubernetes a shared file system. Unset: queries without their own checkpointLocation cannot resume.",
)
SAVEPOINT_DIRECTORY = ConfigOption(
    "execution.checkpointing.savepoint-dir",
    "str",
    None,
    deprecated_keys=("state.savepoints.dir",),
    description="Default directory of the savepoints that `jobcluster stop` and `jobcluster savepoint` take when "
    "given none (a path or URI the driver reaches).",
)
SAVEPOINT_PATH = ConfigOption(
    "execution.state-recovery.path",
    "str",
    None,
    deprecated_keys=("execution.savepoint.path",),
    description="Savepoint the job starts from (`jobcluster run -s`): each of its queries is restored into the "
    "query of the same name. Needs execution.checkpointing.dir.",
)
SAVEPOINT_IGNORE_UNCLAIMED_STATE = ConfigOption(
    "execution.state-recovery.ignore-unclaimed-state",
    "bool",
    False,
    deprecated_keys=("execution.savepoint.ignore-unclaimed-state",),
    description="Start from a savepoint that holds a query the program does not run, dropping that query's "
    "state (`--allowNonRestoredState`); when false such a job fails before waiting for its queries.",
)
CHECKPOINTING_TIMEOUT = ConfigOption(
    "execution.checkpointing.timeout",
    "duration",
    600.0,
    description="Longest a savepoint may take, stopping the queries included (seconds); it fails after that.",
    positive=True,
)

# --------------------------------------------------------------------------
# jobcluster's own
# --------------------------------------------------------------------------

WEB_REFRESH_INTERVAL = ConfigOption(
    "web.refresh-interval",
    "duration",
    3.0,
    description="How often the JobMaster reads the job's progress from Spark's monitoring API and its streaming queries "
    "from the driver agent, which the REST API, the web dashboard and an attached run show (seconds; Flink duration "
    "syntax, plain number = ms, as Flink's key for the dashboard's refresh). Each read costs the driver CPU that a "
    "streaming job's micro-batches would use.",
    positive=True,
)
METRICS_FETCHER_UPDATE_INTERVAL = ConfigOption(
    "metrics.fetcher.update-interval",
    "duration",
    10.0,
    description="How often the Spark JVMs (driver, executors) report their JVM metrics, which the web dashboard "
    "charts for the JobManager and each TaskManager (seconds, at least 1; Flink's key for the dashboard's metric refresh).",
    positive=True,
)
WEB_DASHBOARD_DIR = ConfigOption(
    "jobcluster.web.dashboard-dir",
    "str",
    None,
    description="Folder of Flink's web dashboard that the REST endpoint serves at / (the web/ folder of "
    "flink-runtime-web). Unset: $JOBCLUSTER_CACHE/flink-runtime-web-<version>/web where the JobManager runs "
    "(default ~/.cache/jobcluster), which `python -m jobcluster.runtime.rest.dashboard` fills; on yarn-application, "
    "the client's copy, which it ships to the ApplicationMaster (fetched first when missing). Set, it names a folder "
    "on the JobManager's machine, and nothing is shipped.",
)
WEB_DASHBOARD_VERSION = ConfigOption(
    "jobcluster.web.dashboard-version",
    "str",
    "2.3.0",
    description="Which release of Flink's web dashboard the REST endpoint serves at /: 2.3.0 (with Flink 2's "
    "Applications and Rescales pages) or 1.20.3; the REST API answers both. Flink has no such option (a Flink cluster "
    "serves its own release's dashboard). The files are those `python -m jobcluster.runtime.rest.dashboard` fetched "
    "into $JOBCLUSTER_CACHE/flink-runtime-web-<version>/web (the image has both); ignored when "
    "jobcluster.web.dashboard-dir is set.",
    choices=("2.3.0", "1.20.3"),
)
LOG_LEVEL = ConfigOption(
    "jobcluster.log.level",
    "str",
    "INFO",
    description="Level of the JobManager's and the TaskExecutors' own log (Python's logging levels; Flink sets its "
    "processes' level in log4j's rootLogger.level). The Spark driver's and executors' level is Spark's spark.log.level.",
    choices=("DEBUG", "INFO", "WARNING", "ERROR"),
)
S3A_CONNECTOR = ConfigOption(
    "jobcluster.s3a.connector",
    "str",
    "auto",
    description="Whether the client adds the S3A connector (hadoop-aws of Spark's Hadoop and the AWS SDK modules it "
    "needs, fetched once by Ivy from Maven Central into $JOBCLUSTER_CACHE/s3a-connector) to the job's jars: 'auto' when "
    "the job's configuration, arguments or savepoint name an s3a:// URI and neither Spark's jars nor --jars hold "
    "hadoop-aws; 'always'; 'never'. Only where the cluster runs the client's Spark (local, local-cluster, "
    "yarn-application); the Kubernetes image carries it. A mirror: spark.jars.repositories or spark.jars.ivySettings.",
    choices=("auto", "always", "never"),
)

CLUSTER_STAGING_KEEP = ConfigOption(
    "jobcluster.staging.keep",
    "bool",
    False,
    description="On the local targets, keep the cluster's staging directory ($JOBCLUSTER_HOME/clusters/<cluster-id>: "
    "program files, JobGraph, effective configuration) after the job ends, for debugging; remove it by hand. On YARN and "
    "Kubernetes the containers' copies go with them.",
)
LOGS_MAX_AGE = ConfigOption(
    "jobcluster.logs.max-age",
    "duration",
    7 * 86400.0,
    description="Age after which the log directory of an ended local job cluster is removed (seconds; "
    "age = time since its last log line). Pruned when a local cluster is deployed and by `jobcluster prune`; "
    "the logs of a running cluster are never removed.",
    positive=True,
)

EXECUTOR_REGISTRATION_TIMEOUT = ConfigOption(
    "jobcluster.executor.registration.timeout",
    "duration",
    120.0,
    description="Time the running Spark application may go without a single registered executor before the "
    "JobMaster fails the job (seconds). Counts from spark-submit, and again whenever the last executor is lost; "
    "it covers executors that cannot start (bad executor JVM options, resources no worker offers). Long enough "
    "for a lost TaskExecutor to be replaced (heartbeat.timeout plus a start).",
)

DRIVER_OUTPUT_MAX_FILE_SIZE = ConfigOption(
    "jobcluster.driver.output.max-file-size",
    "memory",
    10 * _MiB,
    description="Largest size of one file of the program's stdout (driver.out) and of its stderr (driver.err) in the "
    "cluster's log directory (bytes; Flink size syntax, e.g. 10m). When the next byte would not fit, the file is "
    "rotated: driver.out becomes driver.out.1, driver.out.1 becomes driver.out.2, and so on, split at exactly this size.",
    minimum=1024,
)
DRIVER_OUTPUT_MAX_FILES = ConfigOption(
    "jobcluster.driver.output.max-files",
    "int",
    10,
    description="Files kept of the program's stdout and, apart, of its stderr, the live file included; the oldest is "
    "deleted when a rotation would keep more. Each stream takes at most max-files x max-file-size on disk.",
    minimum=1,
)
DRIVER_OUTPUT_CONSOLE = ConfigOption(
    "jobcluster.driver.output.console",
    "bool",
    False,
    description="Whether the program's stdout and stderr also go to the JobManager process's own stdout and stderr, "
    "besides driver.out and driver.err. On kubernetes-application it is true unless set: the JobManager container's log "
    "(kubectl logs) then holds the program's output, as a Flink application's JobManager log does. Elsewhere the client "
    "prints the output, and YARN keeps driver.out and driver.err with the container's logs.",
)
CLIENT_STREAMING_PROGRESS_INTERVAL = ConfigOption(
    "jobcluster.client.streaming-progress-interval",
    "duration",
    10.0,
    description="Time between the progress lines an attached client prints for each query of a streaming job "
    "(batch, input and processing rates, state rows, age of the last commit), instead of Spark's job and task "
    "counts (seconds; Flink duration syntax, e.g. 30s). A query starting or stopping is printed at once.",
    positive=True,
)
LOCAL_MEMORY_CHECK_INTERVAL = ConfigOption(
    "jobcluster.local.memory-check-interval",
    "duration",
    3.0,
    description="On the local-cluster target (not on local, the MiniCluster, whose TaskExecutors are no processes), "
    "how often the JobManager measures each TaskExecutor's process tree (the TaskExecutor, "
    "its Spark worker and executor JVMs, the PySpark workers: the sum of their resident memory, as YARN's NodeManager "
    "measures a container) against its taskmanager.memory.process.size, which nothing enforces there; the first time it is "
    "over, a warning names the option to change (seconds; YARN's default container-monitor interval; 0 = never).",
    minimum=0,
)

SECURITY_ENCRYPT_DATA_PLANE = ConfigOption(
    "jobcluster.security.encrypt-data-plane",
    "bool",
    False,
    description="Encrypt Spark's RPC and block transfers between the driver, executors and daemons "
    "(spark.network.crypto.enabled: AES, keys agreed through the cluster's Spark secret); "
    "off by default because it costs CPU on every shuffle byte. Authentication is always on.",
)

# --------------------------------------------------------------------------
# Containers (yarn-application, kubernetes-application)
# --------------------------------------------------------------------------

CONTAINERIZED_MASTER_ENV = ConfigPrefix(
    "containerized.master.env.",
    "An environment variable of the JobManager's container (the ApplicationMaster on YARN, the JobManager pod's main "
    "container on Kubernetes): containerized.master.env.JAVA_HOME: /usr/lib/jvm/java-21 sets JAVA_HOME, which picks the "
    "Java of the Spark driver and of the YARN client there. Flink's prefix. jobcluster's own variables win over one of the "
    "same name. Not read by the local targets.",
)
CONTAINERIZED_TASK_MANAGER_ENV = ConfigPrefix(
    "containerized.taskmanager.env.",
    "An environment variable of every TaskManager container (the TaskExecutors' YARN containers, the TaskManager pods' "
    "main container): containerized.taskmanager.env.JAVA_HOME picks the Java of the Spark worker and executors there, "
    "which the PySpark workers inherit too. Flink's prefix. jobcluster's own variables win over one of the same name. Not "
    "read by the local targets.",
)


#: Every option above, in documentation order: the options of the shared runtime. With each
#: backend's own (``backends/*/config_options.py``) they make ``backends.registry.ALL_OPTIONS``.
CORE_OPTIONS: tuple[ConfigOption[Any], ...] = options_declared_in(globals())
