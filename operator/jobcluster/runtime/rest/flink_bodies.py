"""Flink's REST response bodies, built from what jobcluster knows of its one job.

Why a module of its own: Flink's client reads these bodies with a strict
mapper (every constructor property present and non-null, so a missing field
fails its request) and with hand-written deserializers (the execution result
accepts exactly Flink's keys), so each body is shaped here, in one place,
after Flink 1.20's message classes (``JobDetails``, ``JobDetailsInfo``,
``JobExecutionResultResponseBody`` with ``JobResultSerializer``,
``ClusterOverviewWithVersion``, ``DashboardConfiguration``). jobcluster's own
additions (``restarts``, ``slots``, ``spark``, ``program-exit-code``) ride
along only where Flink's reader ignores unknown fields. What a field means for
a Spark-backed job is in docs/reference/rest.md.
"""

from __future__ import annotations

import datetime
import hashlib
import html
from typing import Any

from jobcluster.jobgraph.job_status import JobStatus
from jobcluster.runtime.jobmaster.job_result import JobResult
from jobcluster.runtime.rest.serialized_throwable import failure_cause
from jobcluster.spark.jvm_metrics import GC_PREFIX

#: Flink 1.20's ``ExecutionState`` names: the task states Flink counts per job and per vertex.
EXECUTION_STATES = (
    "CREATED",
    "SCHEDULED",
    "DEPLOYING",
    "RUNNING",
    "FINISHED",
    "CANCELING",
    "CANCELED",
    "FAILED",
    "RECONCILING",
    "INITIALIZING",
)
#: Flink 1.20's ``JobStatus`` names: ``timestamps`` of ``/jobs/{id}`` has one entry for each.
FLINK_JOB_STATES = tuple(status.value for status in JobStatus)
#: The Java class named in the failure cause of a failed job: the program's error has no Java class.
JOB_FAILURE_CLASS = "jobcluster.JobFailure"
#: Flink's ``ApplicationStatus`` of a terminal job (``ApplicationStatus.fromJobStatus``).
_APPLICATION_STATUS = {"FINISHED": "SUCCEEDED", "FAILED": "FAILED", "CANCELED": "CANCELED"}
#: The state of the one vertex (the program) while the job is in a state.
_VERTEX_STATE = {
    "INITIALIZING": "CREATED",
    "CREATED": "SCHEDULED",  # waiting for its slots
    "RUNNING": "RUNNING",
    "RESTARTING": "CREATED",  # the next attempt waits to be submitted
    "CANCELLING": "CANCELING",
    "CANCELED": "CANCELED",
    "FAILED": "FAILED",
    "FINISHED": "FINISHED",
}


def spark_task_counts(spark: dict[str, Any] | None) -> dict[str, int]:
    """Spark's tasks per Flink ExecutionState (upper case), all states present; see docs/reference/rest.md.

    ``RUNNING``: Spark's active tasks; ``FINISHED``: the completed ones;
    ``FAILED``: failed task attempts; ``SCHEDULED``: tasks of the Spark jobs
    submitted so far that are neither running nor done. The other states have
    no Spark counterpart and are 0.
    """
    spark = spark or {}
    total = spark.get("tasks_total", 0)
    running = spark.get("tasks_active", 0)
    finished = spark.get("tasks_completed", 0)
    return dict.fromkeys(EXECUTION_STATES, 0) | {
        "RUNNING": running,
        "FINISHED": finished,
        "FAILED": spark.get("tasks_failed", 0),
        "SCHEDULED": max(0, total - finished - running),
    }


def job_overview(details: dict[str, Any]) -> dict[str, Any]:
    """One entry of Flink's ``/jobs/overview`` (JobDetails) from jobcluster's job details.

    ``tasks`` counts Spark's tasks (Flink counts subtasks) per task state in
    lower case, plus ``total`` (the tasks of the Spark jobs submitted so far);
    all 0 before Spark reports. ``pending-operators`` is 0: the whole program
    is known when the job is submitted. ``jobType`` is STREAMING once the
    program has started a streaming query, else BATCH; ``schedulerType`` see
    :func:`scheduler_type`.
    """
    counts = spark_task_counts(details.get("spark"))
    return {k: details[k] for k in ("jid", "name", "state", "start-time", "end-time", "duration")} | {
        "last-modification": max(details["timestamps"].values(), default=details["start-time"]),
        "tasks": {"total": (details.get("spark") or {}).get("tasks_total", 0)} | {s.lower(): n for s, n in counts.items()},
        "pending-operators": 0,
        "jobType": job_type(details),
        "schedulerType": scheduler_type(details),
    }


def job_type(details: dict[str, Any]) -> str:
    """STREAMING once the program has started a streaming query, else BATCH (Flink's JobType)."""
    return str(details.get("job-type", "BATCH"))


def scheduler_type(details: dict[str, Any]) -> str:
    """Flink's ``SchedulerType`` of the job: ``Adaptive`` for a STREAMING job, else ``Default``.

    A streaming job changes its parallelism the one way Flink's adaptive scheduler does: it starts again from its
    state at the new parallelism (here a restore from a savepoint with another ``-p``), which Flink 2.3 records
    in the job's rescale history (``flink2_views.py``); and Flink 2.3's dashboard shows that history (its
    Rescales tab) only for a STREAMING job whose ``schedulerType`` is ``Adaptive``. Nothing else reads it: the
    dashboard's in-place rescale needs the ``web-rescale`` feature, which ``/config`` says is off.
    """
    return "Adaptive" if job_type(details) == "STREAMING" else "Default"


def job_details_info(details: dict[str, Any]) -> dict[str, Any]:
    """Flink's ``/jobs/{id}`` (JobDetailsInfo) from jobcluster's job details, with jobcluster's fields kept.

    The job has one vertex, the program: its state follows the job's, its
    tasks and metrics are Spark's (see :func:`spark_task_counts`, :func:`io_metrics`).
    ``timestamps`` has every Flink job state (0 for those not reached), the
    ``plan`` is the one-vertex graph; ``isStoppable`` and ``job-type``
    STREAMING hold once the program runs a streaming query (which stops with a
    savepoint), else false and BATCH. ``application-id`` (Flink 2.3's) is the
    job's own id, the id of its application. jobcluster's own fields are kept,
    ``streaming`` among them (the queries' progress).
    """
    state = details["state"]
    vertex_state = _VERTEX_STATE.get(state, "CREATED")
    vertices = [_vertex_info(details, v, vertex_state) for v in details["vertices"]]
    status_counts = dict.fromkeys(EXECUTION_STATES, 0)
    for vertex in vertices:
        status_counts[vertex["status"]] += 1
    kept = ("restarts", "slots", "spark", "program-exit-code", "lost-taskmanagers", "pending-taskmanagers", "streaming")
    extras = {k: details[k] for k in kept if k in details}
    return {
        "jid": details["jid"],
        "name": details["name"],
        "isStoppable": job_type(details) == "STREAMING",
        "state": state,
        "job-type": job_type(details),
        "start-time": details["start-time"],
        "end-time": details["end-time"],
        "duration": details["duration"],
        "maxParallelism": max((v["maxParallelism"] for v in details["vertices"]), default=-1),
        "now": details["now"],
        "timestamps": dict.fromkeys(FLINK_JOB_STATES, 0) | details["timestamps"],
        "vertices": vertices,
        "status-counts": status_counts,
        "plan": _plan(details),
        "pending-operators": 0,
        "schedulerType": scheduler_type(details),
        "application-id": details["jid"],  # Flink 2.3's: the job's SingleJobApplication (flink2_views.py)
    } | extras


def _vertex_info(details: dict[str, Any], vertex: dict[str, Any], state: str) -> dict[str, Any]:
    started = details["start-time"] if state != "CREATED" else -1
    return {
        "id": vertex["id"],
        "slotSharingGroupId": slot_sharing_group_id(details["jid"], vertex.get("slotSharingGroup", "default")),
        "name": vertex["name"],
        "maxParallelism": vertex["maxParallelism"],
        "parallelism": vertex["parallelism"],
        "status": state,
        "start-time": started,
        "end-time": details["end-time"],
        "duration": details["duration"] if started > 0 else -1,
        "tasks": spark_task_counts(details.get("spark")),
        "metrics": io_metrics(details.get("spark")),
    }


def io_metrics(spark: dict[str, Any] | None) -> dict[str, Any]:
    """Flink's IOMetricsInfo from Spark's stage totals (see ``stage_io``): what the program read and wrote.

    ``read-*`` is what Spark's stages read from data sources, ``write-*``
    what they wrote to sinks (Flink counts a vertex's network input and
    output; the one vertex here has none). ``*-complete`` is true once Spark
    has reported. Busy, idle and backpressured times have no Spark
    counterpart: 0.
    """
    spark = spark or {}
    known = bool(spark.get("app_id"))
    return {
        "read-bytes": spark.get("input_bytes", 0),
        "read-bytes-complete": known,
        "write-bytes": spark.get("output_bytes", 0),
        "write-bytes-complete": known,
        "read-records": spark.get("input_records", 0),
        "read-records-complete": known,
        "write-records": spark.get("output_records", 0),
        "write-records-complete": known,
        "accumulated-backpressured-time": 0,
        "accumulated-idle-time": 0,
        "accumulated-busy-time": 0.0,
    }


def slot_sharing_group_id(job_id: str, group: str) -> str:
    """A stable 32-hex-digit SlotSharingGroupId for a named group of the job (Flink's are random; names are not IDs)."""
    return hashlib.md5(f"{job_id}/{group}".encode(), usedforsecurity=False).hexdigest()


def _plan(details: dict[str, Any]) -> dict[str, Any]:
    """Flink's JSON plan of the job graph (``JobPlanInfo.Plan``, ``jid``, ``name``, ``type``, ``nodes``): one node
    per vertex (``PlanNode``: ``id``, ``parallelism``, ``operator``, ``operator_strategy``, ``description``,
    ``optimizer_properties``).

    The description is the vertex's name made safe for HTML, as Flink's plan generator makes it (the
    dashboard shows it as markup). No node has ``inputs``: the program's one vertex reads from no other
    vertex, and Flink leaves the key out of a node with none.
    """
    return {
        "jid": details["jid"],
        "name": details["name"],
        "type": job_type(details),
        "nodes": [
            {
                "id": v["id"],
                "parallelism": v["parallelism"],
                "operator": "PySpark program",
                "operator_strategy": "",
                "description": _html_text(v["name"]),
                "optimizer_properties": {},
            }
            for v in details["vertices"]
        ],
    }


def job_plan_info(details: dict[str, Any]) -> dict[str, Any]:
    """Flink's ``/jobs/{id}/plan`` (JobPlanInfo): ``{"plan": ...}``, the same plan ``/jobs/{id}`` carries."""
    return {"plan": _plan(details)}


def _html_text(text: str) -> str:
    """``text`` as markup shows it: ``&``, ``<``, ``>`` and ``"`` as entities, a line break as ``<br/>``, a backslash
    as ``&#92;``."""
    return html.escape(text, quote=False).replace('"', "&quot;").replace("\n", "<br/>").replace("\\", "&#92;")


def execution_result(result: JobResult | None) -> dict[str, Any]:
    """Flink's ``/jobs/{id}/execution-result``: ``{"status": {"id": "IN_PROGRESS"}}`` until the job is terminal, then
    ``COMPLETED`` with the ``job-execution-result`` exactly as Flink 1.20's JobResultSerializer writes it.

    Its keys are ``id``, ``application-status``, ``accumulator-results``
    (empty: Spark's accumulators stay in the program), ``net-runtime`` (ms)
    and, only for a failed job, ``failure-cause`` (``class``, ``stack-trace``:
    the cause's whole text, ``serialized-throwable``). Nothing else: Flink
    1.20's reader of this object breaks on keys it does not know. A job's
    name, restarts and the program's exit code are in ``/jobs/{id}``.
    """
    if result is None:
        return {"status": {"id": "IN_PROGRESS"}}
    body: dict[str, Any] = {
        "id": result.job_id,
        "application-status": _APPLICATION_STATUS.get(result.status.value, "UNKNOWN"),
        "accumulator-results": {},
        "net-runtime": result.duration_ms,
    }
    if result.status is JobStatus.FAILED:
        cause = result.failure_cause or "the job failed"
        body["failure-cause"] = failure_cause(JOB_FAILURE_CLASS, cause.splitlines()[0] if cause else None, cause)
    return {"status": {"id": "COMPLETED"}, "job-execution-result": body}


def cluster_overview(resources: dict[str, Any], states: list[str], version: str) -> dict[str, Any]:
    """Flink's ``/overview`` (ClusterOverviewWithVersion): ``resources`` from the ResourceManager, jobs by state.

    No TaskManager is ever blocked (jobcluster has no blocklist), so the
    ``-blocked`` counts are 0 and ``slots-free-and-blocked`` is 0.
    """
    return {
        "taskmanagers": resources["taskmanagers"],
        "slots-total": resources["slots-total"],
        "slots-available": resources["slots-available"],
        "jobs-running": sum(1 for s in states if s not in _APPLICATION_STATUS),
        "jobs-finished": states.count("FINISHED"),
        "jobs-cancelled": states.count("CANCELED"),
        "jobs-failed": states.count("FAILED"),
        "flink-version": version,
        "flink-commit": "",
        "taskmanagers-blocked": 0,
        "slots-free-and-blocked": 0,
    } | {k: v for k, v in resources.items() if k not in ("taskmanagers", "slots-total", "slots-available")}


def dashboard_configuration(version: str, spark_version: str, refresh_interval_ms: int = 3000) -> dict[str, Any]:
    """Flink's ``/config`` (DashboardConfiguration): the JobManager's time zone, version, and the web features.

    ``web-cancel`` is true (cancel is served, with the token); submitting,
    rescaling and a history server are not. ``spark-version`` (not Flink's) is
    the version of the Spark the cluster runs, ``"4.3.0"``.
    """
    now = datetime.datetime.now().astimezone()
    offset = now.utcoffset() or datetime.timedelta(0)
    return {
        "refresh-interval": refresh_interval_ms,
        "timezone-name": now.tzname() or "UTC",
        "timezone-offset": int(offset.total_seconds() * 1000),
        "flink-version": version,
        "flink-revision": "",
        "spark-version": spark_version,
        "features": {"web-submit": False, "web-cancel": True, "web-rescale": False, "web-history": False},
    }


def task_manager_info(view: dict[str, Any], now_ms: int) -> dict[str, Any]:
    """Flink's TaskManagerInfo (an entry of ``/taskmanagers``) from the ResourceManager's view of a TaskExecutor.

    The view (``resource_manager.task_manager_info``) has the memory model,
    hardware, slots and the heartbeat's age in ms; Flink's client also
    needs these, which Flink 1.20 always writes:

    - ``timeSinceLastHeartbeat``: despite its name, Flink writes the time
      of the last heartbeat in ms since the epoch (its ResourceManager passes
      ``HeartbeatManager.getLastHeartbeatFrom``, and the web UI shows it as a
      date), so it is ``now_ms`` minus the age;
    - ``totalResource``/``freeResource`` (ResourceProfileInfo, sizes in MiB):
      the TaskExecutor's CPU (one core per slot: a slot is one Spark core),
      task heap, task off-heap, managed and network memory, and the share of
      the slots still free (every slot is an equal share, as Flink's default
      slot profile);
    - ``dataPort`` and ``jmxPort`` -1: Spark moves data through its own block
      manager, and no JMX port is opened; ``blocked`` false: no blocklist;
    - ``assignedTasks`` (Flink 2's TaskManagerInfo, whose client refuses a body
      without it; Flink 1.20's ignores it): the tasks deployed to the
      TaskExecutor, here one per slot in use (a slot runs one subtask of the
      job's one vertex).
    """
    memory = view["memoryConfiguration"]
    slots, free = view["slotsNumber"], view["freeSlots"]
    total = _resource_profile(memory, slots, 1.0)
    return view | {
        "timeSinceLastHeartbeat": now_ms - int(view["timeSinceLastHeartbeat"]),
        "dataPort": -1,
        "jmxPort": -1,
        "totalResource": total,
        "freeResource": _resource_profile(memory, slots, free / slots if slots else 0.0),
        "blocked": False,
        "assignedTasks": slots - free,
    }


def _resource_profile(memory: dict[str, int], cpu_cores: int, share: float) -> dict[str, Any]:
    mib = 1 << 20
    return {
        "cpuCores": float(cpu_cores * share),
        "taskHeapMemory": int(memory["taskHeap"] * share) // mib,
        "taskOffHeapMemory": int(memory["taskOffHeap"] * share) // mib,
        "managedMemory": int(memory["managedMemory"] * share) // mib,
        "networkMemory": int(memory["networkMemory"] * share) // mib,
        "extendedResources": {},
    }


def checkpointing_statistics(details: dict[str, Any], restored_from: str | None) -> dict[str, Any]:
    """Flink's ``/jobs/{id}/checkpoints`` (CheckpointingStatistics) from the streaming queries' micro-batches.

    A checkpoint is a committed micro-batch (its id the batch id): ``history``
    holds each query's last ones, newest first (``external_path`` its commit
    file; state and checkpointed size the query's state store bytes);
    ``latest.completed`` the newest; ``latest.savepoint`` the last savepoint
    taken; ``latest.restored`` the savepoint the job started from. Counts are
    of micro-batches committed since the queries started; none fail or
    stay in progress as Flink counts them (a micro-batch that fails ends the query).
    """
    queries = (details.get("streaming") or {}).get("queries", [])
    history = sorted(
        (_completed_checkpoint(q, entry) for q in queries for entry in q.get("history", [])),
        key=lambda c: (c["latest_ack_timestamp"], c["id"]),
        reverse=True,
    )
    completed = sum((q["committedBatchId"] + 1) for q in queries if q.get("committedBatchId") is not None)
    savepoints = details.get("savepoints") or []
    latest_savepoint = (
        {
            "className": "completed",
            "id": -1,
            "status": "COMPLETED",
            "is_savepoint": True,
            "external_path": savepoints[-1]["location"],
            "latest_ack_timestamp": savepoints[-1]["time"],
            "trigger_timestamp": savepoints[-1]["time"],
            "checkpoint_type": "SAVEPOINT",
        }
        if savepoints
        else None
    )
    restored = (
        {"id": -1, "restore_timestamp": details["start-time"], "is_savepoint": True, "external_path": restored_from}
        if restored_from
        else None
    )
    return {
        "counts": {"restored": 1 if restored_from else 0, "total": completed, "in_progress": 0, "completed": completed, "failed": 0},
        "summary": _checkpoint_summary(history),
        "latest": {"completed": history[0] if history else None, "savepoint": latest_savepoint, "failed": None, "restored": restored},
        "history": history,
    }


def _completed_checkpoint(query: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    trigger = entry.get("triggerTime") or 0
    checkpoint = query.get("checkpoint")
    return {
        "className": "completed",
        "id": entry["batchId"],
        "status": "COMPLETED",
        "is_savepoint": False,
        "savepointFormat": None,
        "trigger_timestamp": trigger,
        "latest_ack_timestamp": trigger + entry["durationMs"],
        "end_to_end_duration": entry["durationMs"],
        "state_size": entry["stateBytes"],
        "checkpointed_size": entry["stateBytes"],
        "processed_data": entry["numInputRows"],
        "persisted_data": 0,
        "alignment_buffered": 0,
        "num_subtasks": 1,
        "num_acknowledged_subtasks": 1,
        "checkpoint_type": "CHECKPOINT",
        "tasks": {},
        "external_path": f"{checkpoint}/commits/{entry['batchId']}" if checkpoint else None,
        "discarded": False,
        "query": query.get("name") or query["id"],
    }


def _checkpoint_summary(history: list[dict[str, Any]]) -> dict[str, Any]:
    """Min, max and average of each size and duration over ``history`` (0 when it is empty)."""

    def stats(key: str) -> dict[str, int]:
        values = [int(c[key]) for c in history] or [0]
        return {"min": min(values), "max": max(values), "avg": sum(values) // len(values)}

    return {key: stats(key) for key in ("state_size", "checkpointed_size", "end_to_end_duration", "processed_data", "persisted_data")}


def checkpoint_config(checkpoint_root: str | None, savepoint_directory: str | None, timeout_ms: int) -> dict[str, Any]:
    """Flink's ``/jobs/{id}/checkpoints/config`` (CheckpointConfigInfo) of a job's Structured Streaming checkpoints.

    Exactly-once, one micro-batch at a time (``max_concurrent`` 1), no
    interval of its own (each query's trigger decides), the savepoints'
    ``timeout`` (execution.checkpointing.timeout, ms), retained on
    cancellation (the checkpoint root stays: a new job restores a savepoint
    taken of it), ``checkpoint_storage`` where the root is.
    """
    return {
        "mode": "exactly_once",
        "interval": 0,
        "timeout": timeout_ms,
        "min_pause": 0,
        "max_concurrent": 1,
        "externalization": {"enabled": checkpoint_root is not None, "delete_on_cancellation": False},
        "state_backend": "SparkStateStore",
        "checkpoint_storage": f"FileSystemCheckpointStorage ({checkpoint_root})" if checkpoint_root else "none",
        "unaligned_checkpoints": False,
        "tolerable_failed_checkpoints": 0,
        "aligned_checkpoint_timeout": 0,
        "checkpoints_after_tasks_finish": False,
        "state_changelog_enabled": False,
        "changelog_periodic_materialization_interval": 0,
        "changelog_storage": "",
        "savepoint_directory": savepoint_directory,
    }


# ---- the web dashboard's views (Flink 1.20's web-dashboard reads these shapes) ------------------------------------

#: The name of the failure in the exception history: a PySpark program has no Java exception class.
PROGRAM_FAILURE_NAME = "ProgramFailure"


def job_exceptions(details: dict[str, Any], max_exceptions: int) -> dict[str, Any]:
    """Flink's ``/jobs/{id}/exceptions`` (JobExceptionsInfoWithHistory) from the job's failures, newest first.

    Each failure is one run of the program that failed: those the restart
    strategy recovered from and a FAILED job's last; its text is the program's
    exit and error (a driver-side Python traceback, Spark's cause). Entries
    are global failures (``taskName`` null: the program as a whole failed),
    with no concurrent exceptions. ``root-exception`` is the latest one.
    """
    failures = list(reversed(details.get("failures") or []))
    entries = [
        {
            "exceptionName": PROGRAM_FAILURE_NAME,
            "stacktrace": failure["cause"],
            "timestamp": failure["timestamp"],
            "taskName": None,
            "endpoint": None,
            "taskManagerId": None,
            "failureLabels": {},
            "concurrentExceptions": [],
        }
        for failure in failures[:max_exceptions]
    ]
    latest = failures[0] if failures else None
    return {
        "root-exception": latest["cause"] if latest else None,
        "timestamp": latest["timestamp"] if latest else None,
        "all-exceptions": [],
        "truncated": len(failures) > max_exceptions,
        "exceptionHistory": {"entries": entries, "truncated": len(failures) > max_exceptions},
    }


def job_config(details: dict[str, Any]) -> dict[str, Any]:
    """Flink's ``/jobs/{id}/config`` (JobConfigInfo): the restart strategy as Flink describes it, the parallelism."""
    strategy = details.get("restart-strategy") or {}
    if strategy.get("type") == "fixed-delay":
        described = f"Restart with fixed delay ({strategy.get('delay_seconds', 0):g} s). #{strategy.get('attempts', 0)} restart attempts."
    else:
        described = "Restart deactivated."
    return {
        "jid": details["jid"],
        "name": details["name"],
        "execution-config": {
            "execution-mode": "PIPELINED",
            "restart-strategy": described,
            "job-parallelism": max((v["parallelism"] for v in details["vertices"]), default=1),
            "object-reuse-mode": False,
            "user-config": {},
        },
    }


def vertex_details(details: dict[str, Any], vertex_id: str) -> dict[str, Any]:
    """Flink's ``/jobs/{id}/vertices/{vid}`` (JobVertexDetailsInfo): one subtask per slot of the program's vertex.

    A subtask is a slot the job holds (a Spark core); Spark does not tell which
    of its tasks ran in which slot, so a subtask's I/O metrics are 0 and not
    complete (the vertex's totals are in ``/jobs/{id}``), and it names no
    TaskManager. Raises KeyError for a vertex the job does not have.
    """
    vertex = _vertex(details, vertex_id)
    state = _VERTEX_STATE.get(details["state"], "CREATED")
    started = details["start-time"] if state != "CREATED" else -1
    empty = {key: (False if key.endswith("-complete") else 0) for key in io_metrics(None)}
    subtasks = [
        {
            "subtask": index,
            "status": state,
            "attempt": details.get("restarts", 0),
            "endpoint": "(unassigned)",
            "taskmanager-id": "(unassigned)",
            "start-time": started,
            "start_time": started,
            "end-time": details["end-time"],
            "duration": details["duration"] if started > 0 else -1,
            "metrics": empty,
            "status-duration": {},
            "other-concurrent-attempts": [],
        }
        for index in range(vertex["parallelism"])
    ]
    return {
        "id": vertex["id"],
        "name": vertex["name"],
        "parallelism": vertex["parallelism"],
        "maxParallelism": vertex["maxParallelism"],
        "now": details["now"],
        "subtasks": subtasks,
    }


def vertex_task_managers(details: dict[str, Any], vertex_id: str, task_managers: list[dict[str, Any]]) -> dict[str, Any]:
    """Flink's ``/jobs/{id}/vertices/{vid}/taskmanagers`` (JobVertexTaskManagersInfo): the TaskManagers that run the
    program's Spark executors, each with the vertex's state (per-TaskManager I/O is not known: 0, not complete)."""
    vertex = _vertex(details, vertex_id)
    state = _VERTEX_STATE.get(details["state"], "CREATED")
    empty = {key: (False if key.endswith("-complete") else 0) for key in io_metrics(None)}
    return {
        "id": vertex["id"],
        "name": vertex["name"],
        "now": details["now"],
        "taskmanagers": [
            {
                "endpoint": tm.get("host") or tm["path"],
                "taskmanager-id": tm["id"],
                "status": state,
                "start-time": tm.get("registeredAt", -1),
                "end-time": details["end-time"],
                "duration": details["now"] - tm.get("registeredAt", details["now"]),
                "metrics": empty,
                "status-counts": {state: tm["slotsNumber"] - tm["freeSlots"]},
            }
            for tm in task_managers
        ],
    }


def _vertex(details: dict[str, Any], vertex_id: str) -> dict[str, Any]:
    for vertex in details["vertices"]:
        if vertex["id"] == vertex_id:
            return dict(vertex)
    raise KeyError(vertex_id)


#: Keys whose values the web UI masks, matched in lower case: the union of Flink's (GlobalConfiguration's sensitive
#: keys, ``http-headers`` among them) and Spark's (``spark.redaction.regex``: secret, password, token, access.key),
#: and credentials by name.
SENSITIVE_KEY_PARTS = (
    "password",
    "secret",
    "fs.azure.account.key",
    "apikey",
    "api-key",
    "auth-params",
    "service-key",
    "token",
    "basic-auth",
    "jaas.config",
    "http-headers",
    "access.key",
    "credential",
)


def configuration_entries(values: dict[str, str]) -> list[dict[str, str]]:
    """Flink's ``/jobmanager/config`` (ConfigurationInfo): the cluster's configuration, sorted by key, sensitive values
    masked as Flink masks them (``******``)."""
    return [
        {"key": key, "value": "******" if any(word in key.lower() for word in SENSITIVE_KEY_PARTS) else str(value)}
        for key, value in sorted(values.items())
    ]


def thread_dump(frames: dict[int, Any], names: dict[int, str]) -> dict[str, Any]:
    """Flink's ``thread-dump`` (ThreadDumpInfo) of this Python process: one entry per thread with its stack, in
    the form of a Java thread dump's lines (``"name" Id=N`` then ``at function(file:line)``), innermost call first."""
    infos = []
    for ident, frame in frames.items():
        lines = [f'"{names.get(ident, "?")}" Id={ident}']
        while frame is not None:
            code = frame.f_code
            lines.append(f"\tat {code.co_name}({code.co_filename}:{frame.f_lineno})")
            frame = frame.f_back
        infos.append({"threadName": names.get(ident, "?"), "stringifiedThreadInfo": "\n".join(lines) + "\n\n"})
    return {"threadInfos": infos}


def checkpoint_details(details: dict[str, Any], restored_from: str | None, checkpoint_id: int) -> dict[str, Any]:
    """Flink's ``/jobs/{id}/checkpoints/details/{checkpointid}`` (CheckpointStatistics): the newest committed
    micro-batch of that id (see :func:`checkpointing_statistics`), its figures under the program's vertex in ``tasks``
    (every subtask acknowledged: a commit is the whole query's). Raises KeyError for an id no query committed lately."""
    for checkpoint in checkpointing_statistics(details, restored_from)["history"]:
        if checkpoint["id"] == checkpoint_id:
            keys = ("latest_ack_timestamp", "end_to_end_duration", "checkpointed_size", "state_size", "processed_data", "persisted_data")
            tasks = {
                vertex["id"]: {key: checkpoint[key] for key in keys}
                | {"num_subtasks": vertex["parallelism"], "num_acknowledged_subtasks": vertex["parallelism"]}
                for vertex in details["vertices"]
            }
            found: dict[str, Any] = checkpoint | {"tasks": tasks}
            return found
    raise KeyError(checkpoint_id)


def metric_collection(metrics: dict[str, int], get: str | None) -> list[dict[str, str]]:
    """Flink's MetricCollectionResponseBody (a bare list): every metric's ``{"id"}`` when ``get`` is None, else
    ``{"id", "value"}`` of each name of the comma-separated ``get`` that is known, once, values as strings."""
    if get is None:
        return [{"id": name} for name in sorted(metrics)]
    names = dict.fromkeys(name.strip() for name in get.split(","))
    return [{"id": name, "value": str(metrics[name])} for name in names if name in metrics]


#: TaskManagerMetricsInfo's memory fields and the Flink metric each is read from (0 where none is measured).
_TASK_MANAGER_MEMORY_METRICS = {
    "heapUsed": "Status.JVM.Memory.Heap.Used",
    "heapCommitted": "Status.JVM.Memory.Heap.Committed",
    "heapMax": "Status.JVM.Memory.Heap.Max",
    "nonHeapUsed": "Status.JVM.Memory.NonHeap.Used",
    "nonHeapCommitted": "Status.JVM.Memory.NonHeap.Committed",
    "nonHeapMax": "Status.JVM.Memory.NonHeap.Max",
    "directCount": "Status.JVM.Memory.Direct.Count",
    "directUsed": "Status.JVM.Memory.Direct.MemoryUsed",
    "directMax": "Status.JVM.Memory.Direct.TotalCapacity",
    "mappedCount": "Status.JVM.Memory.Mapped.Count",
    "mappedUsed": "Status.JVM.Memory.Mapped.MemoryUsed",
    "mappedMax": "Status.JVM.Memory.Mapped.TotalCapacity",
}
#: Flink's network buffer counters: a Spark executor has no network buffer pool.
_NETWORK_BUFFER_METRICS = (
    "memorySegmentsAvailable",
    "memorySegmentsTotal",
    "nettyShuffleMemorySegmentsAvailable",
    "nettyShuffleMemorySegmentsUsed",
    "nettyShuffleMemorySegmentsTotal",
    "nettyShuffleMemoryAvailable",
    "nettyShuffleMemoryUsed",
    "nettyShuffleMemoryTotal",
)


def task_manager_metrics(metrics: dict[str, int]) -> dict[str, Any]:
    """The ``metrics`` of Flink's TaskManagerDetailsInfo from a TaskManager's Flink metrics (bytes, counts, ms):
    its JVM's memory, its collectors (``garbageCollectors``: name, count, time ms), network buffers 0."""
    body: dict[str, Any] = {field: metrics.get(name, 0) for field, name in _TASK_MANAGER_MEMORY_METRICS.items()}
    body |= dict.fromkeys(_NETWORK_BUFFER_METRICS, 0)
    collectors = sorted({name[len(GC_PREFIX) :].rsplit(".", 1)[0] for name in metrics if name.startswith(GC_PREFIX)})
    body["garbageCollectors"] = [
        {"name": gc, "count": metrics.get(f"{GC_PREFIX}{gc}.Count", 0), "time": metrics.get(f"{GC_PREFIX}{gc}.Time", 0)}
        for gc in collectors
    ]
    return body
