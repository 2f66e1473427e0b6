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

A Spark job is never rescaled in place (its parallelism is fixed for its
run, and ``schedulerType`` is ``Default``), so the rescale history is empty
and every rescale is unknown; the configuration says that no history is kept
and names no adaptive-scheduler setting.
"""

from __future__ import annotations

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

    async def _rescale_config(self, request: web.Request) -> web.Response:
        self._job(request)
        return web.json_response(rescale_config())

    async def _rescale_history(self, request: web.Request) -> web.Response:
        self._job(request)
        return web.json_response([])

    async def _rescale_details(self, request: web.Request) -> web.Response:
        details = self._job(request)
        given = request.match_info["rescale_id"]
        if not _HEX_ID.fullmatch(given):
            raise _Refused(400, f"Bad request, could not parse parameters: rescaleuuid {given!r} is not 32 hexadecimal characters")
        raise _Refused(404, f"Job {details['jid']} has no rescale {given.lower()}: a Spark job is never rescaled in place")


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
    """Flink 2.3's ``/jobs/{id}/rescales/config`` (``JobRescaleConfigInfo``) of a job that is never rescaled.

    ``rescaleHistoryMax`` 0: no rescale is recorded; ``schedulerExecutionMode`` null (not reactive mode, as
    Flink writes it outside reactive mode); the adaptive scheduler's waits, cooldowns and checkpoint count are
    null: jobcluster's scheduler has none of them.
    """
    return {
        "rescaleHistoryMax": 0,
        "schedulerExecutionMode": None,
        "submissionResourceWaitTimeoutInMillis": None,
        "submissionResourceStabilizationTimeoutInMillis": None,
        "slotIdleTimeoutInMillis": None,
        "executingCooldownTimeoutInMillis": None,
        "executingResourceStabilizationTimeoutInMillis": None,
        "maximumDelayForTriggeringRescaleInMillis": None,
        "rescaleOnFailedCheckpointCount": None,
    }
