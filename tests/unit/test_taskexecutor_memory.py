"""TaskManager memory model: Flink's derivation to the byte (reference/memory-model.md §4-§6, §9-§12).

Expected values are Flink's documented/logged numbers, or follow from Flink's
documented rules with the documented multipliers written out below.
"""

import logging
from decimal import Decimal

import pytest

from jobcluster.config import options as o
from jobcluster.config.configuration import Configuration, InvalidValueError
from jobcluster.errors import IllegalConfigurationError
from jobcluster.memory.capped import read_memory
from jobcluster.memory.spec import ResourceProfile, TaskExecutorProcessSpec, WorkerResourceSpec
from jobcluster.memory.taskexecutor import (
    process_spec_from_worker_spec,
    task_executor_process_spec_from_config,
)

MiB = 1 << 20
GiB = 1 << 30
PREFIX = "TaskManager memory configuration failed: "

# Flink's fractions as the doubles it multiplies with (float32 widened), and f/(1-f).
F01 = "0.10000000149011612"
F04 = "0.4000000059604645"
INV01 = "0.11111111295076065"


def times(size: int, multiplier: str) -> int:
    """Flink's size x fraction: exact decimal product, truncated."""
    return int(Decimal(size) * Decimal(multiplier))


def spec_from(mapping: dict) -> TaskExecutorProcessSpec:
    return task_executor_process_spec_from_config(Configuration(mapping))


def failure(mapping: dict) -> IllegalConfigurationError:
    with pytest.raises(IllegalConfigurationError) as caught:
        spec_from(mapping)
    return caught.value


FLINK_DEFAULT = TaskExecutorProcessSpec(
    cpu_cores=Decimal(1),
    framework_heap=134217728,
    framework_off_heap=134217728,
    task_heap=402653174,
    task_off_heap=0,
    network=134217730,
    managed=536870920,
    jvm_metaspace=268435456,
    jvm_overhead=201326592,
    num_slots=1,
)


# -- Flink's worked default ------------------------------------------------------------


def test_flink_default_1728m_to_the_byte():
    spec = spec_from({"taskmanager.memory.process.size": "1728m"})
    assert spec == FLINK_DEFAULT
    assert spec.total_flink == 1342177280
    assert spec.total_process == 1728 * MiB
    assert spec.jvm_heap == 536870902
    assert spec.jvm_direct == 268435458


def test_flink_default_jvm_args():
    assert FLINK_DEFAULT.jvm_args() == ("-Xmx536870902 -Xms536870902 -XX:MaxDirectMemorySize=268435458 -XX:MaxMetaspaceSize=268435456")


def test_flink_default_dynamic_configs():
    assert FLINK_DEFAULT.dynamic_configs() == {
        "taskmanager.cpu.cores": "1.0",
        "taskmanager.memory.framework.heap.size": "134217728b",
        "taskmanager.memory.framework.off-heap.size": "134217728b",
        "taskmanager.memory.task.heap.size": "402653174b",
        "taskmanager.memory.task.off-heap.size": "0b",
        "taskmanager.memory.network.min": "134217730b",
        "taskmanager.memory.network.max": "134217730b",
        "taskmanager.memory.managed.size": "536870920b",
        "taskmanager.memory.jvm-metaspace.size": "268435456b",
        "taskmanager.memory.jvm-overhead.min": "201326592b",
        "taskmanager.memory.jvm-overhead.max": "201326592b",
        "taskmanager.numberOfTaskSlots": "1",
        "external-resources": "none",
    }
    text = FLINK_DEFAULT.dynamic_configs_text()
    assert text.startswith("-D taskmanager.cpu.cores=1.0 -D taskmanager.memory.framework.heap.size=134217728b")
    assert "  " not in text and not text.endswith(" ")


def test_total_flink_1280m_is_the_same_as_process_1728m():
    # Flink's shipped file has flink.size 1280m commented out next to process.size 1728m.
    assert spec_from({"taskmanager.memory.flink.size": "1280m"}) == FLINK_DEFAULT
    both = {"taskmanager.memory.flink.size": "1280m", "taskmanager.memory.process.size": "1728m"}
    assert spec_from(both) == FLINK_DEFAULT


# -- path A: task heap and managed explicit ---------------------------------------------------


def test_fine_grained_with_inverse_fractions():
    spec = spec_from({"taskmanager.memory.task.heap.size": "1g", "taskmanager.memory.managed.size": "1g"})
    rest = 128 * MiB + 128 * MiB + GiB + 0 + GiB
    network = times(rest, INV01)
    assert spec.network == network
    flink = rest + network
    assert spec.total_flink == flink
    assert spec.jvm_overhead == times(flink + 256 * MiB, INV01)
    assert 192 * MiB <= spec.jvm_overhead <= GiB
    assert (spec.task_heap, spec.managed) == (GiB, GiB)


def test_fine_grained_fully_pinned_is_plain_addition():
    spec = spec_from(
        {
            "taskmanager.memory.task.heap.size": "512m",
            "taskmanager.memory.managed.size": "256m",
            "taskmanager.memory.network.min": "100m",
            "taskmanager.memory.network.max": "100m",
            "taskmanager.memory.jvm-overhead.min": "300m",
            "taskmanager.memory.jvm-overhead.max": "300m",
        }
    )
    assert spec.network == 100 * MiB
    assert spec.total_flink == (128 + 128 + 512 + 256 + 100) * MiB
    assert spec.total_process == (1124 + 256 + 300) * MiB


def test_fine_grained_with_total_flink_makes_network_the_rest():
    spec = spec_from(
        {
            "taskmanager.memory.task.heap.size": "512m",
            "taskmanager.memory.managed.size": "256m",
            "taskmanager.memory.flink.size": "1124m",
        }
    )
    assert spec.network == 100 * MiB
    assert spec.total_flink == 1124 * MiB


def test_fine_grained_with_total_process_makes_overhead_the_rest():
    spec = spec_from(
        {
            "taskmanager.memory.task.heap.size": "512m",
            "taskmanager.memory.managed.size": "512m",
            "taskmanager.memory.process.size": "2g",
        }
    )
    rest = (128 + 128 + 512 + 512) * MiB
    assert spec.network == times(rest, INV01)
    assert spec.jvm_overhead == 2 * GiB - (rest + spec.network) - 256 * MiB
    assert spec.total_process == 2 * GiB


# -- paths B and C -------------------------------------------------------------------------


def test_process_size_with_explicit_task_heap_makes_network_the_rest():
    spec = spec_from({"taskmanager.memory.process.size": "1728m", "taskmanager.memory.task.heap.size": "384m"})
    assert spec.managed == 536870920
    assert spec.network == 1342177280 - 2 * 134217728 - 384 * MiB - 536870920
    assert spec.jvm_overhead == 201326592  # still the fraction of the process size (path C)


def test_explicit_managed_alone_leaves_task_heap_the_rest():
    spec = spec_from({"taskmanager.memory.process.size": "1728m", "taskmanager.memory.managed.size": "0"})
    assert spec.managed == 0
    assert spec.network == 134217730
    assert spec.task_heap == 1342177280 - 2 * 134217728 - 134217730


def test_large_process_caps_overhead_at_its_max_and_network_is_unlimited():
    spec = spec_from({"taskmanager.memory.process.size": "16g"})
    assert spec.jvm_overhead == GiB  # 10% would be 1.6 GiB
    flink = 16 * GiB - 256 * MiB - GiB
    assert spec.total_flink == flink
    assert spec.managed == times(flink, F04)
    assert spec.network == times(flink, F01)  # above Flink 1.16's old 1g max
    assert spec.task_heap == flink - 2 * 128 * MiB - spec.managed - spec.network


def test_small_process_raises_network_to_its_min():
    spec = spec_from({"taskmanager.memory.process.size": "1024m"})
    assert spec.jvm_overhead == 192 * MiB
    flink = (1024 - 192 - 256) * MiB
    assert times(flink, F01) < 64 * MiB
    assert spec.network == 64 * MiB
    assert spec.task_heap == flink - 2 * 128 * MiB - times(flink, F04) - 64 * MiB


def test_network_max_caps_the_fraction():
    spec = spec_from({"taskmanager.memory.process.size": "4g", "taskmanager.memory.network.max": "256m"})
    assert spec.jvm_overhead == times(4 * GiB, F01)
    assert spec.network == 256 * MiB


def test_min_equal_max_pins_the_size():
    spec = spec_from(
        {
            "taskmanager.memory.process.size": "4g",
            "taskmanager.memory.network.min": "77m",
            "taskmanager.memory.network.max": "77m",
            "taskmanager.memory.jvm-overhead.min": "333m",
            "taskmanager.memory.jvm-overhead.max": "333m",
        }
    )
    assert (spec.network, spec.jvm_overhead) == (77 * MiB, 333 * MiB)


@pytest.mark.parametrize(("fraction", "multiplier"), [("0", "0"), ("0.25", "0.25"), ("0.6", "0.6000000238418579")])
def test_managed_fraction(fraction, multiplier):
    spec = spec_from({"taskmanager.memory.process.size": "4g", "taskmanager.memory.managed.fraction": fraction})
    assert spec.managed == times(spec.total_flink, multiplier)


def test_managed_fraction_is_ignored_when_managed_size_is_set():
    spec = spec_from(
        {
            "taskmanager.memory.process.size": "1728m",
            "taskmanager.memory.managed.size": "100m",
            "taskmanager.memory.managed.fraction": "7",
        }
    )
    assert spec.managed == 100 * MiB


# -- deprecated keys ---------------------------------------------------------------------


def test_deprecated_managed_key():
    spec = spec_from({"taskmanager.memory.process.size": "1728m", "taskmanager.memory.size": "0"})
    assert spec.managed == 0
    # and it completes the fine-grained set
    fine = spec_from({"taskmanager.memory.task.heap.size": "512m", "taskmanager.memory.size": "256m"})
    assert fine.managed == 256 * MiB and fine.task_heap == 512 * MiB


def test_deprecated_network_keys():
    spec = spec_from(
        {
            "taskmanager.memory.process.size": "1728m",
            "taskmanager.network.memory.min": "200m",
            "taskmanager.network.memory.max": "200m",
        }
    )
    assert spec.network == 200 * MiB
    spec = spec_from({"taskmanager.memory.process.size": "4g", "taskmanager.network.memory.fraction": "0.2"})
    assert spec.network == times(spec.total_flink, "0.20000000298023224")


def test_new_network_key_wins():
    spec = spec_from(
        {
            "taskmanager.memory.process.size": "1728m",
            "taskmanager.network.memory.min": "300m",
            "taskmanager.network.memory.max": "300m",
            "taskmanager.memory.network.min": "100m",
            "taskmanager.memory.network.max": "100m",
        }
    )
    assert spec.network == 100 * MiB


def test_removed_legacy_keys_are_just_unknown():
    # Flink 2.x removed taskmanager.heap.size and numberOfBuffers; they change nothing.
    spec = spec_from(
        {
            "taskmanager.memory.process.size": "1728m",
            "taskmanager.heap.size": "4g",
            "taskmanager.network.numberOfBuffers": "10",
        }
    )
    assert spec == FLINK_DEFAULT


# -- errors (§9) -------------------------------------------------------------------------


def test_e1_nothing_configured():
    error = failure({})
    assert str(error) == PREFIX + (
        "Either required fine-grained memory (taskmanager.memory.task.heap.size and "
        "taskmanager.memory.managed.size), or Total Flink Memory size (Key: 'taskmanager.memory.flink.size' , "
        "default: null (fallback keys: [])), or Total Process Memory size (Key: "
        "'taskmanager.memory.process.size' , default: null (fallback keys: [])) need to be configured explicitly."
    )


def test_e1_task_heap_alone_is_not_enough():
    assert "Either required fine-grained memory" in str(failure({"taskmanager.memory.task.heap.size": "1g"}))


@pytest.mark.parametrize(
    "totals",
    [
        {"taskmanager.memory.process.size": "1728m"},
        {"taskmanager.memory.flink.size": "1280m"},
        {"taskmanager.memory.task.heap.size": "1g", "taskmanager.memory.managed.size": "1g"},
    ],
)
def test_e2_overhead_min_above_max_fails_on_every_path(totals):
    error = failure({**totals, "taskmanager.memory.jvm-overhead.min": "1g", "taskmanager.memory.jvm-overhead.max": "512m"})
    assert str(error) == PREFIX + (
        "Inconsistently configured Key: 'taskmanager.memory.jvm-overhead.fraction' , default: 0.1 "
        "(fallback keys: []) (0.10000000149011612) and its min (1024.000mb (1073741824 bytes)), "
        "max (512.000mb (536870912 bytes)) value"
    )
    assert str(error.__cause__.__cause__) == "min value must be less or equal to max value"


@pytest.mark.parametrize(("fraction", "shown"), [("1.0", "1.0"), ("-0.1", "-0.10000000149011612"), ("1.5", "1.5")])
def test_e2_overhead_fraction_out_of_range(fraction, shown):
    error = failure({"taskmanager.memory.process.size": "1728m", "taskmanager.memory.jvm-overhead.fraction": fraction})
    assert f"jvm-overhead.fraction' , default: 0.1 (fallback keys: []) ({shown}) and its min" in str(error)
    assert str(error.__cause__.__cause__) == "fraction must be in range [0, 1)"


def test_e2_network_min_above_max():
    error = failure(
        {
            "taskmanager.memory.process.size": "1728m",
            "taskmanager.memory.network.min": "256m",
            "taskmanager.memory.network.max": "128m",
        }
    )
    assert str(error).startswith(
        PREFIX + "Inconsistently configured Key: 'taskmanager.memory.network.fraction' , default: 0.1 "
        "(fallback keys: [{key=taskmanager.network.memory.fraction, isDeprecated=true}]) (0.10000000149011612) "
        "and its min (256.000mb (268435456 bytes)), max (128.000mb (134217728 bytes)) value"
    )


def test_e2_network_min_above_max_with_task_heap_is_wrapped_in_e9():
    error = failure(
        {
            "taskmanager.memory.process.size": "1728m",
            "taskmanager.memory.task.heap.size": "384m",
            "taskmanager.memory.network.min": "256m",
            "taskmanager.memory.network.max": "128m",
        }
    )
    assert str(error).startswith(PREFIX + "If Total Flink, Task Heap and (or) Managed Memory sizes")
    assert str(error.__cause__.__cause__).startswith("Inconsistently configured Key: 'taskmanager.memory.network.fraction'")


def test_e2_managed_fraction_fails_only_when_it_is_used():
    error = failure({"taskmanager.memory.process.size": "1728m", "taskmanager.memory.managed.fraction": "1"})
    assert "Inconsistently configured Key: 'taskmanager.memory.managed.fraction' , default: 0.4" in str(error)
    assert "(1.0) and its min (0 bytes), max (8388608.000tb (9223372036854775807 bytes)) value" in str(error)


def test_e3_metaspace_and_overhead_exceed_process():
    error = failure({"taskmanager.memory.process.size": "300m"})
    assert str(error) == PREFIX + (
        "Sum of configured JVM Metaspace (256.000mb (268435456 bytes)) and JVM Overhead "
        "(192.000mb (201326592 bytes)) exceed configured Total Process Memory (300.000mb (314572800 bytes))."
    )


def test_e4_process_smaller_than_flink_plus_metaspace():
    error = failure({"taskmanager.memory.flink.size": "1g", "taskmanager.memory.process.size": "1g"})
    assert str(error) == PREFIX + (
        "The configured Total Process Memory size (1024.000mb (1073741824 bytes)) is less than the sum of "
        "the derived Total Flink Memory size (1024.000mb (1073741824 bytes)) and the configured or default "
        "JVM Metaspace size  (256.000mb (268435456 bytes))."
    )


@pytest.mark.parametrize(("process", "overhead"), [("1600m", "64.000mb (67108864 bytes)"), ("3g", "1.500gb (1610612736 bytes)")])
def test_e5_overhead_rest_out_of_range(process, overhead):
    error = failure({"taskmanager.memory.flink.size": "1280m", "taskmanager.memory.process.size": process})
    assert str(error) == PREFIX + (
        f"Derived JVM Overhead size ({overhead}) is not in configured JVM "
        "Overhead range [192.000mb (201326592 bytes), 1024.000mb (1073741824 bytes)]."
    )


def test_e5_overhead_rest_accepted_at_both_bounds():
    for process in ("1728m", "2560m"):  # rest = 192m and 1024m
        spec = spec_from({"taskmanager.memory.flink.size": "1280m", "taskmanager.memory.process.size": process})
        assert spec.total_process == int(process[:-1]) * MiB


def test_e7_fine_grained_exceeds_total_flink():
    error = failure(
        {
            "taskmanager.memory.task.heap.size": "1g",
            "taskmanager.memory.managed.size": "1g",
            "taskmanager.memory.flink.size": "1g",
        }
    )
    assert str(error) == PREFIX + (
        "Sum of configured Framework Heap Memory (128.000mb (134217728 bytes)), Framework Off-Heap Memory "
        "(128.000mb (134217728 bytes)), Task Heap Memory (1024.000mb (1073741824 bytes)), Task Off-Heap Memory "
        "(0 bytes) and Managed Memory (1024.000mb (1073741824 bytes)) exceed configured Total Flink Memory "
        "(1024.000mb (1073741824 bytes))."
    )


def test_e7_explicit_task_heap_exceeds_total_flink():
    error = failure({"taskmanager.memory.flink.size": "1g", "taskmanager.memory.task.heap.size": "1g"})
    assert str(error).startswith(PREFIX + "Sum of configured Framework Heap Memory")
    assert "Task Heap Memory (1024.000mb (1073741824 bytes))" in str(error)
    assert f"Managed Memory (409.600mb ({times(GiB, F04)} bytes))" in str(error)


def test_e8_derived_parts_exceed_total_flink():
    error = failure({"taskmanager.memory.flink.size": "300m"})
    managed = times(300 * MiB, F04)
    assert str(error) == PREFIX + (
        "Sum of configured Framework Heap Memory (128.000mb (134217728 bytes)), Framework Off-Heap Memory "
        "(128.000mb (134217728 bytes)), Task Off-Heap Memory (0 bytes), Managed Memory "
        f"(120.000mb ({managed} bytes)) and Network Memory (64.000mb (67108864 bytes)) exceed configured "
        "Total Flink Memory (300.000mb (314572800 bytes))."
    )


def test_e9_docs_example_3_fails_on_a_taskmanager():
    error = failure(
        {
            "taskmanager.memory.process.size": "1000m",
            "taskmanager.memory.task.heap.size": "100m",
            "taskmanager.memory.jvm-overhead.min": "64m",
            "taskmanager.memory.jvm-overhead.max": "256m",
        }
    )
    assert str(error) == PREFIX + (
        "If Total Flink, Task Heap and (or) Managed Memory sizes are explicitly configured then the Network "
        "Memory size is the rest of the Total Flink memory after subtracting all other configured types of "
        "memory, but the derived Network Memory is inconsistent with its configuration."
    )
    assert str(error.__cause__.__cause__) == (
        "Derived Network Memory size (30.400mb (31876706 bytes)) is not in configured Network Memory range "
        "[64.000mb (67108864 bytes), 8388608.000tb (9223372036854775807 bytes)]."
    )


def test_e9_network_rest_above_max():
    error = failure(
        {
            "taskmanager.memory.task.heap.size": "100m",
            "taskmanager.memory.managed.size": "100m",
            "taskmanager.memory.flink.size": "2g",
            "taskmanager.memory.network.max": "1g",
        }
    )
    assert "the derived Network Memory is inconsistent with its configuration" in str(error)
    assert "is not in configured Network Memory range [64.000mb (67108864 bytes), 1024.000mb" in str(error.__cause__.__cause__)


@pytest.mark.parametrize(
    "key",
    [
        "taskmanager.memory.process.size",
        "taskmanager.memory.jvm-metaspace.size",
        "taskmanager.memory.framework.heap.size",
        "taskmanager.memory.network.min",
    ],
)
def test_e14_unreadable_size(key):
    mapping = {"taskmanager.memory.process.size": "1728m", key: "1.5g"}
    assert str(failure(mapping)) == PREFIX + f"Cannot read memory size from config option '{key}'."


def test_unparseable_fraction_is_not_wrapped():
    with pytest.raises(InvalidValueError) as caught:
        spec_from({"taskmanager.memory.process.size": "1728m", "taskmanager.memory.network.fraction": "a tenth"})
    assert str(caught.value) == "Could not parse value 'a tenth' for key 'taskmanager.memory.network.fraction'."


@pytest.mark.parametrize(
    "extra",
    [
        {"taskmanager.cpu.cores": "0"},
        {"taskmanager.cpu.cores": "-2"},
        {"taskmanager.numberOfTaskSlots": "0"},
        {"taskmanager.numberOfTaskSlots": "-1"},
    ],
)
def test_e16_cpu_cores_must_be_positive(extra):
    error = failure({"taskmanager.memory.process.size": "1728m", **extra})
    assert str(error) == PREFIX + (
        "TaskExecutors need to be started with a positive number of CPU cores. Please configure taskmanager.cpu.cores accordingly."
    )


def test_slots_must_be_at_least_one_even_with_cpu_cores():
    error = failure({"taskmanager.memory.process.size": "1728m", "taskmanager.cpu.cores": "2", "taskmanager.numberOfTaskSlots": "0"})
    assert "Number of task slots must be at least one." in str(error)


def test_info_log_when_overhead_is_a_rest_but_a_fraction_was_set(caplog):
    with caplog.at_level(logging.INFO, logger="jobcluster.memory"):
        spec_from(
            {
                "taskmanager.memory.flink.size": "1280m",
                "taskmanager.memory.process.size": "1800m",
                "taskmanager.memory.jvm-overhead.fraction": "0.2",
            }
        )
    assert any("fraction" in record.getMessage() for record in caplog.records)


# -- CPU and slots (§11, §12) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "cores", "text"),
    [
        ({}, Decimal(1), "1.0"),
        ({"taskmanager.numberOfTaskSlots": "3"}, Decimal(3), "3.0"),
        ({"taskmanager.cpu.cores": "1.5", "taskmanager.numberOfTaskSlots": "3"}, Decimal("1.5"), "1.5"),
        ({"taskmanager.cpu.cores": "0.123456789"}, Decimal("0.12345678"), "0.12345678"),
    ],
)
def test_cpu_cores(extra, cores, text):
    spec = spec_from({"taskmanager.memory.process.size": "1728m", **extra})
    assert spec.cpu_cores == cores
    assert spec.dynamic_configs()["taskmanager.cpu.cores"] == text


def test_default_slot_profile_one_slot():
    assert FLINK_DEFAULT.default_slot_profile() == ResourceProfile(Decimal(1), 402653174, 0, 536870920, 134217730)


def test_default_slot_profile_four_slots():
    spec = spec_from({"taskmanager.memory.process.size": "1728m", "taskmanager.numberOfTaskSlots": "4"})
    assert spec.cpu_cores == 4
    assert spec.default_slot_profile() == ResourceProfile(Decimal(1), 100663293, 0, 134217730, 33554432)
    assert spec.default_slot_profile().multiply(4).is_matching(spec.default_slot_profile())
    assert spec.total_resource_profile().is_matching(spec.default_slot_profile().multiply(4))


def test_slot_cpu_is_rounded_down_to_8_places():
    spec = spec_from({"taskmanager.memory.process.size": "1728m", "taskmanager.cpu.cores": "1", "taskmanager.numberOfTaskSlots": "3"})
    assert spec.default_slot_profile().cpu_cores == Decimal("0.33333333")


# -- worker specs (§12) -------------------------------------------------------------------


def test_worker_resource_spec_of_the_default():
    worker = FLINK_DEFAULT.worker_resource_spec()
    assert worker == WorkerResourceSpec(Decimal(1), 402653174, 0, 134217730, 536870920, 1)
    assert worker.total_memory == GiB
    assert WorkerResourceSpec.from_dict(worker.to_dict()) == worker


@pytest.mark.parametrize(
    "mapping",
    [
        {},  # overhead by inverse fraction
        {"taskmanager.memory.flink.size": "1280m"},
        {"taskmanager.memory.process.size": "1728m"},  # overhead = rest of the process size
    ],
)
def test_process_spec_from_worker_spec_reproduces_the_default(mapping):
    rebuilt = process_spec_from_worker_spec(Configuration(mapping), FLINK_DEFAULT.worker_resource_spec())
    assert rebuilt == FLINK_DEFAULT


def test_process_spec_from_worker_spec_takes_framework_memory_from_config():
    worker = WorkerResourceSpec(Decimal(2), 512 * MiB, 0, 64 * MiB, 256 * MiB, 2)
    spec = process_spec_from_worker_spec(Configuration({"taskmanager.memory.framework.heap.size": "64m"}), worker)
    assert spec.framework_heap == 64 * MiB and spec.framework_off_heap == 128 * MiB
    assert (spec.cpu_cores, spec.num_slots) == (Decimal(2), 2)
    assert spec.worker_resource_spec() == worker
    assert spec.jvm_overhead == 192 * MiB


def test_process_spec_from_worker_spec_that_does_not_fit_the_process_size():
    worker = WorkerResourceSpec(Decimal(1), 2 * GiB, 0, 64 * MiB, 0, 1)
    with pytest.raises(IllegalConfigurationError) as caught:
        process_spec_from_worker_spec(Configuration({"taskmanager.memory.process.size": "1728m"}), worker)
    assert str(caught.value).startswith("The configured Total Process Memory size (1.688gb (1811939328 bytes))")


# -- many configurations ---------------------------------------------------------------------

MANY = [
    {"taskmanager.memory.process.size": size, "taskmanager.numberOfTaskSlots": slots}
    for size in ("1g", "1728m", "2g", "2560m", "4g", "6144m", "8g", "16g", "64g")
    for slots in ("1", "2", "4")
] + [
    {"taskmanager.memory.flink.size": "1g"},
    {"taskmanager.memory.flink.size": "4g", "taskmanager.memory.managed.fraction": "0.1"},
    {"taskmanager.memory.flink.size": "1280m", "taskmanager.memory.process.size": "2g"},
    {"taskmanager.memory.task.heap.size": "1g", "taskmanager.memory.managed.size": "0"},
    {"taskmanager.memory.task.heap.size": "3g", "taskmanager.memory.managed.size": "2g", "taskmanager.memory.process.size": "7g"},
    {"taskmanager.memory.process.size": "3g", "taskmanager.memory.task.heap.size": "1g"},
    {"taskmanager.memory.process.size": "3g", "taskmanager.memory.task.off-heap.size": "256m"},
    {"taskmanager.memory.process.size": "3g", "taskmanager.memory.jvm-metaspace.size": "128m"},
    {"taskmanager.memory.process.size": "5000000000", "taskmanager.memory.network.fraction": "0.15"},
    {"taskmanager.memory.process.size": "2g", "taskmanager.memory.jvm-overhead.fraction": "0.25"},
]


@pytest.mark.parametrize("mapping", MANY, ids=lambda m: ",".join(f"{k.split('.')[-2]}.{k.split('.')[-1]}={v}" for k, v in m.items()))
def test_many_configurations(mapping):
    spec = spec_from(mapping)
    config = Configuration(mapping)
    if config.contains(o.TASK_MANAGER_TOTAL_PROCESS_MEMORY):
        assert spec.total_process == config.get(o.TASK_MANAGER_TOTAL_PROCESS_MEMORY)
    if config.contains(o.TASK_MANAGER_TOTAL_FLINK_MEMORY):
        assert spec.total_flink == config.get(o.TASK_MANAGER_TOTAL_FLINK_MEMORY)
    assert spec.num_slots == config.get(o.NUM_TASK_SLOTS)
    assert spec.total_process == spec.total_flink + spec.jvm_metaspace + spec.jvm_overhead
    assert spec.jvm_heap + spec.jvm_direct + spec.managed == spec.total_flink
    assert spec.network >= 64 * MiB
    assert 192 * MiB <= spec.jvm_overhead <= GiB
    # the pinned dynamic configs reproduce the spec (what a started TaskExecutor sees)
    pinned = Configuration(mapping)
    pinned.update(spec.dynamic_configs())
    assert task_executor_process_spec_from_config(pinned) == spec
    # the ResourceManager's worker spec round trip gives the same process
    assert process_spec_from_worker_spec(config, spec.worker_resource_spec()) == spec
    assert TaskExecutorProcessSpec.from_dict(spec.to_dict()) == spec


def test_a_size_without_default_is_read_only_where_it_is_set():
    assert read_memory(Configuration({"taskmanager.memory.task.heap.size": "1g"}), o.TASK_MANAGER_TASK_HEAP_MEMORY) == GiB
    assert read_memory(Configuration(), o.TASK_MANAGER_FRAMEWORK_HEAP_MEMORY) == 128 * MiB  # the default
    with pytest.raises(IllegalConfigurationError, match=r"config option 'taskmanager\.memory\.task\.heap\.size': it is not set"):
        read_memory(Configuration(), o.TASK_MANAGER_TASK_HEAP_MEMORY)
