"""The browser tests' support (tests/support/browser.py) against a real headless Chromium and a real HTTP server.

A page served by ``http.server`` logs to the console, fetches a JSON file, a
missing file and a directory (redirected), and writes what it got into itself.
What the browser reports must be what the page did, and the server's own
record of what it served must agree with the browser's record of what it sent.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest
from selenium.webdriver.common.selenium_manager import SeleniumManager

from tests.support.browser import VIEWPORT, headless_chromium

pytestmark = pytest.mark.browser

PAGE = """<!doctype html>
<html>
<head>
<meta charset="utf-8">
<title>browser support</title>
<link rel="icon" href="data:,">
</head>
<body>
<p id="out">loading</p>
<script>
console.log("an info line, no error");
console.error("the page's own error");
(async () => {
  const data = await (await fetch("./data.json")).json();
  const missing = await fetch("./missing?attempt=1");
  const folder = await fetch("./folder");
  document.getElementById("out").textContent =
    `data: ${data.greeting}; missing: ${missing.status}; folder: ${folder.status} ${await folder.text()}`;
})();
</script>
</body>
</html>
"""
# Chromium's console line for console.error is "<script's URL> <line>:<column> <quoted text>", where line and
# column are DevTools' call frame's: counted from 0, and the column is that of the called name `error`.
ERROR_LINE = next(n for n, line in enumerate(PAGE.splitlines()) if "console.error" in line)
ERROR_AT = f"{ERROR_LINE}:{PAGE.splitlines()[ERROR_LINE].index('error(')}"
SHOWN = "data: hello; missing: 404; folder: 200 in the folder"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class Site(ThreadingHTTPServer):
    """Serves ``root`` on a free port of 127.0.0.1 and records each response as (method, path, status)."""

    def __init__(self, root: Path) -> None:
        self.served: list[tuple[str, str, int]] = []
        super().__init__(("127.0.0.1", 0), partial(RecordingHandler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.server_address[1]}/"


class RecordingHandler(SimpleHTTPRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        assert isinstance(self.server, Site)
        self.server.served.append((self.command, urlsplit(self.path).path, int(code)))

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the record above is what the test reads; pytest's output needs no access log


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    (tmp_path / "index.html").write_text(PAGE)
    (tmp_path / "data.json").write_text('{"greeting": "hello"}')
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "index.html").write_text("in the folder")
    server = Site(tmp_path)
    thread = threading.Thread(target=server.serve_forever, name="browser-test-site", daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.fixture(autouse=True)
def no_selenium_manager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Selenium Manager would download a browser or driver: it must never be asked."""

    def refuse(self: SeleniumManager, args: list[str]) -> dict[str, str]:
        raise AssertionError(f"Selenium Manager was asked for {args}")

    monkeypatch.setattr(SeleniumManager, "binary_paths", refuse)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE), f"{path} is no PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_what_the_page_did_is_captured(site: Site, browser_artefacts: Path) -> None:
    with headless_chromium(browser_artefacts) as browser:
        browser.open(site.url)
        shown = browser.wait_for_text(SHOWN, timeout=20)
        console = browser.console()
        errors = browser.console_errors()
        requests = browser.requests()
        paths = browser.paths(site.url)
        shot = browser.screenshot("page")

    assert shown == SHOWN
    assert {(m.level, m.source) for m in console if "an info line, no error" in m.message} == {("INFO", "console-api")}
    # Chromium reports a failed load on the console as well: the 404 of the fetch is a SEVERE line of its own.
    assert [(m.source, m.message) for m in errors] == [
        ("console-api", f'{site.url} {ERROR_AT} "the page\'s own error"'),
        ("network", f"{site.url}missing?attempt=1 - Failed to load resource: the server responded with a status of 404 (File not found)"),
    ]

    sent = [(r.method, urlsplit(r.url).path, r.status) for r in requests]
    assert sent == [
        ("GET", "/", 200),
        ("GET", "/data.json", 200),
        ("GET", "/missing", 404),
        ("GET", "/folder", 301),  # http.server redirects a directory to its name with a slash
        ("GET", "/folder/", 200),
    ]
    assert sorted(site.served) == sorted(sent)
    assert [r.url for r in requests][2] == f"{site.url}missing?attempt=1"
    assert paths == {"/", "/data.json", "/missing", "/folder", "/folder/"}
    assert browser.paths(site.url + "folder") == {"/"}
    assert browser.paths(site.url.replace("127.0.0.1", "localhost")) == set()

    assert shot == browser_artefacts / "page.png"
    assert png_size(shot) == VIEWPORT
    assert not (browser_artefacts / "failure.png").exists()
    assert (browser_artefacts / "chromedriver.log").stat().st_size > 0
    with pytest.raises(RuntimeError, match="the browser has stopped"):
        browser.screenshot("too late")


def test_a_failure_keeps_the_evidence_and_stops_the_browser(site: Site, browser_artefacts: Path) -> None:
    started: list[psutil.Process] = []

    def browse_then_fail() -> None:
        with headless_chromium(browser_artefacts) as browser:
            browser.open(site.url)
            browser.wait_for_text(SHOWN, timeout=20)
            driver = psutil.Process(browser.driver.service.process.pid)
            started.extend([driver, *driver.children(recursive=True)])
            browser.wait_for_text("never shown", timeout=1)

    with pytest.raises(TimeoutError) as raised:
        browse_then_fail()

    assert f"'never shown' not shown on {site.url} after 1 s; the page shows: {SHOWN!r}" in str(raised.value)
    assert png_size(browser_artefacts / "failure.png") == VIEWPORT
    console_log = (browser_artefacts / "console.log").read_text().splitlines()
    assert f'SEVERE console-api {site.url} {ERROR_AT} "the page\'s own error"' in console_log
    network_log = (browser_artefacts / "network.log").read_text().splitlines()
    assert f"404 GET {site.url}missing?attempt=1" in network_log
    assert raised.value.__notes__ == [
        f"browser: screenshot at the failure in {browser_artefacts / 'failure.png'}",
        f"browser: console and network logs in {browser_artefacts}",
    ]
    assert len(started) > 1, "chromium's processes are not chromedriver's children: this test cannot see them end"
    _, alive = psutil.wait_procs(started, timeout=10)
    assert alive == [], f"chromedriver or chromium outlived the browser: {alive}"
