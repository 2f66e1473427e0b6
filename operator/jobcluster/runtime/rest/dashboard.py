"""Flink's web dashboard, served by the job cluster's REST endpoint at ``/``.

Why Flink's own: a Flink user opens the JobManager's address in a browser, and
the REST API already answers in Flink's shapes, so Flink's dashboard (an Angular
application that only calls that API, with relative URLs) shows a jobcluster job
as it shows a Flink job. Its files are the ``web/`` folder of Maven Central's
``org.apache.flink:flink-runtime-web`` jar, never copied into this repository:
:func:`fetch_dashboard` downloads the pinned version once (checked against its
pinned SHA-256) and unpacks it into the cache
(``$JOBCLUSTER_CACHE/flink-runtime-web-<version>/web``, default
``~/.cache/jobcluster``); ``make venv`` and the image build call it
(``python -m jobcluster.runtime.rest.dashboard``), which fetches every pinned
version. A cluster without the files answers ``/`` with a page that says how
to get them; its REST API is unaffected.

Two releases are pinned (:data:`FLINK_WEB_RELEASES`): Flink 2.3.0's dashboard,
served by default, and Flink 1.20.3's, which
``jobcluster.web.dashboard-version: 1.20.3`` selects. Flink has no such
option (a Flink cluster serves the dashboard of its own release); here one
REST API answers both dashboards' paths in their releases' shapes, and a
user whose tools or habits are Flink 1.20's keeps its dashboard.

Serving follows Flink's StaticFileServerHandler: ``/`` is ``index.html`` (with
jobcluster's scripts added, ``dashboard_additions.py``), files get their content
type (the dashboard's scripts are ES modules, which browsers refuse under any
other type), ``Cache-Control: private, max-age=300``, and ``Last-Modified`` with
304 answers (aiohttp's FileResponse; not for the index); a path outside the
folder is refused.

One addition to ``index.html``: the dashboard's URLs are relative to the page
(``<base href="./">``), which works only when the page's path ends with ``/``.
Behind YARN's web proxy the page may be opened as ``/proxy/<application id>``,
and the proxy asks this endpoint for ``/`` whether the slash was there or not
(and follows any redirect itself), so the endpoint cannot tell; a line of script
first in the page moves a page without it to the path with it
(:func:`index_html`).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import os
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import requests
from aiohttp import web

#: The pinned dashboards, release -> SHA-256 of its flink-runtime-web jar. Each digest is of the jar whose SHA-1 is
#: Maven Central's ``.sha1`` for it (1.20.3: 10e43da1..., 2.3.0: 8c10a5de...), computed here once: SHA-1 no longer
#: stands against a forged file. The releases are those of Flink's CLI and RestClusterClient the tests run
#: (tests/infra/flink/versions).
FLINK_WEB_RELEASES = {
    "2.3.0": "c5476003a9357e6ce876a19d1daa7e37b573ad9fada6448fe665de8bad7162e8",
    "1.20.3": "84328e9d5f9e7e2419f0469e98a64ad853fa546e5c004926b1cfa774ef5b0c2b",
}
#: The dashboard served unless ``jobcluster.web.dashboard-version`` names another of :data:`FLINK_WEB_RELEASES`.
FLINK_WEB_VERSION = "2.3.0"
#: The option that selects the release (declared in jobcluster.config.options; named here, as this module imports
#: nothing of jobcluster).
VERSION_OPTION = "jobcluster.web.dashboard-version"
DOWNLOAD_TIMEOUT = (10.0, 120.0)  # seconds: connect, read (the jar is 4 MB)
CACHE_CONTROL = "private, max-age=300"  # Flink's StaticFileServerHandler's
_COMPLETE = ".complete"
#: First in index.html's head: a page whose path does not end with "/" (nor names the file) goes to the path with it.
_TRAILING_SLASH_SCRIPT = (
    b"<script>(function (l) { var p = l.pathname;"
    rb' if (p.slice(-1) !== "/" && !/\/index\.html$/.test(p)) { l.replace(p + "/" + l.search + l.hash); } })(location);</script>'
)
_HEAD = re.compile(rb"<head(\s[^>]*)?>", re.IGNORECASE)


def dashboard_url(version: str = FLINK_WEB_VERSION) -> str:
    """Maven Central's URL of the flink-runtime-web jar of ``version``."""
    return f"https://repo1.maven.org/maven2/org/apache/flink/flink-runtime-web/{version}/flink-runtime-web-{version}.jar"


#: The default release's jar.
FLINK_WEB_URL = dashboard_url()


def checked_version(version: str | None) -> str:
    """``version``, one of :data:`FLINK_WEB_RELEASES` (None: :data:`FLINK_WEB_VERSION`); ValueError for another."""
    chosen = version or FLINK_WEB_VERSION
    if chosen not in FLINK_WEB_RELEASES:
        raise ValueError(f"{VERSION_OPTION} {chosen!r} is not a pinned dashboard; choose one of {', '.join(FLINK_WEB_RELEASES)}")
    return chosen


def default_dashboard_dir(environ: dict[str, str] | None = None, version: str | None = None) -> Path:
    """Where :func:`fetch_dashboard` puts the files of ``version`` (default :data:`FLINK_WEB_VERSION`):
    ``$JOBCLUSTER_CACHE/flink-runtime-web-<version>/web``."""
    env = os.environ if environ is None else environ
    base = env.get("JOBCLUSTER_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "jobcluster")
    return Path(base) / f"flink-runtime-web-{checked_version(version)}" / "web"


def dashboard_installed(directory: Path) -> bool:
    """Whether ``directory`` holds a complete dashboard (unpacked whole by :func:`fetch_dashboard`)."""
    return (directory / "index.html").is_file() and (directory.parent / _COMPLETE).is_file()


def fetch_dashboard(directory: Path | None = None, url: str | None = None, sha256: str | None = None, version: str | None = None) -> Path:
    """The folder of the dashboard of ``version`` (default :data:`FLINK_WEB_VERSION`), downloaded from ``url``
    (default: Maven Central's jar of that version) and unpacked into ``directory`` (default
    :func:`default_dashboard_dir`) unless it is there already; concurrent callers unpack into their own temporary
    folders and the first rename wins. ``sha256``: the digest the download must have (default: the version's pin).

    Raises:
        OSError: ``url`` cannot be reached, or the download's SHA-256 is not ``sha256`` (nothing is kept).
        ValueError: ``version`` is not one of :data:`FLINK_WEB_RELEASES`.
    """
    version = checked_version(version)
    url = url or dashboard_url(version)
    sha256 = sha256 or FLINK_WEB_RELEASES[version]
    target = directory or default_dashboard_dir(version=version)
    if dashboard_installed(target):
        return target
    try:
        response = requests.get(url, timeout=DOWNLOAD_TIMEOUT)
        response.raise_for_status()
    except requests.RequestException as exc:
        raise OSError(f"cannot download Flink's web dashboard from {url}: {exc}") from exc
    digest = hashlib.sha256(response.content).hexdigest()
    if digest != sha256:
        raise OSError(f"{url} has SHA-256 {digest}, not the expected {sha256}: not used")
    home = target.parent
    home.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{home.name}-", dir=home.parent))
    scratch.chmod(0o755)  # mkdtemp's 0700 would keep the files from a JobManager of another user (an image's)
    try:
        with zipfile.ZipFile(io.BytesIO(response.content)) as jar:
            for member in jar.infolist():
                relative = Path(member.filename[len("web/") :])
                if member.filename.startswith("web/") and not member.is_dir() and ".." not in relative.parts:
                    destination = scratch / target.name / relative  # the jar's web/ becomes the folder asked for
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    destination.write_bytes(jar.read(member))
        (scratch / _COMPLETE).write_text(sha256)
        if not dashboard_installed(target):
            shutil.rmtree(home, ignore_errors=True)  # an incomplete one: a complete one only ever appears by this rename
            try:
                scratch.rename(home)
            except OSError:
                if not dashboard_installed(target):
                    raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def add_dashboard_routes(app: web.Application, directory: Path, additions: Callable[[str], str] = str) -> None:
    """Serve the dashboard in ``directory`` at ``/`` and every file below it, its ``index.html`` (text) through
    ``additions`` (jobcluster's scripts, ``dashboard_additions.py``, given by the caller: this module imports
    nothing of jobcluster, so that the image can run it alone); register after the REST routes (a REST path wins
    over a file of the same name, as in Flink)."""
    root = directory.resolve()

    async def serve(request: web.Request) -> web.StreamResponse:
        name = request.match_info.get("path") or "index.html"
        if not dashboard_installed(root) and name == "index.html":
            return _not_installed(root)
        path = (root / name).resolve()
        if not path.is_relative_to(root):
            return web.Response(status=403, text="Forbidden.")
        if not path.is_file():
            raise web.HTTPNotFound()  # what an unknown REST path gets too: Flink's JSON error
        if name == "index.html":  # with the trailing-slash line first and jobcluster's scripts last
            html = additions((await asyncio.to_thread(index_html, path)).decode("utf-8"))
            return web.Response(text=html, content_type="text/html", headers={"Cache-Control": CACHE_CONTROL})
        return web.FileResponse(path, headers={"Cache-Control": CACHE_CONTROL})

    app.router.add_get("/", serve)
    app.router.add_get("/{path:.+}", serve)


def index_html(path: Path) -> bytes:
    """The dashboard's ``index.html`` at ``path`` with the trailing-slash script first in its head (see the module
    docstring); unchanged when it has no head."""
    html = path.read_bytes()
    head = _HEAD.search(html)
    if head is None:
        return html
    return html[: head.end()] + _TRAILING_SLASH_SCRIPT + html[head.end() :]


def _not_installed(directory: Path) -> web.Response:
    text = (
        "<!doctype html><title>jobcluster</title><h1>Flink's web dashboard is not installed here</h1>"
        f"<p>This job cluster's REST API works (try <a href='overview'>overview</a> or <a href='jobs/overview'>jobs</a>); "
        f"the dashboard's files are not in <code>{directory}</code>. Fetch them where the JobManager runs with "
        "<code>python -m jobcluster.runtime.rest.dashboard</code> (<code>make venv</code> does), or point "
        "<code>jobcluster.web.dashboard-dir</code> at a copy.</p>"
    )
    return web.Response(status=404, text=text, content_type="text/html")


def main(argv: list[str] | None = None) -> int:
    """``python -m jobcluster.runtime.rest.dashboard [--version VERSION] [DIR]``: fetch the dashboard of each pinned
    release into the cache, or of VERSION alone; with DIR, that one release (default :data:`FLINK_WEB_VERSION`)
    into DIR. Prints each folder, one a line; exit code 1 when one cannot be fetched, 2 for bad arguments."""
    parser = argparse.ArgumentParser(prog="python -m jobcluster.runtime.rest.dashboard", description="Fetch Flink's web dashboard.")
    parser.add_argument("--version", choices=tuple(FLINK_WEB_RELEASES), help="one release only (default: every pinned release)")
    parser.add_argument("directory", nargs="?", type=Path, help=f"where to unpack it (one release; default: {FLINK_WEB_VERSION})")
    args = parser.parse_args(argv)
    versions = [args.version] if args.version else [FLINK_WEB_VERSION] if args.directory else list(FLINK_WEB_RELEASES)
    try:
        for version in versions:
            print(fetch_dashboard(args.directory, version=version))
    except OSError as exc:
        print(f"dashboard: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
