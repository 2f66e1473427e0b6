"""Byte sizes and the exact arithmetic of Flink's memory model.

Why exact: Flink multiplies sizes by 32-bit float fractions through an
arbitrary-precision decimal of the fraction's ``Double.toString`` text and
truncates; that is why its default TaskManager has 536870920 bytes of managed
memory and not 536870912.  Plain float multiplication (or the exact decimal
``0.4``) gives other bytes, so every product goes through :func:`multiply`.
Sums are checked against the 64-bit range Flink computes in.

Sizes are plain ``int`` bytes throughout jobcluster.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Context, Decimal

from jobcluster.config.values import LONG_MAX, parse_memory_size
from jobcluster.errors import IllegalConfigurationError

__all__ = [
    "LONG_MAX",
    "GiB",
    "KiB",
    "MiB",
    "TiB",
    "add",
    "floor_mib",
    "format_binary",
    "format_memory_size",
    "inverse_fraction",
    "multiply",
    "parse_memory_size",
]

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
TiB = 1 << 40

# Precision well above the 19 digits of a long times the 17 of a double.
_EXACT = Context(prec=80)

_HUMAN_UNITS = (("kb", KiB), ("mb", MiB), ("gb", GiB), ("tb", TiB))


def format_memory_size(size: int) -> str:
    """Flink's human-readable form used in its messages: ``"1.250gb (1342177280 bytes)"``.

    Up to 1024 bytes: ``"N bytes"``.  Otherwise the largest unit whose
    multiplier is strictly below the size, three decimals (half up) and the
    exact byte count: 2**30 prints as ``"1024.000mb (1073741824 bytes)"``.
    """
    unit_name, multiplier = None, 1
    for name, unit in _HUMAN_UNITS:
        if size > unit:
            unit_name, multiplier = name, unit
    if unit_name is None:
        return f"{size} bytes"
    approximate = Decimal(size / multiplier)  # the double Flink formats, exactly
    return f"{approximate.quantize(Decimal('0.001'), rounding=ROUND_HALF_UP)}{unit_name} ({size} bytes)"


def format_binary(size: int) -> str:
    """A short form for people: ``"512 B"``, ``"128.0 MiB"``, ``"2.50 GiB"`` (binary units)."""
    if size < KiB:
        return f"{size} B"
    if size < MiB:
        return f"{size / KiB:.1f} KiB"
    if size < GiB:
        return f"{size / MiB:.1f} MiB"
    if size < TiB:
        return f"{size / GiB:.2f} GiB"
    if size >= LONG_MAX:
        return "unlimited"
    return f"{size / TiB:.2f} TiB"


def multiply(size: int, fraction: float) -> int:
    """``size`` times ``fraction``, truncated toward zero, exactly as Flink computes it.

    The fraction enters as the decimal of its shortest round-trip text (Java's
    ``Double.toString``, Python's ``repr``), the product is exact, then
    truncated.  Examples: ``multiply(1342177280, float32(0.4)) == 536870920``,
    ``multiply(1000 * MiB, float32(0.1)) == 104857601``.

    Raises:
        IllegalConfigurationError: negative fraction, or a product beyond 2**63-1 bytes.
    """
    if fraction < 0:
        raise IllegalConfigurationError(f"Cannot multiply a memory size by a negative number ({fraction!r}).")
    product = _EXACT.multiply(Decimal(size), Decimal(repr(float(fraction))))
    if product > LONG_MAX:
        raise IllegalConfigurationError(f"Multiplying {size} bytes by {fraction!r} exceeds the 64-bit range of memory sizes.")
    return int(product)


def inverse_fraction(fraction: float) -> float:
    """``f / (1 - f)`` in double arithmetic: the multiplier that makes a part ``f`` of a whole.

    ``float32(0.1)`` gives 0.11111111295076065; use it with :func:`multiply` on
    the known rest of the whole.
    """
    return fraction / (1.0 - fraction)


def add(*sizes: int) -> int:
    """Sum of sizes in bytes.

    Raises:
        IllegalConfigurationError: the sum exceeds 2**63-1 bytes (Flink: arithmetic overflow).
    """
    total = sum(sizes)
    if total > LONG_MAX:
        raise IllegalConfigurationError(
            f"The configured memory sizes add up to more than 2**63-1 bytes ({' + '.join(str(s) for s in sizes)})."
        )
    return total


def floor_mib(size: int) -> int:
    """Whole MiB not exceeding ``size`` (how container sizes and Spark settings are expressed)."""
    return size // MiB
