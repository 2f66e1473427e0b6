"""Container resources from the memory model: requests, and limits = requests x the limit factors.

Rule (Flink's ``KubernetesUtils.getResourceRequirements``): memory request =
the process's Total Process Memory in MiB (rounded down), memory limit =
``int(MiB x memory limit-factor)`` MiB; CPU request = the cores, CPU limit =
cores x CPU limit-factor.  Both factors are at least 1 (checked in parameters.py).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

MiB = 1 << 20


def cpu_quantity(cores: Decimal | float) -> str:
    """A CPU quantity: whole cores as ``"2"``, else millicores rounded up, as ``"1500m"``.

    Why millicores: Kubernetes keeps CPU at a precision of 1m; rounding up never
    requests less than the memory model's cores.
    """
    milli = math.ceil(Decimal(str(cores)) * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def memory_quantity(mib: int) -> str:
    """A memory quantity in MiB: ``"1728Mi"``."""
    return f"{mib}Mi"


def resource_requirements(memory_mib: int, cpu: Decimal | float, memory_limit_factor: float, cpu_limit_factor: float) -> dict[str, Any]:
    """``{"requests": {...}, "limits": {...}}`` of a container with ``memory_mib`` MiB and ``cpu`` cores.

    Raises:
        ValueError: ``memory_mib`` or ``cpu`` not positive, or a factor below 1
            (parameters.py refuses those with the option's key first).
    """
    if memory_mib <= 0 or not cpu > 0:
        raise ValueError(f"a container needs positive memory and CPU, got {memory_mib} MiB and {cpu} cores")
    if memory_limit_factor < 1 or cpu_limit_factor < 1:
        raise ValueError(f"limit factors must be at least 1, got memory {memory_limit_factor} and CPU {cpu_limit_factor}")
    return {
        "requests": {"cpu": cpu_quantity(cpu), "memory": memory_quantity(memory_mib)},
        "limits": {
            "cpu": cpu_quantity(Decimal(str(cpu)) * Decimal(str(cpu_limit_factor))),
            "memory": memory_quantity(int(memory_mib * memory_limit_factor)),
        },
    }
