"""Spark's own web UI of the job, served by the REST endpoint under ``/spark/``: a reverse proxy to the driver's UI.

Why a proxy: the driver runs in the JobManager and its UI binds to the
cluster's bind host (a pod's IP, a YARN node's address, loopback locally) on a
port picked at start, which a browser often cannot reach; the REST endpoint is
what a user reaches (a port-forward, YARN's web proxy), and the dashboard links
here (``static/spark-ui-link.js``).

The UI's root. Spark starts every link of its pages with the page's UI root
(Spark's ``UIUtils.uiRoot``, 3.5 and 4.x: the system property ``spark.ui.proxyBase``,
else the environment's ``APPLICATION_WEB_PROXY_BASE``, else the request's
``X-Forwarded-Context``). No fixed root fits every way in: the UI is at
``/spark/`` opened directly or through a port-forward, and at
``/proxy/<application>/spark/`` through YARN's web proxy, which tells the
application nothing of its own path (Hadoop 3.3's WebAppProxyServlet passes on
only User-Agent, Accept*, Content-Type, Origin and CORS headers). So each
request gets the way back to ``/spark/`` from its own page's directory, relative
(``.``, ``..``, ``../..``) as its ``X-Forwarded-Context``, and the browser
resolves the links against whatever URL it shows. The cluster keeps the other
two sources empty (``spark_application.py``, ``spark/conf.py``).

Redirects. YARN's proxy follows an application's redirects itself (Apache
HttpClient's default), so the browser shows a redirected page under the URL it
asked for; links relative to the page are right only for that URL. The proxy
therefore follows the driver's own redirects (``/`` to ``/jobs/``, a missing
trailing slash) and answers the page for the URL asked: no address of the
driver reaches the browser. A redirect to another place is passed on as it is.

Spark's scripts behind a proxy. The Executors and stage pages build their
REST calls from the page's URL when a path segment of it is ``proxy``
(YARN's ``/proxy/<application id>/``, ``kubectl proxy``'s ``.../proxy/``): they
ask ``<URL up to the segment after proxy>/api/v1/applications/<that
segment>/...`` and ``.../static/<page>-template.html``. Behind YARN's proxy those
are this endpoint's ``/api/v1/applications/<YARN's application id>/...`` and
``/static/...``, so both are served from the driver too; and as a job cluster
has one Spark application, any application id in ``/api/v1/applications/<id>``
means that one.

Access: as the REST API's reads. GET and HEAD are open; the endpoint answers
any other method 401 without the cluster's token and 405 with it (Spark's kill
links are off anyway, ``spark.ui.killEnabled=false``). The request's
``Authorization`` and cookies never reach the driver; the driver's cookies never
reach the browser. The UI shows Spark's configuration with Spark's redaction
(``spark.redaction.regex``), so ``spark.authenticate.secret`` reads
``*********(redacted)``.

When no driver runs (the job has not started its program yet, restarts, or
has ended), every path answers a short HTML page that says so: 503 with
``Retry-After`` while the job may still start one, 404 once it has ended; a
person reads it in the browser, so it is never the REST API's JSON error.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from jobcluster.jobgraph.job_status import TERMINAL_JOB_STATES
from jobcluster.runtime.dispatcher.mini_dispatcher import MiniDispatcher

log = logging.getLogger(__name__)

#: Where the endpoint serves Spark's UI.
MOUNT = "/spark"
#: The request header Spark's UI takes its root from (the third of UIUtils.uiRoot's sources).
ROOT_HEADER = "X-Forwarded-Context"
CONNECT_TIMEOUT = 5.0  # seconds to reach the driver's UI (in the same container)
READ_TIMEOUT = 60.0  # seconds between two reads of its answer (a large application's pages take a while to render)
MAX_REDIRECTS = 5  # redirects of the driver's own followed for one request (Spark makes at most two)
RETRY_AFTER = 5  # seconds, for a browser while the job's driver is still to come
CHUNK = 64 * 1024  # bytes copied at a time
#: The request headers passed to the driver: what a page needs to be answered as the browser asked.
FORWARDED_REQUEST_HEADERS = ("Accept", "Accept-Encoding", "Accept-Language", "User-Agent", "If-Modified-Since", "If-None-Match")
# Hop-by-hop headers (RFC 9110 7.6.1) belong to one connection; the driver's cookies would be scoped to the
# endpoint's whole origin, and Spark's UI uses none.
_DROPPED_RESPONSE_HEADERS = frozenset(
    h.lower()
    for h in ("Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade")
) | {"set-cookie"}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_APPLICATION_PATH = re.compile(r"(/api/v1/applications/)([^/?]+)")
_APPEARS = "Spark's UI appears once the program has created its SparkContext."
_NOT_ANSWERING = f"The job's program runs, but Spark's UI does not answer yet. {_APPEARS}"


@dataclass(frozen=True)
class Unavailable:
    """Why no Spark UI can be shown: the HTTP ``status`` (503: it may still come, 404: gone, 502 and 504: the driver's
    UI failed to answer) and the ``reason``, one sentence."""

    status: int
    reason: str


def ui_root(path: str) -> str:
    """The UI root for the page at ``path`` (a raw URL path at or below :data:`MOUNT`): the way from that page's
    directory back to ``MOUNT/``, relative (``.`` for ``/spark/`` and ``/spark/jobs``, ``..`` for ``/spark/jobs/``,
    ``spark`` for ``/spark`` itself, whose directory is the endpoint's root)."""
    if path == MOUNT:
        return MOUNT.lstrip("/")
    depth = path.count("/") - 2  # directories below MOUNT/ in the page's directory
    return "/".join([".."] * depth) or "."


def root_from(path: str) -> str:
    """The way from the directory of the page at ``path`` (a raw URL path) back to the endpoint's root (the dashboard):
    ``./`` for ``/spark``, ``./../`` for ``/spark/``, ..."""
    return "./" + "../" * (path.count("/") - 1)


def driver_path(path: str, app_id: str | None) -> str:
    """The driver's path for ``path`` (raw, below the mount or not): an application id in ``/api/v1/applications/<id>``
    replaced by ``app_id`` (the cluster's one application), when known."""
    if app_id is None:
        return path
    return _APPLICATION_PATH.sub(lambda m: m.group(1) + app_id, path, count=1)


def request_headers(headers: Mapping[str, str], root: str) -> CIMultiDict[str]:
    """The headers of a request to the driver: the browser's :data:`FORWARDED_REQUEST_HEADERS` and the UI root ``root``."""
    forwarded = CIMultiDict((name, headers[name]) for name in FORWARDED_REQUEST_HEADERS if name in headers)
    forwarded[ROOT_HEADER] = root
    return forwarded


def response_headers(headers: Mapping[str, str]) -> CIMultiDict[str]:
    """The driver's response headers that the browser gets: all but the hop-by-hop ones (also those named in its
    ``Connection``) and cookies."""
    named = {name.strip().lower() for name in headers.get("Connection", "").split(",")}
    return CIMultiDict((name, value) for name, value in headers.items() if name.lower() not in _DROPPED_RESPONSE_HEADERS | named)


def unavailable_page(unavailable: Unavailable, path: str) -> web.Response:
    """The answer at ``path`` when no Spark UI can be shown: a short HTML page with the reason and a link back to the
    dashboard; with ``Retry-After`` and a reload after that long when it is 503."""
    refresh = f'<meta http-equiv="refresh" content="{RETRY_AFTER}">' if unavailable.status == 503 else ""
    body = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{refresh}<title>Spark UI: not available</title></head>'
        f"<body><h1>Spark's UI is not available</h1><p>{html.escape(unavailable.reason, quote=False)}</p>"
        f'<p><a href="{root_from(path)}">The job cluster\'s dashboard</a></p></body></html>'
    )
    headers = {"Cache-Control": "no-store"} | ({"Retry-After": str(RETRY_AFTER)} if unavailable.status == 503 else {})
    return web.Response(status=unavailable.status, text=body, content_type="text/html", headers=headers)


class SparkUiProxy:
    """Serves the driver's UI of the job's running program (``dispatcher().spark_ui()``) under :data:`MOUNT`.

    Its HTTP client lives from the application's start to its cleanup (:meth:`install`).
    """

    def __init__(self, dispatcher: Callable[[], MiniDispatcher]) -> None:
        self._dispatcher = dispatcher
        self._session: aiohttp.ClientSession | None = None

    def install(self, app: web.Application) -> None:
        """Serve :data:`MOUNT` and below, and the paths Spark's scripts ask behind YARN's proxy, with GET and HEAD (as
        they are, not under ``/v1``: they are not Flink's); register before the dashboard's files."""
        paths = (
            MOUNT,
            MOUNT + "/{tail:.*}",
            # what Spark's Executors and stage pages ask behind a proxy whose path has a "proxy" segment (YARN's)
            "/api/v1/applications/{app_id}/{tail:.*}",
            "/static/{tail:.*}",
        )
        for path in paths:
            app.router.add_get(path, self._serve)
        app.cleanup_ctx.append(self._client)

    async def _client(self, app: web.Application) -> AsyncIterator[None]:
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT),
            auto_decompress=False,  # the body goes on as the driver encoded it, with its Content-Encoding
            cookie_jar=aiohttp.DummyCookieJar(),  # one client for every browser: it must remember nothing
            skip_auto_headers=("Accept-Encoding", "User-Agent"),  # the browser's own, or none
        )
        try:
            yield
        finally:
            await self._session.close()

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        path = request.rel_url.raw_path
        ui = self._dispatcher().spark_ui()
        if ui is None:
            return unavailable_page(self._why_no_driver(), path)
        below = path[len(MOUNT) :] if path == MOUNT or path.startswith(MOUNT + "/") else path
        query = request.rel_url.raw_query_string
        try:
            app_id = ui.app_id if ui.app_id is not None or not _APPLICATION_PATH.search(below) else await self._app_id(ui.url)
            target = URL(ui.url + (driver_path(below, app_id) or "/") + (f"?{query}" if query else ""), encoded=True)
            upstream = await self._fetch(request.method, target, request_headers(request.headers, ui_root(path)))
        except TimeoutError:
            reason = f"Spark's UI did not answer in time ({CONNECT_TIMEOUT:.0f} s to connect, {READ_TIMEOUT:.0f} s between reads)."
            return unavailable_page(Unavailable(504, reason), path)
        except aiohttp.ClientConnectorError:
            # the program runs, but its SparkContext (which starts the UI) is not up yet, or already stopped
            return unavailable_page(Unavailable(503, _NOT_ANSWERING), path)
        except aiohttp.ClientError as exc:
            log.warning("Spark's UI at %s failed to answer %s: %s", ui.url, path, exc)
            return unavailable_page(Unavailable(502, f"Spark's UI failed to answer: {exc}."), path)
        try:
            return await _relay(request, upstream)
        finally:
            upstream.release()

    async def _app_id(self, ui_url: str) -> str | None:
        """The driver's Spark application id, from its own API: asked when the JobMaster has not read it yet (its first
        poll of the driver's UI comes some seconds after the SparkContext starts). Raises aiohttp.ClientError, TimeoutError."""
        assert self._session is not None
        async with self._session.get(f"{ui_url}/api/v1/applications") as answer:
            try:
                applications = await answer.json(content_type=None) if answer.status == 200 else []
            except ValueError:
                return None  # the UI answers with a page until it has attached its API
        return applications[0]["id"] if applications else None

    async def _fetch(self, method: str, url: URL, headers: CIMultiDict[str]) -> aiohttp.ClientResponse:
        """The driver's answer to ``method url``, its own redirects followed (see the module's docstring)."""
        assert self._session is not None  # _client runs before the first request
        for _ in range(MAX_REDIRECTS + 1):
            upstream = await self._session.request(method, url, headers=headers, allow_redirects=False)
            location = upstream.headers.get("Location")
            if upstream.status not in _REDIRECTS or location is None:
                return upstream
            target = url.join(URL(location, encoded=True))
            if target.origin() != url.origin():
                return upstream  # elsewhere: the browser goes there itself
            upstream.release()
            url = target
        raise aiohttp.ClientError(f"it redirected more than {MAX_REDIRECTS} times")

    def _why_no_driver(self) -> Unavailable:
        dispatcher = self._dispatcher()
        job_ids = dispatcher.job_ids()
        if not job_ids:
            return Unavailable(503, f"The job has not started yet: {_APPEARS}")
        details = dispatcher.job_details(job_ids[0])
        name, state = details["name"], details["state"]
        if state in TERMINAL_JOB_STATES:
            return Unavailable(404, f'The job "{name}" is {state}: its Spark driver has stopped, and Spark\'s UI with it.')
        return Unavailable(503, f'The job "{name}" is {state} and its program is not running yet: {_APPEARS}')


async def _relay(request: web.Request, upstream: aiohttp.ClientResponse) -> web.StreamResponse:
    """Stream the driver's answer to the browser, chunk by chunk, with :func:`response_headers`."""
    response = web.StreamResponse(status=upstream.status, reason=upstream.reason, headers=response_headers(upstream.headers))
    try:
        await response.prepare(request)
        if request.method != "HEAD":
            async for chunk in upstream.content.iter_chunked(CHUNK):
                await response.write(chunk)
        await response.write_eof()
    except ConnectionError:  # reset, or lost while the answer waited to be sent
        # the browser went away mid-answer (a page left while it loaded): nothing to tell anyone
        log.debug("the client of %s left before Spark's answer was written", request.path)
    return response
