"""Every configuration key jobcluster reads, with its type, default and meaning.

Why: the keys are Flink's, so a Flink user's configuration file means the same
thing here.  One constant per key, named after the field of Flink's options
class it mirrors (``TaskManagerOptions.TOTAL_PROCESS_MEMORY`` becomes
``TASK_MANAGER_TOTAL_PROCESS_MEMORY``), lets code refer to an option instead
of repeating a string, and gives ``--help`` and the docs one place to read
descriptions from (:data:`ALL_OPTIONS`).

Defaults are typed values: memory sizes in bytes (int), durations in seconds
(float), fractions as the 32-bit float Flink uses, widened to a double.  A
default of ``None`` means "unset unless configured".  Keys that jobcluster
does not know are never rejected; they pass through the configuration
untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from jobcluster.config.targets import DeploymentTarget
from jobcluster.config.values import INT_MAX, LONG_MAX, float32_text, parse_float32

OptionKind = Literal["memory", "int", "float", "double", "str", "bool", "duration"]

_MiB = 1 << 20
_GiB = 1 << 30


@dataclass(frozen=True)
class ConfigOption:
    """A configuration key with its type, default and description.

    ``kind`` decides how the text is parsed: ``memory`` (bytes, Flink size
    syntax), ``int``, ``float`` (Java float, widened exactly), ``double``,
    ``str``, ``bool`` (true/false), ``duration`` (seconds, Flink syntax).
    ``fallback_keys`` and then ``deprecated_keys`` are consulted, in order, when
    ``key`` itself is absent; the option's own key always wins.

    ``minimum``/``maximum`` bound a number, memory size (bytes) or duration
    (seconds), inclusive; ``positive`` requires a value above zero; ``choices``
    lists the accepted values of a ``str`` option.  The client checks every
    option against them before it deploys anything
    (:func:`jobcluster.config.validation.validate_configuration`).
    """

    key: str
    kind: OptionKind
    default: Any | None
    fallback_keys: tuple[str, ...] = ()
    description: str = ""
    deprecated_keys: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    positive: bool = False
    choices: tuple[str, ...] = ()

    @property
    def all_keys(self) -> tuple[str, ...]:
        """The key followed by every fallback and deprecated key, in lookup order."""
        return (self.key, *self.fallback_keys, *self.deprecated_keys)

    def flink_text(self) -> str:
        """The option as Flink's ``ConfigOption.toString`` prints it inside error messages.

        Example: ``Key: 'taskmanager.memory.network.fraction' , default: 0.1
        (fallback keys: [{key=taskmanager.network.memory.fraction, isDeprecated=true}])``.
        """
        fallbacks = [f"{{key={k}, isDeprecated=false}}" for k in self.fallback_keys]
        fallbacks += [f"{{key={k}, isDeprecated=true}}" for k in self.deprecated_keys]
        return f"Key: '{self.key}' , default: {self._default_text()} (fallback keys: [{', '.join(fallbacks)}])"

    def _default_text(self) -> str:
        value = self.default
        if value is None:
            return "null"
        if self.kind == "memory":
            return _memory_text_exact(value)
        if self.kind == "float":
            return float32_text(value)
        if self.kind == "bool":
            return "true" if value else "false"
        return str(value)


def _memory_text_exact(size: int) -> str:
    """Flink's ``MemorySize.toString``: the largest unit that divides the size exactly."""
    unit_name, multiplier = "bytes", 1
    for name, unit in (("kb", 1 << 10), ("mb", 1 << 20), ("gb", 1 << 30), ("tb", 1 << 40)):
        if size % unit:
            break
        unit_name, multiplier = name, unit
    else:  # Flink falls back to bytes when every unit divides the size (0, whole TiB)
        unit_name, multiplier = "bytes", 1
    return f"{size // multiplier} {unit_name}"


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
    description="Where the job cluster runs: 'local' (processes on this machine), "
    "'yarn-per-job' or 'kubernetes-application'. Picks the PipelineExecutor and ClusterDescriptor.",
    choices=tuple(target.value for target in DeploymentTarget),
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
    description="Task Off-Heap Memory of a TaskExecutor; becomes spark.executor.pyspark.memory "
    "(the PySpark workers' limit) when greater than zero.",
)
TASK_MANAGER_MANAGED_MEMORY_SIZE = ConfigOption(
    "taskmanager.memory.managed.size",
    "memory",
    None,
    deprecated_keys=("taskmanager.memory.size",),
    description="Managed Memory of a TaskExecutor (native memory); becomes Spark's off-heap "
    "memory (spark.memory.offHeap.size). Unset: taskmanager.memory.managed.fraction of Total Flink Memory.",
)
TASK_MANAGER_MANAGED_MEMORY_FRACTION = ConfigOption(
    "taskmanager.memory.managed.fraction",
    "float",
    _fraction("0.4"),
    description="Fraction of Total Flink Memory used as Managed Memory when "
    "taskmanager.memory.managed.size is unset (32-bit float, in [0, 1)).",
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
    "daemon (3/8) and the Spark executor (the rest) as -XX:MaxMetaspaceSize.",
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
    description="JVM Metaspace of the JobManager container; split between the Spark master daemon (3/8) and the Spark driver (the rest).",
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
# jobcluster's own
# --------------------------------------------------------------------------

CLUSTER_STAGING_KEEP = ConfigOption(
    "jobcluster.staging.keep",
    "bool",
    False,
    description="Keep the staged artifacts (program files, JobGraph, effective configuration) after the job ends, for debugging.",
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

SECURITY_ENCRYPT_DATA_PLANE = ConfigOption(
    "jobcluster.security.encrypt-data-plane",
    "bool",
    False,
    description="Encrypt Spark's RPC and block transfers between the driver, executors and daemons "
    "(spark.network.crypto.enabled: AES, keys agreed through the cluster's Spark secret); "
    "off by default because it costs CPU on every shuffle byte. Authentication is always on.",
)

# --------------------------------------------------------------------------
# YARN (yarn-per-job): Flink's YarnConfigOptions keys and defaults
# --------------------------------------------------------------------------

YARN_APPLICATION_NAME = ConfigOption(
    "yarn.application.name",
    "str",
    None,
    description="Name of the YARN application. Unset: the job's name (pipeline.name).",
)
YARN_APPLICATION_QUEUE = ConfigOption(
    "yarn.application.queue",
    "str",
    None,
    description="YARN queue the application is submitted to. Unset: YARN's default queue. "
    "A queue the ResourceManager does not list only gives a warning (placement rules may create it), as in Flink.",
)
YARN_APPLICATION_PRIORITY = ConfigOption(
    "yarn.application.priority",
    "int",
    -1,
    description="Priority of the YARN application (a non-negative integer, larger is more urgent); -1 = YARN's default.",
)
YARN_APPLICATION_TYPE = ConfigOption(
    "yarn.application.type",
    "str",
    None,
    description="Application type shown by YARN; 'jobcluster list' finds job clusters by it. Unset: 'jobcluster'.",
)
YARN_APPLICATION_NODE_LABEL = ConfigOption(
    "yarn.application.node-label",
    "str",
    None,
    description="YARN node-label expression for the application's containers. Unset: no label.",
)
YARN_APPLICATION_ATTEMPTS = ConfigOption(
    "yarn.application-attempts",
    "int",
    None,
    description="Number of ApplicationMaster attempts (the first run plus restarts); also capped by YARN's "
    "yarn.resourcemanager.am.max-attempts. Unset: 1.",
)
YARN_APPMASTER_VCORES = ConfigOption(
    "yarn.appmaster.vcores",
    "int",
    1,
    description="Virtual cores of the ApplicationMaster (JobManager) container.",
)
YARN_CONTAINERS_VCORES = ConfigOption(
    "yarn.containers.vcores",
    "int",
    -1,
    description="Virtual cores of each TaskExecutor container when taskmanager.cpu.cores is unset; -1 = taskmanager.numberOfTaskSlots.",
)
YARN_TAGS = ConfigOption(
    "yarn.tags",
    "str",
    "",
    description="Comma-separated tags of the YARN application (jobcluster adds one carrying the JobID).",
)
YARN_STAGING_DIRECTORY = ConfigOption(
    "yarn.staging-directory",
    "str",
    None,
    description="Base directory on the default file system (HDFS) under which the client stages a job's files "
    "in .jobcluster/<application id>/. Unset: the user's HDFS home directory.",
)
YARN_HEARTBEAT_INTERVAL = ConfigOption(
    "yarn.heartbeat.interval",
    "int",
    5,
    deprecated_keys=("yarn.heartbeat-delay",),
    description="Time between the ApplicationMaster's heartbeats with the YARN ResourceManager, in whole "
    "seconds (Flink's unit for this key), while no container is requested.",
)
YARN_CONTAINER_REQUEST_HEARTBEAT_INTERVAL = ConfigOption(
    "yarn.heartbeat.container-request-interval",
    "duration",
    0.5,
    description="Time between heartbeats with the YARN ResourceManager while containers are requested "
    "(seconds; Flink duration syntax, a plain number is milliseconds): allocations arrive with heartbeats.",
)
YARN_APPLICATION_ID = ConfigOption(
    "yarn.application.id",
    "str",
    None,
    description="The YARN application of a running job cluster (application_<cluster timestamp>_<sequence>), "
    "for commands that act on it, like Flink's -yid.",
)
ENV_HADOOP_CONF_DIR = ConfigOption(
    "env.hadoop.conf.dir",
    "str",
    None,
    description="The client's Hadoop configuration directory (core-site.xml, yarn-site.xml, hdfs-site.xml); "
    "takes precedence over HADOOP_CONF_DIR and YARN_CONF_DIR (Flink's option). The containers use the "
    "NodeManagers' own configuration.",
)
YARN_PYTHON = ConfigOption(
    "jobcluster.yarn.python",
    "str",
    None,
    description="Absolute path of a Python (with jobcluster and pyspark installed) present on every YARN node. "
    "Unset: the client's own Python environment is packed, uploaded once to HDFS and shipped to the containers.",
)

# --------------------------------------------------------------------------
# Kubernetes (Flink's KubernetesConfigOptions; used by the kubernetes-application target)
# --------------------------------------------------------------------------

KUBERNETES_CLUSTER_ID = ConfigOption(
    "kubernetes.cluster-id",
    "str",
    None,
    description="Name of the job cluster on Kubernetes: the JobManager Deployment's name and the prefix of every "
    "object of the cluster. At most 45 characters of [a-z0-9-], starting with a letter and ending with a letter or "
    "digit (a DNS-1035 label). Unset: 'jobcluster-' + the JobID.",
)
KUBERNETES_NAMESPACE = ConfigOption(
    "kubernetes.namespace",
    "str",
    "default",
    description="Namespace the job cluster's objects are created in.",
)
KUBERNETES_CONTEXT = ConfigOption(
    "kubernetes.context",
    "str",
    None,
    description="kubeconfig context to use. Unset: the kubeconfig's current context.",
)
KUBERNETES_CONFIG_FILE = ConfigOption(
    "kubernetes.config.file",
    "str",
    None,
    description="kubeconfig file of the client. Unset: as kubectl finds it ($KUBECONFIG, then ~/.kube/config), "
    "or the in-cluster service account.",
)
KUBERNETES_SERVICE_ACCOUNT = ConfigOption(
    "kubernetes.service-account",
    "str",
    "default",
    description="Service account of the JobManager and TaskManager pods, unless their own keys are set.",
)
KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT = ConfigOption(
    "kubernetes.jobmanager.service-account",
    "str",
    "default",
    fallback_keys=("kubernetes.service-account",),
    description="Service account of the JobManager pod. It needs the permissions of manifests/rbac.yaml "
    "(it creates, watches and deletes the TaskManager pods).",
)
KUBERNETES_TASK_MANAGER_SERVICE_ACCOUNT = ConfigOption(
    "kubernetes.taskmanager.service-account",
    "str",
    "default",
    fallback_keys=("kubernetes.service-account",),
    description="Service account of the TaskManager pods.",
)
KUBERNETES_CONTAINER_IMAGE = ConfigOption(
    "kubernetes.container.image.ref",
    "str",
    "jobcluster:0.1.0",
    deprecated_keys=("kubernetes.container.image",),
    description="Image of the JobManager and TaskManager containers (built from entrypoints/Dockerfile).",
)
KUBERNETES_CONTAINER_IMAGE_PULL_POLICY = ConfigOption(
    "kubernetes.container.image.pull-policy",
    "str",
    "IfNotPresent",
    description="Pull policy of the containers' image.",
    choices=("IfNotPresent", "Always", "Never"),
)
KUBERNETES_CONTAINER_IMAGE_PULL_SECRETS = ConfigOption(
    "kubernetes.container.image.pull-secrets",
    "str",
    "",
    description="Names of the Secrets (type kubernetes.io/dockerconfigjson, in kubernetes.namespace) the JobManager and "
    "TaskManager pods pull their image with, separated by ';', e.g. 'registry-a;registry-b' (Flink's option).",
)
KUBERNETES_ENTRYPOINT_DIR = ConfigOption(
    "jobcluster.kubernetes.entrypoint.dir",
    "str",
    "/opt/jobcluster/bin",
    description="Directory holding the 'jobmanager' and 'taskmanager' entry-point scripts (entrypoints/) where the "
    "pods run; the containers' command is '<dir>/jobmanager' or '<dir>/taskmanager'.",
)
KUBERNETES_JOB_MANAGER_CPU = ConfigOption(
    "kubernetes.jobmanager.cpu.amount",
    "double",
    1.0,
    description="CPU request of the JobManager pod (cores).",
    positive=True,
)
KUBERNETES_JOB_MANAGER_CPU_LIMIT_FACTOR = ConfigOption(
    "kubernetes.jobmanager.cpu.limit-factor",
    "double",
    1.0,
    description="The JobManager pod's CPU limit = its request x this factor (at least 1).",
    minimum=1,
)
KUBERNETES_JOB_MANAGER_MEMORY_LIMIT_FACTOR = ConfigOption(
    "kubernetes.jobmanager.memory.limit-factor",
    "double",
    1.0,
    description="The JobManager pod's memory limit = its request (jobmanager.memory.process.size) x this factor (at least 1).",
    minimum=1,
)
KUBERNETES_TASK_MANAGER_CPU = ConfigOption(
    "kubernetes.taskmanager.cpu.amount",
    "double",
    -1.0,
    description="CPU request of a TaskManager pod (cores), used when taskmanager.cpu.cores is unset; "
    "not positive: taskmanager.numberOfTaskSlots.",
)
KUBERNETES_TASK_MANAGER_CPU_LIMIT_FACTOR = ConfigOption(
    "kubernetes.taskmanager.cpu.limit-factor",
    "double",
    1.0,
    description="A TaskManager pod's CPU limit = its request x this factor (at least 1).",
    minimum=1,
)
KUBERNETES_TASK_MANAGER_MEMORY_LIMIT_FACTOR = ConfigOption(
    "kubernetes.taskmanager.memory.limit-factor",
    "double",
    1.0,
    description="A TaskManager pod's memory limit = its request (the TaskExecutor's Total Process Memory) x this factor (at least 1).",
    minimum=1,
)
KUBERNETES_JOB_MANAGER_LABELS = ConfigOption(
    "kubernetes.jobmanager.labels",
    "str",
    None,
    description="Extra labels of the JobManager Deployment and pod, as 'key1:value1,key2:value2'.",
)
KUBERNETES_TASK_MANAGER_LABELS = ConfigOption(
    "kubernetes.taskmanager.labels",
    "str",
    None,
    description="Extra labels of the TaskManager pods, as 'key1:value1,key2:value2'.",
)
KUBERNETES_JOB_MANAGER_ANNOTATIONS = ConfigOption(
    "kubernetes.jobmanager.annotations",
    "str",
    None,
    description="Annotations of the JobManager pod, as 'key1:value1,key2:value2'.",
)
KUBERNETES_TASK_MANAGER_ANNOTATIONS = ConfigOption(
    "kubernetes.taskmanager.annotations",
    "str",
    None,
    description="Annotations of the TaskManager pods, as 'key1:value1,key2:value2'.",
)
KUBERNETES_JOB_MANAGER_NODE_SELECTOR = ConfigOption(
    "kubernetes.jobmanager.node-selector",
    "str",
    None,
    description="Node selector of the JobManager pod, as 'key1:value1,key2:value2'.",
)
KUBERNETES_TASK_MANAGER_NODE_SELECTOR = ConfigOption(
    "kubernetes.taskmanager.node-selector",
    "str",
    None,
    description="Node selector of the TaskManager pods, as 'key1:value1,key2:value2'.",
)
KUBERNETES_JOB_MANAGER_TOLERATIONS = ConfigOption(
    "kubernetes.jobmanager.tolerations",
    "str",
    None,
    description="Tolerations of the JobManager pod, ';'-separated, each 'key:k,operator:Equal,value:v,effect:NoSchedule' "
    "(fields of a Kubernetes toleration; tolerationSeconds an integer).",
)
KUBERNETES_TASK_MANAGER_TOLERATIONS = ConfigOption(
    "kubernetes.taskmanager.tolerations",
    "str",
    None,
    description="Tolerations of the TaskManager pods, in the form of kubernetes.jobmanager.tolerations.",
)
KUBERNETES_REST_SERVICE_EXPOSED_TYPE = ConfigOption(
    "kubernetes.rest-service.exposed.type",
    "str",
    "ClusterIP",
    description="Type of the REST Service '<cluster-id>-rest'. Headless_ClusterIP is a ClusterIP Service without a cluster IP.",
    choices=("ClusterIP", "NodePort", "LoadBalancer", "Headless_ClusterIP"),
)
KUBERNETES_REST_ENDPOINT = ConfigOption(
    "jobcluster.kubernetes.rest.endpoint",
    "str",
    "pod-ip",
    description="How the client reaches the job cluster's REST API: 'pod-ip' = the JobManager pod's IP and rest.port, "
    "and when that IP cannot be reached from the client (off the pod network), a local port-forward through the API "
    "server's pods/portforward; 'port-forward' = always that port-forward; 'service' = the REST Service "
    "'<cluster-id>-rest' by kubernetes.rest-service.exposed.type, as Flink's client does.",
    choices=("pod-ip", "port-forward", "service"),
)
KUBERNETES_JOB_MANAGER_STARTUP_TIMEOUT = ConfigOption(
    "jobcluster.kubernetes.jobmanager.startup-timeout",
    "duration",
    300.0,
    description="Time the client waits for the JobManager pod to run and serve REST (seconds; includes scheduling "
    "and pulling the image); the cluster is deleted when it does not.",
    positive=True,
)
KUBERNETES_JOB_MANAGER_OWNER_REFERENCE = ConfigOption(
    "kubernetes.jobmanager.owner.reference",
    "str",
    None,
    description="Owners of the JobManager Deployment, ';'-separated, each 'apiVersion:v1,kind:K,name:n,uid:u' "
    "(optionally controller:true, blockOwnerDeletion:true). Deleting an owner deletes the whole job cluster.",
)
KUBERNETES_POD_TEMPLATE_FILE = ConfigOption(
    "kubernetes.pod-template-file.default",
    "str",
    None,
    deprecated_keys=("kubernetes.pod-template-file",),
    description="Pod template (a YAML Pod) for the JobManager and TaskManager pods, unless their own keys are set. "
    "The main container is the one named 'jobcluster-main-container'.",
)
KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE = ConfigOption(
    "kubernetes.pod-template-file.jobmanager",
    "str",
    None,
    fallback_keys=("kubernetes.pod-template-file.default",),
    deprecated_keys=("kubernetes.pod-template-file",),
    description="Pod template of the JobManager pod.",
)
KUBERNETES_TASK_MANAGER_POD_TEMPLATE_FILE = ConfigOption(
    "kubernetes.pod-template-file.taskmanager",
    "str",
    None,
    fallback_keys=("kubernetes.pod-template-file.default",),
    deprecated_keys=("kubernetes.pod-template-file",),
    description="Pod template of the TaskManager pods.",
)

#: Every option above, in documentation order.
ALL_OPTIONS: tuple[ConfigOption, ...] = tuple(value for value in list(globals().values()) if isinstance(value, ConfigOption))
