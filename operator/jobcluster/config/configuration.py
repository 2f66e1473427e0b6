"""The configuration: the user's key/value text, read through typed options.

Why keep text: the configuration travels (to containers, as ``-D`` dynamic
properties, as the staged effective configuration), and keys this code does
not know must arrive untouched.  So values are stored exactly as given and
parsed only when an option asks for them, with Flink's syntax; a malformed
value is reported when it is read, naming the key, as Flink does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from jobcluster.config.config_option import ConfigOption, ConfigPrefix
from jobcluster.config.values import (
    map_text,
    parse_bool,
    parse_double,
    parse_duration,
    parse_float32,
    parse_int,
    parse_map,
    parse_memory_size,
)
from jobcluster.errors import IllegalConfigurationError

T = TypeVar("T")

_PARSERS: dict[str, Callable[[str], Any]] = {
    "memory": parse_memory_size,
    "int": parse_int,
    "float": parse_float32,
    "double": parse_double,
    "bool": parse_bool,
    "duration": parse_duration,
    "str": str,
    "map": parse_map,
}


class InvalidValueError(IllegalConfigurationError):
    """A present value of a non-memory option cannot be parsed ("Could not parse value ...").

    Flink raises this one as a plain argument error, so the memory model's
    "... memory configuration failed: " wrappers let it through unprefixed.
    """


def value_to_text(value: Any) -> str:
    """The configuration text of a Python value: booleans as ``true``/``false``, lists joined by ``;``,
    mappings as ``key:value,key:value``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return map_text(value)
    if isinstance(value, (list, tuple)):
        return ";".join(value_to_text(item) for item in value)
    return str(value)


class Configuration:
    """Flink-style configuration: ``str`` keys mapped to ``str`` values.

    Typed access goes through :class:`ConfigOption` (:meth:`get`, :meth:`contains`);
    raw access through :meth:`get_raw` and the mapping protocol (``in``,
    iteration, ``len``, ``config[key]``).
    """

    def __init__(self, mapping: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, str] = {}
        for key, value in (mapping or {}).items():
            self.set(key, value)

    # -- typed access --------------------------------------------------------

    def get(self, option: ConfigOption[T]) -> T:
        """The typed value of ``option``, or ``option.default`` when no key of it is present.

        The option's key wins over its fallback keys, which win over its
        deprecated keys.  Memory sizes are int bytes, durations float seconds,
        fractions (``float``) the exact widening of a 32-bit float; ``None`` only
        for an unset option whose default is ``None``.

        Raises:
            IllegalConfigurationError: the present value cannot be parsed; the
                message names the key ("Cannot read memory size from config
                option '<key>'." for sizes, :class:`InvalidValueError` "Could not
                parse value '<v>' for key '<key>'." for the other kinds).
        """
        found = self._find(option)
        if found is None:
            return option.default
        key, text = found
        try:
            # the kind's parser returns the option's type: ConfigOption's constructor ties the two
            value: T = _PARSERS[option.kind](text)
        except ValueError as error:
            # Flink's exact sentences; the parser's reason stays in the chained cause.
            if option.kind == "memory":
                raise IllegalConfigurationError(f"Cannot read memory size from config option '{option.key}'.") from error
            raise InvalidValueError(f"Could not parse value '{text}' for key '{key}'.") from error
        return value

    def get_optional(self, option: ConfigOption[T]) -> T | None:
        """Like :meth:`get`, but ``None`` when no key of the option is present (ignores the default)."""
        return self.get(option) if self.contains(option) else None

    def contains(self, option: ConfigOption[Any]) -> bool:
        """Whether the option's key, or one of its fallback/deprecated keys, is present."""
        return self._find(option) is not None

    def _find(self, option: ConfigOption[Any]) -> tuple[str, str] | None:
        for key in option.all_keys:
            if key in self._values:
                return key, self._values[key]
        return None

    # -- raw access ----------------------------------------------------------

    def get_raw(self, key: str, default: str | None = None) -> str | None:
        """The text stored under exactly ``key`` (no fallbacks), or ``default``."""
        return self._values.get(key, default)

    def prefixed(self, prefix: ConfigPrefix) -> dict[str, str]:
        """Every ``<prefix><name>: value`` stored as ``{name: value}``, by key (a bare prefix is no entry)."""
        start = len(prefix.prefix)
        return {key[start:]: self._values[key] for key in sorted(self._values) if key.startswith(prefix.prefix) and len(key) > start}

    def set(self, key: str | ConfigOption[Any], value: Any) -> Configuration:
        """Store ``value`` (converted to text) under ``key`` or the option's key; returns self."""
        name = key.key if isinstance(key, ConfigOption) else key
        if not isinstance(name, str) or not name.strip():
            raise IllegalConfigurationError(f"Configuration key must be a non-empty string, got {name!r}.")
        self._values[name.strip()] = value_to_text(value)
        return self

    def remove(self, key: str | ConfigOption[Any]) -> bool:
        """Remove the key (for an option: its key and every fallback/deprecated key); True if any was present."""
        names = key.all_keys if isinstance(key, ConfigOption) else (key,)
        removed = False
        for name in names:
            removed = self._values.pop(name, None) is not None or removed
        return removed

    def update(self, other: Mapping[str, Any] | Configuration) -> Configuration:
        """Set every key of ``other``; later values win. Returns self."""
        items = other.to_dict() if isinstance(other, Configuration) else other
        for key, value in items.items():
            self.set(key, value)
        return self

    def to_dict(self) -> dict[str, str]:
        """A copy of every key and its text value."""
        return dict(self._values)

    def copy(self) -> Configuration:
        """An independent copy."""
        return Configuration(self._values)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, ConfigOption):
            return self.contains(key)
        return key in self._values

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Configuration):
            return NotImplemented
        return self._values == other._values

    def __repr__(self) -> str:
        return f"Configuration({self._values!r})"
