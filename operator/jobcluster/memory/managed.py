"""Who shares a TaskExecutor's managed memory in a PySpark job, and how much each gets (Flink's consumer weights).

Why: Flink divides a slot's managed memory among the kinds of consumers its job
actually has, in proportion to their weights (``taskmanager.memory.managed.consumer-weights``,
Flink's ``ManagedMemoryUtils``): OPERATOR (sorting, hash tables and caching of the
built-in operators), STATE_BACKEND (RocksDB) and PYTHON (PyFlink's Python workers,
when ``python.fn-execution.memory.managed``).  A kind the job does not have takes
nothing, and its weight does not count.

A PySpark job on a job cluster has two of these consumers:

* OPERATOR: Spark's off-heap memory, the unified execution and storage memory of
  the executor (sorts, aggregation hash maps, shuffle buffers, cached blocks),
  which is what the built-in operators use managed memory for in Flink;
* PYTHON: the PySpark workers, which run the program's Python functions, as
  PyFlink's Python workers run a PyFlink job's.

STATE_BACKEND has none: Spark's state stores keep their state on the executor
heap (the default store) or in native memory that Spark does not take from its
off-heap memory (the RocksDB store), so it counts as Flink counts a state backend
that does not use managed memory: not at all.  With the default weights
(``OPERATOR:70,STATE_BACKEND:70,PYTHON:30``) the PySpark workers get 30 % of
managed memory and Spark's off-heap memory 70 %; the shipped configuration
(conf/jobcluster.yaml) turns that round (``OPERATOR:30,PYTHON:70``), since every
task of a PySpark job runs Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from jobcluster.config import options as o
from jobcluster.config.configuration import Configuration, InvalidValueError
from jobcluster.config.values import map_text
from jobcluster.errors import IllegalConfigurationError

OPERATOR = "OPERATOR"
STATE_BACKEND = "STATE_BACKEND"
PYTHON = "PYTHON"
#: Flink 1.11's name for OPERATOR and STATE_BACKEND together, still read when the newer name is missing.
DATAPROC = "DATAPROC"

#: The names each kind of consumer is configured under, in the order Flink looks them up.
_CONSUMER_NAMES = {OPERATOR: (OPERATOR, DATAPROC), STATE_BACKEND: (STATE_BACKEND, DATAPROC), PYTHON: (PYTHON,)}


def consumer_weights(configured: Mapping[str, str]) -> dict[str, int]:
    """The weight of each kind of consumer (OPERATOR, STATE_BACKEND, PYTHON) in ``configured``, the value of
    ``taskmanager.memory.managed.consumer-weights``.

    As Flink's ``getManagedMemoryUseCaseWeightsFromConfig``: a kind missing from the map
    weighs 0, ``DATAPROC`` stands in for a missing OPERATOR or STATE_BACKEND, and
    names of no kind are ignored.

    Raises:
        IllegalConfigurationError: a weight that is not an integer, or is negative.
    """
    key = o.TASK_MANAGER_MANAGED_MEMORY_CONSUMER_WEIGHTS.key
    weights = {}
    for kind, names in _CONSUMER_NAMES.items():
        name = next((n for n in names if n in configured), None)
        text = configured[name] if name is not None else "0"
        try:
            weight = int(text.strip())
        except ValueError:
            raise InvalidValueError(f"Could not parse value '{text}' for key '{key}': the weight of {name} must be an integer.") from None
        if weight < 0:
            # Flink's sentence, then the key to change
            raise IllegalConfigurationError(
                f"Managed memory weight should not be negative. Configured weight for {kind} is {weight} ({key})."
            )
        weights[kind] = weight
    return weights


@dataclass(frozen=True)
class ManagedMemoryConsumers:
    """The consumers of managed memory in a PySpark job and their weights (non-negative integers).

    ``operator_weight``: Spark's off-heap memory (OPERATOR); ``python_weight``: the PySpark
    workers (PYTHON), 0 when they do not use managed memory (``python.fn-execution.memory.managed``
    false); ``configured``: the option's text, for messages.  Each gets
    ``managed x weight / (sum of both weights)``, rounded down to a byte (nothing when both are 0).
    """

    operator_weight: int
    python_weight: int
    python_uses_managed: bool = True
    configured: str = "OPERATOR:70,STATE_BACKEND:70,PYTHON:30"

    def __post_init__(self) -> None:
        if min(self.operator_weight, self.python_weight) < 0:
            raise IllegalConfigurationError(f"Managed memory weights must not be negative, got {self}.")

    @classmethod
    def from_config(cls, config: Configuration) -> ManagedMemoryConsumers:
        """The consumers as ``config`` sets them (``taskmanager.memory.managed.consumer-weights``,
        ``python.fn-execution.memory.managed``).

        Raises:
            IllegalConfigurationError: a weight is not a non-negative integer, or an option cannot be parsed.
        """
        configured = config.get(o.TASK_MANAGER_MANAGED_MEMORY_CONSUMER_WEIGHTS)
        weights = consumer_weights(configured)
        python_uses_managed = config.get(o.PYTHON_USE_MANAGED_MEMORY)
        return cls(
            operator_weight=weights[OPERATOR],
            python_weight=weights[PYTHON] if python_uses_managed else 0,
            python_uses_managed=python_uses_managed,
            configured=map_text(configured),
        )

    @property
    def total_weight(self) -> int:
        return self.operator_weight + self.python_weight

    def operator_share(self, managed: int) -> int:
        """Bytes of ``managed`` (bytes) that Spark's off-heap memory gets."""
        return managed * self.operator_weight // self.total_weight if self.total_weight else 0

    def python_share(self, managed: int) -> int:
        """Bytes of ``managed`` (bytes) that the PySpark workers get."""
        return managed * self.python_weight // self.total_weight if self.total_weight else 0


#: The consumers under Flink's default options (weights OPERATOR:70, PYTHON:30; Python workers use managed memory).
DEFAULT_CONSUMERS = ManagedMemoryConsumers.from_config(Configuration())
