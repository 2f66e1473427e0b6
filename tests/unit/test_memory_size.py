"""Memory sizes: Flink's size syntax, human form and exact fraction arithmetic.

Expected numbers are the ones Flink documents or logs (reference/memory-model.md §1).
"""

from decimal import Decimal

import pytest

from jobcluster.config.values import parse_float32, round_to_float32
from jobcluster.errors import IllegalConfigurationError
from jobcluster.memory.size import (
    LONG_MAX,
    MiB,
    add,
    floor_mib,
    format_binary,
    format_memory_size,
    inverse_fraction,
    multiply,
    parse_memory_size,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1728m", 1728 * 2**20),
        ("1g", 2**30),
        ("64 mb", 64 * 2**20),
        ("1024", 1024),
        ("0", 0),
        ("1b", 1),
        ("10 bytes", 10),
        ("32kb", 32 * 1024),
        ("1 K", 1024),
        ("2 Gibibytes", 2 * 2**30),
        ("3 MEBIBYTES", 3 * 2**20),
        ("1t", 2**40),
        ("1 tebibytes", 2**40),
        ("  128m  ", 128 * 2**20),
        ("8388607t", 8388607 * 2**40),
        ("9223372036854775807", LONG_MAX),
    ],
)
def test_parse_accepts_flink_syntax(text, expected):
    assert parse_memory_size(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "1.5g",  # no fractions: the unit would be ".5g"
        "",
        "   ",
        "m",
        "-1m",
        "+1m",
        "1x",
        "1 g b",
        "1gig",
        "9223372036854775808",  # beyond a Java long
        "8388608t",  # 2**63 bytes
        "1e3",
    ],
)
def test_parse_rejects(text):
    with pytest.raises(ValueError, match=r"memory size|does not fit into 64 bits"):
        parse_memory_size(text)


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 bytes"),
        (1024, "1024 bytes"),
        (1025, "1.001kb (1025 bytes)"),
        (2**30, "1024.000mb (1073741824 bytes)"),  # unit must be strictly smaller than the value
        (1342177280, "1.250gb (1342177280 bytes)"),
        (134217728, "128.000mb (134217728 bytes)"),
        (31876706, "30.400mb (31876706 bytes)"),
        (1088, "1.063kb (1088 bytes)"),  # 1.0625 rounds half up, as Java's formatter does
        (LONG_MAX, "8388608.000tb (9223372036854775807 bytes)"),
    ],
)
def test_human_readable_form_is_flinks(size, text):
    assert format_memory_size(size) == text


@pytest.mark.parametrize(
    ("text", "widened"),
    [
        ("0.1", 0.10000000149011612),
        ("0.4", 0.4000000059604645),
        ("0.2", 0.20000000298023224),
        ("0.6", 0.6000000238418579),
        ("0.5", 0.5),
        ("0", 0.0),
    ],
)
def test_fractions_are_float32_widened_exactly(text, widened):
    assert parse_float32(text) == widened


def test_float32_rounding_is_direct_not_through_double():
    # 1 + 2**-24 + 2**-60 is just above the midpoint of two floats; rounding to a
    # double first lands exactly on the midpoint and then ties to even (1.0).
    exact = Decimal(1) + Decimal(2) ** -24 + Decimal(2) ** -60
    assert round_to_float32(exact) == 1 + 2**-23
    assert parse_float32(format(exact, "f")) == 1 + 2**-23


@pytest.mark.parametrize(
    ("size", "fraction", "product"),
    [
        (1342177280, "0.4", 536870920),  # not 536870912
        (1342177280, "0.1", 134217730),
        (1000 * MiB, "0.1", 104857601),  # the docs' "100MB"
        (1600 * MiB, "0.1", 167772162),
        (1024 * MiB, "0.1", 107374184),
        (6144 * MiB, "0.1", 644245104),
        (1811939328, "0.1", 181193935),
        (0, "0.4", 0),
        (12345, "0", 0),
    ],
)
def test_multiply_matches_flinks_bytes(size, fraction, product):
    assert multiply(size, parse_float32(fraction)) == product


def test_multiply_truncates_toward_zero():
    assert multiply(3, 0.5) == 1
    assert multiply(1, 0.99) == 0


@pytest.mark.parametrize(
    ("fraction", "multiplier"),
    [("0.1", 0.11111111295076065), ("0.2", 0.2500000046566129)],
)
def test_inverse_fraction_in_double_arithmetic(fraction, multiplier):
    assert inverse_fraction(parse_float32(fraction)) == multiplier


def test_multiply_refuses_overflow_and_negative_fractions():
    with pytest.raises(IllegalConfigurationError):
        multiply(LONG_MAX, 1.5)
    with pytest.raises(IllegalConfigurationError):
        multiply(10, -0.1)


def test_add_refuses_overflow():
    assert add(1, 2, 3) == 6
    with pytest.raises(IllegalConfigurationError):
        add(LONG_MAX, 1)


def test_floor_mib_and_binary_form():
    assert floor_mib(MiB - 1) == 0
    assert floor_mib(768 * MiB + MiB - 1) == 768
    assert format_binary(512) == "512 B"
    assert format_binary(128 * MiB) == "128.0 MiB"
    assert format_binary(2560 * MiB) == "2.50 GiB"
    assert format_binary(LONG_MAX) == "unlimited"
