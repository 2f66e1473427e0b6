"""Benchmark: the SlotManager's cost as the cluster grows (it must grow linearly with the events).

    .venv/bin/python benchmarks/slot_manager.py [--task-executors 1000 2000 4000] [--slots 4]

For each size: one job declares N x S slots, then N TaskExecutors with S
slots register one by one (each registration allocates its slots), every
allocation is confirmed, then the job ends and frees them all:
the SlotManager alone (no RPC), timed per phase, with the time per
TaskExecutor, which stays flat when the cost per event does not depend on the
cluster's size. Prints the numbers; nothing is asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "operator"))

from jobcluster.runtime.messages import SlotID, SlotReport, SlotStatus
from jobcluster.runtime.resourcemanager.slot_manager import SlotManager


class Actions:
    def __init__(self) -> None:
        self.allocations: list[tuple[SlotID, str]] = []

    def allocate_slot(self, slot_id: SlotID, job_id: str, allocation_id: str) -> None:
        self.allocations.append((slot_id, allocation_id))

    def request_new_worker(self) -> bool:
        return True

    def release_task_executor(self, resource_id: str, reason: str) -> None:
        pass


def one_size(task_executors: int, slots: int) -> dict[str, float]:
    actions = Actions()
    manager = SlotManager(actions, slots_per_worker=slots, max_slots=None, idle_timeout=60.0)
    reports = [
        (f"te-{n}", SlotReport(slots=[SlotStatus(slot_id=SlotID(resource_id=f"te-{n}", slot_number=i)) for i in range(slots)]))
        for n in range(task_executors)
    ]
    times: dict[str, float] = {}
    # as in a job cluster: the job's requirement comes first, the TaskExecutors register one by one
    started = time.perf_counter()
    manager.declare_resource_requirements("job", task_executors * slots)
    for resource_id, report in reports:
        manager.register_task_executor(resource_id, report)
    times["register"] = time.perf_counter() - started
    started = time.perf_counter()
    for slot_id, allocation_id in list(actions.allocations):
        manager.slot_allocated(slot_id, allocation_id)
    times["confirm"] = time.perf_counter() - started
    started = time.perf_counter()
    manager.declare_resource_requirements("job", 0)  # the job is done: the freed slots stay free
    for slot_id, allocation_id in list(actions.allocations):
        manager.free_slot(slot_id, allocation_id)
    times["free"] = time.perf_counter() - started
    assert manager.free_slots() == task_executors * slots
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task-executors", type=int, nargs="+", default=[1000, 2000, 4000])
    parser.add_argument("--slots", type=int, default=4)
    args = parser.parse_args()
    print(f"{'TaskExecutors':>13} {'slots':>6} {'register s':>10} {'confirm s':>10} {'free s':>8} {'total s':>8} {'µs per TE':>9}")
    for n in args.task_executors:
        times = one_size(n, args.slots)
        total = sum(times.values())
        print(
            f"{n:>13} {n * args.slots:>6} {times['register']:>10.3f} {times['confirm']:>10.3f} {times['free']:>8.3f} "
            f"{total:>8.3f} {total / n * 1e6:>9.0f}"
        )


if __name__ == "__main__":
    main()
