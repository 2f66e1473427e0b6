"""JobManager memory model: Flink's derivation to the byte (reference/memory-model.md §5, §7, §9, §10, §14b)."""

import logging
from decimal import Decimal

import pytest

from jobcluster.config import options as o
from jobcluster.config.configuration import Configuration, InvalidValueError
from jobcluster.errors import IllegalConfigurationError
from jobcluster.memory.jobmanager import job_manager_process_spec_from_config
from jobcluster.memory.spec import JobManagerProcessSpec

MiB = 1 << 20
GiB = 1 << 30
PREFIX = "JobManager memory configuration failed: "
INV01 = "0.11111111295076065"  # float32(0.1) / (1 - float32(0.1)) as a double


def times(size: int, multiplier: str) -> int:
    return int(Decimal(size) * Decimal(multiplier))


def spec_from(mapping: dict) -> JobManagerProcessSpec:
    return job_manager_process_spec_from_config(Configuration(mapping))


def failure(mapping: dict) -> IllegalConfigurationError:
    with pytest.raises(IllegalConfigurationError) as caught:
        spec_from(mapping)
    return caught.value


FLINK_DEFAULT = JobManagerProcessSpec(jvm_heap=1073741824, off_heap=134217728, jvm_metaspace=268435456, jvm_overhead=201326592)


def test_flink_default_1600m_to_the_byte():
    spec = spec_from({"jobmanager.memory.process.size": "1600m"})
    assert spec == FLINK_DEFAULT
    assert spec.total_flink == 1207959552
    assert spec.total_process == 1600 * MiB


def test_flink_default_jvm_args():
    assert FLINK_DEFAULT.jvm_args() == "-Xmx1073741824 -Xms1073741824 -XX:MaxMetaspaceSize=268435456"
    assert FLINK_DEFAULT.jvm_args(enable_direct_limit=True) == (
        "-Xmx1073741824 -Xms1073741824 -XX:MaxDirectMemorySize=134217728 -XX:MaxMetaspaceSize=268435456"
    )


def test_dynamic_configs_pin_every_component():
    assert FLINK_DEFAULT.dynamic_configs() == {
        "jobmanager.memory.heap.size": "1073741824b",
        "jobmanager.memory.off-heap.size": "134217728b",
        "jobmanager.memory.jvm-metaspace.size": "268435456b",
        "jobmanager.memory.jvm-overhead.min": "201326592b",
        "jobmanager.memory.jvm-overhead.max": "201326592b",
    }
    assert FLINK_DEFAULT.dynamic_configs_text().startswith("-D jobmanager.memory.heap.size=1073741824b -D ")
    assert spec_from(FLINK_DEFAULT.dynamic_configs()) == FLINK_DEFAULT


@pytest.mark.parametrize(
    "mapping",
    [
        {"jobmanager.memory.heap.size": "1g"},  # 1g + 128m off-heap, overhead 192m: 1600m again
        {"jobmanager.memory.flink.size": "1152m"},
        {"jobmanager.memory.flink.size": "1152m", "jobmanager.memory.process.size": "1600m"},
        {"jobmanager.memory.heap.size": "1g", "jobmanager.memory.process.size": "1600m"},
        {"jobmanager.memory.heap.size": "1g", "jobmanager.memory.flink.size": "1152m"},
        {"jobmanager.memory.heap.size": "1g", "jobmanager.memory.off-heap.size": "128m", "jobmanager.memory.flink.size": "1152m"},
    ],
)
def test_every_path_reproduces_the_default(mapping):
    assert spec_from(mapping) == FLINK_DEFAULT


def test_heap_and_total_flink_derive_off_heap():
    spec = spec_from({"jobmanager.memory.heap.size": "1g", "jobmanager.memory.flink.size": "2g"})
    assert spec.off_heap == GiB
    assert spec.jvm_overhead == times(2 * GiB + 256 * MiB, INV01)


def test_heap_with_process_size_makes_overhead_the_rest():
    # the JobManager analogue of the docs' example 3: JVM heap alone is the fine-grained set
    spec = spec_from(
        {
            "jobmanager.memory.process.size": "1000m",
            "jobmanager.memory.heap.size": "500m",
            "jobmanager.memory.jvm-overhead.min": "64m",
            "jobmanager.memory.jvm-overhead.max": "256m",
        }
    )
    assert spec.jvm_overhead == (1000 - 500 - 128 - 256) * MiB


def test_large_process_caps_overhead():
    spec = spec_from({"jobmanager.memory.process.size": "16g"})
    assert spec.jvm_overhead == GiB
    assert spec.jvm_heap == 16 * GiB - GiB - 256 * MiB - 128 * MiB


def test_small_heap_only_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="jobcluster.memory"):
        spec = spec_from({"jobmanager.memory.flink.size": "200m"})
    assert spec.jvm_heap == 72 * MiB
    assert any("recommended" in record.getMessage() for record in caplog.records)


# -- errors ------------------------------------------------------------------------------


def test_e1_nothing_configured():
    assert str(failure({})) == PREFIX + (
        "Either required fine-grained memory (jobmanager.memory.heap.size), or Total Flink Memory size "
        "(Key: 'jobmanager.memory.flink.size' , default: null (fallback keys: [])), or Total Process Memory "
        "size (Key: 'jobmanager.memory.process.size' , default: null (fallback keys: [])) need to be "
        "configured explicitly."
    )


def test_e2_overhead_range():
    error = failure(
        {
            "jobmanager.memory.process.size": "1600m",
            "jobmanager.memory.jvm-overhead.min": "300m",
            "jobmanager.memory.jvm-overhead.max": "200m",
        }
    )
    assert str(error).startswith(
        PREFIX + "Inconsistently configured Key: 'jobmanager.memory.jvm-overhead.fraction' , default: 0.1 "
        "(fallback keys: []) (0.10000000149011612) and its min (300.000mb (314572800 bytes)), "
        "max (200.000mb (209715200 bytes)) value"
    )


def test_e3_metaspace_and_overhead_exceed_process():
    assert str(failure({"jobmanager.memory.process.size": "400m"})) == PREFIX + (
        "Sum of configured JVM Metaspace (256.000mb (268435456 bytes)) and JVM Overhead "
        "(192.000mb (201326592 bytes)) exceed configured Total Process Memory (400.000mb (419430400 bytes))."
    )


def test_e4_process_too_small_for_heap():
    error = failure({"jobmanager.memory.heap.size": "1g", "jobmanager.memory.process.size": "1g"})
    assert str(error) == PREFIX + (
        "The configured Total Process Memory size (1024.000mb (1073741824 bytes)) is less than the sum of the "
        "derived Total Flink Memory size (1.125gb (1207959552 bytes)) and the configured or default JVM "
        "Metaspace size  (256.000mb (268435456 bytes))."
    )


def test_e5_overhead_rest_below_min():
    error = failure({"jobmanager.memory.heap.size": "500m", "jobmanager.memory.process.size": "1000m"})
    assert str(error) == PREFIX + (
        "Derived JVM Overhead size (116.000mb (121634816 bytes)) is not in configured JVM Overhead range "
        "[192.000mb (201326592 bytes), 1024.000mb (1073741824 bytes)]."
    )


def test_e11_heap_plus_explicit_off_heap_must_match_total_flink():
    error = failure(
        {
            "jobmanager.memory.heap.size": "1g",
            "jobmanager.memory.off-heap.size": "256m",
            "jobmanager.memory.flink.size": "2g",
        }
    )
    assert str(error) == PREFIX + (
        "Sum of the configured JVM Heap Memory (1024.000mb (1073741824 bytes)) and the configured Off-heap "
        "Memory (256.000mb (268435456 bytes)) does not match the configured Total Flink Memory "
        "(2.000gb (2147483648 bytes)). Please, make the configuration consistent or configure only one "
        "option: either JVM Heap or Total Flink Memory."
    )


def test_e12_heap_exceeds_total_flink():
    error = failure({"jobmanager.memory.heap.size": "2g", "jobmanager.memory.flink.size": "1g"})
    assert str(error) == PREFIX + (
        "The configured JVM Heap Memory (2.000gb (2147483648 bytes)) exceeds the configured Total Flink "
        "Memory (1024.000mb (1073741824 bytes)). Please, make the configuration consistent or configure "
        "only one option: either JVM Heap or Total Flink Memory."
    )


@pytest.mark.parametrize(("flink", "text"), [("128m", "128.000mb (134217728 bytes)"), ("100m", "100.000mb (104857600 bytes)")])
def test_e13_total_flink_not_above_off_heap(flink, text):
    error = failure({"jobmanager.memory.flink.size": flink})
    assert str(error) == PREFIX + (
        f"The configured Total Flink Memory ({text}) is less than the configured Off-heap Memory (128.000mb (134217728 bytes))."
    )


def test_e13_through_the_process_path():
    error = failure({"jobmanager.memory.process.size": "576m"})  # 576 - 192 - 256 = 128m = off-heap
    assert "is less than the configured Off-heap Memory" in str(error)


def test_e14_unreadable_size():
    error = failure({"jobmanager.memory.process.size": "1600m", "jobmanager.memory.off-heap.size": "big"})
    assert str(error) == PREFIX + "Cannot read memory size from config option 'jobmanager.memory.off-heap.size'."


def test_unparseable_fraction_is_not_wrapped():
    with pytest.raises(InvalidValueError, match=r"^Could not parse value 'x' for key 'jobmanager\.memory\.jvm-overhead\.fraction'\.$"):
        spec_from({"jobmanager.memory.process.size": "1600m", "jobmanager.memory.jvm-overhead.fraction": "x"})


@pytest.mark.parametrize(
    "mapping",
    [{"jobmanager.memory.process.size": size} for size in ("768m", "1g", "1600m", "2g", "4g", "8g", "32g")]
    + [
        {"jobmanager.memory.flink.size": "3g", "jobmanager.memory.off-heap.size": "512m"},
        {"jobmanager.memory.heap.size": "700m", "jobmanager.memory.jvm-metaspace.size": "128m"},
        {"jobmanager.memory.process.size": "2g", "jobmanager.memory.jvm-overhead.fraction": "0.3"},
    ],
)
def test_many_configurations(mapping):
    spec = spec_from(mapping)
    assert spec.total_process == spec.jvm_heap + spec.off_heap + spec.jvm_metaspace + spec.jvm_overhead
    config = Configuration(mapping)
    if config.contains(o.JOB_MANAGER_TOTAL_PROCESS_MEMORY):
        assert spec.total_process == config.get(o.JOB_MANAGER_TOTAL_PROCESS_MEMORY)
    if config.contains(o.JOB_MANAGER_TOTAL_FLINK_MEMORY):
        assert spec.total_flink == config.get(o.JOB_MANAGER_TOTAL_FLINK_MEMORY)
    assert 192 * MiB <= spec.jvm_overhead <= GiB
    pinned = Configuration(mapping).update(spec.dynamic_configs())
    assert job_manager_process_spec_from_config(pinned) == spec
    assert JobManagerProcessSpec.from_dict(spec.to_dict()) == spec
