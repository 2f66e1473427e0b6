"""Spark's UI through the REST endpoint (runtime/rest/spark_ui.py): the UI root each page gets, what is passed to the
driver and back, redirects, the access rules, and the page when no driver runs. The dashboard's link to it: test_dashboard.py.

The endpoint is the real one (tests/support/rest_standin.py); an HTTP server that records what it is asked stands in
for the driver's UI, so that what the proxy sends can be seen. Spark's own UI through it, in a browser, with its
redaction of the cluster's secret: tests/e2e/test_web_dashboard.py.
"""

from __future__ import annotations

import gzip
import http.server
import json
import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import ClassVar
from urllib.parse import urlsplit

import pytest
import requests

from jobcluster.jobgraph.job_status import JobStatus
from jobcluster.runtime.jobmaster.spark_application import SparkUi
from jobcluster.runtime.rest.spark_ui import driver_path, request_headers, response_headers, root_from, ui_root
from tests.support.rest_standin import TOKEN, StandInDispatcher, with_endpoint

APP_ID = "app-20260101000000-0000"
YARN_APP = "application_1700000000000_0001"
PAGE = "<!doctype html><title>Spark Jobs</title>"
BIG = 32 << 20  # bytes of an answer that cannot all be in flight when the browser leaves


@pytest.mark.parametrize(
    ("path", "root"),
    [
        ("/spark", "spark"),  # its directory is the endpoint's root
        ("/spark/", "."),
        ("/spark/jobs", "."),
        ("/spark/jobs/", ".."),
        ("/spark/jobs/job/", "../.."),
        ("/spark/stages/stage/x", "../.."),
    ],
)
def test_each_page_gets_the_way_back_to_the_uis_root_from_its_own_directory(path, root):
    assert ui_root(path) == root


def test_the_dashboard_is_reached_from_any_page_relative():
    assert [root_from(p) for p in ("/spark", "/spark/", "/spark/jobs/job/", "/static/x")] == ["./", "./../", "./../../../", "./../"]


def test_any_application_id_means_the_clusters_one_application():
    assert driver_path(f"/api/v1/applications/{YARN_APP}/allexecutors", APP_ID) == f"/api/v1/applications/{APP_ID}/allexecutors"
    assert driver_path("/api/v1/applications/spark/stages/3", APP_ID) == f"/api/v1/applications/{APP_ID}/stages/3"
    assert driver_path("/api/v1/applications", APP_ID) == "/api/v1/applications"
    assert driver_path("/jobs/", APP_ID) == "/jobs/"
    assert driver_path(f"/api/v1/applications/{YARN_APP}/jobs", None) == f"/api/v1/applications/{YARN_APP}/jobs", "not known yet"


def test_the_driver_gets_no_credential_of_the_browser_and_the_browser_no_cookie_or_hop_header_of_the_driver():
    asked = {"Authorization": f"Bearer {TOKEN}", "Cookie": "a=b", "Accept": "text/html", "Accept-Encoding": "gzip", "Host": "x"}
    assert dict(request_headers(asked, "..")) == {"Accept": "text/html", "Accept-Encoding": "gzip", "X-Forwarded-Context": ".."}
    answered = {
        "Content-Type": "text/html",
        "Content-Encoding": "gzip",
        "Set-Cookie": "JSESSIONID=1; Path=/",
        "Connection": "close, X-Private",
        "X-Private": "1",
        "Transfer-Encoding": "chunked",
        "X-Frame-Options": "SAMEORIGIN",
    }
    assert dict(response_headers(answered)) == {"Content-Type": "text/html", "Content-Encoding": "gzip", "X-Frame-Options": "SAMEORIGIN"}


class DriverUi(http.server.BaseHTTPRequestHandler):
    """Stands in for the driver's UI: records each request (method, path, headers) and answers as Spark's UI does
    where it matters: ``/`` redirects to ``/jobs/`` by an absolute URL of its own; ``/jobs/`` is a page; gzip'd
    ``/static/`` files; ``/elsewhere`` redirects off the driver; ``/loop`` redirects to itself."""

    asked: ClassVar[list[tuple[str, str, dict[str, str]]]] = []

    def do_GET(self) -> None:
        type(self).asked.append((self.command, self.path, dict(self.headers)))
        own = f"http://127.0.0.1:{self.server.server_port}"
        if self.path == "/":
            self._answer(302, b"", {"Location": f"{own}/jobs/"})
        elif self.path == "/elsewhere":
            self._answer(302, b"", {"Location": "http://example.invalid/x"})
        elif self.path == "/loop":
            self._answer(302, b"", {"Location": "/loop"})
        elif self.path == "/big":
            self._answer(200, b"x" * BIG, {"Content-Type": "text/plain"})
        elif self.path.startswith("/static/"):
            self._answer(200, gzip.compress(b"var uiRoot;" * 100), {"Content-Type": "application/javascript", "Content-Encoding": "gzip"})
        elif self.path.startswith("/api/"):
            self._answer(200, json.dumps([{"id": "driver"}]).encode(), {"Content-Type": "application/json"})
        else:
            self._answer(200, PAGE.encode(), {"Content-Type": "text/html", "Set-Cookie": "JSESSIONID=1; Path=/"})

    do_HEAD = do_GET
    do_POST = do_GET

    def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def driver_ui() -> Iterator[str]:
    DriverUi.asked = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), DriverUi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def running(ui_url: str) -> StandInDispatcher:
    dispatcher = StandInDispatcher()
    dispatcher.ui = SparkUi(ui_url, APP_ID)
    return dispatcher


def test_a_page_is_the_drivers_for_the_url_asked_with_its_ui_root_and_its_redirects_followed(driver_ui):
    def scenario(url, dispatcher):
        page = requests.get(f"{url}/spark/", headers={"Authorization": f"Bearer {TOKEN}", "Cookie": "a=b"}, timeout=5)
        assert page.status_code == 200 and page.text == PAGE and page.url == f"{url}/spark/", "answered, not redirected"
        assert "Set-Cookie" not in page.headers
        assert [(m, p, h["X-Forwarded-Context"]) for m, p, h in DriverUi.asked] == [("GET", "/", "."), ("GET", "/jobs/", ".")]
        assert not any("Authorization" in h or "Cookie" in h for _, _, h in DriverUi.asked), "the browser's credentials stay here"
        DriverUi.asked.clear()
        assert requests.get(f"{url}/spark", timeout=5).text == PAGE
        assert requests.get(f"{url}/spark/jobs/job/?id=3&attempt=0", timeout=5).status_code == 200
        assert requests.head(f"{url}/spark/jobs/", timeout=5).status_code == 200
        asked = [(m, p, h["X-Forwarded-Context"]) for m, p, h in DriverUi.asked]
        assert asked == [
            ("GET", "/", "spark"),
            ("GET", "/jobs/", "spark"),
            ("GET", "/jobs/job/?id=3&attempt=0", "../.."),
            ("HEAD", "/jobs/", ".."),
        ]

    with_endpoint(scenario, running(driver_ui))


def test_what_sparks_scripts_ask_behind_yarns_proxy_reaches_the_driver(driver_ui):
    # Behind /proxy/<YARN application>/spark/, Spark's Executors page asks /proxy/<YARN application>/api/v1/applications/
    # <YARN application>/allexecutors and /proxy/<YARN application>/static/executorspage-template.html: the endpoint's root
    def scenario(url, dispatcher):
        executors = requests.get(f"{url}/api/v1/applications/{YARN_APP}/allexecutors", timeout=5)
        assert executors.json() == [{"id": "driver"}]
        assert requests.get(f"{url}/spark/api/v1/applications/spark/allexecutors", timeout=5).status_code == 200  # kubectl proxy's
        script = requests.get(f"{url}/static/utils.js", headers={"Accept-Encoding": "gzip"}, timeout=5)
        assert script.headers["Content-Encoding"] == "gzip" and script.text == "var uiRoot;" * 100, "passed on as the driver encoded it"
        assert [p for _, p, _ in DriverUi.asked] == [
            f"/api/v1/applications/{APP_ID}/allexecutors",
            f"/api/v1/applications/{APP_ID}/allexecutors",
            "/static/utils.js",
        ]

    with_endpoint(scenario, running(driver_ui))


def test_an_application_id_the_jobmaster_has_not_read_yet_is_asked_of_the_driver(driver_ui):
    # the JobMaster reads Spark's application id at its first poll, some seconds after the SparkContext starts
    def scenario(url, dispatcher):
        assert requests.get(f"{url}/api/v1/applications/{YARN_APP}/allexecutors", timeout=5).status_code == 200
        assert [p for _, p, _ in DriverUi.asked] == ["/api/v1/applications", "/api/v1/applications/driver/allexecutors"]

    dispatcher = StandInDispatcher()
    dispatcher.ui = SparkUi(driver_ui, None)
    with_endpoint(scenario, dispatcher)


def test_a_browser_that_leaves_mid_answer_is_no_error(driver_ui, caplog):
    def scenario(url, dispatcher):
        address = urlsplit(url)
        with socket.create_connection((address.hostname, address.port)) as conn:
            conn.sendall(b"GET /spark/big HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert conn.recv(1024).startswith(b"HTTP/1.1 200")
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset, as a closed tab sends
        assert requests.get(f"{url}/spark/jobs/", timeout=5).status_code == 200, "the endpoint goes on"
        time.sleep(0.5)  # the relay notices the reset on its next write

    with caplog.at_level(logging.DEBUG):
        with_endpoint(scenario, running(driver_ui))
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert any("left before Spark's answer was written" in r.getMessage() for r in caplog.records)


def test_a_redirect_off_the_driver_is_passed_on_and_a_redirect_loop_is_an_error_page(driver_ui):
    def scenario(url, dispatcher):
        away = requests.get(f"{url}/spark/elsewhere", allow_redirects=False, timeout=5)
        assert away.status_code == 302 and away.headers["Location"] == "http://example.invalid/x"
        loop = requests.get(f"{url}/spark/loop", timeout=5)
        assert loop.status_code == 502 and loop.headers["Content-Type"].startswith("text/html") and "redirected" in loop.text

    with_endpoint(scenario, running(driver_ui))


def test_only_reading_goes_through_and_changing_needs_the_token_as_everywhere(driver_ui):
    def scenario(url, dispatcher):
        refused = requests.post(f"{url}/spark/jobs/job/kill/?id=0", timeout=5)
        assert refused.status_code == 401 and "token" in refused.json()["errors"][0]
        with_token = requests.post(f"{url}/spark/jobs/job/kill/?id=0", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
        assert with_token.status_code == 405 and with_token.headers["Allow"] == "GET,HEAD"
        assert requests.delete(f"{url}/api/v1/applications/{YARN_APP}/jobs", timeout=5).status_code == 401
        assert DriverUi.asked == [], "nothing but GET and HEAD reaches the driver"

    with_endpoint(scenario, running(driver_ui))


def test_without_a_driver_every_path_says_why_in_a_page_not_in_json():
    def scenario(url, dispatcher):
        starting = requests.get(f"{url}/spark/jobs/", timeout=5)
        assert starting.status_code == 503 and starting.headers["Retry-After"] == "5"
        assert starting.headers["Content-Type"].startswith("text/html") and "is RUNNING and its program is not running yet" in starting.text
        assert 'href="./../../"' in starting.text, "a link back to the dashboard"
        dispatcher.finish(JobStatus.FINISHED, exit_code=0)
        ended = requests.get(f"{url}/spark/", timeout=5)
        assert ended.status_code == 404 and '"wordcount" is FINISHED: its Spark driver has stopped' in ended.text
        assert "Retry-After" not in ended.headers and "refresh" not in ended.text
        assert requests.get(f"{url}/static/webui.css", timeout=5).status_code == 404

    with_endpoint(scenario)


def test_a_driver_whose_ui_does_not_answer_yet_is_a_page_to_come_back_to():
    with socket.socket() as closed:  # a port nobody listens on: the program runs, its SparkContext is not up yet
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]

    def scenario(url, dispatcher):
        page = requests.get(f"{url}/spark/", timeout=10)
        assert page.status_code == 503 and "does not answer yet" in page.text and page.headers["Retry-After"] == "5"

    with_endpoint(scenario, running(f"http://127.0.0.1:{port}"))
