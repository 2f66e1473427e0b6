"""ConfigOption: a configuration key with its type, default, description and bounds (Flink's ``ConfigOption<T>``).

The declarations are elsewhere, beside what reads them, as in Flink: the
shared ones in ``config/options.py``, a backend's in its package
(``backends/yarn/config_options.py``, ``backends/kubernetes/config_options.py``);
``backends/registry.py`` collects them all.

Why generic: ``Configuration.get(option)`` returns the option's value type, so
a reader gets an ``int`` of bytes or a ``float`` of seconds that mypy checks,
not ``Any``.  The type follows from the kind and the default, checked where an
option is declared (the constructor's overloads): a default of ``None`` makes
the type optional, ``ConfigOption[int | None]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Generic, Literal, TypedDict, TypeVar, Unpack, overload

from jobcluster.config.values import float32_text, map_text

OptionKind = Literal["memory", "int", "float", "double", "str", "bool", "duration", "map"]
IntKind = Literal["memory", "int"]  # an int: bytes, or a count
FloatKind = Literal["float", "double", "duration"]  # a float: a fraction, a number, or seconds

T_co = TypeVar("T_co", covariant=True)


class OptionDetails(TypedDict, total=False):
    """The keyword arguments of :class:`ConfigOption` besides key, kind and default (its fields of the same names)."""

    fallback_keys: tuple[str, ...]
    description: str
    deprecated_keys: tuple[str, ...]
    minimum: float | None
    maximum: float | None
    positive: bool
    choices: tuple[str, ...]


@dataclass(frozen=True, init=False)
class ConfigOption(Generic[T_co]):
    """A configuration key with its type, default and description; ``T_co`` is the type of its value.

    ``kind`` decides how the text is parsed, and with the default the value's
    type: ``memory`` (int bytes, Flink size syntax), ``int``, ``float`` (Java
    float, widened exactly to a float), ``double`` (float), ``str``, ``bool``
    (true/false), ``duration`` (float seconds, Flink syntax), ``map`` (``dict[str, str]``,
    Flink's ``key:value,key:value``); ``None`` as the
    default adds ``None`` to the type ("unset unless configured").
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
    default: T_co
    fallback_keys: tuple[str, ...] = ()
    description: str = ""
    deprecated_keys: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    positive: bool = False
    choices: tuple[str, ...] = ()

    @overload
    def __init__(self: ConfigOption[int], key: str, kind: IntKind, default: int, **details: Unpack[OptionDetails]) -> None: ...
    @overload
    def __init__(self: ConfigOption[int | None], key: str, kind: IntKind, default: None, **details: Unpack[OptionDetails]) -> None: ...
    @overload
    def __init__(self: ConfigOption[float], key: str, kind: FloatKind, default: float, **details: Unpack[OptionDetails]) -> None: ...
    @overload
    def __init__(self: ConfigOption[float | None], key: str, kind: FloatKind, default: None, **details: Unpack[OptionDetails]) -> None: ...
    @overload
    def __init__(self: ConfigOption[str], key: str, kind: Literal["str"], default: str, **details: Unpack[OptionDetails]) -> None: ...
    @overload
    def __init__(
        self: ConfigOption[str | None], key: str, kind: Literal["str"], default: None, **details: Unpack[OptionDetails]
    ) -> None: ...
    @overload
    def __init__(
        self: ConfigOption[dict[str, str]], key: str, kind: Literal["map"], default: dict[str, str], **details: Unpack[OptionDetails]
    ) -> None: ...
    @overload
    def __init__(self: ConfigOption[bool], key: str, kind: Literal["bool"], default: bool, **details: Unpack[OptionDetails]) -> None: ...
    @overload
    def __init__(
        self: ConfigOption[bool | None], key: str, kind: Literal["bool"], default: None, **details: Unpack[OptionDetails]
    ) -> None: ...
    def __init__(self, key: str, kind: OptionKind, default: Any, **details: Unpack[OptionDetails]) -> None:
        given: dict[str, Any] = {"key": key, "kind": kind, "default": default, **details}
        for field in fields(self):
            # frozen: the dataclass's __setattr__ refuses, so the fields are set as its generated __init__ would
            object.__setattr__(self, field.name, given.get(field.name, field.default))

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
        if self.kind == "memory" and isinstance(value, int):
            return _memory_text_exact(value)
        if self.kind == "float" and isinstance(value, float):
            return float32_text(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, dict):
            return map_text(value)
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


def options_declared_in(namespace: Mapping[str, object]) -> tuple[ConfigOption[Any], ...]:
    """The ConfigOption values of a module's namespace (its ``globals()``), in declaration order."""
    return tuple(value for value in namespace.values() if isinstance(value, ConfigOption))


@dataclass(frozen=True)
class ConfigPrefix:
    """A family of keys ``<prefix><name>``, each one entry ``name: value`` of a map (Flink's
    ``ConfigurationUtils.getPrefixedKeyValuePairs``), e.g. ``containerized.master.env.JAVA_HOME``.
    Read with ``Configuration.prefixed``; listed on the configuration page beside the options."""

    prefix: str
    description: str
