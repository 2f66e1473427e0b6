"""What runs inside a container, and with which limits: process spec to Spark settings.

Why: Flink's memory model sizes a container; inside ours run Spark JVMs and
Python processes.  For the container to be honest, every Flink component
becomes explicit limits of them (one limit, or fixed shares of one component
for two: metaspace, managed memory), so that the sum of all limits plus the
JVM overhead never exceeds the container (the overhead stays the only
unlimited budget: thread stacks, code caches, GC structures, the
TaskExecutor's and PySpark's daemon's Python processes).  A configuration that Spark itself would refuse is
refused here, before anything is deployed, with the option to change.

TaskExecutor container (Spark worker daemon + one executor of the job, with the cores
Spark grants it, at most the slots; see parallelism.py):

==================  =====================================================
Flink component     Spark limit
==================  =====================================================
framework heap      worker daemon heap (``SPARK_DAEMON_MEMORY``)
framework off-heap  worker daemon ``-XX:MaxDirectMemorySize``
task heap           ``spark.executor.memory``; also the worker ``--memory``
task off-heap       the PySpark workers (below)
network             executor ``-XX:MaxDirectMemorySize`` (Netty buffers)
managed             OPERATOR's share: ``spark.memory.offHeap.size``
                    (disabled when < 1 MiB); PYTHON's share: the PySpark
                    workers (below); shares by the consumer weights
JVM metaspace       2/8 worker daemon, rest executor ``-XX:MaxMetaspaceSize``
JVM overhead        not limited: TaskExecutor process, PySpark daemon, JVM native
==================  =====================================================

The PySpark workers' budget is task off-heap plus PYTHON's share of managed
memory (``taskmanager.memory.managed.consumer-weights``, only with
``python.fn-execution.memory.managed``; see ``memory/managed.py``), as PyFlink's
Python workers get theirs.  The executor runs at most one PySpark worker per core
at once, and has at most the worker's cores, the slots; so each worker's limit
is each part divided by the slots, floored to MiB (no limit when < 1 MiB).  Each
worker gets it as its data-segment limit (``RLIMIT_DATA``), set by the daemon
that forks the workers (``spark.python.daemon.module``, see ``pyspark_daemon.py``
for why not Spark's ``spark.executor.pyspark.memory``); an allocation beyond it
raises ``MemoryError`` in the task.  A limit below ``PYSPARK_MIN_WORKER_MIB`` is
refused: PySpark's daemon and a worker need about 20 MiB of it before any task.

JobManager container (Spark master daemon + the driver, client mode):

==================  =====================================================
JVM heap            ``spark.driver.memory``
off-heap            1/2 master daemon heap, 1/8 master daemon direct memory,
                    rest driver ``-XX:MaxDirectMemorySize``
JVM metaspace       2/8 master daemon, rest driver ``-XX:MaxMetaspaceSize``
JVM overhead        not limited: entrypoint process, PySpark driver process, JVM native
==================  =====================================================

Spark takes memory in whole MiB, so every limit is floored to MiB (limits
never exceed their component).  Minimums: executor and driver heap 450 MiB
(Spark refuses less: 1.5 x its 300 MiB reserved system memory), daemon heap
64 MiB, executor and driver metaspace 64 MiB, at least one core.

Why one module of this size: the table above is the mapping, and each of its
rows is one small function here, next to the others it must add up with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from jobcluster.config import options as o
from jobcluster.errors import SparkError
from jobcluster.memory.managed import ManagedMemoryConsumers
from jobcluster.memory.size import MiB, floor_mib, format_binary, format_memory_size
from jobcluster.memory.spec import JobManagerProcessSpec, TaskExecutorProcessSpec
from jobcluster.spark import pyspark_daemon

#: Spark refuses an executor or driver heap below 1.5 x 300 MiB reserved system memory.
SPARK_MIN_JVM_HEAP_MIB = 450
#: Below this a Spark master or worker daemon does not start reliably.
SPARK_MIN_DAEMON_HEAP_MIB = 64
#: Classes of Spark, Scala and py4j need about this much metaspace in an executor or driver.
SPARK_MIN_METASPACE_MIB = 64
#: Netty's shuffle/transport buffers need some direct memory; below this executors fail on the first fetch.
SPARK_MIN_EXECUTOR_DIRECT_MIB = 16
#: Share of JVM metaspace given to the daemon (worker or master); the rest goes to the executor/driver.  Measured on
#: Spark 4.3: a master or worker daemon holds 40 MiB of metaspace, while a driver running a transformWithStateInPandas
#: query on RocksDB holds 165 MiB (Spark 3.5's driver fitted in 160 MiB): of Flink's default 256m, 64m and 192m.
DAEMON_METASPACE_EIGHTHS = 2
#: Smallest memory limit of a PySpark worker, MiB: PySpark's daemon and a worker take about 20 MiB of it before any
#: task (measured: the data segment of a Python 3.11 process that imported pyspark.daemon and pyspark.worker).
PYSPARK_MIN_WORKER_MIB = 64
#: The daemon that sets each PySpark worker's limit, and the variable it reads it from (bytes).
PYSPARK_DAEMON_MODULE = pyspark_daemon.__name__
PYSPARK_LIMIT_ENV = pyspark_daemon.LIMIT_ENV
#: Shares of the JobManager off-heap memory: master daemon heap and master daemon direct memory
#: (in eighths); the driver's direct memory gets the rest.
MASTER_HEAP_EIGHTHS = 4
MASTER_DIRECT_EIGHTHS = 1


class SparkSizingError(SparkError):
    """Spark cannot run a process spec; ``problems`` lists each violated minimum with its remedy."""

    def __init__(self, message: str, problems: tuple[str, ...]) -> None:
        super().__init__(message)
        self.problems = problems


class MemoryCap(NamedTuple):
    """One explicit limit inside a container: ``name`` and ``bytes`` (whole MiB), the Flink
    ``component`` it comes from and the Spark/JVM ``setting`` that enforces it."""

    name: str
    bytes: int
    component: str
    setting: str


def _mib(size_mib: int) -> str:
    return f"{size_mib}m"


def _eighths(size: int, eighths: int) -> int:
    """Whole MiB of ``eighths/8`` of ``size`` bytes."""
    return floor_mib(size * eighths // 8)


@dataclass(frozen=True)
class SparkDaemonSizing:
    """Limits of a Spark master or worker daemon JVM, in MiB."""

    heap_mib: int
    direct_mib: int
    metaspace_mib: int

    def env(self) -> dict[str, str]:
        """``SPARK_DAEMON_MEMORY`` (becomes -Xmx) and ``SPARK_DAEMON_JAVA_OPTS`` for spark-class."""
        return {
            "SPARK_DAEMON_MEMORY": _mib(self.heap_mib),
            "SPARK_DAEMON_JAVA_OPTS": (
                f"{DAEMON_JIT_OPTS} -XX:MaxDirectMemorySize={_mib(self.direct_mib)} -XX:MaxMetaspaceSize={_mib(self.metaspace_mib)}"
            ),
        }


# The master and worker daemons only coordinate (the executors compute): the client compiler alone and the
# serial collector start their JVMs in about half the CPU time, which the 2 worker JVMs and the driver,
# all starting at once, otherwise share.
DAEMON_JIT_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@dataclass(frozen=True)
class PySparkMemory:
    """The PySpark workers' memory in a TaskExecutor container (see the module docstring).

    ``task_off_heap`` and ``managed`` (bytes): what they get of task off-heap memory (all of it) and of
    managed memory (PYTHON's share); ``workers``: how many run at once at most (the slots);
    ``consumers``: how managed memory was shared, for messages.
    """

    task_off_heap: int
    managed: int
    workers: int
    consumers: ManagedMemoryConsumers

    @property
    def budget(self) -> int:
        """task off-heap + PYTHON's share of managed memory, bytes (before the division into per-worker MiB)."""
        return self.task_off_heap + self.managed

    @property
    def per_worker_mib(self) -> int:
        """Each worker's limit, whole MiB: each part divided by the workers and floored (0: no limit)."""
        return self._per_worker_mib(self.task_off_heap) + self._per_worker_mib(self.managed)

    def limits_from(self, part: int) -> int:
        """Bytes of the workers' limits, all of them together, that come from ``part`` (``task_off_heap`` or ``managed``)."""
        return self._per_worker_mib(part) * self.workers * MiB

    @property
    def total_limit(self) -> int:
        """Bytes the workers may use together: the per-worker limit times the workers."""
        return self.per_worker_mib * self.workers * MiB

    def _per_worker_mib(self, part: int) -> int:
        return floor_mib(part // self.workers)

    def setting(self) -> str:
        """How it is enforced, as ``jobcluster memory`` shows it."""
        if not self.per_worker_mib:
            return "no limit (the PySpark workers use the overhead)"
        return f"RLIMIT_DATA {_mib(self.per_worker_mib)} per worker, {self.workers} at once"

    def source(self, weights: bool = True) -> str:
        """Where the budget comes from, e.g. ``PYTHON's share of managed memory (weights OPERATOR:70,...) + task
        off-heap 0 B``; without ``weights`` the configured weights are left out."""
        consumers = self.consumers
        if not consumers.python_uses_managed:
            managed = f"no managed memory ({o.PYTHON_USE_MANAGED_MEMORY.key}: false)"
        elif not consumers.python_weight:
            managed = f"no managed memory (PYTHON weighs 0 in {consumers.configured})"
        else:
            managed = "PYTHON's share of managed memory" + (f" (weights {consumers.configured})" if weights else "")
        return f"{managed} + task off-heap {format_binary(self.task_off_heap)}"

    def options_to_raise(self) -> str:
        """The options that give each worker more, in the order to try them."""
        consumers = self.consumers
        task_off_heap = o.TASK_MANAGER_TASK_OFF_HEAP_MEMORY.key
        weights = o.TASK_MANAGER_MANAGED_MEMORY_CONSUMER_WEIGHTS.key
        if not consumers.python_uses_managed:
            options = [task_off_heap, f"set {o.PYTHON_USE_MANAGED_MEMORY.key}: true (adds PYTHON's share of managed memory)"]
        elif not consumers.python_weight:
            options = [f"give PYTHON a weight in {weights} (now {consumers.configured})", task_off_heap]
        else:
            managed = f"{o.TASK_MANAGER_MANAGED_MEMORY_SIZE.key} (or {o.TASK_MANAGER_MANAGED_MEMORY_FRACTION.key})"
            options = [f"PYTHON's weight in {weights} (now {consumers.configured})", managed, task_off_heap]
        options.append(f"fewer slots per TaskManager ({o.NUM_TASK_SLOTS.key}; the budget is divided by them)")
        return "raise " + ", ".join(options[:-1]) + ", or use " + options[-1]

    def memory_error_hint(self) -> str | None:
        """What a task's ``MemoryError`` in a PySpark worker means and which options raise the limit; None without a limit."""
        if not self.per_worker_mib:
            return None
        return (
            f"A PySpark worker ran out of its memory limit: each may use {self.per_worker_mib} MiB "
            f"(its RLIMIT_DATA: the TaskManager's Python budget of "
            f"{format_binary(self.budget)}, {self.source(weights=False)}, over its {self.workers} slot(s)). "
            f"To give each worker more, {self.options_to_raise()}. See `jobcluster memory`."
        )


class _CappedContainer:
    """What both sizings share: explicit limits (``caps()``) that, with the JVM overhead, fit the container."""

    total_process: int
    jvm_overhead: int

    def caps(self) -> tuple[MemoryCap, ...]:
        raise NotImplementedError

    @property
    def total_capped(self) -> int:
        """Sum of every explicit limit, bytes."""
        return sum(cap.bytes for cap in self.caps())

    @property
    def headroom(self) -> int:
        """total process - (limits + JVM overhead), bytes; never negative (the MiB flooring slack)."""
        return self.total_process - self.total_capped - self.jvm_overhead


@dataclass(frozen=True)
class TaskExecutorSparkSizing(_CappedContainer):
    """Everything the launcher of a TaskExecutor container needs (sizes in MiB unless named bytes).

    ``worker_env()`` and ``worker_args()`` start the worker daemon;
    ``executor_conf()`` is the Spark configuration of the job's executors on it.
    """

    worker_daemon: SparkDaemonSizing
    worker_cores: int
    worker_memory_mib: int
    executor_heap_mib: int
    executor_direct_mib: int
    executor_metaspace_mib: int
    executor_off_heap_mib: int
    pyspark: PySparkMemory
    jvm_overhead: int
    total_process: int

    def worker_env(self) -> dict[str, str]:
        """Environment of the worker daemon (``SPARK_DAEMON_MEMORY``, ``SPARK_DAEMON_JAVA_OPTS``)."""
        return self.worker_daemon.env()

    def worker_args(self) -> list[str]:
        """Arguments of ``org.apache.spark.deploy.worker.Worker``: ``--cores N --memory Mm``."""
        return ["--cores", str(self.worker_cores), "--memory", _mib(self.worker_memory_mib)]

    def executor_conf(self) -> dict[str, str]:
        """Spark configuration of the executors (``spark.executor.*``, ``spark.memory.offHeap.*``)."""
        conf = {
            # spark.executor.cores stays unset: each worker's one executor takes the cores Spark
            # grants it, so spark.cores.max = parallelism is met exactly (parallelism.py).
            "spark.executor.memory": _mib(self.executor_heap_mib),
            "spark.executor.extraJavaOptions": (
                f"-XX:MaxDirectMemorySize={_mib(self.executor_direct_mib)} -XX:MaxMetaspaceSize={_mib(self.executor_metaspace_mib)}"
            ),
            "spark.memory.offHeap.enabled": "true" if self.executor_off_heap_mib > 0 else "false",
            # Spark refuses to start an executor whose direct memory is not above this (default 200m);
            # remote blocks larger than half the network memory are streamed to disk instead.
            "spark.network.maxRemoteBlockSizeFetchToMem": _mib(max(1, self.executor_direct_mib // 2)),
        }
        if self.executor_off_heap_mib > 0:
            conf["spark.memory.offHeap.size"] = _mib(self.executor_off_heap_mib)
        if self.pyspark.per_worker_mib > 0:
            # each worker's limit, set by the daemon that forks them: see the module docstring
            conf["spark.python.daemon.module"] = PYSPARK_DAEMON_MODULE
            conf[f"spark.executorEnv.{PYSPARK_LIMIT_ENV}"] = str(self.pyspark.per_worker_mib * MiB)
        return conf

    def caps(self) -> tuple[MemoryCap, ...]:
        """Every explicit limit in the container, in bytes (zero when a limit is not set)."""
        daemon = self.worker_daemon
        off_heap = (
            f"spark.memory.offHeap.size={_mib(self.executor_off_heap_mib)} (OPERATOR's share)"
            if self.executor_off_heap_mib
            else "spark.memory.offHeap.enabled=false"
        )
        pyspark = self.pyspark
        return (
            MemoryCap("worker daemon heap", daemon.heap_mib * MiB, "framework_heap", f"SPARK_DAEMON_MEMORY={_mib(daemon.heap_mib)}"),
            MemoryCap(
                "worker daemon direct memory",
                daemon.direct_mib * MiB,
                "framework_off_heap",
                f"SPARK_DAEMON_JAVA_OPTS -XX:MaxDirectMemorySize={_mib(daemon.direct_mib)}",
            ),
            MemoryCap(
                "worker daemon metaspace",
                daemon.metaspace_mib * MiB,
                "jvm_metaspace",
                f"SPARK_DAEMON_JAVA_OPTS -XX:MaxMetaspaceSize={_mib(daemon.metaspace_mib)}",
            ),
            MemoryCap(
                "executor heap",
                self.executor_heap_mib * MiB,
                "task_heap",
                f"spark.executor.memory={_mib(self.executor_heap_mib)}, worker --memory {_mib(self.worker_memory_mib)}",
            ),
            MemoryCap(
                "executor direct memory",
                self.executor_direct_mib * MiB,
                "network",
                f"spark.executor.extraJavaOptions -XX:MaxDirectMemorySize={_mib(self.executor_direct_mib)}",
            ),
            MemoryCap(
                "executor metaspace",
                self.executor_metaspace_mib * MiB,
                "jvm_metaspace",
                f"spark.executor.extraJavaOptions -XX:MaxMetaspaceSize={_mib(self.executor_metaspace_mib)}",
            ),
            MemoryCap("executor off-heap memory", self.executor_off_heap_mib * MiB, "managed", off_heap),
            MemoryCap("PySpark workers (PYTHON)", pyspark.limits_from(pyspark.managed), "managed", pyspark.setting()),
            MemoryCap("PySpark workers", pyspark.limits_from(pyspark.task_off_heap), "task_off_heap", pyspark.setting()),
        )

    def problems(self) -> tuple[str, ...]:
        """Each Spark minimum this sizing misses, with the option to change; empty when Spark can run it."""
        found = []
        if self.executor_heap_mib < SPARK_MIN_JVM_HEAP_MIB:
            found.append(
                f"the Spark executor heap would be {self.executor_heap_mib} MiB (task heap), below Spark's "
                f"minimum of {SPARK_MIN_JVM_HEAP_MIB} MiB (1.5 x its 300 MiB reserved memory); raise "
                f"{o.TASK_MANAGER_TOTAL_PROCESS_MEMORY.key} (or {o.TASK_MANAGER_TOTAL_FLINK_MEMORY.key}), "
                f"or set {o.TASK_MANAGER_TASK_HEAP_MEMORY.key} to at least {SPARK_MIN_JVM_HEAP_MIB}m"
            )
        if self.worker_daemon.heap_mib < SPARK_MIN_DAEMON_HEAP_MIB:
            found.append(
                f"the Spark worker daemon heap would be {self.worker_daemon.heap_mib} MiB (framework heap), "
                f"below {SPARK_MIN_DAEMON_HEAP_MIB} MiB; raise {o.TASK_MANAGER_FRAMEWORK_HEAP_MEMORY.key} "
                f"to at least {SPARK_MIN_DAEMON_HEAP_MIB}m"
            )
        if self.executor_metaspace_mib < SPARK_MIN_METASPACE_MIB:
            found.append(
                f"the Spark executor metaspace would be {self.executor_metaspace_mib} MiB "
                f"({8 - DAEMON_METASPACE_EIGHTHS}/8 of JVM metaspace), below {SPARK_MIN_METASPACE_MIB} MiB; "
                f"raise {o.TASK_MANAGER_JVM_METASPACE.key} to at least {_metaspace_needed_mib()}m"
            )
        if self.executor_direct_mib < SPARK_MIN_EXECUTOR_DIRECT_MIB:
            found.append(
                f"the Spark executor direct memory would be {self.executor_direct_mib} MiB (network memory), "
                f"below {SPARK_MIN_EXECUTOR_DIRECT_MIB} MiB for Netty's shuffle buffers; raise "
                f"{o.TASK_MANAGER_NETWORK_MEMORY_MIN.key} to at least {SPARK_MIN_EXECUTOR_DIRECT_MIB}m"
            )
        if self.worker_cores < 1:
            found.append(f"a Spark worker needs at least one core; raise {o.NUM_TASK_SLOTS.key}")
        if 0 < self.pyspark.per_worker_mib < PYSPARK_MIN_WORKER_MIB:
            found.append(
                f"each PySpark worker's memory limit would be {self.pyspark.per_worker_mib} MiB "
                f"({self.pyspark.source(weights=False)}, over {self.pyspark.workers} slot(s)), below the "
                f"{PYSPARK_MIN_WORKER_MIB} MiB a worker needs to run a task; {self.pyspark.options_to_raise()}"
            )
        return tuple(found)


@dataclass(frozen=True)
class JobManagerSparkSizing(_CappedContainer):
    """Everything the JobManager container's launcher needs (sizes in MiB unless named bytes).

    ``master_env()`` starts the master daemon; ``driver_conf()`` goes to
    spark-submit (client mode: the driver JVM runs in this container).
    """

    master_daemon: SparkDaemonSizing
    driver_heap_mib: int
    driver_direct_mib: int
    driver_metaspace_mib: int
    jvm_overhead: int
    total_process: int

    def master_env(self) -> dict[str, str]:
        """Environment of the master daemon (``SPARK_DAEMON_MEMORY``, ``SPARK_DAEMON_JAVA_OPTS``)."""
        return self.master_daemon.env()

    def driver_conf(self) -> dict[str, str]:
        """``spark.driver.memory`` and ``spark.driver.extraJavaOptions`` for spark-submit."""
        return {
            "spark.driver.memory": _mib(self.driver_heap_mib),
            "spark.driver.extraJavaOptions": (
                f"-XX:MaxDirectMemorySize={_mib(self.driver_direct_mib)} -XX:MaxMetaspaceSize={_mib(self.driver_metaspace_mib)}"
            ),
        }

    def caps(self) -> tuple[MemoryCap, ...]:
        """Every explicit limit in the container, in bytes."""
        daemon = self.master_daemon
        return (
            MemoryCap("driver heap", self.driver_heap_mib * MiB, "jvm_heap", f"spark.driver.memory={_mib(self.driver_heap_mib)}"),
            MemoryCap(
                "driver direct memory",
                self.driver_direct_mib * MiB,
                "off_heap",
                f"spark.driver.extraJavaOptions -XX:MaxDirectMemorySize={_mib(self.driver_direct_mib)}",
            ),
            MemoryCap(
                "driver metaspace",
                self.driver_metaspace_mib * MiB,
                "jvm_metaspace",
                f"spark.driver.extraJavaOptions -XX:MaxMetaspaceSize={_mib(self.driver_metaspace_mib)}",
            ),
            MemoryCap("master daemon heap", daemon.heap_mib * MiB, "off_heap", f"SPARK_DAEMON_MEMORY={_mib(daemon.heap_mib)}"),
            MemoryCap(
                "master daemon direct memory",
                daemon.direct_mib * MiB,
                "off_heap",
                f"SPARK_DAEMON_JAVA_OPTS -XX:MaxDirectMemorySize={_mib(daemon.direct_mib)}",
            ),
            MemoryCap(
                "master daemon metaspace",
                daemon.metaspace_mib * MiB,
                "jvm_metaspace",
                f"SPARK_DAEMON_JAVA_OPTS -XX:MaxMetaspaceSize={_mib(daemon.metaspace_mib)}",
            ),
        )

    def problems(self) -> tuple[str, ...]:
        """Each Spark minimum this sizing misses, with the option to change; empty when Spark can run it."""
        found = []
        if self.driver_heap_mib < SPARK_MIN_JVM_HEAP_MIB:
            found.append(
                f"the Spark driver heap would be {self.driver_heap_mib} MiB (JVM heap), below Spark's minimum "
                f"of {SPARK_MIN_JVM_HEAP_MIB} MiB (1.5 x its 300 MiB reserved memory); raise "
                f"{o.JOB_MANAGER_TOTAL_PROCESS_MEMORY.key} (or {o.JOB_MANAGER_TOTAL_FLINK_MEMORY.key}), "
                f"or set {o.JOB_MANAGER_JVM_HEAP_MEMORY.key} to at least {SPARK_MIN_JVM_HEAP_MIB}m"
            )
        if self.master_daemon.heap_mib < SPARK_MIN_DAEMON_HEAP_MIB:
            needed = SPARK_MIN_DAEMON_HEAP_MIB * 8 // MASTER_HEAP_EIGHTHS
            found.append(
                f"the Spark master daemon heap would be {self.master_daemon.heap_mib} MiB "
                f"({MASTER_HEAP_EIGHTHS}/8 of off-heap memory), below {SPARK_MIN_DAEMON_HEAP_MIB} MiB; "
                f"raise {o.JOB_MANAGER_OFF_HEAP_MEMORY.key} to at least {needed}m"
            )
        if self.driver_metaspace_mib < SPARK_MIN_METASPACE_MIB:
            found.append(
                f"the Spark driver metaspace would be {self.driver_metaspace_mib} MiB "
                f"({8 - DAEMON_METASPACE_EIGHTHS}/8 of JVM metaspace), below {SPARK_MIN_METASPACE_MIB} MiB; "
                f"raise {o.JOB_MANAGER_JVM_METASPACE.key} to at least {_metaspace_needed_mib()}m"
            )
        return tuple(found)


#: The name under which the TaskExecutor container's sizing is also known (a Spark worker's container).
SparkWorkerSizing = TaskExecutorSparkSizing


def spark_sizing_for_task_executor(
    spec: TaskExecutorProcessSpec, consumers: ManagedMemoryConsumers, *, check: bool = True
) -> TaskExecutorSparkSizing:
    """Map a TaskExecutor process spec to its Spark worker daemon, executor and PySpark worker limits.

    ``consumers``: how the job's consumers share managed memory
    (``ManagedMemoryConsumers.from_config``).  With ``check`` (the default) a
    sizing below Spark's minimums is refused; ``check=False`` returns it anyway
    (for display; see ``problems()``).

    Raises:
        SparkSizingError: Spark cannot run it; the message names the options to raise.
    """
    daemon_metaspace_mib = _eighths(spec.jvm_metaspace, DAEMON_METASPACE_EIGHTHS)
    executor_heap_mib = floor_mib(spec.task_heap)
    pyspark = PySparkMemory(spec.task_off_heap, consumers.python_share(spec.managed), spec.num_slots, consumers)
    sizing = TaskExecutorSparkSizing(
        worker_daemon=SparkDaemonSizing(
            heap_mib=floor_mib(spec.framework_heap),
            direct_mib=floor_mib(spec.framework_off_heap),
            metaspace_mib=daemon_metaspace_mib,
        ),
        worker_cores=spec.num_slots,
        worker_memory_mib=executor_heap_mib,
        executor_heap_mib=executor_heap_mib,
        executor_direct_mib=floor_mib(spec.network),
        executor_metaspace_mib=floor_mib(spec.jvm_metaspace - daemon_metaspace_mib * MiB),
        executor_off_heap_mib=floor_mib(consumers.operator_share(spec.managed)),
        pyspark=pyspark,
        jvm_overhead=spec.jvm_overhead,
        total_process=spec.total_process,
    )
    _ensure_within(sizing.headroom, "TaskExecutor")
    if check:
        _refuse(sizing.problems(), "TaskExecutor", spec.total_process)
    return sizing


def spark_sizing_for_job_manager(spec: JobManagerProcessSpec, *, check: bool = True) -> JobManagerSparkSizing:
    """Map a JobManager process spec to its Spark master daemon and driver limits.

    Raises:
        SparkSizingError: Spark cannot run it (with ``check``); the message names the options to raise.
    """
    master_heap_mib = _eighths(spec.off_heap, MASTER_HEAP_EIGHTHS)
    master_direct_mib = _eighths(spec.off_heap, MASTER_DIRECT_EIGHTHS)
    master_metaspace_mib = _eighths(spec.jvm_metaspace, DAEMON_METASPACE_EIGHTHS)
    sizing = JobManagerSparkSizing(
        master_daemon=SparkDaemonSizing(heap_mib=master_heap_mib, direct_mib=master_direct_mib, metaspace_mib=master_metaspace_mib),
        driver_heap_mib=floor_mib(spec.jvm_heap),
        driver_direct_mib=floor_mib(spec.off_heap - (master_heap_mib + master_direct_mib) * MiB),
        driver_metaspace_mib=floor_mib(spec.jvm_metaspace - master_metaspace_mib * MiB),
        jvm_overhead=spec.jvm_overhead,
        total_process=spec.total_process,
    )
    _ensure_within(sizing.headroom, "JobManager")
    if check:
        _refuse(sizing.problems(), "JobManager", spec.total_process)
    return sizing


def _refuse(problems: tuple[str, ...], process: str, total_process: int) -> None:
    if problems:
        raise SparkSizingError(
            f"Spark cannot run the {process} container of {format_memory_size(total_process)}: " + "; ".join(problems) + ".",
            problems,
        )


def _ensure_within(headroom: int, process: str) -> None:
    # Holds by construction (each limit is a floored share of one component);
    # checked so that a future mapping change cannot silently oversubscribe.
    if headroom < 0:
        raise SparkError(f"The Spark limits of the {process} exceed its container by {-headroom} bytes.")


def _metaspace_needed_mib() -> int:
    """Smallest JVM metaspace (MiB) whose executor/driver share reaches the metaspace minimum."""
    size = SPARK_MIN_METASPACE_MIB
    while size - (size * DAEMON_METASPACE_EIGHTHS // 8) < SPARK_MIN_METASPACE_MIB:
        size += 1
    return size
