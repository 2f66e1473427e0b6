"""The SlotPool: the slots a JobMaster holds for its job."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PooledSlot:
    allocation_id: str
    resource_id: str
    slot_index: int


class SlotPool:
    """Holds up to ``required_slots`` offered slots, keyed by AllocationID."""

    def __init__(self, required_slots: int) -> None:
        self.required_slots = required_slots
        self._slots: dict[str, PooledSlot] = {}

    def offer(self, slot: PooledSlot) -> bool:
        """Accept the slot if the job still needs one (idempotent per allocation)."""
        if slot.allocation_id in self._slots:
            return True
        if len(self._slots) >= self.required_slots:
            return False
        self._slots[slot.allocation_id] = slot
        return True

    def release_task_executor(self, resource_id: str) -> list[PooledSlot]:
        """Drop every slot of ``resource_id``; returns them."""
        gone = [s for s in self._slots.values() if s.resource_id == resource_id]
        for slot in gone:
            del self._slots[slot.allocation_id]
        return gone

    def release_all(self) -> list[PooledSlot]:
        slots = list(self._slots.values())
        self._slots.clear()
        return slots

    def has_required_slots(self) -> bool:
        return len(self._slots) >= self.required_slots

    @property
    def size(self) -> int:
        return len(self._slots)

    def task_executors(self) -> set[str]:
        return {s.resource_id for s in self._slots.values()}
