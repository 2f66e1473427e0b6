"""The job's failure cause names the TaskManagers their platform killed for memory while the failed attempt ran.

Why: a container killed for its memory takes its Spark executor with it, and the
program fails with Spark's view of it (``ExecutorLostFailure (executor 10 exited
caused by one of the running tasks) Reason: Command exited with code 143``),
which says nothing of the memory. The platform's reason reached the JobMaster
as the lost TaskManager's cause (the ResourceManager's words, with the
platform's numbers and the option to change), so the failure cause ends with
it: after the program's error, where the platform's view of a failed
application (YARN's diagnostics keep the cause's end) still shows it. A pure
function of the JobMaster's records (``JobMaster.lost_task_executors``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: TaskManagers listed with their whole cause; more are counted (all of them are in the job's ``lost-taskmanagers``).
MAX_LISTED = 2


def with_memory_kills(cause: str, lost: Sequence[Mapping[str, Any]]) -> str:
    """``cause`` followed by the memory kills among ``lost`` (records ``{"id", "cause", "memory-kill"}``, oldest first).

    Unchanged when none of them was killed for memory. Otherwise, after a blank
    line, one line per killed TaskManager (the first :data:`MAX_LISTED`, then
    how many more).
    """
    kills = [entry for entry in lost if entry.get("memory-kill")]
    if not kills:
        return cause
    head = "TaskManager killed for memory" if len(kills) == 1 else f"{len(kills)} TaskManagers killed for memory"
    lines = [f"{head} while the job ran:"]
    lines += [f"  {entry['id']}: {entry['cause']}" for entry in kills[:MAX_LISTED]]
    if len(kills) > MAX_LISTED:
        lines.append(f"  and {len(kills) - MAX_LISTED} more (the job's lost-taskmanagers)")
    return "\n".join([cause.rstrip("\n"), "", *lines])
