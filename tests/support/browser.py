"""Headless Chromium for browser tests: Debian's ``chromium`` driven by Debian's ``chromedriver`` through Selenium.

``headless_chromium(artefacts)`` starts one browser and yields a :class:`Browser`,
which opens pages, waits for text, and reports what the page did: its console
messages and the requests it sent, with their HTTP statuses. Screenshots go to
``artefacts`` (the ``browser_artefacts`` fixture gives a per-test directory).

Both programs come from Debian's packages ``chromium`` and ``chromium-driver``,
which ``make packages`` (and so ``make test``) installs; chromium-driver depends
on the chromium of its own version, so the two always match. Selenium Manager,
which would download a browser and a driver of its own, is never asked: the
driver's path is given.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
VIEWPORT = (1400, 900)  # width, height in CSS pixels: every screenshot has this size
PAGE_LOAD_TIMEOUT = 30  # seconds: a page that hangs fails its test instead of waiting out Selenium's 300 s

FAILURE_SCREENSHOT = "failure.png"
FAILURE_CONSOLE = "console.log"
FAILURE_NETWORK = "network.log"
DRIVER_LOG = "chromedriver.log"


class ConsoleMessage(NamedTuple):
    """One line of the browser's console, as Chromium reports it.

    ``level`` is ``SEVERE``, ``WARNING``, ``INFO`` or ``DEBUG``; ``source`` says
    where it came from (``console-api`` for ``console.*`` calls, ``network`` for
    failed loads, ``javascript`` for uncaught errors); ``message`` starts with
    the script's URL and line for ``console-api`` lines.
    """

    level: str
    source: str
    message: str


class Request(NamedTuple):
    """One request of the browser's pages (a page's own load too): ``status`` is the HTTP status, ``None`` when no response came."""

    method: str
    url: str
    status: int | None


class Browser:
    """One headless Chromium window; see :func:`headless_chromium`.

    ``driver`` is Selenium's WebDriver, for what these methods do not cover.
    Once the browser has stopped (after the ``with`` block), ``console``,
    ``console_errors``, ``requests`` and ``paths`` answer from what was
    recorded until then; ``open``, ``wait_for_text`` and ``screenshot`` raise
    ``RuntimeError``.
    """

    def __init__(self, driver: webdriver.Chrome, artefacts: Path) -> None:
        self.driver = driver
        self.artefacts = artefacts
        self._console: list[ConsoleMessage] = []
        self._requests: list[Request] = []
        self._request_index: dict[str, int] = {}  # DevTools requestId -> its latest entry in _requests
        self._stopped = False

    def open(self, url: str) -> None:
        """Load ``url`` and wait for its ``load`` event (at most ``PAGE_LOAD_TIMEOUT`` seconds).

        Raises selenium's ``TimeoutException`` when the page does not load in time.
        """
        self._check_running()
        self.driver.get(url)

    def wait_for_text(self, text: str, timeout: float = 10.0) -> str:
        """Wait until the page's visible text contains ``text``; return that whole visible text.

        Raises ``TimeoutError`` after ``timeout`` seconds, with the URL and the start of the text the page showed last.
        """
        self._check_running()
        deadline = time.monotonic() + timeout
        shown = ""
        while True:
            try:
                shown = self.driver.find_element(By.TAG_NAME, "body").text
            except (NoSuchElementException, StaleElementReferenceException):
                pass  # a document still being (re)built has no body, or another one by now
            if text in shown:
                return shown
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{text!r} not shown on {self.driver.current_url} after {timeout} s; the page shows: {shown[:500]!r}")
            time.sleep(0.1)

    def console(self) -> list[ConsoleMessage]:
        """Every console message of this browser so far, oldest first."""
        self._drain_logs()
        return list(self._console)

    def console_errors(self) -> list[ConsoleMessage]:
        """The console messages of level ``SEVERE`` so far (``console.error``, uncaught errors, failed loads), oldest first."""
        return [entry for entry in self.console() if entry.level == "SEVERE"]

    def requests(self) -> list[Request]:
        """Every request the browser's pages sent so far, in the order they were sent; a redirect is a request of its own."""
        self._drain_logs()
        return list(self._requests)

    def paths(self, base_url: str) -> set[str]:
        """The paths of the requests sent under ``base_url``, relative to it (``/`` for ``base_url`` itself), without query strings."""
        return paths_under(base_url, (request.url for request in self.requests()))

    def screenshot(self, name: str) -> Path:
        """Save a PNG of the window as ``<artefacts>/<name>.png`` (``.png`` added unless ``name`` has it); return its path.

        Raises ``ValueError`` for a ``name`` that is not a plain file name, and
        selenium's ``WebDriverException`` when the browser cannot take it.
        """
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"a screenshot's name must be a plain file name: {name!r}")
        self._check_running()
        path = self.artefacts / (name if name.endswith(".png") else f"{name}.png")
        path.write_bytes(self.driver.get_screenshot_as_png())
        return path

    def _check_running(self) -> None:
        if self._stopped:
            raise RuntimeError("the browser has stopped: only what it recorded can still be read")

    def _stop(self) -> None:
        try:
            self._drain_logs()
        except Exception:  # noqa: BLE001 - a browser that crashed has nothing more to give; what was read is kept
            pass
        self._stopped = True
        self.driver.quit()  # never raises: it ends the session if it can, then stops chromedriver

    def _drain_logs(self) -> None:
        if self._stopped:
            return
        # chromedriver hands out each log entry once: every read is kept here, so that each query sees the whole session.
        for entry in self.driver.get_log("browser"):
            self._console.append(ConsoleMessage(entry["level"], entry.get("source", ""), entry["message"]))
        for entry in self.driver.get_log("performance"):
            self._record_network_event(json.loads(entry["message"])["message"])

    def _record_network_event(self, event: dict[str, Any]) -> None:
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            request_id = params["requestId"]
            redirect = params.get("redirectResponse")
            if redirect is not None and request_id in self._request_index:
                # A redirect reuses its request's id: the response that redirected belongs to the entry before.
                self._set_status(request_id, int(redirect["status"]))
            self._request_index[request_id] = len(self._requests)
            self._requests.append(Request(params["request"]["method"], params["request"]["url"], None))
        elif method == "Network.responseReceived" and params["requestId"] in self._request_index:
            self._set_status(params["requestId"], int(params["response"]["status"]))

    def _set_status(self, request_id: str, status: int) -> None:
        index = self._request_index[request_id]
        self._requests[index] = self._requests[index]._replace(status=status)

    def _keep_evidence(self, error: BaseException) -> None:
        # Each part on its own: a browser that crashed may still give the logs, or the other way round.
        try:
            shot = self.screenshot(FAILURE_SCREENSHOT)
            error.add_note(f"browser: screenshot at the failure in {shot}")
        except Exception as failed:  # noqa: BLE001 - evidence that cannot be had must not replace the test's own error
            error.add_note(f"browser: no screenshot at the failure ({type(failed).__name__}: {failed})")
        try:
            console, requests = self.console(), self.requests()
            (self.artefacts / FAILURE_CONSOLE).write_text("".join(f"{m.level} {m.source} {m.message}\n" for m in console))
            (self.artefacts / FAILURE_NETWORK).write_text("".join(f"{r.status} {r.method} {r.url}\n" for r in requests))
            error.add_note(f"browser: console and network logs in {self.artefacts}")
        except Exception as failed:  # noqa: BLE001 - evidence that cannot be had must not replace the test's own error
            error.add_note(f"browser: no console or network log ({type(failed).__name__}: {failed})")


def paths_under(base_url: str, urls: Iterable[str]) -> set[str]:
    """The paths of those ``urls`` under ``base_url`` (same scheme, host and port; path at or below its path), relative to it.

    ``base_url`` itself (with or without its trailing slash) is ``/``; query strings and fragments are dropped.
    """
    base = urlsplit(base_url)
    prefix = base.path.rstrip("/")
    found = set()
    for url in urls:
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) != (base.scheme, base.netloc):
            continue
        path = parts.path or "/"
        if path == prefix or path.startswith(prefix + "/"):
            found.add(path[len(prefix) :] or "/")
    return found


@contextmanager
def headless_chromium(artefacts: Path) -> Iterator[Browser]:
    """Start a headless Chromium (viewport ``VIEWPORT``) that records its console and network; yield it as a :class:`Browser`.

    ``artefacts`` (created if missing) receives the screenshots and chromedriver's
    log. When the body raises, ``failure.png``, ``console.log`` and
    ``network.log`` are written there first and the exception gets a note saying
    so. On exit the browser and its driver are stopped, whatever happened; the
    :class:`Browser` still answers from what it recorded.

    Raises ``FileNotFoundError`` when Debian's chromium or chromedriver is not
    installed, and selenium's ``SessionNotCreatedException`` when the browser
    does not start (chromedriver's log then says why).
    """
    for program, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not program.is_file():
            raise FileNotFoundError(f"{program} is missing: install Debian's package {package} (`make packages` does)")
    artefacts.mkdir(parents=True, exist_ok=True)

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    options.add_argument("--headless")
    options.add_argument("--no-sandbox")  # the tests run as root, and Chromium's sandbox refuses root
    options.add_argument("--disable-dev-shm-usage")  # a container's /dev/shm may be too small for Chromium's shared memory
    # chromedriver already turns Chromium's background networking off; component updates would still reach out
    options.add_argument("--disable-component-update")
    options.add_argument(f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    options.add_experimental_option("perfLoggingPrefs", {"enableNetwork": True, "enablePage": False})

    service = Service(executable_path=str(CHROMEDRIVER), log_output=str(artefacts / DRIVER_LOG))
    # Selenium lets SE_CHROMEDRIVER replace the path given, even while the driver starts: this Service
    # reads no variable, so Debian's driver (the one matching Debian's chromium) is always the one.
    service.DRIVER_PATH_ENV_KEY = None
    service.path = str(CHROMEDRIVER)

    try:
        driver = webdriver.Chrome(options=options, service=service)
    except WebDriverException as error:
        error.add_note(f"chromedriver's log: {artefacts / DRIVER_LOG}")
        raise
    browser = Browser(driver, artefacts)
    try:
        driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT)
        # Headless Chromium's window size includes a simulated toolbar (the page got 1400x757 of a 1400x900
        # window): the viewport is set as such, as Puppeteer does, so that pages lay out and screenshot alike.
        width, height = VIEWPORT
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        )
        try:
            yield browser
        except BaseException as error:
            browser._keep_evidence(error)
            raise
    finally:
        browser._stop()
