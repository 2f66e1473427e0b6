"""The SlotManager: matches declared slot requirements with TaskExecutor slots.

It is plain, synchronous bookkeeping owned by the ResourceManager and only
touched on its loop. Every change (requirements declared, a TaskExecutor
registered or lost, a slot allocated or freed, a worker requested or failed)
ends in :meth:`check_resource_requirements`, which (1) assigns free slots to
jobs that still miss slots, and (2) asks for new workers for what free and
pending slots cannot cover, within ``slotmanager.number-of-slots.max``.
What to do is handed to :class:`SlotManagerActions`, so this logic is tested
without any process, network or cluster.

It is also the one place that counts pending workers (Flink's
``TaskExecutorManager``): a worker is *requested* from the moment the
SlotManager asks for it, *pending* once the driver accepted it under a
ResourceID, and neither once it registered or ended. The ResourceManager
reports those transitions; it keeps no count of its own.

Indexes keep every event's cost independent of the cluster's size: the free
slots (in registration order), the slots held per job, the registered total,
and per TaskExecutor the count of slots in use (so "idle" is one comparison).
Every change of a slot's state goes through :meth:`SlotManager._set`, which
keeps them true.
"""

from __future__ import annotations

import enum
import logging
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from jobcluster.runtime.messages import SlotID, SlotReport, new_allocation_id

log = logging.getLogger(__name__)


class SlotState(enum.Enum):
    FREE = "FREE"
    PENDING = "PENDING"  # requested from the TaskExecutor, not yet confirmed
    ALLOCATED = "ALLOCATED"


@dataclass
class Slot:
    slot_id: SlotID
    state: SlotState = SlotState.FREE
    job_id: str | None = None
    allocation_id: str | None = None


@dataclass
class TaskManagerEntry:
    resource_id: str
    slots: dict[int, Slot]
    idle_since: float | None = field(default_factory=time.monotonic)
    busy: int = 0  # slots not FREE, kept by the SlotManager

    def is_idle(self) -> bool:
        return self.busy == 0


class SlotManagerActions(Protocol):
    """What the SlotManager asks its ResourceManager to do."""

    def allocate_slot(self, slot_id: SlotID, job_id: str, allocation_id: str) -> None:
        """Ask the TaskExecutor for the slot; report back with slot_allocated / slot_allocation_failed."""

    def request_new_worker(self) -> bool:
        """Ask the driver for one more TaskExecutor, reported back with worker_started / worker_start_failed;
        False if no worker can be requested now (the ResourceManager is closing)."""

    def release_task_executor(self, resource_id: str, reason: str) -> None:
        """Stop and release an idle TaskExecutor."""


class SlotManager:
    """Requirements vs. registered and pending slots (Flink's declarative SlotManager).

    ``slots_per_worker``: slots a newly requested TaskExecutor brings
    (``taskmanager.numberOfTaskSlots``); ``max_slots``: cap on registered plus
    pending slots (``slotmanager.number-of-slots.max``); ``idle_timeout``:
    seconds after which a TaskExecutor with only free slots is released
    (``resourcemanager.taskmanager-timeout``).
    """

    def __init__(self, actions: SlotManagerActions, slots_per_worker: int, max_slots: int | None, idle_timeout: float) -> None:
        self._actions = actions
        self.slots_per_worker = slots_per_worker
        self.max_slots = max_slots
        self.idle_timeout = idle_timeout
        self.task_managers: dict[str, TaskManagerEntry] = {}
        self.requirements: dict[str, int] = {}
        self._requested_workers = 0  # asked for, no ResourceID yet
        self._pending_workers: set[str] = set()  # started by the driver, not registered yet
        self._free_slots: dict[SlotID, Slot] = {}  # an ordered set: the first registered are used first
        self._job_slots: Counter[str] = Counter()  # slots PENDING or ALLOCATED per job
        self._registered = 0

    # ---- inputs -------------------------------------------------------------------------

    def declare_resource_requirements(self, job_id: str, required_slots: int) -> None:
        """The JobMaster of ``job_id`` needs ``required_slots`` slots in total (0 = none)."""
        if required_slots <= 0:
            self.requirements.pop(job_id, None)
        else:
            self.requirements[job_id] = required_slots
        self.check_resource_requirements()

    def worker_started(self, resource_id: str) -> None:
        """The driver accepted a requested worker as ``resource_id``; it is pending until it registers."""
        self._requested_workers = max(0, self._requested_workers - 1)
        if resource_id not in self.task_managers:  # it may register before its start is reported
            self._pending_workers.add(resource_id)

    def workers_recovered(self, resource_ids: list[str]) -> None:
        """Workers of a previous attempt are still running; they count as pending until they register."""
        self._pending_workers.update(resource_ids)

    def worker_start_failed(self, resource_id: str | None = None) -> None:
        """A requested worker could not be started (``resource_id`` None), or the pending ``resource_id`` ended
        before it registered; a replacement is requested if the requirements still need it."""
        if resource_id is None:
            self._requested_workers = max(0, self._requested_workers - 1)
        else:
            self._pending_workers.discard(resource_id)
        self.check_resource_requirements()

    def is_pending(self, resource_id: str) -> bool:
        """Whether ``resource_id`` was started (or recovered) and has not registered yet."""
        return resource_id in self._pending_workers

    def pending_workers(self) -> int:
        """Workers requested or started that have not registered yet."""
        return self._requested_workers + len(self._pending_workers)

    def register_task_executor(self, resource_id: str, report: SlotReport) -> None:
        """A TaskExecutor registered with the slots in ``report``; if it was pending, it no longer is."""
        if resource_id in self.task_managers:
            self._remove_task_manager(resource_id)  # registered again (a new connection): its report replaces the old
        entry = TaskManagerEntry(resource_id, {})
        self.task_managers[resource_id] = entry
        for s in report.slots:
            slot = Slot(s.slot_id)
            entry.slots[s.slot_id.slot_number] = slot
            self._registered += 1
            self._free_slots[slot.slot_id] = slot
            if s.allocation_id:
                self._set(slot, SlotState.ALLOCATED, s.job_id, s.allocation_id)
        self._pending_workers.discard(resource_id)
        self.check_resource_requirements()

    def unregister_task_executor(self, resource_id: str) -> None:
        """The TaskExecutor is gone; its slots and their allocations with it."""
        if resource_id in self.task_managers:
            self._remove_task_manager(resource_id)
            self.check_resource_requirements()

    def slot_allocated(self, slot_id: SlotID, allocation_id: str) -> None:
        slot = self._slot(slot_id)
        if slot is not None and slot.allocation_id == allocation_id:
            self._set(slot, SlotState.ALLOCATED, slot.job_id, allocation_id)

    def slot_allocation_failed(self, slot_id: SlotID, allocation_id: str) -> None:
        slot = self._slot(slot_id)
        if slot is not None and slot.allocation_id == allocation_id:
            self._free(slot)
        self.check_resource_requirements()

    def free_slot(self, slot_id: SlotID, allocation_id: str) -> None:
        """The job gave the slot back."""
        slot = self._slot(slot_id)
        if slot is not None and slot.allocation_id == allocation_id:
            self._free(slot)
            self.check_resource_requirements()

    def check_idle_task_executors(self, now: float | None = None) -> None:
        """Release TaskExecutors whose slots were all free for longer than the idle timeout."""
        now = time.monotonic() if now is None else now
        if self.requirements:
            return
        for entry in list(self.task_managers.values()):
            if entry.is_idle() and entry.idle_since is not None and now - entry.idle_since >= self.idle_timeout:
                self._remove_task_manager(entry.resource_id)
                self._actions.release_task_executor(entry.resource_id, "idle")

    # ---- views (constant time) ----------------------------------------------------------

    def registered_slots(self) -> int:
        return self._registered

    def free_slots(self) -> int:
        return len(self._free_slots)

    def slots_of_job(self, job_id: str) -> int:
        return self._job_slots[job_id]

    # ---- the one decision ---------------------------------------------------------------

    def check_resource_requirements(self) -> None:
        """Assign free slots to unmet requirements, then request workers for the rest."""
        missing_total = 0
        for job_id, required in self.requirements.items():
            missing = required - self.slots_of_job(job_id)
            while missing > 0 and self._free_slots:
                slot = next(iter(self._free_slots.values()))
                allocation_id = new_allocation_id()
                self._set(slot, SlotState.PENDING, job_id, allocation_id)
                self._actions.allocate_slot(slot.slot_id, job_id, allocation_id)
                missing -= 1
            missing_total += max(0, missing)
        uncovered = missing_total - self.pending_workers() * self.slots_per_worker
        for _ in range(math.ceil(max(0, uncovered) / self.slots_per_worker)):
            if not self._may_add_worker():
                log.warning("not requesting another TaskExecutor: slotmanager.number-of-slots.max=%s reached", self.max_slots)
                break
            if not self._actions.request_new_worker():
                break
            self._requested_workers += 1

    def _may_add_worker(self) -> bool:
        if self.max_slots is None:
            return True
        return self.registered_slots() + (self.pending_workers() + 1) * self.slots_per_worker <= self.max_slots

    def _slot(self, slot_id: SlotID) -> Slot | None:
        tm = self.task_managers.get(slot_id.resource_id)
        return tm.slots.get(slot_id.slot_number) if tm else None

    def _free(self, slot: Slot) -> None:
        self._set(slot, SlotState.FREE, None, None)

    def _set(self, slot: Slot, state: SlotState, job_id: str | None, allocation_id: str | None) -> None:
        """The one place a slot changes state: the indexes and the TaskExecutor's idle clock follow."""
        entry = self.task_managers[slot.slot_id.resource_id]
        if slot.state is SlotState.FREE:
            if state is not SlotState.FREE:
                del self._free_slots[slot.slot_id]
                entry.busy += 1
                entry.idle_since = None
        elif state is SlotState.FREE:
            self._free_slots[slot.slot_id] = slot
            entry.busy -= 1
            if entry.busy == 0:
                entry.idle_since = time.monotonic()
        if slot.job_id is not None:
            self._job_slots[slot.job_id] -= 1
            if not self._job_slots[slot.job_id]:
                del self._job_slots[slot.job_id]
        if job_id is not None:
            self._job_slots[job_id] += 1
        slot.state, slot.job_id, slot.allocation_id = state, job_id, allocation_id

    def _remove_task_manager(self, resource_id: str) -> None:
        entry = self.task_managers[resource_id]
        for slot in entry.slots.values():
            self._set(slot, SlotState.FREE, None, None)
            del self._free_slots[slot.slot_id]
            self._registered -= 1
        del self.task_managers[resource_id]
