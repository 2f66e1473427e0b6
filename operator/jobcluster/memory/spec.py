"""The results of the memory model: process specs, worker specs and resource profiles.

Why plain frozen dataclasses of int bytes: these values cross every boundary
of the cluster (the ResourceManager requests a container of a
:class:`WorkerResourceSpec`, the TaskExecutor reports slots of a
:class:`ResourceProfile`, the launcher turns a :class:`TaskExecutorProcessSpec`
into JVM flags and Spark settings), so they are immutable, comparable, and
convert to and from JSON-able dicts without loss.  CPU is a ``Decimal`` with
at most 8 decimal places, as in Flink's ``CPUResource``.

The string forms (:meth:`TaskExecutorProcessSpec.jvm_args`,
:meth:`TaskExecutorProcessSpec.dynamic_configs`) are Flink's, byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from decimal import ROUND_DOWN, Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from jobcluster.config import options as o
from jobcluster.config.values import java_double_text
from jobcluster.errors import IllegalConfigurationError

_CPU_SCALE = Decimal("0.00000001")


def cpu_decimal(value: Decimal | float | int | str) -> Decimal:
    """A CPU amount as Flink stores it: a decimal rounded down to 8 places.

    Floats enter through their shortest text (Java's ``BigDecimal.valueOf``).

    Raises:
        IllegalConfigurationError: negative or not a number.
    """
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except ArithmeticError as error:
        raise IllegalConfigurationError(f"CPU cores must be a number, got {value!r}.") from error
    if not number.is_finite() or number < 0:
        raise IllegalConfigurationError(f"CPU cores must be a non-negative number, got {value!r}.")
    return number.quantize(_CPU_SCALE, rounding=ROUND_DOWN)


def cpu_text(cpu: Decimal) -> str:
    """``Decimal('2.00000000')`` as ``"2"``, ``Decimal('0.50000000')`` as ``"0.5"`` (for JSON and logs)."""
    return format(cpu.normalize(), "f")


def _divide_cpu(cpu: Decimal, parts: int) -> Decimal:
    """``cpu / parts`` rounded down to 8 decimal places (exact integer arithmetic)."""
    units = int(cpu.scaleb(8).to_integral_value(rounding=ROUND_DOWN))
    return Decimal(units // parts).scaleb(-8).quantize(_CPU_SCALE)


def _size_text(size: int) -> str:
    """A size as Flink writes it into dynamic properties: ``<bytes>b``."""
    return f"{size}b"


def _check_sizes(instance: Any, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(instance, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise IllegalConfigurationError(f"{type(instance).__name__}.{name} must be a non-negative number of bytes, got {value!r}.")


def _check_cpu(instance: Any) -> None:
    if not isinstance(instance.cpu_cores, Decimal):
        object.__setattr__(instance, "cpu_cores", cpu_decimal(instance.cpu_cores))
    elif instance.cpu_cores < 0:
        raise IllegalConfigurationError(f"CPU cores must be non-negative, got {instance.cpu_cores}.")


if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_T = TypeVar("_T", bound="DataclassInstance")


def _from_dict(cls: type[_T], data: dict[str, Any]) -> _T:
    names = [f.name for f in fields(cls)]
    missing = [n for n in names if n not in data]
    if missing:
        raise IllegalConfigurationError(f"{cls.__name__} is missing {', '.join(missing)}.")
    values = {n: data[n] for n in names}
    if "cpu_cores" in values:
        values["cpu_cores"] = cpu_decimal(str(values["cpu_cores"]))
    return cls(**values)


def _to_dict(instance: Any) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for f in fields(instance):
        value = getattr(instance, f.name)
        result[f.name] = cpu_text(value) if isinstance(value, Decimal) else value
    return result


# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceProfile:
    """Resources of one slot (or of a whole TaskExecutor): CPU and the four task-facing memories (bytes)."""

    cpu_cores: Decimal
    task_heap: int
    task_off_heap: int
    managed: int
    network: int

    def __post_init__(self) -> None:
        _check_cpu(self)
        _check_sizes(self, ("task_heap", "task_off_heap", "managed", "network"))

    @property
    def total_memory(self) -> int:
        """task heap + task off-heap + managed + network, in bytes."""
        return self.task_heap + self.task_off_heap + self.managed + self.network

    def is_matching(self, required: ResourceProfile) -> bool:
        """Whether this profile can serve ``required`` (every component at least as large)."""
        return (
            self.cpu_cores >= required.cpu_cores
            and self.task_heap >= required.task_heap
            and self.task_off_heap >= required.task_off_heap
            and self.managed >= required.managed
            and self.network >= required.network
        )

    def __add__(self, other: ResourceProfile) -> ResourceProfile:
        return ResourceProfile(
            self.cpu_cores + other.cpu_cores,
            self.task_heap + other.task_heap,
            self.task_off_heap + other.task_off_heap,
            self.managed + other.managed,
            self.network + other.network,
        )

    def __sub__(self, other: ResourceProfile) -> ResourceProfile:
        """Component-wise difference; raises IllegalConfigurationError if any component would be negative."""
        return ResourceProfile(
            self.cpu_cores - other.cpu_cores,
            self.task_heap - other.task_heap,
            self.task_off_heap - other.task_off_heap,
            self.managed - other.managed,
            self.network - other.network,
        )

    def multiply(self, factor: int) -> ResourceProfile:
        """Every component times a non-negative integer ``factor``."""
        if factor < 0:
            raise IllegalConfigurationError(f"Cannot multiply a resource profile by {factor}.")
        return ResourceProfile(
            self.cpu_cores * factor,
            self.task_heap * factor,
            self.task_off_heap * factor,
            self.managed * factor,
            self.network * factor,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: sizes as int bytes, CPU as decimal text."""
        return _to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResourceProfile:
        """Inverse of :meth:`to_dict`."""
        return _from_dict(cls, data)


#: A profile with nothing in it.
ZERO_RESOURCE_PROFILE = ResourceProfile(Decimal(0), 0, 0, 0, 0)


@dataclass(frozen=True)
class WorkerResourceSpec:
    """What the ResourceManager asks a driver for (Flink's ``WorkerResourceSpec``).

    CPU cores, the four task-facing memories (bytes) and the slot count.  The
    framework memories and JVM metaspace/overhead are not part of it: they
    come from the configuration when the worker's process spec is built
    (:func:`jobcluster.memory.taskexecutor.process_spec_from_worker_spec`).
    """

    cpu_cores: Decimal
    task_heap: int
    task_off_heap: int
    network: int
    managed: int
    num_slots: int

    def __post_init__(self) -> None:
        _check_cpu(self)
        _check_sizes(self, ("task_heap", "task_off_heap", "network", "managed"))
        if isinstance(self.num_slots, bool) or not isinstance(self.num_slots, int) or self.num_slots < 1:
            raise IllegalConfigurationError(f"A worker needs at least one slot, got {self.num_slots!r}.")

    @property
    def total_memory(self) -> int:
        """task heap + task off-heap + network + managed, in bytes (Flink's ``getTotalMemSize``)."""
        return self.task_heap + self.task_off_heap + self.network + self.managed

    def total_resource_profile(self) -> ResourceProfile:
        """Everything a TaskExecutor of this spec offers, as one profile."""
        return ResourceProfile(self.cpu_cores, self.task_heap, self.task_off_heap, self.managed, self.network)

    def default_slot_profile(self) -> ResourceProfile:
        """One slot's share: each memory component floor-divided by the slot count, CPU divided
        to 8 decimal places rounding down (Flink's default slot profile)."""
        n = self.num_slots
        return ResourceProfile(
            _divide_cpu(self.cpu_cores, n),
            self.task_heap // n,
            self.task_off_heap // n,
            self.managed // n,
            self.network // n,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: sizes as int bytes, CPU as decimal text."""
        return _to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerResourceSpec:
        """Inverse of :meth:`to_dict`."""
        return _from_dict(cls, data)


@dataclass(frozen=True)
class TaskExecutorProcessSpec:
    """Every memory component of a TaskExecutor container, in bytes, plus CPU and slots.

    Identities (Flink's): Total Flink = framework heap + task heap + framework
    off-heap + task off-heap + network + managed; Total Process = Total Flink +
    JVM metaspace + JVM overhead; JVM heap = framework heap + task heap; JVM
    direct = framework off-heap + task off-heap + network.
    """

    cpu_cores: Decimal
    framework_heap: int
    framework_off_heap: int
    task_heap: int
    task_off_heap: int
    network: int
    managed: int
    jvm_metaspace: int
    jvm_overhead: int
    num_slots: int

    _SIZES = (
        "framework_heap",
        "framework_off_heap",
        "task_heap",
        "task_off_heap",
        "network",
        "managed",
        "jvm_metaspace",
        "jvm_overhead",
    )

    def __post_init__(self) -> None:
        _check_cpu(self)
        _check_sizes(self, self._SIZES)
        if isinstance(self.num_slots, bool) or not isinstance(self.num_slots, int) or self.num_slots < 1:
            raise IllegalConfigurationError(f"A TaskExecutor needs at least one slot, got {self.num_slots!r}.")

    @property
    def total_flink(self) -> int:
        """Total Flink Memory in bytes."""
        return self.framework_heap + self.task_heap + self.framework_off_heap + self.task_off_heap + self.network + self.managed

    @property
    def total_process(self) -> int:
        """Total Process Memory in bytes (the container size)."""
        return self.total_flink + self.jvm_metaspace + self.jvm_overhead

    @property
    def jvm_heap(self) -> int:
        """framework heap + task heap (the Flink TaskManager's -Xmx), bytes."""
        return self.framework_heap + self.task_heap

    @property
    def jvm_direct(self) -> int:
        """framework off-heap + task off-heap + network (the Flink TaskManager's MaxDirectMemorySize), bytes."""
        return self.framework_off_heap + self.task_off_heap + self.network

    def jvm_args(self) -> str:
        """Flink's TaskManager JVM flags (raw bytes):
        ``-Xmx<heap> -Xms<heap> -XX:MaxDirectMemorySize=<direct> -XX:MaxMetaspaceSize=<metaspace>``."""
        heap = self.jvm_heap
        return f"-Xmx{heap} -Xms{heap} -XX:MaxDirectMemorySize={self.jvm_direct} -XX:MaxMetaspaceSize={self.jvm_metaspace}"

    def dynamic_configs(self) -> dict[str, str]:
        """The options that pin every component when the TaskExecutor re-reads its configuration.

        Flink's set: CPU as Java double text, each size as ``<bytes>b``, network
        min = max = network, overhead min = max = overhead, the slot count, and
        ``external-resources: none``.  Reading a configuration updated with these
        reproduces this spec exactly.
        """
        b = _size_text
        return {
            o.TASK_MANAGER_CPU_CORES.key: java_double_text(float(self.cpu_cores)),
            o.TASK_MANAGER_FRAMEWORK_HEAP_MEMORY.key: b(self.framework_heap),
            o.TASK_MANAGER_FRAMEWORK_OFF_HEAP_MEMORY.key: b(self.framework_off_heap),
            o.TASK_MANAGER_TASK_HEAP_MEMORY.key: b(self.task_heap),
            o.TASK_MANAGER_TASK_OFF_HEAP_MEMORY.key: b(self.task_off_heap),
            o.TASK_MANAGER_NETWORK_MEMORY_MIN.key: b(self.network),
            o.TASK_MANAGER_NETWORK_MEMORY_MAX.key: b(self.network),
            o.TASK_MANAGER_MANAGED_MEMORY_SIZE.key: b(self.managed),
            o.TASK_MANAGER_JVM_METASPACE.key: b(self.jvm_metaspace),
            o.TASK_MANAGER_JVM_OVERHEAD_MIN.key: b(self.jvm_overhead),
            o.TASK_MANAGER_JVM_OVERHEAD_MAX.key: b(self.jvm_overhead),
            o.NUM_TASK_SLOTS.key: str(self.num_slots),
            "external-resources": "none",
        }

    def dynamic_configs_text(self) -> str:
        """:meth:`dynamic_configs` as Flink passes them on a command line: ``-D k=v -D k=v ...``."""
        return " ".join(f"-D {key}={value}" for key, value in self.dynamic_configs().items())

    def worker_resource_spec(self) -> WorkerResourceSpec:
        """The four task-facing memories, CPU and slots of this spec."""
        return WorkerResourceSpec(self.cpu_cores, self.task_heap, self.task_off_heap, self.network, self.managed, self.num_slots)

    def total_resource_profile(self) -> ResourceProfile:
        """Everything this TaskExecutor offers to slots, as one profile."""
        return self.worker_resource_spec().total_resource_profile()

    def default_slot_profile(self) -> ResourceProfile:
        """One slot's share of the worker resources (see :meth:`WorkerResourceSpec.default_slot_profile`)."""
        return self.worker_resource_spec().default_slot_profile()

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: sizes as int bytes, CPU as decimal text, slots as int."""
        return _to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskExecutorProcessSpec:
        """Inverse of :meth:`to_dict`.

        Raises:
            IllegalConfigurationError: a field is missing or invalid.
        """
        return _from_dict(cls, data)


@dataclass(frozen=True)
class JobManagerProcessSpec:
    """Every memory component of the JobManager container, in bytes.

    Total Flink = JVM heap + off-heap; Total Process = Total Flink + JVM
    metaspace + JVM overhead.
    """

    jvm_heap: int
    off_heap: int
    jvm_metaspace: int
    jvm_overhead: int

    def __post_init__(self) -> None:
        _check_sizes(self, ("jvm_heap", "off_heap", "jvm_metaspace", "jvm_overhead"))

    @property
    def total_flink(self) -> int:
        """Total Flink Memory in bytes."""
        return self.jvm_heap + self.off_heap

    @property
    def total_process(self) -> int:
        """Total Process Memory in bytes (the container size)."""
        return self.total_flink + self.jvm_metaspace + self.jvm_overhead

    def jvm_args(self, enable_direct_limit: bool = False) -> str:
        """Flink's JobManager JVM flags; ``-XX:MaxDirectMemorySize=<off-heap>`` only when
        ``enable_direct_limit`` (``jobmanager.memory.enable-jvm-direct-memory-limit``)."""
        direct = f" -XX:MaxDirectMemorySize={self.off_heap}" if enable_direct_limit else ""
        return f"-Xmx{self.jvm_heap} -Xms{self.jvm_heap}{direct} -XX:MaxMetaspaceSize={self.jvm_metaspace}"

    def dynamic_configs(self) -> dict[str, str]:
        """The options that pin every JobManager component (heap, off-heap, metaspace, overhead min = max)."""
        return {
            o.JOB_MANAGER_JVM_HEAP_MEMORY.key: _size_text(self.jvm_heap),
            o.JOB_MANAGER_OFF_HEAP_MEMORY.key: _size_text(self.off_heap),
            o.JOB_MANAGER_JVM_METASPACE.key: _size_text(self.jvm_metaspace),
            o.JOB_MANAGER_JVM_OVERHEAD_MIN.key: _size_text(self.jvm_overhead),
            o.JOB_MANAGER_JVM_OVERHEAD_MAX.key: _size_text(self.jvm_overhead),
        }

    def dynamic_configs_text(self) -> str:
        """:meth:`dynamic_configs` as ``-D k=v -D k=v ...``."""
        return " ".join(f"-D {key}={value}" for key, value in self.dynamic_configs().items())

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: sizes as int bytes."""
        return _to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobManagerProcessSpec:
        """Inverse of :meth:`to_dict`."""
        return _from_dict(cls, data)
