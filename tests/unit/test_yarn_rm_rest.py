"""The ResourceManager's REST API: application reports, submissions, nodes and queues (the shapes a Hadoop 3.3
ResourceManager answers; the calls themselves against a real one: tests/integration/hadoop/test_yarn_outside_client.py)."""

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest

from jobcluster.backends.yarn.container_requests import ContainerResource
from jobcluster.backends.yarn.errors import YarnClientError
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor, LocalResourceType, LocalResourceVisibility
from jobcluster.backends.yarn.rm_rest import ResourceManagerRest, node_capacity, queue_names, report_of, submission_context
from jobcluster.backends.yarn.yarn_client import ApplicationMasterSpec

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

    do_POST = do_PUT = do_GET  # answered the same way; the method is not recorded

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


def test_the_submission_context_carries_what_the_java_client_sets():
    """The JSON of ``POST /ws/v1/cluster/apps``, field by field what YarnClient.submit sets on the Java record."""
    staged = LocalResourceDescriptor(
        "job.graph", "hdfs://nn:8020/user/a/.jobcluster/app/job.graph", 120, 1795510847606,
        LocalResourceType.FILE, LocalResourceVisibility.APPLICATION,
    )  # fmt: skip
    spec = ApplicationMasterSpec(
        name="wordcount", application_type="jobcluster", resource=ContainerResource(1728, 1), command="python -m x 1><LOG_DIR>/out",
        environment={"A": "1"}, local_resources=(staged,), queue="etl", priority=3, tags=("jobcluster-job-id:ab",), attempts=2,
    )  # fmt: skip
    context = submission_context("application_1_0002", spec)
    assert context["application-id"] == "application_1_0002" and context["application-name"] == "wordcount"
    assert (context["queue"], context["priority"], context["max-app-attempts"]) == ("etl", 3, 2)
    assert context["resource"] == {"memory": 1728, "vCores": 1}
    assert context["application-tags"] == {"tag": ["jobcluster-job-id:ab"]} and "app-node-label-expression" not in context
    container = context["am-container-spec"]
    assert container["commands"] == {"command": "python -m x 1><LOG_DIR>/out"}
    assert container["environment"] == {"entry": [{"key": "A", "value": "1"}]}
    assert container["local-resources"] == {
        "entry": [
            {
                "key": "job.graph",
                "value": {
                    "resource": "hdfs://nn:8020/user/a/.jobcluster/app/job.graph",
                    "type": "FILE",
                    "visibility": "APPLICATION",
                    "size": 120,
                    "timestamp": 1795510847606,
                },
            }
        ]
    }
    json.dumps(context)  # plain JSON


def test_nodes_and_queues_as_the_rest_api_reports_them():
    node = {"usedMemoryMB": 2048, "availMemoryMB": 6144, "usedVirtualCores": 1, "availableVirtualCores": 3}
    capacity = node_capacity(node)
    assert (capacity.memory_mib, capacity.vcores, capacity.free_memory_mib) == (8192, 4, 6144)
    assert node_capacity({**node, "totalResource": {"memory": 10240, "vCores": 8}}).memory_mib == 10240
    scheduler = {
        "queueName": "root",
        "queues": {"queue": [{"queueName": "default"}, {"queueName": "etl", "queues": {"queue": [{"queueName": "daily"}]}}]},
    }
    assert queue_names(scheduler) == ["root", "default", "etl", "daily"]


def test_a_resource_manager_without_http_authentication_refuses_a_submission_with_the_settings_to_change():
    """What a cluster without Hadoop's HTTP authentication answers a write (401 and this RemoteException, as a Hadoop
    3.3 ResourceManager does): the error names the settings, and nothing was created."""
    refused = json.dumps(
        {"RemoteException": {"exception": "AuthorizationException", "message": "Unable to obtain user name, user not authenticated"}}
    )
    new = "/ws/v1/cluster/apps/new-application"
    answers = {new: (401, {"Content-Type": "application/json"}, refused)}
    with server(answers) as (rm, asked), pytest.raises(YarnClientError) as error:
        ResourceManagerRest(rm, user="alice").create_application()
    message = str(error.value)
    assert "answered 401: Unable to obtain user name, user not authenticated" in message
    assert "AuthenticationFilterInitializer" in message and "jobcluster.yarn.resourcemanager.api: rpc" in message
    assert asked == [new]
