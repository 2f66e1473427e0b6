"""Messages exchanged between the cluster's endpoints (Flink's names).

They are pydantic models so that what crosses the wire is validated on
arrival; gateways send ``model_dump()`` and endpoints rebuild the model.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict


def new_allocation_id() -> str:
    """An AllocationID: names one slot's assignment to one job."""
    return uuid.uuid4().hex


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True)


class SlotID(_Message):
    """A slot of a TaskExecutor: its ResourceID and the slot's index there."""

    resource_id: str
    slot_number: int

    def __str__(self) -> str:
        return f"{self.resource_id}_{self.slot_number}"


class SlotStatus(_Message):
    slot_id: SlotID
    allocation_id: str | None = None
    job_id: str | None = None


class SlotReport(_Message):
    """What a TaskExecutor tells the ResourceManager about all its slots."""

    slots: list[SlotStatus]


class SlotOffer(_Message):
    """A slot a TaskExecutor offers to the JobMaster it was allocated for."""

    allocation_id: str
    slot_index: int


class TaskExecutorRegistration(_Message):
    """Sent by a TaskExecutor when it registers at the ResourceManager.

    ``process_spec`` is the TaskExecutorProcessSpec as a dict of bytes (its
    ``to_dict()``), so the ResourceManager and the REST API can show sizes.
    ``cpu_cores`` and ``physical_memory`` (bytes) describe the TaskExecutor's
    machine (Flink's HardwareDescription); 0 when unknown.
    """

    resource_id: str
    address: str
    num_slots: int
    process_spec: dict[str, Any]
    pid: int
    host: str
    cpu_cores: int = 0
    physical_memory: int = 0


def dump(message: BaseModel) -> dict[str, Any]:
    return message.model_dump(mode="json")
