"""Process spec to Spark settings: the documented mapping, MiB flooring, the container invariant, minimums."""

from decimal import Decimal

import pytest

from jobcluster.config.configuration import Configuration
from jobcluster.config.loader import load_configuration
from jobcluster.errors import JobClusterError, SparkError
from jobcluster.memory.jobmanager import job_manager_process_spec_from_config
from jobcluster.memory.spec import JobManagerProcessSpec, TaskExecutorProcessSpec
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.spark.sizing import (
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


def jm_spec(**changes) -> JobManagerProcessSpec:
    values = {"jvm_heap": GiB, "off_heap": 128 * MiB, "jvm_metaspace": 256 * MiB, "jvm_overhead": 192 * MiB}
    values.update(changes)
    return JobManagerProcessSpec(**values)


# -- TaskExecutor mapping ---------------------------------------------------------------------


def test_task_executor_mapping():
    sizing = spark_sizing_for_task_executor(te_spec())
    assert sizing.worker_env() == {
        "SPARK_DAEMON_MEMORY": "128m",
        "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:MaxDirectMemorySize=128m -XX:MaxMetaspaceSize=96m",
    }
    assert sizing.worker_args() == ["--cores", "2", "--memory", "1024m"]
    assert sizing.executor_conf() == {
        "spark.executor.memory": "1024m",
        "spark.executor.extraJavaOptions": "-XX:MaxDirectMemorySize=256m -XX:MaxMetaspaceSize=160m",
        "spark.memory.offHeap.enabled": "true",
        "spark.memory.offHeap.size": "512m",
        "spark.network.maxRemoteBlockSizeFetchToMem": "128m",
    }


def test_remote_blocks_larger_than_half_the_network_memory_go_to_disk():
    # Spark refuses an executor whose direct memory is not above spark.network.maxRemoteBlockSizeFetchToMem
    conf = spark_sizing_for_task_executor(te_spec(network=64 * MiB)).executor_conf()
    assert conf["spark.network.maxRemoteBlockSizeFetchToMem"] == "32m"


def test_network_memory_below_nettys_minimum_is_refused():
    with pytest.raises(SparkSizingError, match=r"taskmanager\.memory\.network\.min"):
        spark_sizing_for_task_executor(te_spec(network=8 * MiB))


def test_task_off_heap_caps_the_pyspark_workers():
    sizing = spark_sizing_for_task_executor(te_spec(task_off_heap=512 * MiB + 5))
    assert sizing.executor_conf()["spark.executor.pyspark.memory"] == "512m"


def test_zero_managed_disables_spark_off_heap_and_zero_task_off_heap_leaves_python_uncapped():
    conf = spark_sizing_for_task_executor(te_spec(managed=MiB - 1, task_off_heap=MiB - 1)).executor_conf()
    assert conf["spark.memory.offHeap.enabled"] == "false"
    assert "spark.memory.offHeap.size" not in conf
    assert "spark.executor.pyspark.memory" not in conf


@pytest.mark.parametrize(("task_heap", "mib"), [(GiB - 1, 1023), (GiB, 1024), (GiB + MiB - 1, 1024), (700 * MiB + 123, 700)])
def test_sizes_are_floored_to_whole_mib(task_heap, mib):
    sizing = spark_sizing_for_task_executor(te_spec(task_heap=task_heap))
    assert sizing.executor_conf()["spark.executor.memory"] == f"{mib}m"
    assert sizing.worker_args()[-1] == f"{mib}m"


@pytest.mark.parametrize("slots", [1, 4])
def test_worker_cores_are_the_slots_and_executors_take_what_spark_grants(slots):
    sizing = spark_sizing_for_task_executor(te_spec(num_slots=slots, cpu_cores=Decimal("0.5")))
    assert sizing.worker_args()[:2] == ["--cores", str(slots)]
    assert "spark.executor.cores" not in sizing.executor_conf()


def test_caps_cover_each_component_once():
    spec = te_spec(task_off_heap=300 * MiB)
    caps = spark_sizing_for_task_executor(spec).caps()
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
    )
]


@pytest.mark.parametrize("mapping", TASK_EXECUTOR_CONFIGS)
def test_limits_plus_overhead_never_exceed_the_task_executor_container(mapping):
    spec = task_executor_process_spec_from_config(Configuration(mapping))
    sizing = spark_sizing_for_task_executor(spec, check=False)  # the invariant holds below Spark's minimums too
    caps_total = sum(size for _, size, *_ in sizing.caps())
    assert caps_total + spec.jvm_overhead <= spec.total_process
    assert spec.total_process - caps_total - spec.jvm_overhead < 8 * MiB  # only MiB rounding is lost
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
        spark_sizing_for_task_executor(spec)
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
        ({"jvm_metaspace": 100 * MiB}, "taskmanager.memory.jvm-metaspace.size to at least 101m"),
    ],
)
def test_task_executor_minimums(changes, option):
    with pytest.raises(SparkSizingError, match=option):
        spark_sizing_for_task_executor(te_spec(**changes))


@pytest.mark.parametrize("changes", [{"task_heap": 450 * MiB}, {"framework_heap": 64 * MiB}, {"jvm_metaspace": 101 * MiB}])
def test_task_executor_minimums_are_inclusive(changes):
    spark_sizing_for_task_executor(te_spec(**changes))


def test_every_problem_is_reported_at_once_and_check_false_still_maps():
    spec = te_spec(task_heap=100 * MiB, framework_heap=32 * MiB, jvm_metaspace=64 * MiB)
    with pytest.raises(SparkSizingError) as caught:
        spark_sizing_for_task_executor(spec)
    assert len(caught.value.problems) == 3
    sizing = spark_sizing_for_task_executor(spec, check=False)
    assert sizing.problems() == caught.value.problems
    assert sizing.executor_conf()["spark.executor.memory"] == "100m"


def test_job_manager_mapping():
    sizing = spark_sizing_for_job_manager(jm_spec())
    assert sizing.driver_conf() == {
        "spark.driver.memory": "1024m",
        "spark.driver.extraJavaOptions": "-XX:MaxDirectMemorySize=48m -XX:MaxMetaspaceSize=160m",
    }
    assert sizing.master_env() == {
        "SPARK_DAEMON_MEMORY": "64m",
        "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:MaxDirectMemorySize=16m -XX:MaxMetaspaceSize=96m",
    }
    assert sum(cap.bytes for cap in sizing.caps() if cap.component == "off_heap") == 128 * MiB


@pytest.mark.parametrize(
    ("changes", "option"),
    [
        ({"jvm_heap": 450 * MiB - 1}, "jobmanager.memory.heap.size"),
        ({"off_heap": 127 * MiB}, "jobmanager.memory.off-heap.size to at least 128m"),
        ({"jvm_metaspace": 100 * MiB}, "jobmanager.memory.jvm-metaspace.size to at least 101m"),
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
    te = spark_sizing_for_task_executor(task_executor_process_spec_from_config(config))
    jm = spark_sizing_for_job_manager(job_manager_process_spec_from_config(config))
    assert te.problems() == () and jm.problems() == ()
    assert te.worker_args()[:2] == ["--cores", "2"]
    # two TaskExecutors and the JobManager fit a 24 GiB machine with room to spare
    assert 2 * te.total_process + jm.total_process < 8 * GiB
