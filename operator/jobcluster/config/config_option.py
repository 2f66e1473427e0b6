"""ConfigOption: a configuration key with its type, default, description and bounds (Flink's ``ConfigOption``).

The declarations are elsewhere, beside what reads them, as in Flink: the
shared ones in ``config/options.py``, a backend's in its package
(``backends/yarn/config_options.py``, ``backends/kubernetes/config_options.py``);
``backends/registry.py`` collects them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jobcluster.config.values import float32_text

OptionKind = Literal["memory", "int", "float", "double", "str", "bool", "duration"]


@dataclass(frozen=True)
class ConfigOption:
    """A configuration key with its type, default and description.

    ``kind`` decides how the text is parsed: ``memory`` (bytes, Flink size
    syntax), ``int``, ``float`` (Java float, widened exactly), ``double``,
    ``str``, ``bool`` (true/false), ``duration`` (seconds, Flink syntax).
    ``fallback_keys`` and then ``deprecated_keys`` are consulted, in order, when
    ``key`` itself is absent; the option's own key always wins.

    ``minimum``/``maximum`` bound a number, memory size (bytes) or duration
    (seconds), inclusive; ``positive`` requires a value above zero; ``choices``
    lists the accepted values of a ``str`` option.  The client checks every
    option against them before it deploys anything
    (:func:`jobcluster.config.validation.validate_configuration`).
    """

    key: str
    kind: OptionKind
    default: Any | None
    fallback_keys: tuple[str, ...] = ()
    description: str = ""
    deprecated_keys: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    positive: bool = False
    choices: tuple[str, ...] = ()

    @property
    def all_keys(self) -> tuple[str, ...]:
        """The key followed by every fallback and deprecated key, in lookup order."""
        return (self.key, *self.fallback_keys, *self.deprecated_keys)

    def flink_text(self) -> str:
        """The option as Flink's ``ConfigOption.toString`` prints it inside error messages.

        Example: ``Key: 'taskmanager.memory.network.fraction' , default: 0.1
        (fallback keys: [{key=taskmanager.network.memory.fraction, isDeprecated=true}])``.
        """
        fallbacks = [f"{{key={k}, isDeprecated=false}}" for k in self.fallback_keys]
        fallbacks += [f"{{key={k}, isDeprecated=true}}" for k in self.deprecated_keys]
        return f"Key: '{self.key}' , default: {self._default_text()} (fallback keys: [{', '.join(fallbacks)}])"

    def _default_text(self) -> str:
        value = self.default
        if value is None:
            return "null"
        if self.kind == "memory":
            return _memory_text_exact(value)
        if self.kind == "float":
            return float32_text(value)
        if self.kind == "bool":
            return "true" if value else "false"
        return str(value)


def _memory_text_exact(size: int) -> str:
    """Flink's ``MemorySize.toString``: the largest unit that divides the size exactly."""
    unit_name, multiplier = "bytes", 1
    for name, unit in (("kb", 1 << 10), ("mb", 1 << 20), ("gb", 1 << 30), ("tb", 1 << 40)):
        if size % unit:
            break
        unit_name, multiplier = name, unit
    else:  # Flink falls back to bytes when every unit divides the size (0, whole TiB)
        unit_name, multiplier = "bytes", 1
    return f"{size // multiplier} {unit_name}"


def options_declared_in(namespace: Mapping[str, object]) -> tuple[ConfigOption, ...]:
    """The ConfigOption values of a module's namespace (its ``globals()``), in declaration order."""
    return tuple(value for value in namespace.values() if isinstance(value, ConfigOption))
