"""jobcluster's own additions to Flink's web dashboard: scripts of this package, added to the ``index.html`` it serves.

Why at serve time: the dashboard's files are Flink's, fetched from Maven
Central and never changed on disk (``dashboard.py``); what a Spark job needs
beyond them (a link to Spark's own UI, ``static/spark-ui-link.js``) is a script
tag added to the page as it is served, so that the additions never depend on
Angular's internals. The scripts are served at ``/jobcluster/<file>`` and
linked relative, as the dashboard's own files are (behind YARN's web proxy
too).
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

#: This package's files for the dashboard.
STATIC_DIR = Path(__file__).parent / "static"
#: Where the endpoint serves them.
ADDITIONS_PATH = "/jobcluster"
#: The scripts every served ``index.html`` gets, in order.
SCRIPTS = ("spark-ui-link.js",)


def with_additions(index_html: str) -> str:
    """``index_html`` with a ``<script defer>`` tag for each of :data:`SCRIPTS` at the end of its body (at its end
    when it has no ``</body>``)."""
    tags = "".join(f'<script src="{ADDITIONS_PATH.lstrip("/")}/{name}" defer></script>' for name in SCRIPTS)
    end = index_html.rfind("</body>")
    if end < 0:
        return index_html + tags
    return index_html[:end] + tags + index_html[end:]


def add_addition_routes(app: web.Application, cache_control: str) -> None:
    """Serve :data:`SCRIPTS` at ``/jobcluster/<name>`` with ``cache_control``; register before the dashboard's catch-all path."""

    async def serve(request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        if name not in SCRIPTS:
            raise web.HTTPNotFound()
        return web.FileResponse(STATIC_DIR / name, headers={"Cache-Control": cache_control})

    app.router.add_get(ADDITIONS_PATH + "/{name}", serve)
