"""Capped fractions: components sized as a fraction of a total, kept within [min, max].

Why a module: network memory, JVM overhead and managed memory all follow the
same rules (Flink's ``RangeFraction``): a forward fraction of a known total,
an inverse fraction when only the rest of the total is known, or a remainder
that must fall within the range.  The triple is validated each time it is
read, not up front, because which option is consulted first decides which
error a user sees — the order is part of Flink's behaviour.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from jobcluster.config.config_option import ConfigOption
from jobcluster.config.configuration import Configuration
from jobcluster.config.values import java_double_text
from jobcluster.errors import IllegalConfigurationError
from jobcluster.memory.size import format_memory_size, inverse_fraction, multiply

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RangeFraction:
    """``min``/``max`` in bytes and a fraction in [0, 1) (a widened float32)."""

    min: int
    max: int
    fraction: float


def read_memory(config: Configuration, option: ConfigOption[int | None]) -> int:
    """The option's size in bytes (its default when absent).

    An option without a default is read only where the derivation path has it set
    (:func:`jobcluster.memory.process.select_path`, ``config.contains``).

    Raises:
        IllegalConfigurationError: "Cannot read memory size from config option '<key>'.", also
            when the option is unset and has no default.
    """
    size = config.get(option)
    if size is None:
        raise IllegalConfigurationError(f"Cannot read memory size from config option '{option.key}': it is not set.")
    return size


def read_range_fraction(
    config: Configuration,
    min_size: int,
    max_size: int,
    fraction_option: ConfigOption[float],
) -> RangeFraction:
    """Validate and return the triple (min, max, configured fraction).

    Raises:
        IllegalConfigurationError: Flink's "Inconsistently configured <option>
            (<fraction>) and its min (<min>), max (<max>) value" when min > max or
            the fraction is outside [0, 1); the reason is the chained cause.
            An unparseable fraction raises "Could not parse value ..." instead.
    """
    fraction = config.get(fraction_option)
    if min_size > max_size:
        reason = "min value must be less or equal to max value"
    elif not 0.0 <= fraction < 1.0:
        reason = "fraction must be in range [0, 1)"
    else:
        return RangeFraction(min_size, max_size, fraction)
    message = (
        f"Inconsistently configured {fraction_option.flink_text()} ({java_double_text(fraction)}) "
        f"and its min ({format_memory_size(min_size)}), max ({format_memory_size(max_size)}) value"
    )
    raise IllegalConfigurationError(message) from IllegalConfigurationError(reason)


def read_range_options(
    config: Configuration,
    min_option: ConfigOption[int],
    max_option: ConfigOption[int],
    fraction_option: ConfigOption[float],
) -> RangeFraction:
    """Read min, max (in that order) and the fraction of a capped component; see :func:`read_range_fraction`."""
    min_size = read_memory(config, min_option)
    max_size = read_memory(config, max_option)
    return read_range_fraction(config, min_size, max_size, fraction_option)


def derive_with_fraction(what: str, base: int, capped: RangeFraction) -> int:
    """``trunc(base x fraction)`` clamped to [min, max] (clamping is only logged)."""
    return _cap(what, multiply(base, capped.fraction), capped)


def derive_with_inverse_fraction(what: str, rest: int, capped: RangeFraction) -> int:
    """The size that is ``fraction`` of ``rest + size``: ``trunc(rest x f/(1-f))`` clamped to [min, max]."""
    return _cap(what, multiply(rest, inverse_fraction(capped.fraction)), capped)


def _cap(what: str, size: int, capped: RangeFraction) -> int:
    if size > capped.max:
        log.info(
            "%s from its fraction (%s) is above its maximum; using the maximum %s",
            what,
            format_memory_size(size),
            format_memory_size(capped.max),
        )
        return capped.max
    if size < capped.min:
        log.info(
            "%s from its fraction (%s) is below its minimum; using the minimum %s",
            what,
            format_memory_size(size),
            format_memory_size(capped.min),
        )
        return capped.min
    return size


def is_within(size: int, capped: RangeFraction) -> bool:
    """Whether a remainder lies within the inclusive range [min, max]."""
    return capped.min <= size <= capped.max
