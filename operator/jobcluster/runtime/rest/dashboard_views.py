"""The REST paths Flink's web dashboard reads beyond Flink's client API: a job's tabs, its vertex, the TaskManager
and JobManager pages (bodies: flink_bodies.py).

Why apart from endpoint.py: these exist for the dashboard (``dashboard.py``),
and every one of them answers, in Flink's shapes, what a Spark job has, or an
empty but valid body where it has no counterpart (watermarks, back pressure,
flame graphs, per-subtask metrics), so that no page of the dashboard breaks or
shows an error. Which path answers what is in docs/reference/rest.md.

The JobManager's logs are the files of its log directory, read openly as
Flink's are, except the program's own output (``driver.out*``, ``driver.err*``),
which is the user's data: ``/jobs/{id}/stdout`` with the token, as ever. A
TaskManager's logs are its TaskExecutor's to hand out, on every target: the
request goes through the ResourceManager to the TaskExecutor (as Flink's
``requestTaskManagerLogList`` and ``requestTaskManagerFileUploadByName``), which
serves its own log, its Spark worker's and its executors' stderr, each up to its
last 2 MiB (runtime/taskexecutor/log_files.py).
"""

from __future__ import annotations

import platform
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from jobcluster.errors import RpcError, UnknownTaskExecutorError
from jobcluster.runtime.dispatcher.mini_dispatcher import MiniDispatcher
from jobcluster.runtime.rest import flink_bodies

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
#: Files of the log directory that hold the program's output, not the cluster's: not served here.
PRIVATE_LOG_PREFIXES = ("driver.out", "driver.err")
JOB_MANAGER_LOG = "jobmanager.log"
JOB_MANAGER_STDOUT = "jobmanager.out"
MAX_EXCEPTIONS = 10  # Flink's default of ?maxExceptions


class TaskManagerLogSource(Protocol):
    """Who asks the TaskExecutors for their log files: the ResourceManager (its methods of these names)."""

    async def request_task_manager_log_list(self, resource_id: str) -> list[dict[str, Any]]:
        """Flink's LogInfo of each file; UnknownTaskExecutorError, RpcError."""

    async def request_task_manager_log_file(self, resource_id: str, name: str | None) -> dict[str, Any] | None:
        """``{"text", ...}`` of the file ``name`` (None: the TaskExecutor's own log), None when it has no such file;
        UnknownTaskExecutorError, RpcError."""


class DashboardViews:
    """The dashboard's paths over the cluster's components (``dispatcher()``, ``task_managers()``: the
    ResourceManager's view of its TaskExecutors), their metrics (``task_manager_metrics(id)``,
    ``job_manager_metrics()``: Flink's names, ``{}`` when none are known), its configuration (key → value)
    and its log directory."""

    def __init__(
        self,
        dispatcher: Callable[[], MiniDispatcher],
        task_managers: Callable[[], Awaitable[list[dict[str, Any]]]],
        task_manager_metrics: Callable[[str], Awaitable[dict[str, int]]],
        job_manager_metrics: Callable[[], dict[str, int]],
        configuration: Mapping[str, str],
        log_dir: Path | None,
    ) -> None:
        self._dispatcher = dispatcher
        self._task_managers = task_managers
        self._task_manager_metrics = task_manager_metrics
        self._job_manager_metrics = job_manager_metrics
        self._configuration = dict(configuration)
        self._log_dir = log_dir
        self._tm_log_source: TaskManagerLogSource | None = None

    def serve_task_manager_logs(self, source: TaskManagerLogSource) -> None:
        """Answer the TaskManager log paths from ``source``; until then they answer as a TaskManager without logs."""
        self._tm_log_source = source

    def routes(self) -> list[tuple[str, str, Handler]]:
        """(method, path, handler) of every path, Flink's spelling."""
        vertex = "/jobs/{job_id}/vertices/{vertex_id}"
        return [
            ("GET", "/jobs/{job_id}/exceptions", self._exceptions),
            ("GET", "/jobs/{job_id}/config", self._job_config),
            ("GET", "/jobs/{job_id}/checkpoints/details/{checkpoint_id}", self._checkpoint_details),
            ("GET", vertex, self._vertex),
            ("GET", f"{vertex}/taskmanagers", self._vertex_task_managers),
            ("GET", f"{vertex}/watermarks", _empty_list),
            ("GET", f"{vertex}/metrics", _empty_list),
            ("GET", f"{vertex}/subtasks/metrics", _empty_list),
            ("GET", f"{vertex}/accumulators", self._accumulators),
            ("GET", f"{vertex}/subtasks/accumulators", self._subtask_accumulators),
            ("GET", f"{vertex}/backpressure", _static({"status": "deprecated"})),
            ("GET", f"{vertex}/flamegraph", _static({"endTimestamp": -2, "data": None})),  # -2: the feature is off
            ("GET", f"{vertex}/subtasktimes", self._subtask_times),
            ("GET", "/jobmanager/config", self._job_manager_config),
            ("GET", "/jobmanager/environment", self._environment),
            ("GET", "/jobmanager/metrics", self._job_manager_metric_values),
            ("GET", "/jobmanager/logs", self._job_manager_logs),
            ("GET", "/jobmanager/logs/{name}", self._job_manager_log_file),
            ("GET", "/jobmanager/log", self._job_manager_log),
            ("GET", "/jobmanager/stdout", self._job_manager_stdout),
            ("GET", "/jobmanager/thread-dump", self._thread_dump),
            ("GET", "/taskmanagers/{tm_id}", self._task_manager),
            ("GET", "/taskmanagers/{tm_id}/metrics", self._task_manager_metric_values),
            ("GET", "/taskmanagers/{tm_id}/logs", self._task_manager_logs),
            ("GET", "/taskmanagers/{tm_id}/logs/{name}", self._task_manager_log_file),
            ("GET", "/taskmanagers/{tm_id}/log", self._task_manager_log),
            ("GET", "/taskmanagers/{tm_id}/stdout", _empty_text),
            ("GET", "/taskmanagers/{tm_id}/thread-dump", _static({"threadInfos": []})),
            ("GET", "/taskmanagers/{tm_id}/profiler", _profiler_off),
            ("GET", "/jobmanager/profiler", _profiler_off),
        ]

    def _details(self, request: web.Request) -> dict[str, Any]:
        return self._dispatcher().job_details(request.match_info["job_id"].lower())

    async def _exceptions(self, request: web.Request) -> web.Response:
        try:
            limit = max(0, int(request.query.get("maxExceptions", MAX_EXCEPTIONS)))
        except ValueError:
            return web.json_response({"errors": ["Bad request: maxExceptions is not a number"]}, status=400)
        return web.json_response(flink_bodies.job_exceptions(self._details(request), limit))

    async def _job_config(self, request: web.Request) -> web.Response:
        return web.json_response(flink_bodies.job_config(self._details(request)))

    async def _checkpoint_details(self, request: web.Request) -> web.Response:
        view = self._dispatcher().checkpoint_statistics(request.match_info["job_id"].lower())
        try:
            checkpoint_id = int(request.match_info["checkpoint_id"])
            return web.json_response(flink_bodies.checkpoint_details(view["details"], view["restored_from"], checkpoint_id))
        except (ValueError, KeyError):
            raise web.HTTPNotFound(reason=f"no recent checkpoint {request.match_info['checkpoint_id']}") from None

    async def _vertex(self, request: web.Request) -> web.Response:
        return web.json_response(_of_vertex(request, lambda vid: flink_bodies.vertex_details(self._details(request), vid)))

    async def _vertex_task_managers(self, request: web.Request) -> web.Response:
        views = await self._task_managers()
        return web.json_response(_of_vertex(request, lambda vid: flink_bodies.vertex_task_managers(self._details(request), vid, views)))

    async def _accumulators(self, request: web.Request) -> web.Response:
        return web.json_response({"id": request.match_info["vertex_id"], "user-accumulators": []})

    async def _subtask_accumulators(self, request: web.Request) -> web.Response:
        body = _of_vertex(request, lambda vid: flink_bodies.vertex_details(self._details(request), vid))
        return web.json_response({"id": body["id"], "parallelism": body["parallelism"], "subtasks": []})

    async def _subtask_times(self, request: web.Request) -> web.Response:
        body = _of_vertex(request, lambda vid: flink_bodies.vertex_details(self._details(request), vid))
        return web.json_response({"id": body["id"], "name": body["name"], "now": body["now"], "subtasks": []})

    async def _job_manager_config(self, request: web.Request) -> web.Response:
        return web.json_response(flink_bodies.configuration_entries(self._configuration))

    async def _environment(self, request: web.Request) -> web.Response:
        # Flink describes its JVM; the JobManager here is a Python process (the Spark driver's JVM is the program's)
        version = f"Python {platform.python_version()} ({sys.implementation.name})"
        jvm = {"version": version, "arch": platform.machine(), "options": list(sys.argv)}
        return web.json_response({"jvm": jvm, "classpath": sys.path})

    async def _job_manager_logs(self, request: web.Request) -> web.Response:
        return web.json_response({"logs": self._log_files()})

    async def _job_manager_log_file(self, request: web.Request) -> web.StreamResponse:
        return self._log_file(request.match_info["name"])

    async def _job_manager_log(self, request: web.Request) -> web.StreamResponse:
        return self._log_file(JOB_MANAGER_LOG, missing_ok=True)

    async def _job_manager_stdout(self, request: web.Request) -> web.StreamResponse:
        return self._log_file(JOB_MANAGER_STDOUT, missing_ok=True)

    async def _thread_dump(self, request: web.Request) -> web.Response:
        names = {thread.ident: thread.name for thread in threading.enumerate() if thread.ident is not None}
        return web.json_response(flink_bodies.thread_dump(sys._current_frames(), names))

    async def _job_manager_metric_values(self, request: web.Request) -> web.Response:
        return web.json_response(flink_bodies.metric_collection(self._job_manager_metrics(), request.query.get("get")))

    async def _task_manager(self, request: web.Request) -> web.Response:
        view = await self._task_manager_view(request)
        metrics = await self._task_manager_metrics(view["id"])
        now_ms = int(time.time() * 1000)
        details = {"metrics": flink_bodies.task_manager_metrics(metrics), "allocatedSlots": []}
        return web.json_response(flink_bodies.task_manager_info(view, now_ms) | details)

    async def _task_manager_metric_values(self, request: web.Request) -> web.Response:
        metrics = await self._task_manager_metrics((await self._task_manager_view(request))["id"])
        return web.json_response(flink_bodies.metric_collection(metrics, request.query.get("get")))

    async def _task_manager_logs(self, request: web.Request) -> web.Response:
        tm_id = request.match_info["tm_id"]
        if self._tm_log_source is None:
            return web.json_response({"logs": []})
        try:
            logs = await self._tm_log_source.request_task_manager_log_list(tm_id)
        except (UnknownTaskExecutorError, RpcError) as exc:
            return _task_manager_error(tm_id, exc)
        return web.json_response({"logs": logs})

    async def _task_manager_log_file(self, request: web.Request) -> web.Response:
        return await self._task_manager_text(request.match_info["tm_id"], request.match_info["name"])

    async def _task_manager_log(self, request: web.Request) -> web.Response:
        return await self._task_manager_text(request.match_info["tm_id"], None)

    async def _task_manager_text(self, tm_id: str, name: str | None) -> web.Response:
        """The TaskManager's file ``name`` (None: its own log) as text; 404 when it has no such file, empty for its
        own log before it exists (a TaskManager without logs to show, too)."""
        served = None
        if self._tm_log_source is not None:
            try:
                served = await self._tm_log_source.request_task_manager_log_file(tm_id, name)
            except (UnknownTaskExecutorError, RpcError) as exc:
                return _task_manager_error(tm_id, exc)
        if served is not None:
            return web.Response(text=served["text"], content_type="text/plain")
        if name is None:
            return web.Response(text="", content_type="text/plain")
        raise web.HTTPNotFound()

    async def _task_manager_view(self, request: web.Request) -> dict[str, Any]:
        tm_id = request.match_info["tm_id"]
        for view in await self._task_managers():
            if view["id"] == tm_id:
                return view
        raise web.HTTPNotFound(reason=f"TaskManager {tm_id} is not registered")

    def _log_files(self) -> list[dict[str, Any]]:
        """Flink's LogInfo of each public file of the log directory (``size`` bytes, ``mtime`` ms)."""
        if self._log_dir is None or not self._log_dir.is_dir():
            return []
        found = []
        for path in sorted(self._log_dir.iterdir()):
            if path.is_file() and not path.name.startswith(PRIVATE_LOG_PREFIXES):
                stat = path.stat()
                found.append({"name": path.name, "size": stat.st_size, "mtime": int(stat.st_mtime * 1000)})
        return found

    def _log_file(self, name: str, missing_ok: bool = False) -> web.StreamResponse:
        """A public file of the log directory as text; empty when ``missing_ok`` and it does not exist (yet)."""
        path = (self._log_dir / name) if self._log_dir is not None else None
        public = "/" not in name and not name.startswith((".", *PRIVATE_LOG_PREFIXES))
        if path is None or not public or not path.is_file():
            if missing_ok and public:
                return web.Response(text="", content_type="text/plain")
            raise web.HTTPNotFound()
        return web.FileResponse(path, headers={"Content-Type": "text/plain; charset=utf-8"})


def _task_manager_error(tm_id: str, error: UnknownTaskExecutorError | RpcError) -> web.Response:
    """404 when the TaskManager is not registered (it ended, or never was), 503 when it did not answer within the ask
    timeout or failed; each with a message the dashboard shows."""
    if isinstance(error, UnknownTaskExecutorError):
        return web.json_response({"errors": [str(error)]}, status=404)
    return web.json_response({"errors": [f"TaskManager {tm_id} did not hand out its logs: {error}"]}, status=503)


def _of_vertex(request: web.Request, view: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    try:
        return view(request.match_info["vertex_id"])
    except KeyError:
        raise web.HTTPNotFound(reason=f"the job has no vertex {request.match_info['vertex_id']}") from None


async def _empty_list(request: web.Request) -> web.Response:
    return web.json_response([])


async def _empty_text(request: web.Request) -> web.Response:
    return web.Response(text="", content_type="text/plain")


async def _profiler_off(request: web.Request) -> web.Response:
    # not JSON: the dashboard shows a JSON error as a sticky message, and a plain one as "profiling is not enabled"
    return web.Response(status=404, text="the profiler is not available on a jobcluster cluster", content_type="text/plain")


def _static(body: dict[str, Any]) -> Handler:
    async def answer(request: web.Request) -> web.Response:
        return web.json_response(body)

    return answer
