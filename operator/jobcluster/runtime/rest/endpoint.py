"""The cluster's REST endpoint, with Flink-compatible paths.

It serves Flink's paths for a per-job cluster (overview, config, job list,
job details and status, execution result, cancel, stop-with-savepoint,
savepoints and their disposal, checkpoint statistics, TaskManagers) in the shapes Flink's REST API uses (bodies: flink_bodies.py),
so Flink's own CLI and RestClusterClient work against it, and the program's stdout and
stderr from a byte offset (``/jobs/{id}/stdout``, ``/jobs/{id}/stderr``),
which an attached client follows. It is the public face of the
cluster: reading Flink's paths stays open as in Flink, so Flink's tools and
dashboards work unchanged, while every call that changes something (cancel,
stop, savepoints) and the program's own output must carry the
cluster's token as ``Authorization: Bearer <token>`` and are answered 401
without it. Flink's own CLI can send that header (``FLINK_REST_CLIENT_HEADERS``,
Flink 1.19+). The token travels in clear text: bind the endpoint to an address
only trusted clients reach.

Behind YARN's web proxy (``WebAppProxyServlet``), which forwards only GET and
PUT and drops the Authorization header, a client sends each change as ``PUT``
on the same path (Flink's dashboard uses ``GET /jobs/{id}/yarn-cancel`` for the
same reason) and the token as the ``token`` query parameter. Nothing logs
request lines here (no access log; refusals log the path alone).
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import re
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from jobcluster.errors import DeploymentError, JobNotFoundError, RpcError, UnknownTaskExecutorError
from jobcluster.runtime.dispatcher.mini_dispatcher import MiniDispatcher
from jobcluster.runtime.jobmaster.savepoint_operations import SavepointOperations
from jobcluster.runtime.rest import flink_bodies
from jobcluster.runtime.rest.dashboard import CACHE_CONTROL, add_dashboard_routes
from jobcluster.runtime.rest.dashboard_additions import add_addition_routes, with_additions
from jobcluster.runtime.rest.dashboard_views import DashboardViews, TaskManagerLogSource
from jobcluster.runtime.rest.flink2_views import Flink2Views
from jobcluster.runtime.rest.serialized_throwable import failure_cause
from jobcluster.runtime.rest.spark_ui import SparkUiProxy
from jobcluster.security import token_matches
from jobcluster.spark.home import spark_version

log = logging.getLogger(__name__)

ResourceView = Callable[[], Awaitable[Any]]
TaskManagerMetrics = Callable[[str], Awaitable[dict[str, int]]]

#: Methods that only read; every other method needs the cluster's token.
READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Methods of the routes that change something: each is served as PUT too, for YARN's web proxy.
_CHANGES = frozenset({"POST", "PATCH", "DELETE"})
#: The query parameter that carries the cluster's token where no Authorization header passes (YARN's web proxy).
TOKEN_PARAMETER = "token"
# The program's own output is the user's data, not cluster status: reading it needs the token too; and Flink's
# dashboard cancels a job with a GET (``yarn-cancel``, a path made for YARN's proxy, which passes only GETs).
_PRIVATE_GET = re.compile(r"(/v1)?/jobs/[^/]+/(stdout|stderr|yarn-cancel)")
#: Flink serves each path also under its REST API version prefix.
API_VERSION_PREFIX = "/v1"
#: Response header of ``/jobs/{id}/stdout`` and ``/stderr``: the logical offset of the body's first byte.
OUTPUT_OFFSET_HEADER = "X-Output-Offset"
#: A Flink JobID in a path: 32 hex digits (Flink's ``JobID.fromHexString``; either case).
_JOB_ID = re.compile(r"[0-9a-fA-F]{32}")


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RestEndpoint:
    """aiohttp server for the dispatcher plus ResourceManager views (``task_managers``, ``resource_overview``).

    It is started first and stopped last, so that the port is checked before
    anything else starts, and so that a client sees the REST API go away only
    once the whole cluster is gone. Until :meth:`serve` binds the cluster's
    components, requests are answered with 503. ``token``: the bearer token
    that mutating requests must carry (security.rest_token). ``bind_ports``: the
    ports to try in order, the first free one taken (``rest.bind-port``); default: ``port``.
    """

    def __init__(
        self,
        host: str,
        port: int,
        version: str,
        token: str,
        bind_hosts: tuple[str, ...] = (),
        dashboard: Path | None = None,
        configuration: Mapping[str, str] | None = None,
        log_dir: Path | None = None,
        bind_ports: tuple[int, ...] = (),
    ) -> None:
        self._dispatcher: MiniDispatcher | None = None
        self._task_managers: ResourceView | None = None
        self._resource_overview: ResourceView | None = None
        self.host = host
        self.port = port
        self.bind_hosts = bind_hosts or (host,)
        self.bind_ports = bind_ports or (port,)
        self._from_bind_port = bool(bind_ports)  # the ports came from rest.bind-port, not rest.port
        self._own_names = {name.lower() for name in (host, *self.bind_hosts, socket.gethostname())}
        self._version = version
        self._token = token
        self._runner: web.AppRunner | None = None
        self._dashboard = dashboard
        self._task_manager_metrics: TaskManagerMetrics | None = None
        self._job_manager_metrics: Callable[[], dict[str, int]] = dict
        self._views = DashboardViews(
            self._serving_dispatcher,
            self._task_manager_views,
            self._task_manager_metric_values,
            lambda: self._job_manager_metrics(),
            configuration or {},
            log_dir,
        )
        self._flink2 = Flink2Views(self._serving_dispatcher, configuration or {})  # Flink 2.3's paths
        self._spark_ui = SparkUiProxy(self._serving_dispatcher)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def start(self) -> None:
        """Bind each of ``bind_hosts`` (default: the advertised host) and serve; DeploymentError when no port of
        ``bind_ports`` can be bound (e.g. all taken). The first address picks the port (the first free one; with 0,
        any), the others take it too."""
        app = web.Application(middlewares=[self._json_errors, self._loopback_host, self._authorize, self._errors])
        routes: list[tuple[str, str, Callable[[web.Request], Awaitable[web.StreamResponse]]]] = [
            ("GET", "/overview", self._overview),
            ("GET", "/config", self._config),
            ("GET", "/jobs", self._jobs),
            ("GET", "/jobs/overview", self._jobs_overview),
            ("GET", "/jobs/{job_id}", self._job),
            ("PATCH", "/jobs/{job_id}", self._cancel),
            ("GET", "/jobs/{job_id}/status", self._job_status),
            ("GET", "/jobs/{job_id}/execution-result", self._execution_result),
            ("GET", "/jobs/{job_id}/stdout", self._program_output),
            ("GET", "/jobs/{job_id}/stderr", self._program_output),
            ("GET", "/taskmanagers", self._taskmanagers),
            ("POST", "/jobs/{job_id}/stop", self._trigger_savepoint),
            ("POST", "/jobs/{job_id}/savepoints", self._trigger_savepoint),
            ("GET", "/jobs/{job_id}/savepoints/{trigger_id}", self._savepoint_status),
            ("GET", "/jobs/{job_id}/checkpoints", self._checkpoints),
            ("GET", "/jobs/{job_id}/checkpoints/config", self._checkpoint_config),
            ("POST", "/savepoint-disposal", self._trigger_disposal),
            ("GET", "/savepoint-disposal/{trigger_id}", self._disposal_status),
            ("GET", "/jobs/{job_id}/yarn-cancel", self._yarn_cancel),
            *self._views.routes(),
            *self._flink2.routes(),
        ]
        for method, path, handler in routes:
            for verb in (method, "PUT") if method in _CHANGES else (method,):  # PUT: what YARN's proxy forwards
                app.router.add_route(verb, path, handler)
                app.router.add_route(verb, API_VERSION_PREFIX + path, handler)
        self._spark_ui.install(app)  # Spark's own UI under /spark/
        if self._dashboard is not None:
            add_addition_routes(app, CACHE_CONTROL)
            add_dashboard_routes(app, self._dashboard, with_additions)  # last: every REST path wins over a file
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        first, *others = self.bind_hosts
        await self._bind_first_free(first)
        for host in others:
            await self._bind(host, self.port)
        log.info("REST endpoint listening at %s", self.url)

    async def _bind_first_free(self, host: str) -> None:
        """Bind ``host`` on the first port of ``bind_ports`` that is free, and advertise that port."""
        assert self._runner is not None
        for port in self.bind_ports:
            try:
                await web.TCPSite(self._runner, host, port).start()
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE and port != self.bind_ports[-1]:
                    continue
                await self._runner.cleanup()
                raise self._bind_error(host, port, exc) from exc
            self.port = self._runner.addresses[0][1]
            return

    async def _bind(self, host: str, port: int) -> None:
        assert self._runner is not None
        try:
            await web.TCPSite(self._runner, host, port).start()
        except OSError as exc:
            await self._runner.cleanup()
            raise self._bind_error(host, port, exc) from exc

    def _bind_error(self, host: str, port: int, exc: OSError) -> DeploymentError:
        if exc.errno != errno.EADDRINUSE:
            return DeploymentError(f"could not start the REST endpoint on {host}:{port}: {exc}")
        if self._from_bind_port and len(self.bind_ports) == 1:
            return DeploymentError(f"rest.bind-port {port} on {host} is already in use; name a free port or a range such as 50100-50200")
        if self._from_bind_port:
            return DeploymentError(
                f"every port rest.bind-port names on {host} ({len(self.bind_ports)} from {self.bind_ports[0]} to "
                f"{self.bind_ports[-1]}) is in use; give a larger range"
            )
        return DeploymentError(
            f"rest.port {port} on {host} is already in use; choose another port with -D rest.port=PORT, or 0 for any free port"
        )

    def serve(
        self,
        dispatcher: MiniDispatcher,
        task_managers: ResourceView,
        resource_overview: ResourceView,
        task_manager_metrics: TaskManagerMetrics | None = None,
        job_manager_metrics: Callable[[], dict[str, int]] = dict,
    ) -> None:
        """Start answering with the cluster's components; ``task_manager_metrics(resource_id)`` and
        ``job_manager_metrics()``: Flink's metrics of a TaskManager and of the JobManager (``spark/jvm_metrics.py``)."""
        self._dispatcher = dispatcher
        self._task_managers = task_managers
        self._resource_overview = resource_overview
        self._task_manager_metrics = task_manager_metrics
        self._job_manager_metrics = job_manager_metrics

    def serve_task_manager_logs(self, source: TaskManagerLogSource) -> None:
        """Answer the TaskManagers' log paths from ``source`` (the ResourceManager, which asks each TaskExecutor)."""
        self._views.serve_task_manager_logs(source)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _serving_dispatcher(self) -> MiniDispatcher:
        assert self._dispatcher is not None  # _errors answers 503 until serve()
        return self._dispatcher

    async def _task_manager_views(self) -> list[dict[str, Any]]:
        assert self._task_managers is not None
        return list(await self._task_managers())

    async def _task_manager_metric_values(self, resource_id: str) -> dict[str, int]:
        """A TaskManager's metrics; none when it cannot be asked (gone, or not answering in time): the dashboard shows "-"."""
        if self._task_manager_metrics is None:
            return {}
        try:
            return await self._task_manager_metrics(resource_id)
        except (UnknownTaskExecutorError, RpcError) as exc:
            log.debug("no metrics of TaskManager %s: %s", resource_id, exc)
            return {}

    @web.middleware
    async def _json_errors(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Every error as Flink writes it: JSON ``{"errors": [...]}`` with the HTTP status (404 for an unknown path)."""
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            message = f"Not found: {request.path}" if exc.status == 404 else f"{exc.reason}: {request.method} {request.path}"
            return web.json_response({"errors": [message]}, status=exc.status, headers=_allow_header(exc))

    @web.middleware
    async def _loopback_host(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """On a connection to a loopback address, serve only a request for a loopback name or one of the endpoint's
        own (its host, the machine's name): a page of another site whose name resolves to 127.0.0.1 (DNS rebinding)
        would otherwise read the endpoint with the browser as if it were its own. Other addresses are reached by
        whatever name their users give them (a Service, an Ingress)."""
        local = request.transport.get_extra_info("sockname") if request.transport is not None else None
        name = (urlsplit(f"//{request.host}").hostname or "").lower()
        if local and _is_loopback(local[0]) and not (_is_loopback(name) or name in self._own_names):
            return web.json_response(
                {"errors": [f"Misdirected request: {request.host} is not a name of this endpoint, which listens on a loopback address"]},
                status=421,
            )
        return await handler(request)

    @web.middleware
    async def _authorize(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        if request.method in READ_ONLY_METHODS and not _PRIVATE_GET.fullmatch(request.path):
            return await handler(request)
        scheme, _, supplied = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token_matches(supplied.strip(), self._token):
            return await handler(request)
        in_query = request.query.get(TOKEN_PARAMETER)  # through YARN's web proxy
        if in_query and token_matches(in_query, self._token):
            return await handler(request)
        log.warning("refused %s %s from %s: no valid bearer token", request.method, request.path, request.remote)
        return web.json_response(
            {"errors": [f"{request.method} {request.path} needs the cluster's token as 'Authorization: Bearer <token>'"]},
            status=401,
            headers={"WWW-Authenticate": 'Bearer realm="jobcluster"'},
        )

    @web.middleware
    async def _errors(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        if self._dispatcher is None:
            return web.json_response({"errors": ["the cluster is starting"]}, status=503)
        job_id = request.match_info.get("job_id")
        if job_id is not None and not _JOB_ID.fullmatch(job_id):
            return web.json_response(
                {"errors": [f"Bad request, could not parse parameters: jobid {job_id!r} is not a JobID (32 hexadecimal characters)"]},
                status=400,
            )
        try:
            return await handler(request)
        except JobNotFoundError as exc:
            return web.json_response({"errors": [str(exc)]}, status=404)

    # The handlers below run only once serve() set the components: until then _errors answers 503.

    async def _overview(self, request: web.Request) -> web.Response:
        assert self._dispatcher is not None and self._resource_overview is not None
        resources = await self._resource_overview()
        states = [self._dispatcher.job_details(j)["state"] for j in self._dispatcher.job_ids()]
        return web.json_response(flink_bodies.cluster_overview(resources, states, self._flink_version))

    async def _config(self, request: web.Request) -> web.Response:
        return web.json_response(flink_bodies.dashboard_configuration(self._flink_version, spark_version()))

    @property
    def _flink_version(self) -> str:
        return f"jobcluster {self._version}"

    async def _jobs(self, request: web.Request) -> web.Response:
        assert self._dispatcher is not None
        return web.json_response(
            {"jobs": [{"id": j, "status": self._dispatcher.job_details(j)["state"]} for j in self._dispatcher.job_ids()]}
        )

    async def _jobs_overview(self, request: web.Request) -> web.Response:
        assert self._dispatcher is not None
        jobs = [flink_bodies.job_overview(self._dispatcher.job_details(j)) for j in self._dispatcher.job_ids()]
        return web.json_response({"jobs": jobs})

    async def _job(self, request: web.Request) -> web.Response:
        assert self._dispatcher is not None
        return web.json_response(flink_bodies.job_details_info(self._dispatcher.job_details(_job_id(request))))

    async def _job_status(self, request: web.Request) -> web.Response:
        """Flink's ``/jobs/{id}/status`` (JobStatusInfo), which Flink's client polls."""
        assert self._dispatcher is not None
        return web.json_response({"status": self._dispatcher.job_details(_job_id(request))["state"]})

    async def _execution_result(self, request: web.Request) -> web.Response:
        assert self._dispatcher is not None
        return web.json_response(flink_bodies.execution_result(self._dispatcher.job_result(_job_id(request))))

    async def _program_output(self, request: web.Request) -> web.Response:
        """The program's stdout or stderr (by the path's last part) from byte ``?offset=N`` (default 0), raw bytes.

        Offsets are logical: byte N is the N-th byte the stream received since
        the job began, over all its attempts, whichever rotated file
        (``driver.out``, ``driver.out.1``, ...) holds it now. At most 1 MiB per
        call; an empty body means nothing more has been written yet. The header
        ``X-Output-Offset`` is the offset of the body's first byte: N itself,
        or, when byte N was rotated away, the oldest byte still kept (the bytes
        between were lost to rotation). A client follows the output by asking
        again from ``X-Output-Offset + len(body)``. 400 for a negative or
        non-numeric offset.
        """
        assert self._dispatcher is not None
        stream = request.path.rsplit("/", 1)[1]
        try:
            offset = int(request.query.get("offset", "0"))
            chunk = await self._dispatcher.job_output(_job_id(request), stream, offset)
        except ValueError as exc:
            return web.json_response({"errors": [f"bad output request: {exc}"]}, status=400)
        return web.Response(body=chunk.data, content_type="application/octet-stream", headers={OUTPUT_OFFSET_HEADER: str(chunk.offset)})

    async def _cancel(self, request: web.Request) -> web.Response:
        """Flink's ``PATCH /jobs/{id}?mode=``: ``cancel`` (the default; any case) cancels, 202.

        ``stop`` is answered 308 Permanent Redirect with an error, as Flink's
        JobCancellationHandler does since the mode was removed (a graceful stop
        is ``POST /jobs/{id}/stop``, see :meth:`_trigger_savepoint`); any
        other mode is 400.
        """
        assert self._dispatcher is not None
        mode = request.query.get("mode", "cancel").upper()
        if mode == "STOP":
            return web.json_response(
                {
                    "errors": [
                        'The termination mode "stop" has been removed. For an ungraceful shutdown, use "cancel"; '
                        'for a graceful shutdown, "jobs/:jobId/stop".'
                    ]
                },
                status=308,
            )
        if mode != "CANCEL":
            return web.json_response(
                {
                    "errors": [
                        f"Bad request, could not parse parameters: mode {request.query['mode']!r} is not a termination mode; use cancel"
                    ]
                },
                status=400,
            )
        await self._dispatcher.cancel_job(_job_id(request))
        return web.json_response({}, status=202)

    async def _yarn_cancel(self, request: web.Request) -> web.Response:
        """Flink's ``GET /jobs/{id}/yarn-cancel`` (the dashboard's Cancel Job button): cancels, 202; with the token."""
        assert self._dispatcher is not None
        await self._dispatcher.cancel_job(_job_id(request))
        return web.json_response({}, status=202)

    async def _trigger_savepoint(self, request: web.Request) -> web.Response:
        """Flink's ``POST /jobs/{id}/stop`` (stop-with-savepoint) and ``POST /jobs/{id}/savepoints``: 202 with a ``request-id``.

        Bodies as Flink's: ``{"targetDirectory", "drain", "triggerId"}`` for a
        stop, ``{"target-directory", "cancel-job", "triggerId"}`` for a savepoint
        (``cancel-job`` stops the job as a stop does). Without a directory the
        cluster's ``execution.checkpointing.savepoint-dir`` is used. The
        operation runs on; its status is ``GET /jobs/{id}/savepoints/{triggerid}``.
        A given ``triggerId`` is the operation's id (Flink's idempotent retry).
        """
        assert self._dispatcher is not None
        job_id = _job_id(request)
        self._dispatcher.job_details(job_id)  # JobNotFoundError (404) for another job
        body, trigger_id, error = await _trigger_body(request)
        if error is not None:
            return error
        if request.path.endswith("/stop"):
            directory, stop, drain = body.get("targetDirectory"), True, bool(body.get("drain", False))
        else:
            directory, stop, drain = body.get("target-directory"), bool(body.get("cancel-job", False)), False
        if directory is not None and not isinstance(directory, str):
            return _bad_request(f"the target directory must be a string, got {directory!r}")
        self._dispatcher.trigger_savepoint(job_id, trigger_id, directory, stop, drain)
        return web.json_response({"request-id": trigger_id}, status=202)

    async def _savepoint_status(self, request: web.Request) -> web.Response:
        """Flink's AsynchronousOperationResult of a savepoint: IN_PROGRESS, or COMPLETED with ``location`` or ``failure-cause``."""
        assert self._dispatcher is not None
        operations = self._dispatcher.savepoint_operations(_job_id(request))
        return _operation_status(operations, request.match_info["trigger_id"].lower(), f"savepoint operation for job {_job_id(request)}")

    async def _trigger_disposal(self, request: web.Request) -> web.Response:
        """Flink's ``POST /savepoint-disposal`` ``{"savepoint-path"}``: 200 with a ``request-id``.

        The running program's driver deletes the savepoint (it reaches its file system)."""
        assert self._dispatcher is not None
        body, trigger_id, error = await _trigger_body(request)
        if error is not None:
            return error
        path = body.get("savepoint-path")
        if not isinstance(path, str) or not path:
            return _bad_request("the body needs the savepoint's path as 'savepoint-path'")
        self._dispatcher.trigger_disposal(trigger_id, path)
        return web.json_response({"request-id": trigger_id})

    async def _disposal_status(self, request: web.Request) -> web.Response:
        assert self._dispatcher is not None
        operations = self._dispatcher.disposal_operations()
        return _operation_status(operations, request.match_info["trigger_id"].lower(), "savepoint disposal", with_location=False)

    async def _checkpoints(self, request: web.Request) -> web.Response:
        """Flink's CheckpointingStatistics: the streaming queries' committed micro-batches (see flink_bodies)."""
        assert self._dispatcher is not None
        view = self._dispatcher.checkpoint_statistics(_job_id(request))
        return web.json_response(flink_bodies.checkpointing_statistics(view["details"], view["restored_from"]))

    async def _checkpoint_config(self, request: web.Request) -> web.Response:
        assert self._dispatcher is not None
        config = self._dispatcher.checkpoint_config(_job_id(request))
        body = flink_bodies.checkpoint_config(config["checkpoint_root"], config["savepoint_directory"], int(config["timeout"] * 1000))
        return web.json_response(body)

    async def _taskmanagers(self, request: web.Request) -> web.Response:
        assert self._task_managers is not None
        now_ms = int(time.time() * 1000)
        return web.json_response({"taskmanagers": [flink_bodies.task_manager_info(tm, now_ms) for tm in await self._task_managers()]})


def _job_id(request: web.Request) -> str:
    """The path's JobID in jobcluster's spelling (lower case); _errors has checked that it is one."""
    return request.match_info["job_id"].lower()


def _allow_header(exc: web.HTTPException) -> dict[str, str]:
    allow = exc.headers.get("Allow")
    return {"Allow": allow} if allow else {}


def _bad_request(message: str) -> web.Response:
    return web.json_response({"errors": [f"Bad request: {message}"]}, status=400)


async def _trigger_body(request: web.Request) -> tuple[dict[str, Any], str, web.Response | None]:
    """``(body, trigger id, None)`` of an operation's trigger, or an error response: a body that is not a JSON object, a bad ``triggerId``.

    The trigger id is the body's ``triggerId`` (lower case), else a new one.
    """
    try:
        body = await request.json() if request.can_read_body else {}
    except ValueError as exc:
        return {}, "", _bad_request(f"the body is not JSON: {exc}")
    if not isinstance(body, dict):
        return {}, "", _bad_request("the body must be a JSON object")
    trigger_id = body.get("triggerId")
    if trigger_id is None:
        return body, uuid.uuid4().hex, None
    if not isinstance(trigger_id, str) or not _JOB_ID.fullmatch(trigger_id):
        return {}, "", _bad_request(f"triggerId {trigger_id!r} is not 32 hexadecimal characters")
    return body, trigger_id.lower(), None


def _operation_status(operations: SavepointOperations, trigger_id: str, what: str, with_location: bool = True) -> web.Response:
    """Flink's AsynchronousOperationResult of ``trigger_id``: 404 when unknown, IN_PROGRESS, or COMPLETED with its outcome.

    A completed savepoint's ``operation`` is Flink's SavepointInfo (``location``);
    without ``with_location`` it is Flink's AsynchronousOperationInfo, which has only a failure cause.
    """
    if not operations.known(trigger_id):
        return web.json_response({"errors": [f"There is no {what} with triggerId={trigger_id}."]}, status=404)
    outcome = operations.result(trigger_id)
    if outcome is None:
        return web.json_response({"status": {"id": "IN_PROGRESS"}})
    if outcome.failure is not None:
        error = "org.apache.flink.runtime.checkpoint.CheckpointException"
        cause = failure_cause(error, outcome.failure, f"{error}: {outcome.failure}")
        return web.json_response({"status": {"id": "COMPLETED"}, "operation": {"failure-cause": cause}})
    return web.json_response({"status": {"id": "COMPLETED"}, "operation": {"location": outcome.location} if with_location else {}})
