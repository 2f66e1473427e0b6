"""Process spec to Spark settings: the documented mapping, MiB flooring, the container invariant, minimums."""

from decimal import Decimal

import pytest

from jobcluster.config.configuration import Configuration
from jobcluster.config.loader import load_configuration
from jobcluster.errors import JobClusterError, SparkError
from jobcluster.memory.jobmanager import job_manager_process_spec_from_config
from jobcluster.memory.managed import ManagedMemoryConsumers
from jobcluster.memory.spec import JobManagerProcessSpec, TaskExecutorProcessSpec
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.spark.sizing import (
    PYSPARK_LIMIT_ENV,
    SparkSizingError,
    spark_sizing_for_job_manager,
    spark_sizing_for_task_executor,
)

MiB = 1 << 20
GiB = 1 << 30


def te_spec(**changes) -> TaskExecutorProcessSpec:
    values = {
        "cpu_cores": Decimal(2),
        "framework_heap": 128 * MiB,
        "framework_off_heap": 128 * MiB,
        "task_heap": GiB,
        "task_off_heap": 0,
        "network": 256 * MiB,
        "managed": 512 * MiB,
        "jvm_metaspace": 256 * MiB,
        "jvm_overhead": 256 * MiB,
        "num_slots": 2,
    }
    values.update(changes)
    return TaskExecutorProcessSpec(**values)


def te_sizing(spec: TaskExecutorProcessSpec, config: dict[str, str] | None = None, *, check: bool = True):
    """The sizing of ``spec`` with the managed memory consumers of ``config`` (Flink's defaults when None)."""
    return spark_sizing_for_task_executor(spec, ManagedMemoryConsumers.from_config(Configuration(config or {})), check=check)


def worker_limit_mib(conf: dict[str, str]) -> int | None:
    """Each PySpark worker's limit in ``conf`` (the executors' Spark configuration), MiB; None without one."""
    limit = conf.get(f"spark.executorEnv.{PYSPARK_LIMIT_ENV}")
    if limit is None:
        assert "spark.python.daemon.module" not in conf
        return None
    assert conf["spark.python.daemon.module"] == "jobcluster.spark.pyspark_daemon"
    assert int(limit) % MiB == 0
    return int(limit) // MiB


def jm_spec(**changes) -> JobManagerProcessSpec:
    values = {"jvm_heap": GiB, "off_heap": 128 * MiB, "jvm_metaspace": 256 * MiB, "jvm_overhead": 192 * MiB}
    values.update(changes)
    return JobManagerProcessSpec(**values)


# -- TaskExecutor mapping ---------------------------------------------------------------------


def test_task_executor_mapping():
    sizing = te_sizing(te_spec())
    assert sizing.worker_env() == {
        "SPARK_DAEMON_MEMORY": "128m",
        "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:MaxDirectMemorySize=128m -XX:MaxMetaspaceSize=64m",
    }
    assert sizing.worker_args() == ["--cores", "2", "--memory", "1024m"]
    assert sizing.executor_conf() == {
        "spark.executor.memory": "1024m",
        "spark.executor.extraJavaOptions": "-XX:MaxDirectMemorySize=256m -XX:MaxMetaspaceSize=192m",
        "spark.memory.offHeap.enabled": "true",
        "spark.memory.offHeap.size": "358m",  # OPERATOR's 70 % of 512 MiB managed memory
        "spark.network.maxRemoteBlockSizeFetchToMem": "128m",
        # PYTHON's 30 % (153.6 MiB) over the 2 slots: each worker's limit, set by the daemon that forks them
        "spark.python.daemon.module": "jobcluster.spark.pyspark_daemon",
        "spark.executorEnv.JOBCLUSTER_PYSPARK_WORKER_MEMORY": str(76 * MiB),
    }


def test_remote_blocks_larger_than_half_the_network_memory_go_to_disk():
    # Spark refuses an executor whose direct memory is not above spark.network.maxRemoteBlockSizeFetchToMem
    conf = te_sizing(te_spec(network=64 * MiB)).executor_conf()
    assert conf["spark.network.maxRemoteBlockSizeFetchToMem"] == "32m"


def test_network_memory_below_nettys_minimum_is_refused():
    with pytest.raises(SparkSizingError, match=r"taskmanager\.memory\.network\.min"):
        te_sizing(te_spec(network=8 * MiB))


NO_MANAGED_PYTHON = {"python.fn-execution.memory.managed": "false"}


def test_without_managed_memory_for_python_task_off_heap_alone_caps_the_pyspark_workers():
    sizing = te_sizing(te_spec(task_off_heap=512 * MiB + 5), NO_MANAGED_PYTHON)
    # 512 MiB for the two workers that run at once, one per slot
    assert worker_limit_mib(sizing.executor_conf()) == 256
    assert sizing.executor_conf()["spark.memory.offHeap.size"] == "512m"  # all of managed memory, as before
    assert (sizing.pyspark.budget, sizing.pyspark.total_limit) == (512 * MiB + 5, 512 * MiB)


def test_task_off_heap_adds_to_pythons_share_of_managed_memory():
    sizing = te_sizing(
        te_spec(task_off_heap=512 * MiB, managed=1000 * MiB), {"taskmanager.memory.managed.consumer-weights": "OPERATOR:3,PYTHON:2"}
    )
    conf = sizing.executor_conf()
    assert conf["spark.memory.offHeap.size"] == "600m"
    assert worker_limit_mib(conf) == 456  # (512 + 400) / 2 slots
    assert sizing.pyspark.budget == 912 * MiB


@pytest.mark.parametrize(("slots", "per_worker"), [(1, 230), (2, 115), (3, 76)])
def test_each_pyspark_worker_gets_the_budget_divided_by_the_slots(slots, per_worker):
    sizing = te_sizing(te_spec(managed=805306380, num_slots=slots))
    assert worker_limit_mib(sizing.executor_conf()) == per_worker
    assert sizing.pyspark.total_limit == per_worker * slots * MiB <= sizing.pyspark.budget


@pytest.mark.parametrize(
    "config",
    [
        {"taskmanager.memory.managed.consumer-weights": "OPERATOR:70,STATE_BACKEND:70,PYTHON:0"},
        {"taskmanager.memory.managed.consumer-weights": "OPERATOR:70"},
        NO_MANAGED_PYTHON,
    ],
)
def test_without_pythons_share_and_task_off_heap_the_pyspark_workers_have_no_limit(config):
    sizing = te_sizing(te_spec(), config)
    conf = sizing.executor_conf()
    assert worker_limit_mib(conf) is None
    assert conf["spark.memory.offHeap.size"] == "512m"  # all of managed memory goes to Spark's off-heap memory
    assert sizing.pyspark.memory_error_hint() is None


def test_operator_weighing_0_leaves_spark_no_off_heap_memory():
    conf = te_sizing(te_spec(), {"taskmanager.memory.managed.consumer-weights": "OPERATOR:0,PYTHON:1"}).executor_conf()
    assert conf["spark.memory.offHeap.enabled"] == "false" and "spark.memory.offHeap.size" not in conf
    assert worker_limit_mib(conf) == 256


def test_zero_managed_disables_spark_off_heap_and_zero_task_off_heap_leaves_python_uncapped():
    conf = te_sizing(te_spec(managed=MiB - 1, task_off_heap=MiB - 1)).executor_conf()
    assert conf["spark.memory.offHeap.enabled"] == "false"
    assert "spark.memory.offHeap.size" not in conf
    assert worker_limit_mib(conf) is None


def test_a_budget_below_1_mib_per_worker_sets_no_limit():
    # 1.5 MiB of task off-heap over 2 slots and 30 % of 3 MiB managed memory over 2 slots: each part < 1 MiB per worker
    sizing = te_sizing(te_spec(task_off_heap=3 * MiB // 2, managed=3 * MiB))
    assert "spark.executor.pyspark.memory" not in sizing.executor_conf()
    assert sizing.pyspark.total_limit == 0 and sizing.pyspark.budget > MiB


def test_a_pyspark_worker_limit_too_small_to_run_a_task_is_refused_with_the_options_to_raise():
    # PYTHON's 30 % of 512 MiB over 4 slots: 38 MiB each, below what a worker needs before its first task
    with pytest.raises(SparkSizingError, match=r"each PySpark worker's memory limit would be 38 MiB") as refused:
        te_sizing(te_spec(num_slots=4))
    assert "taskmanager.memory.managed.consumer-weights" in str(refused.value)
    assert "fewer slots per TaskManager (taskmanager.numberOfTaskSlots" in str(refused.value)
    assert te_sizing(te_spec(managed=1024 * MiB, num_slots=4)).pyspark.per_worker_mib == 76


def test_the_memory_error_hint_names_the_limit_and_the_options_that_raise_it():
    hint = te_sizing(te_spec(managed=805306380)).pyspark.memory_error_hint()
    assert hint is not None
    assert "each may use 115 MiB (its RLIMIT_DATA" in hint and "2 slot(s)" in hint
    for option in (
        "PYTHON's weight in taskmanager.memory.managed.consumer-weights (now OPERATOR:70,STATE_BACKEND:70,PYTHON:30)",
        "taskmanager.memory.managed.size",
        "taskmanager.memory.task.off-heap.size",
        "taskmanager.numberOfTaskSlots",
    ):
        assert option in hint, hint
    # without managed memory for Python, the option that brings it back is named first
    hint = te_sizing(te_spec(task_off_heap=256 * MiB), NO_MANAGED_PYTHON).pyspark.memory_error_hint()
    assert hint is not None and "each may use 128 MiB" in hint
    assert "raise taskmanager.memory.task.off-heap.size, set python.fn-execution.memory.managed: true" in hint


@pytest.mark.parametrize(("task_heap", "mib"), [(GiB - 1, 1023), (GiB, 1024), (GiB + MiB - 1, 1024), (700 * MiB + 123, 700)])
def test_sizes_are_floored_to_whole_mib(task_heap, mib):
    sizing = te_sizing(te_spec(task_heap=task_heap))
    assert sizing.executor_conf()["spark.executor.memory"] == f"{mib}m"
    assert sizing.worker_args()[-1] == f"{mib}m"


@pytest.mark.parametrize("slots", [1, 4])
def test_worker_cores_are_the_slots_and_executors_take_what_spark_grants(slots):
    sizing = te_sizing(te_spec(num_slots=slots, cpu_cores=Decimal("0.5")), {"taskmanager.memory.managed.consumer-weights": "PYTHON:1"})
    assert sizing.worker_args()[:2] == ["--cores", str(slots)]
    assert "spark.executor.cores" not in sizing.executor_conf()


def test_caps_cover_each_component_once():
    spec = te_spec(task_off_heap=300 * MiB + 7, managed=777 * MiB + 3)
    caps = te_sizing(spec).caps()
    by_component: dict[str, int] = {}
    for cap in caps:
        name, size = cap[:2]
        assert name and size >= 0
        by_component[cap.component] = by_component.get(cap.component, 0) + cap.bytes
    for component, size in by_component.items():
        assert size <= getattr(spec, component), component
    assert set(by_component) == {
        "framework_heap",
        "framework_off_heap",
        "task_heap",
        "task_off_heap",
        "network",
        "managed",
        "jvm_metaspace",
    }


# -- the container invariant, over many process sizes ---------------------------------------------


TASK_EXECUTOR_CONFIGS = [
    {"taskmanager.memory.process.size": f"{mib}m", "taskmanager.numberOfTaskSlots": str(slots), **extra}
    for mib in range(1900, 33000, 997)
    for slots in (1, 2, 4)
    for extra in (
        {},
        {"taskmanager.memory.task.off-heap.size": "333m"},
        {"taskmanager.memory.managed.fraction": "0.05", "taskmanager.memory.jvm-metaspace.size": "150m"},
        {"taskmanager.memory.managed.consumer-weights": "OPERATOR:1,PYTHON:2", "taskmanager.memory.task.off-heap.size": "101m"},
        {"python.fn-execution.memory.managed": "false", "taskmanager.memory.task.off-heap.size": "333m"},
    )
]


@pytest.mark.parametrize("mapping", TASK_EXECUTOR_CONFIGS)
def test_limits_plus_overhead_never_exceed_the_task_executor_container(mapping):
    spec = task_executor_process_spec_from_config(Configuration(mapping))
    sizing = te_sizing(spec, mapping, check=False)  # the invariant holds below Spark's minimums too
    caps_total = sum(size for _, size, *_ in sizing.caps())
    assert caps_total + spec.jvm_overhead <= spec.total_process
    assert spec.total_process - caps_total - spec.jvm_overhead < 8 * MiB  # only MiB rounding is lost
    # the PySpark workers' limits are among the caps: all workers at their limit still fit
    assert sizing.pyspark.total_limit == sum(cap.bytes for cap in sizing.caps() if cap.name.startswith("PySpark workers"))
    assert sizing.headroom == spec.total_process - caps_total - spec.jvm_overhead


@pytest.mark.parametrize("mib", range(1400, 20000, 613))
def test_limits_plus_overhead_never_exceed_the_job_manager_container(mib):
    spec = job_manager_process_spec_from_config(Configuration({"jobmanager.memory.process.size": f"{mib}m"}))
    sizing = spark_sizing_for_job_manager(spec)
    caps_total = sum(cap.bytes for cap in sizing.caps())
    assert caps_total + spec.jvm_overhead <= spec.total_process
    assert spec.total_process - caps_total - spec.jvm_overhead < 8 * MiB


# -- minimums ----------------------------------------------------------------------------------


def test_flink_default_task_executor_is_refused_with_what_to_change():
    spec = task_executor_process_spec_from_config(Configuration({"taskmanager.memory.process.size": "1728m"}))
    with pytest.raises(SparkSizingError) as caught:
        te_sizing(spec)
    message = str(caught.value)
    assert "383 MiB" in message and "450 MiB" in message
    assert "taskmanager.memory.process.size" in message and "taskmanager.memory.task.heap.size" in message
    assert isinstance(caught.value, SparkError) and isinstance(caught.value, JobClusterError)
    assert len(caught.value.problems) == 1


@pytest.mark.parametrize(
    ("changes", "option"),
    [
        ({"task_heap": 450 * MiB - 1}, "taskmanager.memory.task.heap.size"),
        ({"framework_heap": 64 * MiB - 1}, "taskmanager.memory.framework.heap.size"),
        ({"jvm_metaspace": 84 * MiB}, "taskmanager.memory.jvm-metaspace.size to at least 85m"),
    ],
)
def test_task_executor_minimums(changes, option):
    with pytest.raises(SparkSizingError, match=option):
        te_sizing(te_spec(**changes))


@pytest.mark.parametrize("changes", [{"task_heap": 450 * MiB}, {"framework_heap": 64 * MiB}, {"jvm_metaspace": 101 * MiB}])
def test_task_executor_minimums_are_inclusive(changes):
    te_sizing(te_spec(**changes))


def test_every_problem_is_reported_at_once_and_check_false_still_maps():
    spec = te_spec(task_heap=100 * MiB, framework_heap=32 * MiB, jvm_metaspace=64 * MiB)
    with pytest.raises(SparkSizingError) as caught:
        te_sizing(spec)
    assert len(caught.value.problems) == 3
    sizing = te_sizing(spec, check=False)
    assert sizing.problems() == caught.value.problems
    assert sizing.executor_conf()["spark.executor.memory"] == "100m"


def test_job_manager_mapping():
    sizing = spark_sizing_for_job_manager(jm_spec())
    assert sizing.driver_conf() == {
        "spark.driver.memory": "1024m",
        "spark.driver.extraJavaOptions": "-XX:MaxDirectMemorySize=48m -XX:MaxMetaspaceSize=192m",
    }
    assert sizing.master_env() == {
        "SPARK_DAEMON_MEMORY": "64m",
        "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:MaxDirectMemorySize=16m -XX:MaxMetaspaceSize=64m",
    }
    assert sum(cap.bytes for cap in sizing.caps() if cap.component == "off_heap") == 128 * MiB


@pytest.mark.parametrize(
    ("changes", "option"),
    [
        ({"jvm_heap": 450 * MiB - 1}, "jobmanager.memory.heap.size"),
        ({"off_heap": 127 * MiB}, "jobmanager.memory.off-heap.size to at least 128m"),
        ({"jvm_metaspace": 84 * MiB}, "jobmanager.memory.jvm-metaspace.size to at least 85m"),
    ],
)
def test_job_manager_minimums(changes, option):
    with pytest.raises(SparkSizingError, match=option):
        spark_sizing_for_job_manager(jm_spec(**changes))
    spark_sizing_for_job_manager(jm_spec(**changes), check=False)


def test_flink_default_job_manager_is_accepted():
    spec = job_manager_process_spec_from_config(Configuration({"jobmanager.memory.process.size": "1600m"}))
    assert spark_sizing_for_job_manager(spec).driver_conf()["spark.driver.memory"] == "1024m"


def test_shipped_configuration_meets_sparks_minimums(monkeypatch):
    monkeypatch.delenv("JOBCLUSTER_CONF_DIR", raising=False)
    config = load_configuration()
    te = spark_sizing_for_task_executor(task_executor_process_spec_from_config(config), ManagedMemoryConsumers.from_config(config))
    jm = spark_sizing_for_job_manager(job_manager_process_spec_from_config(config))
    assert te.problems() == () and jm.problems() == ()
    assert te.worker_args()[:2] == ["--cores", "2"]
    # the PySpark workers have a limit: PYTHON's 70 of OPERATOR's 30 + 70 of the 768 MiB managed memory, per slot
    assert worker_limit_mib(te.executor_conf()) == 268
    assert te.executor_conf()["spark.memory.offHeap.size"] == "230m"
    # two TaskExecutors and the JobManager fit a 24 GiB machine with room to spare
    assert 2 * te.total_process + jm.total_process < 8 * GiB
