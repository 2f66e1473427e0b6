"""The TaskSlotTable: which of a TaskExecutor's slots belong to which job."""

from __future__ import annotations

from dataclasses import dataclass

from jobcluster.errors import JobClusterError
from jobcluster.runtime.messages import SlotID, SlotReport, SlotStatus


@dataclass
class TaskSlot:
    index: int
    allocation_id: str | None = None
    job_id: str | None = None
    offered: bool = False


class SlotOccupiedError(JobClusterError):
    """The slot is already allocated to a different allocation."""


class TaskSlotTable:
    """``num_slots`` slots of one TaskExecutor (ResourceID ``resource_id``)."""

    def __init__(self, resource_id: str, num_slots: int) -> None:
        self.resource_id = resource_id
        self.slots = [TaskSlot(i) for i in range(num_slots)]

    def allocate(self, index: int, job_id: str, allocation_id: str) -> TaskSlot:
        """Assign slot ``index``; idempotent for the same allocation; SlotOccupiedError otherwise."""
        if not 0 <= index < len(self.slots):
            raise JobClusterError(f"slot {index} does not exist on {self.resource_id}")
        slot = self.slots[index]
        if slot.allocation_id not in (None, allocation_id):
            raise SlotOccupiedError(f"slot {index} of {self.resource_id} is allocated to {slot.allocation_id}")
        slot.allocation_id, slot.job_id = allocation_id, job_id
        return slot

    def free(self, allocation_id: str) -> TaskSlot | None:
        for slot in self.slots:
            if slot.allocation_id == allocation_id:
                slot.allocation_id = slot.job_id = None
                slot.offered = False
                return slot
        return None

    def slots_of_job(self, job_id: str) -> list[TaskSlot]:
        return [s for s in self.slots if s.job_id == job_id]

    def slot_report(self) -> SlotReport:
        return SlotReport(
            slots=[
                SlotStatus(
                    slot_id=SlotID(resource_id=self.resource_id, slot_number=s.index), allocation_id=s.allocation_id, job_id=s.job_id
                )
                for s in self.slots
            ]
        )
