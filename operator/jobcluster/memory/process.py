"""The process-level half of the memory model, shared by TaskManager and JobManager.

Why shared: both processes pick one of three derivation paths with the same
precedence and size JVM metaspace and overhead the same way; only the split
of Total Flink Memory differs (``taskexecutor.py``, ``jobmanager.py``).

Paths, in order of precedence (Flink's ``ProcessMemoryUtils``):

A. every required fine-grained option is present: Total Flink is their sum;
B. else Total Flink Memory is configured: split it;
C. else Total Process Memory is configured: metaspace is its option, overhead a
   capped fraction of the process size, Total Flink the rest;
otherwise configuration fails.

In A and B metaspace is its option, and the overhead is the remainder of a
configured process size (which must then fall within the overhead range) or,
without one, the capped inverse fraction of Total Flink + metaspace.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum

from jobcluster.config.config_option import ConfigOption
from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError
from jobcluster.memory.capped import (
    RangeFraction,
    derive_with_fraction,
    derive_with_inverse_fraction,
    is_within,
    read_memory,
    read_range_options,
)
from jobcluster.memory.size import add, multiply
from jobcluster.memory.size import format_memory_size as fmt

log = logging.getLogger(__name__)


class DerivationPath(Enum):
    """Which configuration the process spec was derived from."""

    FINE_GRAINED = "fine-grained"
    TOTAL_FLINK = "total-flink"
    TOTAL_PROCESS = "total-process"


@dataclass(frozen=True)
class ProcessMemoryOptions:
    """The options that play the process-level roles for one kind of process."""

    required_fine_grained: tuple[ConfigOption[int | None], ...]
    total_flink: ConfigOption[int | None]
    total_process: ConfigOption[int | None]
    jvm_metaspace: ConfigOption[int]
    jvm_overhead_min: ConfigOption[int]
    jvm_overhead_max: ConfigOption[int]
    jvm_overhead_fraction: ConfigOption[float]


def select_path(config: Configuration, options: ProcessMemoryOptions) -> DerivationPath:
    """The derivation path the configuration asks for.

    Raises:
        IllegalConfigurationError: none of the three is configured (Flink's
            "Either required fine-grained memory (...) ... need to be configured explicitly.").
    """
    if all(config.contains(option) for option in options.required_fine_grained):
        return DerivationPath.FINE_GRAINED
    if config.contains(options.total_flink):
        return DerivationPath.TOTAL_FLINK
    if config.contains(options.total_process):
        return DerivationPath.TOTAL_PROCESS
    fine_grained = " and ".join(option.key for option in options.required_fine_grained)
    raise IllegalConfigurationError(
        f"Either required fine-grained memory ({fine_grained}), "
        f"or Total Flink Memory size ({options.total_flink.flink_text()}), "
        f"or Total Process Memory size ({options.total_process.flink_text()}) "
        "need to be configured explicitly."
    )


def metaspace_and_overhead_from_total_process(config: Configuration, options: ProcessMemoryOptions, total_process: int) -> tuple[int, int]:
    """Path C: (metaspace, overhead) of a configured Total Process Memory, in bytes.

    Raises:
        IllegalConfigurationError: inconsistent overhead range/fraction, or
            metaspace + overhead exceed the process size.
    """
    metaspace = read_memory(config, options.jvm_metaspace)
    overhead = derive_with_fraction("JVM Overhead", total_process, _overhead_range(config, options))
    if add(metaspace, overhead) > total_process:
        raise IllegalConfigurationError(
            f"Sum of configured JVM Metaspace ({fmt(metaspace)}) and JVM Overhead ({fmt(overhead)}) "
            f"exceed configured Total Process Memory ({fmt(total_process)})."
        )
    return metaspace, overhead


def metaspace_and_overhead_from_total_flink(config: Configuration, options: ProcessMemoryOptions, total_flink: int) -> tuple[int, int]:
    """Paths A and B (and worker specs): (metaspace, overhead) around a known Total Flink Memory.

    Raises:
        IllegalConfigurationError: a configured process size is smaller than
            Total Flink + metaspace, the overhead remainder is outside its range,
            or the overhead range/fraction is inconsistent.
    """
    metaspace = read_memory(config, options.jvm_metaspace)
    flink_and_metaspace = add(total_flink, metaspace)
    if not config.contains(options.total_process):
        overhead = derive_with_inverse_fraction("JVM Overhead", flink_and_metaspace, _overhead_range(config, options))
        return metaspace, overhead

    total_process = read_memory(config, options.total_process)
    if total_process < flink_and_metaspace:
        raise IllegalConfigurationError(
            f"The configured Total Process Memory size ({fmt(total_process)}) is less than the sum of "
            f"the derived Total Flink Memory size ({fmt(total_flink)}) and the configured or default "
            f"JVM Metaspace size  ({fmt(metaspace)})."
        )
    overhead = total_process - flink_and_metaspace
    capped = _overhead_range(config, options)
    if not is_within(overhead, capped):
        raise IllegalConfigurationError(
            f"Derived JVM Overhead size ({fmt(overhead)}) is not in configured JVM Overhead range [{fmt(capped.min)}, {fmt(capped.max)}]."
        )
    if config.contains(options.jvm_overhead_fraction) and overhead != multiply(total_process, capped.fraction):
        log.info(
            "JVM Overhead is the rest of Total Process Memory (%s); the configured fraction %s is not used",
            fmt(overhead),
            capped.fraction,
        )
    return metaspace, overhead


def _overhead_range(config: Configuration, options: ProcessMemoryOptions) -> RangeFraction:
    return read_range_options(config, options.jvm_overhead_min, options.jvm_overhead_max, options.jvm_overhead_fraction)
