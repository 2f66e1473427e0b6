"""The JobManager memory model: configuration to process spec, exactly as Flink.

Why separate from the TaskManager: the JobManager's Total Flink Memory has
only two parts, JVM heap and off-heap, and its fine-grained path needs just
the heap size.  The process-level rules (paths, metaspace, overhead) are the
shared ones in ``process.py``.

Split of Total Flink Memory (F):

* heap explicit: off-heap is its option; with a configured F, an explicit
  off-heap must make heap + off-heap == F, otherwise off-heap = F - heap;
* otherwise: heap = F - off-heap, which must leave something (F equal to the
  off-heap size fails too).

Errors carry Flink's text, prefixed "JobManager memory configuration failed: ".
"""

from __future__ import annotations

import logging

from jobcluster.config import options as o
from jobcluster.config.configuration import Configuration, InvalidValueError
from jobcluster.errors import IllegalConfigurationError
from jobcluster.memory.capped import read_memory
from jobcluster.memory.process import (
    DerivationPath,
    ProcessMemoryOptions,
    metaspace_and_overhead_from_total_flink,
    metaspace_and_overhead_from_total_process,
    select_path,
)
from jobcluster.memory.size import MiB, add
from jobcluster.memory.size import format_memory_size as fmt
from jobcluster.memory.spec import JobManagerProcessSpec

log = logging.getLogger(__name__)

ERROR_PREFIX = "JobManager memory configuration failed: "
#: Below this JVM heap Flink only warns; the JobManager may not run well.
RECOMMENDED_MIN_HEAP = 128 * MiB

JOB_MANAGER_PROCESS_OPTIONS = ProcessMemoryOptions(
    required_fine_grained=(o.JOB_MANAGER_JVM_HEAP_MEMORY,),
    total_flink=o.JOB_MANAGER_TOTAL_FLINK_MEMORY,
    total_process=o.JOB_MANAGER_TOTAL_PROCESS_MEMORY,
    jvm_metaspace=o.JOB_MANAGER_JVM_METASPACE,
    jvm_overhead_min=o.JOB_MANAGER_JVM_OVERHEAD_MIN,
    jvm_overhead_max=o.JOB_MANAGER_JVM_OVERHEAD_MAX,
    jvm_overhead_fraction=o.JOB_MANAGER_JVM_OVERHEAD_FRACTION,
)

_CONSISTENCY_HINT = "Please, make the configuration consistent or configure only one option: either JVM Heap or Total Flink Memory."


def job_manager_process_spec_from_config(config: Configuration) -> JobManagerProcessSpec:
    """Derive the JobManager's JVM heap, off-heap, metaspace and overhead (bytes).

    Mirrors Flink's ``JobManagerProcessUtils`` (Flink 2.x: no legacy
    ``jobmanager.heap.*``).

    Raises:
        IllegalConfigurationError: any of Flink's memory configuration errors,
            prefixed "JobManager memory configuration failed: " (cause chained).
    """
    try:
        path = select_path(config, JOB_MANAGER_PROCESS_OPTIONS)
        if path is DerivationPath.FINE_GRAINED:
            heap, off_heap = _flink_memory_from_heap(config)
            metaspace, overhead = metaspace_and_overhead_from_total_flink(config, JOB_MANAGER_PROCESS_OPTIONS, add(heap, off_heap))
        elif path is DerivationPath.TOTAL_FLINK:
            total_flink = read_memory(config, o.JOB_MANAGER_TOTAL_FLINK_MEMORY)
            heap, off_heap = _flink_memory_from_total(config, total_flink)
            metaspace, overhead = metaspace_and_overhead_from_total_flink(config, JOB_MANAGER_PROCESS_OPTIONS, total_flink)
        else:
            total_process = read_memory(config, o.JOB_MANAGER_TOTAL_PROCESS_MEMORY)
            metaspace, overhead = metaspace_and_overhead_from_total_process(config, JOB_MANAGER_PROCESS_OPTIONS, total_process)
            heap, off_heap = _flink_memory_from_total(config, total_process - metaspace - overhead)
    except InvalidValueError:
        raise  # Flink lets unparseable non-size values through unwrapped
    except IllegalConfigurationError as error:
        raise IllegalConfigurationError(ERROR_PREFIX + str(error)) from error
    return JobManagerProcessSpec(jvm_heap=heap, off_heap=off_heap, jvm_metaspace=metaspace, jvm_overhead=overhead)


def _flink_memory_from_heap(config: Configuration) -> tuple[int, int]:
    heap = read_memory(config, o.JOB_MANAGER_JVM_HEAP_MEMORY)
    off_heap = read_memory(config, o.JOB_MANAGER_OFF_HEAP_MEMORY)
    if config.contains(o.JOB_MANAGER_TOTAL_FLINK_MEMORY):
        total_flink = read_memory(config, o.JOB_MANAGER_TOTAL_FLINK_MEMORY)
        if config.contains(o.JOB_MANAGER_OFF_HEAP_MEMORY):
            if add(heap, off_heap) != total_flink:
                raise IllegalConfigurationError(
                    f"Sum of the configured JVM Heap Memory ({fmt(heap)}) and the configured Off-heap "
                    f"Memory ({fmt(off_heap)}) does not match the configured Total Flink Memory "
                    f"({fmt(total_flink)}). {_CONSISTENCY_HINT}"
                )
        else:
            if total_flink < heap:
                raise IllegalConfigurationError(
                    f"The configured JVM Heap Memory ({fmt(heap)}) exceeds the configured Total Flink "
                    f"Memory ({fmt(total_flink)}). {_CONSISTENCY_HINT}"
                )
            derived = total_flink - heap
            if derived != off_heap:
                log.info(
                    "JobManager Off-Heap Memory is Total Flink Memory (%s) minus JVM Heap (%s) = %s; the default %s is not used",
                    fmt(total_flink),
                    fmt(heap),
                    fmt(derived),
                    fmt(off_heap),
                )
            off_heap = derived
    _warn_if_small(heap)
    return heap, off_heap


def _flink_memory_from_total(config: Configuration, total_flink: int) -> tuple[int, int]:
    off_heap = read_memory(config, o.JOB_MANAGER_OFF_HEAP_MEMORY)
    if total_flink <= off_heap:
        raise IllegalConfigurationError(
            f"The configured Total Flink Memory ({fmt(total_flink)}) is less than the configured Off-heap Memory ({fmt(off_heap)})."
        )
    heap = total_flink - off_heap
    _warn_if_small(heap)
    return heap, off_heap


def _warn_if_small(heap: int) -> None:
    if heap < RECOMMENDED_MIN_HEAP:
        log.warning(
            "JobManager JVM Heap (%s) is below the recommended minimum %s; the JobManager may not work well",
            fmt(heap),
            fmt(RECOMMENDED_MIN_HEAP),
        )
