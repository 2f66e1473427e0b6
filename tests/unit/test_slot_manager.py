"""SlotManager state transitions, driven through its inputs with a recording double of its ResourceManager."""

from __future__ import annotations

import pytest

from jobcluster.runtime.messages import SlotID, SlotReport, SlotStatus
from jobcluster.runtime.resourcemanager.slot_manager import SlotManager, SlotState


class RecordingActions:
    def __init__(self, accept_workers: bool = True) -> None:
        self.allocations: list[tuple[SlotID, str, str]] = []
        self.worker_requests = 0
        self.released: list[str] = []
        self.accept_workers = accept_workers

    def allocate_slot(self, slot_id, job_id, allocation_id):
        self.allocations.append((slot_id, job_id, allocation_id))

    def request_new_worker(self):
        if self.accept_workers:
            self.worker_requests += 1
        return self.accept_workers

    def release_task_executor(self, resource_id, reason):
        self.released.append(resource_id)


def report(resource_id: str, slots: int, allocated: dict[int, tuple[str, str]] | None = None) -> SlotReport:
    allocated = allocated or {}
    return SlotReport(
        slots=[
            SlotStatus(
                slot_id=SlotID(resource_id=resource_id, slot_number=i),
                allocation_id=allocated.get(i, (None, None))[1],
                job_id=allocated.get(i, (None, None))[0],
            )
            for i in range(slots)
        ]
    )


def manager(slots_per_worker=2, max_slots=None, idle_timeout=30.0, **kw) -> tuple[SlotManager, RecordingActions]:
    actions = RecordingActions(**kw)
    return SlotManager(actions, slots_per_worker, max_slots, idle_timeout), actions


def test_requirements_without_slots_request_enough_workers():
    sm, actions = manager(slots_per_worker=2)
    sm.declare_resource_requirements("job", 5)
    assert actions.worker_requests == 3  # ceil(5 / 2)
    assert sm.pending_workers() == 3
    sm.check_resource_requirements()
    assert actions.worker_requests == 3, "pending workers already cover the requirement"


def test_registered_slots_are_allocated_and_pending_worker_consumed():
    sm, actions = manager(slots_per_worker=2)
    sm.declare_resource_requirements("job", 4)
    sm.worker_started("tm-1")
    sm.worker_started("tm-2")
    sm.register_task_executor("tm-1", report("tm-1", 2))
    assert sm.pending_workers() == 1 and sm.is_pending("tm-2") and not sm.is_pending("tm-1")
    assert [(a[0].resource_id, a[1]) for a in actions.allocations] == [("tm-1", "job"), ("tm-1", "job")]
    states = {s.state for s in sm.task_managers["tm-1"].slots.values()}
    assert states == {SlotState.PENDING}
    for slot_id, _, allocation_id in actions.allocations:
        sm.slot_allocated(slot_id, allocation_id)
    assert sm.slots_of_job("job") == 2 and sm.free_slots() == 0


def test_failed_allocation_frees_the_slot_and_retries_it():
    sm, actions = manager(slots_per_worker=1)
    sm.declare_resource_requirements("job", 1)
    sm.register_task_executor("tm-1", report("tm-1", 1))
    slot_id, _, allocation_id = actions.allocations[0]
    sm.slot_allocation_failed(slot_id, allocation_id)
    assert len(actions.allocations) == 2, "the freed slot is offered again"
    assert actions.allocations[1][2] != allocation_id


def test_stale_allocation_confirmation_is_ignored():
    sm, actions = manager(slots_per_worker=1)
    sm.declare_resource_requirements("job", 1)
    sm.register_task_executor("tm-1", report("tm-1", 1))
    slot_id, _, _ = actions.allocations[0]
    sm.slot_allocated(slot_id, "some-other-allocation")
    assert sm.task_managers["tm-1"].slots[0].state is SlotState.PENDING


def test_lost_task_executor_is_replaced():
    sm, actions = manager(slots_per_worker=2)
    sm.declare_resource_requirements("job", 4)
    for resource_id in ("tm-1", "tm-2"):
        sm.worker_started(resource_id)
        sm.register_task_executor(resource_id, report(resource_id, 2))
    assert actions.worker_requests == 2 and sm.pending_workers() == 0
    sm.unregister_task_executor("tm-1")
    assert actions.worker_requests == 3, "two slots are missing again: one more worker"
    assert sm.slots_of_job("job") == 2


def test_worker_that_never_registers_is_requested_again():
    sm, actions = manager(slots_per_worker=2)
    sm.declare_resource_requirements("job", 2)
    assert actions.worker_requests == 1
    sm.worker_start_failed()
    assert actions.worker_requests == 2 and sm.pending_workers() == 1
    sm.worker_started("tm-1")
    assert sm.pending_workers() == 1
    sm.worker_start_failed("tm-1")  # it ended before it registered
    assert actions.worker_requests == 3 and sm.pending_workers() == 1 and not sm.is_pending("tm-1")


def test_only_a_pending_worker_registering_lowers_the_pending_count():
    sm, actions = manager(slots_per_worker=2)
    sm.declare_resource_requirements("job", 4)
    sm.worker_started("tm-1")
    sm.worker_started("tm-2")
    sm.register_task_executor("tm-1", report("tm-1", 2))
    sm.register_task_executor("tm-1", report("tm-1", 2))  # the same TaskExecutor again (a new connection)
    sm.register_task_executor("other", report("other", 2))  # one nobody requested (e.g. of a previous attempt)
    assert sm.pending_workers() == 1 and sm.is_pending("tm-2")
    assert actions.worker_requests == 2


def test_a_worker_that_registers_before_its_start_is_reported_is_not_counted_pending():
    sm, _actions = manager(slots_per_worker=1)
    sm.declare_resource_requirements("job", 1)
    sm.register_task_executor("tm-1", report("tm-1", 1))
    sm.worker_started("tm-1")
    assert sm.pending_workers() == 0


def test_recovered_workers_count_as_pending_until_they_register():
    sm, actions = manager(slots_per_worker=2)
    sm.workers_recovered(["old-1", "old-2"])
    sm.declare_resource_requirements("job", 4)
    assert actions.worker_requests == 0, "the previous attempt's workers cover the requirement"
    sm.worker_start_failed("old-2")
    assert actions.worker_requests == 1


def test_max_slots_caps_worker_requests():
    sm, actions = manager(slots_per_worker=2, max_slots=4)
    sm.declare_resource_requirements("job", 10)
    assert actions.worker_requests == 2


def test_driver_refusal_stops_requests():
    sm, _actions = manager(accept_workers=False)
    sm.declare_resource_requirements("job", 4)
    assert sm.pending_workers() == 0


def test_task_executor_with_allocated_slots_reports_them():
    sm, actions = manager(slots_per_worker=2)
    sm.register_task_executor("tm-1", report("tm-1", 2, {0: ("job", "a1")}))
    assert sm.slots_of_job("job") == 1 and sm.free_slots() == 1
    sm.declare_resource_requirements("job", 2)
    assert len(actions.allocations) == 1 and actions.allocations[0][0].slot_number == 1


def test_freed_slots_make_task_executor_idle_and_released_after_timeout():
    sm, actions = manager(slots_per_worker=1, idle_timeout=10.0)
    sm.declare_resource_requirements("job", 1)
    sm.register_task_executor("tm-1", report("tm-1", 1))
    slot_id, _, allocation_id = actions.allocations[0]
    sm.slot_allocated(slot_id, allocation_id)
    sm.check_idle_task_executors(now=1e12)
    assert actions.released == [], "a busy TaskExecutor is never idle"
    sm.declare_resource_requirements("job", 0)
    sm.free_slot(slot_id, allocation_id)
    idle_since = sm.task_managers["tm-1"].idle_since
    sm.check_idle_task_executors(now=idle_since + 5)
    assert actions.released == []
    sm.check_idle_task_executors(now=idle_since + 10)
    assert actions.released == ["tm-1"] and "tm-1" not in sm.task_managers


@pytest.mark.parametrize(("required", "slots_per_worker", "expected"), [(1, 1, 1), (4, 2, 2), (3, 2, 2), (7, 3, 3)])
def test_worker_count_is_ceiling(required, slots_per_worker, expected):
    sm, actions = manager(slots_per_worker=slots_per_worker)
    sm.declare_resource_requirements("job", required)
    assert actions.worker_requests == expected


def test_two_jobs_share_free_slots_in_declaration_order():
    sm, actions = manager(slots_per_worker=2)
    sm.register_task_executor("tm-1", report("tm-1", 2))
    sm.declare_resource_requirements("a", 1)
    sm.declare_resource_requirements("b", 2)
    jobs = [a[1] for a in actions.allocations]
    assert jobs == ["a", "b"]
    assert actions.worker_requests == 1


def test_the_indexes_stay_equal_to_counting_every_slot_through_random_events():
    """Registrations, losses, requirements, confirmations, failures and frees in a random order: after each
    event the constant-time views equal a count over every slot, and each TaskExecutor's idleness its slots'."""
    import random

    rng = random.Random(7)
    actions = RecordingActions()
    manager = SlotManager(actions, slots_per_worker=3, max_slots=None, idle_timeout=60.0)
    jobs = ["job-a", "job-b"]
    for step in range(600):
        event = rng.random()
        slots = [s for tm in manager.task_managers.values() for s in tm.slots.values()]
        if event < 0.2:
            manager.register_task_executor(f"te-{step}", report(f"te-{step}", rng.randint(1, 4)))
        elif event < 0.3 and manager.task_managers:
            manager.unregister_task_executor(rng.choice(list(manager.task_managers)))
        elif event < 0.5:
            manager.declare_resource_requirements(rng.choice(jobs), rng.randint(0, 12))
        elif event < 0.8 and slots:
            slot = rng.choice(slots)
            if slot.allocation_id is not None:
                if slot.state is SlotState.PENDING and rng.random() < 0.5:
                    manager.slot_allocation_failed(slot.slot_id, slot.allocation_id)
                elif slot.state is SlotState.PENDING:
                    manager.slot_allocated(slot.slot_id, slot.allocation_id)
                else:
                    manager.free_slot(slot.slot_id, slot.allocation_id)
        else:
            manager.worker_start_failed()
        every = [s for tm in manager.task_managers.values() for s in tm.slots.values()]
        assert manager.registered_slots() == len(every)
        assert manager.free_slots() == sum(1 for s in every if s.state is SlotState.FREE)
        for job in jobs:
            assert manager.slots_of_job(job) == sum(1 for s in every if s.job_id == job)
        for tm in manager.task_managers.values():
            assert tm.is_idle() == all(s.state is SlotState.FREE for s in tm.slots.values())
            assert (tm.idle_since is None) == (not tm.is_idle())
    assert actions.allocations  # the walk did allocate slots
