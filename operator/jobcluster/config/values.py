"""Text forms of typed configuration values, read and written the way Flink does.

Why a module of its own: the same few conversions are needed by the
configuration (reading ``-D`` values and YAML scalars), by the memory model
(Flink's exact size and fraction arithmetic starts from these parsed values)
and by the process specs (which write values back as dynamic properties that a
Flink-compatible reader must accept).  Keeping them in one place keeps the
grammar identical everywhere.

Every parser raises :class:`ValueError` with a short reason; the
:class:`~jobcluster.config.configuration.Configuration` turns that into an
:class:`~jobcluster.errors.IllegalConfigurationError` that names the key.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping
from decimal import Decimal

#: Largest value of a Java ``long``; Flink's sizes and products must stay within it.
LONG_MAX = (1 << 63) - 1
#: Largest value of a Java ``int``; Flink's "unlimited" integer options use it.
INT_MAX = (1 << 31) - 1

# Memory units: every spelling Flink accepts, mapped to its multiplier.
_MEMORY_UNITS: dict[str, int] = {}
_names: tuple[str, ...]
for _names, _multiplier in (
    (("b", "bytes"), 1),
    (("k", "kb", "kibibytes"), 1 << 10),
    (("m", "mb", "mebibytes"), 1 << 20),
    (("g", "gb", "gibibytes"), 1 << 30),
    (("t", "tb", "tebibytes"), 1 << 40),
):
    for _name in _names:
        _MEMORY_UNITS[_name] = _multiplier

_LEADING_DIGITS = re.compile(r"[0-9]*")


def parse_memory_size(text: str) -> int:
    """Parse a Flink memory size (``"1728m"``, ``"1g"``, ``"64 mb"``, ``"1024"``) into bytes.

    Grammar (Flink's ``MemorySize``): decimal digits, optional blanks, optional
    case-insensitive unit ``b|bytes|k|kb|kibibytes|m|mb|mebibytes|g|gb|gibibytes|t|tb|tebibytes``
    (binary multiples); no unit means bytes.  No sign and no fraction: ``"1.5g"``
    is rejected because ``".5g"`` is not a unit.  Values above 2**63-1 bytes are
    rejected.

    Raises:
        ValueError: the text is not a memory size.
    """
    trimmed = str(text).strip()
    if not trimmed:
        raise ValueError("the memory size is empty")
    leading = _LEADING_DIGITS.match(trimmed)
    digits = leading.group(0) if leading else ""
    if not digits:
        raise ValueError(f"memory size {trimmed!r} does not start with a number")
    unit = trimmed[len(digits) :].strip().lower()
    number = int(digits)
    if number > LONG_MAX:
        raise ValueError(f"the number {digits!r} does not fit into 64 bits")
    if unit and unit not in _MEMORY_UNITS:
        raise ValueError(f"memory size unit {unit!r} is not one of b|bytes, k|kb|kibibytes, m|mb|mebibytes, g|gb|gibibytes, t|tb|tebibytes")
    result = number * _MEMORY_UNITS.get(unit, 1)
    if result > LONG_MAX:
        raise ValueError(f"memory size {trimmed!r} does not fit into 64 bits of bytes")
    return result


# Durations: Flink's TimeUtils labels, value = seconds per unit.
_DURATION_UNITS: dict[str, Decimal] = {}
for _names, _seconds in (
    (("d", "day", "days"), Decimal(86400)),
    (("h", "hour", "hours"), Decimal(3600)),
    (("min", "m", "minute", "minutes"), Decimal(60)),
    (("s", "sec", "secs", "second", "seconds"), Decimal(1)),
    (("ms", "milli", "millis", "millisecond", "milliseconds"), Decimal("0.001")),
    (("µs", "us", "micro", "micros", "microsecond", "microseconds"), Decimal("0.000001")),
    (("ns", "nano", "nanos", "nanosecond", "nanoseconds"), Decimal("0.000000001")),
):
    for _name in _names:
        _DURATION_UNITS[_name] = _seconds


def parse_duration(text: str) -> float:
    """Parse a Flink duration (``"10 s"``, ``"500ms"``, ``"1 min"``, ``"2 h"``) into seconds.

    Grammar (Flink's ``TimeUtils.parseDuration``): non-negative integer, optional
    blanks, optional unit (d, h, min/m, s, ms, us/µs, ns and their long forms,
    case-insensitive).  A plain number means milliseconds, as in Flink.

    Raises:
        ValueError: the text is not a duration.
    """
    trimmed = str(text).strip()
    if not trimmed:
        raise ValueError("the duration is empty")
    leading = _LEADING_DIGITS.match(trimmed)
    digits = leading.group(0) if leading else ""
    if not digits:
        raise ValueError(f"duration {trimmed!r} does not start with a number")
    unit = trimmed[len(digits) :].strip().lower()
    if unit and unit not in _DURATION_UNITS:
        raise ValueError(f"duration unit {unit!r} is not one of d, h, min, s, ms, us, ns")
    seconds = Decimal(int(digits)) * _DURATION_UNITS.get(unit, Decimal("0.001"))
    return float(seconds)


_INTEGER = re.compile(r"[+-]?[0-9]+")


def parse_int(text: str) -> int:
    """Parse a Java ``int`` option value (decimal, optional sign).

    Raises:
        ValueError: not an integer, or outside the 32-bit range.
    """
    trimmed = str(text).strip()
    if not _INTEGER.fullmatch(trimmed):
        raise ValueError(f"{trimmed!r} is not an integer")
    value = int(trimmed)
    if not -INT_MAX - 1 <= value <= INT_MAX:
        raise ValueError(f"{trimmed!r} does not fit into 32 bits")
    return value


def parse_bool(text: str) -> bool:
    """Parse ``true``/``false`` (any case), the only forms Flink accepts.

    Raises:
        ValueError: any other text.
    """
    lowered = str(text).strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise ValueError(f"{text!r} is neither 'true' nor 'false'")


def parse_map(text: str) -> dict[str, str]:
    """Parse a Flink map option value: ``key:value`` entries separated by commas (``OPERATOR:70,PYTHON:30``).

    Keys and values are trimmed; an empty text is the empty map; a key given twice keeps its last value.
    Flink's quoting of ``,`` and ``:`` inside keys or values is not supported (no option here needs it).

    Raises:
        ValueError: an entry without exactly one ``:``, or with an empty key.
    """
    mapping: dict[str, str] = {}
    for entry in str(text).split(","):
        if not entry.strip():
            continue
        parts = entry.split(":")
        if len(parts) != 2 or not parts[0].strip():
            raise ValueError(f"{entry.strip()!r} is not a key:value entry")
        mapping[parts[0].strip()] = parts[1].strip()
    return mapping


def parse_port_ranges(text: str) -> tuple[int, ...]:
    """Parse Flink's port-range syntax (``rest.bind-port``, ``NetUtils.getPortRangeFromString``): a port, a range
    ``50100-50200`` (both ends included), or a list of both separated by commas; the ports in the order given, each
    once. ``0`` (any free port) is a port of its own.

    Raises:
        ValueError: an entry that is not a port or a range of ports from 0 to 65535, a range whose end is below its
            start, or no entry at all.
    """
    ports: dict[int, None] = {}
    for entry in (part.strip() for part in str(text).split(",")):
        if not entry:
            continue
        low, _, high = entry.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise ValueError(f"{entry!r} is not a port nor a range such as 50100-50200") from None
        if first > last:
            raise ValueError(f"the range {entry!r} ends below its start")
        if not 0 <= first <= last <= 65535:
            raise ValueError(f"{entry!r} is not a port nor a range of ports from 0 to 65535")
        ports.update(dict.fromkeys(range(first, last + 1)))
    if not ports:
        raise ValueError(f"{text!r} names no port")
    return tuple(ports)


def map_text(mapping: Mapping[str, object]) -> str:
    """A map as Flink writes a map option's value: ``key:value`` entries joined by commas, in the map's order."""
    return ",".join(f"{key}:{value}" for key, value in mapping.items())


_DECIMAL_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?")


def parse_double(text: str) -> float:
    """Parse a Java ``double`` option value (decimal or scientific notation).

    Raises:
        ValueError: not a finite decimal number.
    """
    trimmed = str(text).strip()
    if not _DECIMAL_NUMBER.fullmatch(trimmed):
        raise ValueError(f"{trimmed!r} is not a number")
    return float(trimmed.rstrip("fFdD"))


def parse_float32(text: str) -> float:
    """Parse a Java ``float`` option value and return it widened exactly to a double.

    Flink's ``*.fraction`` options are 32-bit floats, so ``"0.1"`` means the float
    nearest to 0.1, whose exact value as a double is 0.10000000149011612.  The
    decimal text is rounded directly to float32 (round half to even on the exact
    decimal value), not first to a double, so no double rounding can occur.

    Raises:
        ValueError: not a number, or too large for a float.
    """
    trimmed = str(text).strip()
    if not _DECIMAL_NUMBER.fullmatch(trimmed):
        raise ValueError(f"{trimmed!r} is not a number")
    return round_to_float32(Decimal(trimmed.rstrip("fFdD")))


def round_to_float32(value: Decimal | float | int) -> float:
    """Round a number to the nearest IEEE-754 binary32 value; return it as a Python float.

    Ties go to the even significand, as in Java's ``Float.parseFloat``.

    Raises:
        ValueError: the value overflows a float.
    """
    exact = Decimal(value)
    guess = float(exact)
    candidate: float
    try:
        (candidate,) = struct.unpack("<f", struct.pack("<f", guess))
    except OverflowError:
        raise ValueError(f"{value} is too large for a 32-bit float") from None
    if math.isinf(candidate):
        raise ValueError(f"{value} is too large for a 32-bit float")
    # The double-rounded guess is at most one float32 step away; pick the best of
    # the candidate and its two neighbours by exact decimal distance.
    best = candidate
    best_distance = abs(Decimal(candidate) - exact)
    for neighbour in (_float32_step(candidate, -1), _float32_step(candidate, +1)):
        if math.isinf(neighbour):
            continue
        distance = abs(Decimal(neighbour) - exact)
        if distance < best_distance or (distance == best_distance and _float32_bits(neighbour) % 2 == 0):
            best, best_distance = neighbour, distance
    return best


def _float32_bits(value: float) -> int:
    bits: int = struct.unpack("<I", struct.pack("<f", value))[0]
    return bits


def _float32_step(value: float, direction: int) -> float:
    """The adjacent float32 in the given direction (-1 toward -inf, +1 toward +inf)."""
    if value == 0.0:
        bits = 1 if direction > 0 else 0x80000001
    else:
        bits = _float32_bits(value)
        toward_larger_magnitude = (value > 0) == (direction > 0)
        bits += 1 if toward_larger_magnitude else -1
    step: float = struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
    return step


def java_double_text(value: float) -> str:
    """Format a double the way Java's ``Double.toString`` does (``1.0``, ``0.1``, ``1.0E-4``).

    Digits are the shortest round-trip ones (Python's ``repr``, identical to
    Java 19+); the layout follows Java: plain notation for 1e-3 <= |x| < 1e7,
    computerized scientific notation with a capital ``E`` otherwise.
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(value)
        if "e" in text:  # repr switches to exponent form only outside Java's range
            text = format(Decimal(text), "f")
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)  # finite: NaN and the infinities returned above
    digit_text = "".join(map(str, digits)).rstrip("0") or "0"
    scientific_exponent = exponent + len(digits) - 1
    mantissa = digit_text[0] + "." + (digit_text[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{scientific_exponent}"


def float32_text(value: float) -> str:
    """Shortest decimal text that reads back as the same float32 (Java's ``Float.toString`` digits)."""
    for precision in range(1, 10):
        text = f"{value:.{precision}g}"
        if round_to_float32(Decimal(text)) == value:
            return java_double_text(float(text))
    return java_double_text(value)
