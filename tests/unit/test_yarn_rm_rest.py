"""Application reports from the ResourceManager's REST API (the shape a Hadoop 3.3 ResourceManager answers)."""

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest

from jobcluster.backends.yarn.errors import YarnClientError
from jobcluster.backends.yarn.rm_rest import ResourceManagerRest, report_of

RUNNING = {
    "id": "application_1795510783832_0001",
    "user": "root",
    "name": "waits",
    "queue": "default",
    "state": "RUNNING",
    "finalStatus": "UNDEFINED",
    "trackingUrl": "http://localhost:56077/proxy/application_1795510783832_0001/",
    "diagnostics": "",
    "applicationType": "jobcluster",
    "applicationTags": "flinkjob-uid:abc,jobcluster-job-id:e0ce7a72642e4eaba51181c30335623f",
    "startedTime": 1795510847606,
    "finishedTime": 0,
    "amRPCAddress": "localhost:35729",
}


def test_a_running_application_names_its_rest_endpoint_and_tags():
    report = report_of(RUNNING)
    assert (report.application_id, report.state, report.final_status) == ("application_1795510783832_0001", "RUNNING", "UNDEFINED")
    assert (report.host, report.rpc_port) == ("localhost", 35729)
    assert report.tags == ("flinkjob-uid:abc", "jobcluster-job-id:e0ce7a72642e4eaba51181c30335623f")
    assert not report.is_terminal and report.finish_time == ""


def test_an_application_before_its_master_registered_or_after_it_ended():
    accepted = report_of({**RUNNING, "state": "ACCEPTED", "amRPCAddress": "N/A", "applicationTags": ""})
    assert accepted.rpc_port == -1 and accepted.tags == ()
    ended = report_of({**RUNNING, "state": "FINISHED", "finalStatus": "FAILED", "finishedTime": 1795510907606, "diagnostics": "boom"})
    assert ended.is_terminal and ended.finish_time == "2026-11-24T09:01:47Z" and ended.diagnostics == "boom"


class Answers(http.server.BaseHTTPRequestHandler):
    """A web server answering each path as ``routes`` says: (status, headers, body); records the paths asked."""

    routes: ClassVar[dict[str, tuple[int, dict[str, str], str]]] = {}
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.asked.append(self.path.split("?")[0])
        status, headers, body = self.routes.get(self.path.split("?")[0], (404, {}, ""))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def server(routes: dict[str, tuple[int, dict[str, str], str]]) -> Iterator[tuple[str, list[str]]]:
    handler = type("Handler", (Answers,), {"routes": routes, "asked": []})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler.asked
    finally:
        httpd.shutdown()
        httpd.server_close()


APP = "/ws/v1/cluster/apps/application_1795510783832_0001"


def test_a_standby_resource_managers_redirect_to_the_active_one_is_followed():
    with server({APP: (200, {"Content-Type": "application/json"}, json.dumps({"app": RUNNING}))}) as (active, _):
        moved = {APP: (307, {"Location": f"{active}{APP}"}, "This is standby RM.")}
        with server(moved) as (standby, _):
            report = ResourceManagerRest(standby, peers=[standby, active]).application("application_1795510783832_0001")
    assert report is not None and report.state == "RUNNING"


def test_a_redirect_elsewhere_is_not_followed_and_no_answers_body_is_quoted_but_hadoops_own_error():
    """A FlinkJob's author may write the Hadoop configuration: the ResourceManager it names may send the operator
    anywhere (an in-cluster service, a metadata address) and have the answer copied into the FlinkJob's status."""
    with server({"/internal": (403, {}, "internal secret")}) as (internal, asked):
        with (
            server({APP: (302, {"Location": f"{internal}/internal"}, "")}) as (evil, _),
            pytest.raises(YarnClientError, match=r"redirected to .*/internal, which is no ResourceManager .*: not followed"),
        ):
            ResourceManagerRest(evil).application("application_1795510783832_0001")
        assert asked == []
    remote = json.dumps({"RemoteException": {"exception": "BadRequestException", "message": "Invalid ApplicationId: x"}})
    with server({APP: (400, {"Content-Type": "application/json"}, remote), "/ws/v1/cluster/apps": (403, {}, "internal secret")}) as (rm, _):
        rest = ResourceManagerRest(rm)
        with pytest.raises(YarnClientError, match=r"answered 400: Invalid ApplicationId: x$"):
            rest.application("application_1795510783832_0001")
        with pytest.raises(YarnClientError, match=r"answered 403$"):
            rest.applications()
