"""Flink 2.3's paths beside Flink 1.20's: the application layer, a job's rescale history, and a job's plan.

Flink 2 runs every job inside an *application*, and its REST API grew the
paths of one (``/applications/...``) and of the adaptive scheduler's rescale
history (``/jobs/{id}/rescales/...``); ``/jobs/{id}/plan`` is older (Flink
1.20 has it too) and was missing here. The bodies are shaped after Flink
2.3's message classes, named in each function's docstring; which path
answers what is in docs/reference/rest.md.

The application's id is the job's JobID. A job cluster is handed one JobGraph
by its client, and Flink 2.3 wraps a job submitted as a JobGraph (a REST or
session submission, a MiniCluster's, a recovered job) in a
``SingleJobApplication``, whose constructor takes its ``ApplicationID`` from
the job's ``JobID`` (the same 16 bytes, so the same 32 hexadecimal digits)
and whose name is ``SingleJobApplication(<job name>)``; both are followed
here. (Flink's application mode, ``PackagedProgramApplication``, which runs
the user's ``main()`` inside the JobManager, takes a configured id, the
cluster id under high availability, or else a random one: a job cluster runs
no ``main()`` of its own, so that derivation does not apply.) The one
application of the cluster thus exists once its job does, and any other id
is unknown (404).

The application's state follows its job's as a ``SingleJobApplication``'s
does: RUNNING from the job's submission on, and on the job's end the state
Flink's ``ApplicationState.fromJobStatus`` gives (FINISHED, FAILED,
CANCELED; FAILING and CANCELING are passed through on the way). A job that is
CANCELLING makes its application CANCELING: here cancelling the job and
cancelling its application are one act, which ends the cluster.

Rescales. Flink 2.3 keeps a rescale history for a job of its adaptive
scheduler, which changes a job's parallelism by starting it again from its
state at the new parallelism; its first entry is the job's initial schedule
(trigger cause ``INITIAL_SCHEDULE``, no parallelism before). A Spark job is
never rescaled in place, but a streaming job changes its parallelism in that
same way when it is restored from a savepoint with another ``-p``: its initial
schedule is then a rescale from the savepoint's parallelism (which the
savepoint's ``_metadata`` records, spark/checkpoints.py) to the job's. So a
STREAMING job reports ``schedulerType`` ``Adaptive`` (``flink_bodies.scheduler_type``:
the one condition, with STREAMING, of Flink 2.3's dashboard's Rescales tab),
and its history has one entry for that restore, COMPLETED when the restored
program read the savepoint, with the vertex's parallelism before and after;
none for a job started afresh or restored at the parallelism it had (Flink
records every initial schedule: here only one that changed the parallelism is
a rescale). ``rescaleHistoryMax`` is 1 accordingly, and the adaptive
scheduler's waits, cooldowns and checkpoint count are null: jobcluster's
scheduler has none of them. A BATCH job's rescale paths answer 404, as
Flink's do for a job of its default scheduler.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from jobcluster.runtime.dispatcher.mini_dispatcher import MiniDispatcher
from jobcluster.runtime.rest import flink_bodies

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Flink 2.3's ``ApplicationState`` names, in Flink's order: ``timestamps`` of ``/applications/{id}`` has each.
APPLICATION_STATES = ("CREATED", "RUNNING", "FAILING", "FAILED", "CANCELING", "CANCELED", "FINISHED")
#: The application's state while its job is in a state; every state not listed is RUNNING.
_APPLICATION_STATE = {"CANCELLING": "CANCELING", "CANCELED": "CANCELED", "FAILED": "FAILED", "FINISHED": "FINISHED"}
_TERMINAL_APPLICATION_STATES = frozenset({"FAILED", "CANCELED", "FINISHED"})
#: An ApplicationID or a rescale's id in a path: 32 hex digits, either case (Flink's ``AbstractID`` from hex).
_HEX_ID = re.compile(r"[0-9a-fA-F]{32}")
#: ``SingleJobApplication``'s name of the application of a job, the job's name in the braces.
SINGLE_JOB_APPLICATION_NAME = "SingleJobApplication({})"
#: The most rescales a job's history holds: its restore (see the module's docstring).
RESCALE_HISTORY_MAX = 1
#: Flink 2.3's ``TerminalState`` of a rescale, in Flink's order (a rescale in progress has none).
RESCALE_TERMINAL_STATES = ("COMPLETED", "FAILED", "IGNORED")
#: Flink's ``ResourceProfile.UNKNOWN`` as its ``ResourceProfileInfo`` writes it.
UNKNOWN_RESOURCE_PROFILE = {
    "cpuCores": -1.0,
    "taskHeapMemory": -1,
    "taskOffHeapMemory": -1,
    "managedMemory": -1,
    "networkMemory": -1,
    "extendedResources": {},
}
#: The percentiles of Flink's ``StatsSummaryDto``: JSON name -> share of the values.
_PERCENTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}


class _Refused(Exception):
    """A request answered with an error: ``status`` and the message of Flink's ``{"errors": [...]}`` body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _answering(handler: Handler) -> Handler:
    async def answer(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except _Refused as refused:
            return web.json_response({"errors": [str(refused)]}, status=refused.status)

    return answer


class Flink2Views:
    """The paths of this module over the cluster's dispatcher (``dispatcher()``) and its configuration (key → value,
    as ``/jobmanager/config`` shows it)."""

    def __init__(self, dispatcher: Callable[[], MiniDispatcher], configuration: Mapping[str, str]) -> None:
        self._dispatcher = dispatcher
        self._configuration = dict(configuration)

    def routes(self) -> list[tuple[str, str, Handler]]:
        """(method, path, handler) of every path, Flink's spelling; ``/applications/overview`` before the ids."""
        application = "/applications/{application_id}"
        rescales = "/jobs/{job_id}/rescales"
        return [
            ("GET", "/applications/overview", _answering(self._applications_overview)),
            ("GET", application, _answering(self._application)),
            ("POST", f"{application}/cancel", _answering(self._cancel_application)),
            ("GET", f"{application}/exceptions", _answering(self._application_exceptions)),
            ("GET", f"{application}/jobmanager/config", _answering(self._application_configuration)),
            ("GET", "/jobs/{job_id}/plan", _answering(self._plan)),
            ("GET", f"{rescales}/config", _answering(self._rescale_config)),
            ("GET", f"{rescales}/history", _answering(self._rescale_history)),
            ("GET", f"{rescales}/overview", _answering(self._rescales_overview)),
            ("GET", f"{rescales}/summary", _answering(self._rescales_summary)),
            ("GET", f"{rescales}/details/{{rescale_id}}", _answering(self._rescale_details)),
        ]

    # ---- applications ------------------------------------------------------------------------------------------

    def _application_job(self, request: web.Request) -> dict[str, Any]:
        """The details of the job of the path's application; 400 for an id that is not one, 404 for another id."""
        given = request.match_info["application_id"]
        if not _HEX_ID.fullmatch(given):
            raise _Refused(
                400, f"Bad request, could not parse parameters: applicationid {given!r} is not an ApplicationID (32 hexadecimal characters)"
            )
        application_id = given.lower()
        dispatcher = self._dispatcher()
        if application_id not in dispatcher.job_ids():
            raise _Refused(404, f"This cluster runs no application {application_id}")
        return dispatcher.job_details(application_id)

    async def _applications_overview(self, request: web.Request) -> web.Response:
        dispatcher = self._dispatcher()
        applications = [application_overview(dispatcher.job_details(job_id)) for job_id in dispatcher.job_ids()]
        return web.json_response({"applications": applications})

    async def _application(self, request: web.Request) -> web.Response:
        return web.json_response(application_details_info(self._application_job(request)))

    async def _cancel_application(self, request: web.Request) -> web.Response:
        """Cancels the application's job: 202 (also when it is already CANCELED); 409 once it ended otherwise."""
        details = self._application_job(request)
        state = application_state(details["state"])
        if state == "CANCELED":
            return web.json_response({}, status=202)
        if state in _TERMINAL_APPLICATION_STATES:
            raise _Refused(409, f"Application {details['jid']} has already ended {state}: there is nothing left to cancel")
        await self._dispatcher().cancel_job(details["jid"])
        return web.json_response({}, status=202)

    async def _application_exceptions(self, request: web.Request) -> web.Response:
        return web.json_response(application_exceptions(self._application_job(request)))

    async def _application_configuration(self, request: web.Request) -> web.Response:
        self._application_job(request)
        return web.json_response(flink_bodies.configuration_entries(self._configuration))

    # ---- a job's plan and rescales -----------------------------------------------------------------------------

    def _job(self, request: web.Request) -> dict[str, Any]:
        """The path's job's details (JobNotFoundError, 404, for another job; the endpoint checked the JobID)."""
        return self._dispatcher().job_details(request.match_info["job_id"].lower())

    async def _plan(self, request: web.Request) -> web.Response:
        return web.json_response(flink_bodies.job_plan_info(self._job(request)))

    def _adaptive_job(self, request: web.Request, config: bool = False) -> dict[str, Any]:
        """The path's job's details; 404 with Flink's words for a job that is not ``Adaptive`` (a BATCH job)."""
        details = self._job(request)
        if flink_bodies.scheduler_type(details) != "Adaptive":
            if config:  # JobRescaleConfigHandler's words; the history's handlers say RescalesUnavailableException's
                raise _Refused(404, f"AdaptiveScheduler is not enabled for this job ({details['jid']}).")
            raise _Refused(
                404,
                f"The job `{details['jid']}` has not enabled the `Adaptive` scheduler (a jobcluster job is rescaled only "
                "as a streaming job restored from a savepoint with another parallelism).",
            )
        return details

    async def _rescale_config(self, request: web.Request) -> web.Response:
        self._adaptive_job(request, config=True)
        return web.json_response(rescale_config())

    async def _rescale_history(self, request: web.Request) -> web.Response:
        return web.json_response([brief(rescale) for rescale in rescales(self._adaptive_job(request))])

    async def _rescales_overview(self, request: web.Request) -> web.Response:
        return web.json_response(rescales_overview(rescales(self._adaptive_job(request))))

    async def _rescales_summary(self, request: web.Request) -> web.Response:
        return web.json_response(rescales_summary(rescales(self._adaptive_job(request))))

    async def _rescale_details(self, request: web.Request) -> web.Response:
        details = self._adaptive_job(request)
        given = request.match_info["rescale_id"]
        if not _HEX_ID.fullmatch(given):
            raise _Refused(400, f"Bad request, could not parse parameters: rescaleuuid {given!r} is not 32 hexadecimal characters")
        for rescale in rescales(details):
            if rescale["rescaleUuid"] == given.lower():
                return web.json_response(rescale)
        raise _Refused(404, f"Could not find rescale details of specified rescaleUuid {given.lower()} of job {details['jid']}.")


# ---- bodies ----------------------------------------------------------------------------------------------------


def application_state(job_state: str) -> str:
    """The ``ApplicationState`` of the application whose one job is in ``job_state`` (see the module's docstring)."""
    return _APPLICATION_STATE.get(job_state, "RUNNING")


def application_timestamps(details: dict[str, Any]) -> dict[str, int]:
    """When the application entered each ``ApplicationState`` (ms since the epoch; 0 for a state not reached).

    CREATED and RUNNING: the job's start (the application submits its job as it starts running). CANCELING:
    when the job began cancelling, else (a job that went straight to CANCELED) when it ended. The terminal
    state: when the job reached it, else the job's end time; a FAILED application passed FAILING then.
    """
    job_times: dict[str, int] = details["timestamps"]
    state = application_state(details["state"])
    times = dict.fromkeys(APPLICATION_STATES, 0) | {"CREATED": details["start-time"], "RUNNING": details["start-time"]}
    if state in _TERMINAL_APPLICATION_STATES:
        times[state] = job_times.get(details["state"]) or details["end-time"]
    if state == "FAILED":
        times["FAILING"] = times["FAILED"]
    if state in ("CANCELING", "CANCELED"):
        times["CANCELING"] = job_times.get("CANCELLING") or times["CANCELED"]
    return times


def _application_times(details: dict[str, Any], started: int) -> dict[str, int]:
    """``start-time``, ``end-time`` (-1 until the application ended) and ``duration`` (until now while it runs)."""
    state = application_state(details["state"])
    ended = application_timestamps(details)[state] if state in _TERMINAL_APPLICATION_STATES else -1
    return {"start-time": started, "end-time": ended, "duration": (ended if ended >= 0 else details["now"]) - started}


def application_overview(details: dict[str, Any]) -> dict[str, Any]:
    """One entry of Flink 2.3's ``/applications/overview`` (``ApplicationDetails``) from the job's details.

    ``id`` the job's id, ``name`` ``SingleJobApplication(<job name>)``, ``status`` an ``ApplicationState``,
    ``start-time`` when the application was created, ``end-time`` (-1 while it runs), ``duration`` (ms), and
    ``jobs``: its jobs per job state, ``{"RUNNING": 1}`` and the like.
    """
    timestamps = application_timestamps(details)
    return {
        "id": details["jid"],
        "name": SINGLE_JOB_APPLICATION_NAME.format(details["name"]),
        "status": application_state(details["state"]),
        **_application_times(details, timestamps["CREATED"]),
        "jobs": {details["state"]: 1},
    }


def application_details_info(details: dict[str, Any]) -> dict[str, Any]:
    """Flink 2.3's ``/applications/{id}`` (``ApplicationDetailsInfo``) from the job's details.

    As :func:`application_overview`, with ``start-time`` when it started running, ``timestamps`` of every
    ``ApplicationState`` (0 for those not reached), and ``jobs`` the job as ``/jobs/overview`` has it (``JobDetails``).
    """
    timestamps = application_timestamps(details)
    return {
        "id": details["jid"],
        "name": SINGLE_JOB_APPLICATION_NAME.format(details["name"]),
        "status": application_state(details["state"]),
        **_application_times(details, timestamps["RUNNING"]),
        "timestamps": timestamps,
        "jobs": [flink_bodies.job_overview(details)],
    }


def application_exceptions(details: dict[str, Any]) -> dict[str, Any]:
    """Flink 2.3's ``/applications/{id}/exceptions`` (``ApplicationExceptionsInfoWithHistory``):
    ``{"exceptionHistory": {"entries": [...]}}``.

    As Flink records a ``SingleJobApplication``'s, the one entry is the failure its job ended with: empty
    unless the job FAILED; then the job's last failure (``exceptionName`` ``ProgramFailure`` as in
    ``/jobs/{id}/exceptions``, ``stacktrace`` its text, ``timestamp``, ``jobId`` the job). The failures the
    restart strategy recovered from are the job's (``/jobs/{id}/exceptions``), not the application's.
    """
    failures = details.get("failures") or []
    entries = [
        {
            "exceptionName": flink_bodies.PROGRAM_FAILURE_NAME,
            "stacktrace": failure["cause"],
            "timestamp": failure["timestamp"],
            "jobId": details["jid"],
        }
        for failure in failures[-1:]
        if details["state"] == "FAILED"
    ]
    return {"exceptionHistory": {"entries": entries}}


def rescale_config() -> dict[str, Any]:
    """Flink 2.3's ``/jobs/{id}/rescales/config`` (``JobRescaleConfigInfo``) of a streaming job.

    ``rescaleHistoryMax`` 1: the history holds at most the job's restore (see the module's docstring);
    ``schedulerExecutionMode`` null (not reactive mode, as Flink writes it outside reactive mode); the adaptive
    scheduler's waits, cooldowns and checkpoint count are null: jobcluster's scheduler has none of them.
    """
    return {
        "rescaleHistoryMax": RESCALE_HISTORY_MAX,
        "schedulerExecutionMode": None,
        "submissionResourceWaitTimeoutInMillis": None,
        "submissionResourceStabilizationTimeoutInMillis": None,
        "slotIdleTimeoutInMillis": None,
        "executingCooldownTimeoutInMillis": None,
        "executingResourceStabilizationTimeoutInMillis": None,
        "maximumDelayForTriggeringRescaleInMillis": None,
        "rescaleOnFailedCheckpointCount": None,
    }


def rescales(details: dict[str, Any]) -> list[dict[str, Any]]:
    """The job's rescale history, newest first, each a full ``JobRescaleDetails``: one entry when the job was
    restored from a savepoint that recorded another parallelism than the job's (``details["restore"]``, as the
    JobMaster has it from the driver agent), else none.

    The entry, in Flink 2.3's words: ``triggerCause`` INITIAL_SCHEDULE (the restore is the job's first
    schedule), ``terminalState`` COMPLETED and ``terminatedReason`` SUCCEEDED; ``startTimestampInMillis`` the
    job's start, ``endTimestampInMillis`` when its program read the savepoint (ms since the epoch);
    ``vertices`` the program's vertex with ``preRescaleParallelism`` the savepoint's parallelism and
    ``postRescaleParallelism`` (also desired and sufficient: a job waits for all its slots) the job's; ``slots``
    its slot sharing group, in slots alike, its resource profiles Flink's unknown one (jobcluster's slots are
    requested by count); ``schedulerStates`` empty (jobcluster's scheduler has no adaptive-scheduler states);
    ``rescaleUuid`` and ``resourceRequirementsUuid`` derived from the job's id (stable across reads).
    """
    restore = details.get("restore") or {}
    before = restore.get("parallelism")
    (vertex, *_) = details["vertices"]
    after = vertex["parallelism"]
    if before is None or before == after:
        return []
    group = vertex.get("slotSharingGroup", "default")
    group_id = flink_bodies.slot_sharing_group_id(details["jid"], group)
    return [
        {
            "rescaleUuid": _derived_id(details["jid"], "rescale", 1),
            "resourceRequirementsUuid": _derived_id(details["jid"], "resource-requirements", 1),
            "rescaleAttemptId": 1,
            "vertices": {
                vertex["id"]: {
                    "jobVertexId": vertex["id"],
                    "jobVertexName": vertex["name"],
                    "slotSharingGroupId": group_id,
                    "slotSharingGroupName": group,
                    "desiredParallelism": after,
                    "sufficientParallelism": after,
                    "preRescaleParallelism": before,
                    "postRescaleParallelism": after,
                }
            },
            "slots": {
                group_id: {
                    "slotSharingGroupId": group_id,
                    "slotSharingGroupName": group,
                    "requestResourceProfile": UNKNOWN_RESOURCE_PROFILE,
                    "desiredSlots": after,
                    "minimalRequiredSlots": after,
                    "preRescaleSlots": before,
                    "postRescaleSlots": after,
                    "acquiredResourceProfile": UNKNOWN_RESOURCE_PROFILE,
                }
            },
            "schedulerStates": [],
            "startTimestampInMillis": details["start-time"],
            "endTimestampInMillis": restore["restoredAt"],
            "terminalState": "COMPLETED",
            "triggerCause": "INITIAL_SCHEDULE",
            "terminatedReason": "SUCCEEDED",
        }
    ]


def brief(rescale: dict[str, Any]) -> dict[str, Any]:
    """A rescale as Flink 2.3's history and overview list it: without its vertices, slots and scheduler states."""
    return rescale | {"vertices": {}, "slots": {}, "schedulerStates": []}


def rescales_overview(history: list[dict[str, Any]]) -> dict[str, Any]:
    """Flink 2.3's ``/jobs/{id}/rescales/overview`` (``JobRescalesOverview``) of ``history`` (:func:`rescales`):
    ``rescalesCounts`` per outcome (``inProgress`` those without a ``terminalState``) and ``latest``: the newest
    rescale of each terminal state, brief (:func:`brief`), null for a state none reached."""
    latest: dict[str, dict[str, Any] | None] = {state.lower(): None for state in RESCALE_TERMINAL_STATES}
    for rescale in reversed(history):
        if rescale["terminalState"] is not None:
            latest[rescale["terminalState"].lower()] = brief(rescale)
    return {"rescalesCounts": _rescale_counts(history), "latest": latest}


def rescales_summary(history: list[dict[str, Any]]) -> dict[str, Any]:
    """Flink 2.3's ``/jobs/{id}/rescales/summary`` (``JobRescalesSummary``) of ``history``: the counts of
    :func:`rescales_overview` and the durations (ms, end - start) of the ended rescales, all and per terminal
    state, each as Flink's ``StatsSummaryDto`` (:func:`duration_stats`)."""
    ended = [r for r in history if r["terminalState"] is not None]
    return {
        "rescalesCounts": _rescale_counts(history),
        "rescalesDurationStatsInMillis": duration_stats([_duration(r) for r in ended]),
        **{
            f"{state.lower()}RescalesDurationStatsInMillis": duration_stats([_duration(r) for r in ended if r["terminalState"] == state])
            for state in RESCALE_TERMINAL_STATES
        },
    }


def duration_stats(durations: list[int]) -> dict[str, Any]:
    """Flink's ``StatsSummaryDto`` of ``durations`` (ms): ``min``, ``max``, ``avg`` integers (0 for none) and the
    percentiles ``p50`` ... ``p999`` (nearest rank: the smallest value with at least that share of the values at or
    below it) as numbers, or the string ``"NaN"`` for none, as Flink's JSON writes a NaN double."""
    if not durations:
        return {"min": 0, "max": 0, "avg": 0} | dict.fromkeys(_PERCENTILES, "NaN")
    ordered = sorted(durations)
    return {"min": ordered[0], "max": ordered[-1], "avg": sum(ordered) // len(ordered)} | {
        name: float(ordered[max(0, math.ceil(share * len(ordered)) - 1)]) for name, share in _PERCENTILES.items()
    }


def _rescale_counts(history: list[dict[str, Any]]) -> dict[str, int]:
    states = [r["terminalState"] for r in history]
    return {
        "ignored": states.count("IGNORED"),
        "inProgress": states.count(None),
        "completed": states.count("COMPLETED"),
        "failed": states.count("FAILED"),
    }


def _duration(rescale: dict[str, Any]) -> int:
    return int(rescale["endTimestampInMillis"]) - int(rescale["startTimestampInMillis"])


def _derived_id(job_id: str, kind: str, attempt: int) -> str:
    """32 hex digits for the job's ``kind`` of id of rescale ``attempt`` (Flink's are random; these are stable)."""
    return hashlib.md5(f"{job_id}/{kind}/{attempt}".encode(), usedforsecurity=False).hexdigest()
