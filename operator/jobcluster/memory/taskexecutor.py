"""The TaskManager (TaskExecutor) memory model: configuration to process spec, exactly as Flink.

Why exact: a job cluster's containers are sized from this spec and a Flink
user's configuration must give the same container, to the byte, as Flink
would.  We model Flink 2.x: no legacy ``taskmanager.heap.*`` or
``taskmanager.network.numberOfBuffers`` (such keys are just unknown keys),
network max unlimited by default; the deprecated alias keys
``taskmanager.memory.size`` and ``taskmanager.network.memory.{min,max,fraction}``
are honoured through the options' deprecated keys.

Splitting Total Flink Memory (F), after the process-level path is chosen
(``process.py``):

* fine-grained (task heap and managed explicit): network is the rest of a
  configured F (must fit its range) or, without F, the capped inverse
  fraction of everything else;
* F known, task heap explicit: managed = its size or F x managed fraction,
  network = the rest of F (must fit its range);
* F known, task heap not explicit: managed as above, network = capped
  fraction of F, task heap = the rest.

Every failure is raised as ``IllegalConfigurationError`` with Flink's text,
prefixed "TaskManager memory configuration failed: ".
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import NamedTuple

from jobcluster.config import options as o
from jobcluster.config.configuration import Configuration, InvalidValueError
from jobcluster.errors import IllegalConfigurationError
from jobcluster.memory.capped import (
    RangeFraction,
    derive_with_fraction,
    derive_with_inverse_fraction,
    is_within,
    read_memory,
    read_range_fraction,
    read_range_options,
)
from jobcluster.memory.process import (
    DerivationPath,
    ProcessMemoryOptions,
    metaspace_and_overhead_from_total_flink,
    metaspace_and_overhead_from_total_process,
    select_path,
)
from jobcluster.memory.size import LONG_MAX, add, multiply
from jobcluster.memory.size import format_memory_size as fmt
from jobcluster.memory.spec import TaskExecutorProcessSpec, WorkerResourceSpec, cpu_decimal

log = logging.getLogger(__name__)

ERROR_PREFIX = "TaskManager memory configuration failed: "

TASK_MANAGER_PROCESS_OPTIONS = ProcessMemoryOptions(
    required_fine_grained=(o.TASK_MANAGER_TASK_HEAP_MEMORY, o.TASK_MANAGER_MANAGED_MEMORY_SIZE),
    total_flink=o.TASK_MANAGER_TOTAL_FLINK_MEMORY,
    total_process=o.TASK_MANAGER_TOTAL_PROCESS_MEMORY,
    jvm_metaspace=o.TASK_MANAGER_JVM_METASPACE,
    jvm_overhead_min=o.TASK_MANAGER_JVM_OVERHEAD_MIN,
    jvm_overhead_max=o.TASK_MANAGER_JVM_OVERHEAD_MAX,
    jvm_overhead_fraction=o.TASK_MANAGER_JVM_OVERHEAD_FRACTION,
)


class _FlinkMemory(NamedTuple):
    framework_heap: int
    task_heap: int
    framework_off_heap: int
    task_off_heap: int
    network: int
    managed: int

    @property
    def total(self) -> int:
        return add(*self)


def task_executor_process_spec_from_config(config: Configuration) -> TaskExecutorProcessSpec:
    """Derive every TaskExecutor memory component (bytes), CPU and slots from the configuration.

    Mirrors Flink's ``TaskExecutorProcessUtils.processSpecFromConfig``: the three
    derivation paths, capped and inverse fractions, metaspace and overhead
    rules, CPU from ``taskmanager.cpu.cores`` else ``taskmanager.numberOfTaskSlots``.

    Raises:
        IllegalConfigurationError: any of Flink's memory configuration errors,
            prefixed "TaskManager memory configuration failed: " (cause chained).
    """
    try:
        path = select_path(config, TASK_MANAGER_PROCESS_OPTIONS)
        if path is DerivationPath.FINE_GRAINED:
            flink = _flink_memory_from_fine_grained(config)
            metaspace, overhead = metaspace_and_overhead_from_total_flink(config, TASK_MANAGER_PROCESS_OPTIONS, flink.total)
        elif path is DerivationPath.TOTAL_FLINK:
            total_flink = read_memory(config, o.TASK_MANAGER_TOTAL_FLINK_MEMORY)
            flink = _flink_memory_from_total(config, total_flink)
            metaspace, overhead = metaspace_and_overhead_from_total_flink(config, TASK_MANAGER_PROCESS_OPTIONS, total_flink)
        else:
            total_process = read_memory(config, o.TASK_MANAGER_TOTAL_PROCESS_MEMORY)
            metaspace, overhead = metaspace_and_overhead_from_total_process(config, TASK_MANAGER_PROCESS_OPTIONS, total_process)
            flink = _flink_memory_from_total(config, total_process - metaspace - overhead)
        cpu_cores = cpu_cores_from_config(config)
        num_slots = num_slots_from_config(config)
    except InvalidValueError:
        raise  # Flink lets unparseable non-size values through unwrapped
    except IllegalConfigurationError as error:
        raise IllegalConfigurationError(ERROR_PREFIX + str(error)) from error
    return _process_spec(flink, metaspace, overhead, cpu_cores, num_slots)


def process_spec_from_worker_spec(config: Configuration, worker: WorkerResourceSpec) -> TaskExecutorProcessSpec:
    """The full process spec of a worker the ResourceManager starts.

    Framework heap/off-heap come from the configuration, the four task-facing
    memories, CPU and slots from ``worker``; metaspace and overhead follow the
    "around a known Total Flink Memory" rule (overhead = rest of a configured
    process size, else the capped inverse fraction).  As in Flink, errors here
    carry no "TaskManager memory configuration failed" prefix.

    Raises:
        IllegalConfigurationError: the configured process size cannot hold the
            worker, or the overhead range is inconsistent.
    """
    flink = _FlinkMemory(
        framework_heap=read_memory(config, o.TASK_MANAGER_FRAMEWORK_HEAP_MEMORY),
        task_heap=worker.task_heap,
        framework_off_heap=read_memory(config, o.TASK_MANAGER_FRAMEWORK_OFF_HEAP_MEMORY),
        task_off_heap=worker.task_off_heap,
        network=worker.network,
        managed=worker.managed,
    )
    metaspace, overhead = metaspace_and_overhead_from_total_flink(config, TASK_MANAGER_PROCESS_OPTIONS, flink.total)
    return _process_spec(flink, metaspace, overhead, worker.cpu_cores, worker.num_slots)


def _process_spec(flink: _FlinkMemory, metaspace: int, overhead: int, cpu_cores: Decimal, num_slots: int) -> TaskExecutorProcessSpec:
    return TaskExecutorProcessSpec(
        cpu_cores=cpu_cores,
        framework_heap=flink.framework_heap,
        framework_off_heap=flink.framework_off_heap,
        task_heap=flink.task_heap,
        task_off_heap=flink.task_off_heap,
        network=flink.network,
        managed=flink.managed,
        jvm_metaspace=metaspace,
        jvm_overhead=overhead,
        num_slots=num_slots,
    )


def cpu_cores_from_config(config: Configuration, fallback: float | None = None) -> Decimal:
    """CPU cores of a TaskExecutor: ``taskmanager.cpu.cores`` if set, else ``fallback`` if
    positive (a deployment's own setting; none for jobcluster's targets yet), else
    ``taskmanager.numberOfTaskSlots``.  Rounded down to 8 decimal places.

    Raises:
        IllegalConfigurationError: the result is not positive.
    """
    configured = config.get(o.TASK_MANAGER_CPU_CORES)
    if configured is not None:
        cores = configured
    elif fallback is not None and fallback > 0:
        cores = fallback
    else:
        cores = float(config.get(o.NUM_TASK_SLOTS))
    if not cores > 0:
        raise IllegalConfigurationError(
            "TaskExecutors need to be started with a positive number of CPU cores. "
            f"Please configure {o.TASK_MANAGER_CPU_CORES.key} accordingly."
        )
    return cpu_decimal(cores)


def num_slots_from_config(config: Configuration) -> int:
    """``taskmanager.numberOfTaskSlots``, which must be at least one.

    Raises:
        IllegalConfigurationError: fewer than one slot.
    """
    slots = config.get(o.NUM_TASK_SLOTS)
    if slots < 1:
        raise IllegalConfigurationError(
            f"Invalid configuration value for {o.NUM_TASK_SLOTS.key} : {slots} - Number of task slots must be at least one."
        )
    return slots


# --------------------------------------------------------------------------
# Splitting Total Flink Memory
# --------------------------------------------------------------------------


def _flink_memory_from_fine_grained(config: Configuration) -> _FlinkMemory:
    task_heap = read_memory(config, o.TASK_MANAGER_TASK_HEAP_MEMORY)
    managed = read_memory(config, o.TASK_MANAGER_MANAGED_MEMORY_SIZE)
    framework_heap = read_memory(config, o.TASK_MANAGER_FRAMEWORK_HEAP_MEMORY)
    framework_off_heap = read_memory(config, o.TASK_MANAGER_FRAMEWORK_OFF_HEAP_MEMORY)
    task_off_heap = read_memory(config, o.TASK_MANAGER_TASK_OFF_HEAP_MEMORY)
    without_network = add(framework_heap, framework_off_heap, task_heap, task_off_heap, managed)
    if config.contains(o.TASK_MANAGER_TOTAL_FLINK_MEMORY):
        total_flink = read_memory(config, o.TASK_MANAGER_TOTAL_FLINK_MEMORY)
        network = _network_as_rest(config, total_flink, framework_heap, framework_off_heap, task_heap, task_off_heap, managed)
    else:
        network = derive_with_inverse_fraction("Network Memory", without_network, _network_range(config))
    return _FlinkMemory(framework_heap, task_heap, framework_off_heap, task_off_heap, network, managed)


def _flink_memory_from_total(config: Configuration, total_flink: int) -> _FlinkMemory:
    framework_heap = read_memory(config, o.TASK_MANAGER_FRAMEWORK_HEAP_MEMORY)
    framework_off_heap = read_memory(config, o.TASK_MANAGER_FRAMEWORK_OFF_HEAP_MEMORY)
    task_off_heap = read_memory(config, o.TASK_MANAGER_TASK_OFF_HEAP_MEMORY)
    if config.contains(o.TASK_MANAGER_TASK_HEAP_MEMORY):
        task_heap = read_memory(config, o.TASK_MANAGER_TASK_HEAP_MEMORY)
        managed = _managed(config, total_flink)
        network = _network_as_rest(config, total_flink, framework_heap, framework_off_heap, task_heap, task_off_heap, managed)
        return _FlinkMemory(framework_heap, task_heap, framework_off_heap, task_off_heap, network, managed)

    managed = _managed(config, total_flink)
    network = derive_with_fraction("Network Memory", total_flink, _network_range(config))
    without_task_heap = add(framework_heap, framework_off_heap, task_off_heap, managed, network)
    if without_task_heap > total_flink:
        raise IllegalConfigurationError(
            f"Sum of configured Framework Heap Memory ({fmt(framework_heap)}), "
            f"Framework Off-Heap Memory ({fmt(framework_off_heap)}), "
            f"Task Off-Heap Memory ({fmt(task_off_heap)}), Managed Memory ({fmt(managed)}) and "
            f"Network Memory ({fmt(network)}) exceed configured Total Flink Memory ({fmt(total_flink)})."
        )
    task_heap = total_flink - without_task_heap
    return _FlinkMemory(framework_heap, task_heap, framework_off_heap, task_off_heap, network, managed)


def _managed(config: Configuration, total_flink: int) -> int:
    """Managed memory: its size if configured, else an uncapped fraction of Total Flink Memory."""
    if config.contains(o.TASK_MANAGER_MANAGED_MEMORY_SIZE):
        return read_memory(config, o.TASK_MANAGER_MANAGED_MEMORY_SIZE)
    unbounded = read_range_fraction(config, 0, LONG_MAX, o.TASK_MANAGER_MANAGED_MEMORY_FRACTION)
    return derive_with_fraction("Managed Memory", total_flink, unbounded)


def _network_range(config: Configuration) -> RangeFraction:
    return read_range_options(
        config,
        o.TASK_MANAGER_NETWORK_MEMORY_MIN,
        o.TASK_MANAGER_NETWORK_MEMORY_MAX,
        o.TASK_MANAGER_NETWORK_MEMORY_FRACTION,
    )


def _network_as_rest(
    config: Configuration,
    total_flink: int,
    framework_heap: int,
    framework_off_heap: int,
    task_heap: int,
    task_off_heap: int,
    managed: int,
) -> int:
    """Network = Total Flink minus everything else, which must fit the network range."""
    without_network = add(framework_heap, framework_off_heap, task_heap, task_off_heap, managed)
    if without_network > total_flink:
        raise IllegalConfigurationError(
            f"Sum of configured Framework Heap Memory ({fmt(framework_heap)}), "
            f"Framework Off-Heap Memory ({fmt(framework_off_heap)}), Task Heap Memory ({fmt(task_heap)}), "
            f"Task Off-Heap Memory ({fmt(task_off_heap)}) and Managed Memory ({fmt(managed)}) "
            f"exceed configured Total Flink Memory ({fmt(total_flink)})."
        )
    network = total_flink - without_network
    try:
        capped = _network_range(config)
        if not is_within(network, capped):
            raise IllegalConfigurationError(
                f"Derived Network Memory size ({fmt(network)}) is not in configured Network Memory range "
                f"[{fmt(capped.min)}, {fmt(capped.max)}]."
            )
    except InvalidValueError:
        raise
    except IllegalConfigurationError as error:
        raise IllegalConfigurationError(
            "If Total Flink, Task Heap and (or) Managed Memory sizes are explicitly configured then the "
            "Network Memory size is the rest of the Total Flink memory after subtracting all other "
            "configured types of memory, but the derived Network Memory is inconsistent with its "
            "configuration."
        ) from error
    if config.contains(o.TASK_MANAGER_NETWORK_MEMORY_FRACTION) and network != multiply(total_flink, capped.fraction):
        log.info(
            "Network Memory is the rest of Total Flink Memory (%s); the configured fraction %s is not used",
            fmt(network),
            capped.fraction,
        )
    return network
