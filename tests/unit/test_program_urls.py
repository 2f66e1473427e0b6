"""Program URLs: the operator fetches only under the prefixes its installer allows, and redirects stay under them.

The fetches go to a real HTTP server on 127.0.0.1 (http.server in a thread) that
records every request, so a refused redirect is shown never to be requested.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest

from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.controller import programs
from jobcluster.controller.programs import ProgramUrls, UrlPrefix, allow_program_urls, job_program
from jobcluster.controller.resource import parse_spec

PREFIX = "https://good.example.com/jobs/"


@pytest.mark.parametrize(
    ("url", "covered"),
    [
        ("https://good.example.com/jobs/etl.py", True),
        ("HTTPS://Good.Example.COM:443/jobs/etl.py?v=2", True),
        ("https://good.example.com/jobs/team/etl.py", True),
        ("https://good.example.com.evil.net/jobs/etl.py", False),
        ("https://good.example.com@evil.net/jobs/etl.py", False),
        ("https://good.example.com\\@evil.net/jobs/etl.py", False),
        ("https://evil.net/jobs/etl.py?from=https://good.example.com/jobs/", False),
        ("http://good.example.com/jobs/etl.py", False),
        ("https://good.example.com:8443/jobs/etl.py", False),
        ("https://good.example.com/jobs-old/etl.py", False),
        ("https://good.example.com/jobs", False),
        ("https://good.example.com/jobs/../admin/token", False),
        ("https://good.example.com/jobs/%2e%2e/admin/token", False),
        ("https://good.example.com/jobs/..%2fadmin/token", False),
        ("https://good.example.com/jobs/..%5cadmin/token", False),
        ("https://good.example.com/jobs/etl py", False),
        ("local:///opt/jobs/etl.py", False),
    ],
)
def test_a_prefix_covers_its_scheme_host_port_and_the_paths_below_it_only(url, covered):
    assert UrlPrefix.parse(PREFIX).covers(url) is covered


def test_a_prefix_without_a_trailing_slash_covers_whole_segments():
    prefix = UrlPrefix.parse("https://good.example.com/jobs")
    assert prefix.covers("https://good.example.com/jobs") and prefix.covers("https://good.example.com/jobs/etl.py")
    assert not prefix.covers("https://good.example.com/jobsevil/etl.py")
    assert UrlPrefix.parse("http://10.0.0.7:8000").covers("http://10.0.0.7:8000/any/where.py")


@pytest.mark.parametrize(
    "text", ["ftp://good.example.com/", "good.example.com/jobs/", "https:///jobs/", "https://h/jobs/?v=1", "https://user@h/jobs/"]
)
def test_a_prefix_must_be_an_http_url_with_a_host(text):
    with pytest.raises(ValueError, match="is not a URL prefix: give an http:// or https:// URL with a host"):
        UrlPrefix.parse(text)


@pytest.fixture
def allowed() -> Iterator[None]:
    """Whatever a test allows, the operator's allowlist is empty again afterwards (its default)."""
    yield
    allow_program_urls(())


def test_by_default_no_url_is_fetched_and_the_error_says_how_to_allow_one(tmp_path, allowed):
    job = parse_spec({"job": {"program": "http://127.0.0.1:9/jobs/etl.py"}}).job
    with pytest.raises(InvalidSpecError) as raised:
        job_program(job, "etl", tmp_path)  # the operator's own fetch, as the reconciler calls it
    message = str(raised.value)
    assert raised.value.reason == "ProgramUrlNotAllowed"
    assert message.startswith("the URL http://127.0.0.1:9/jobs/etl.py is not under a URL prefix the operator may fetch programs")
    assert "(allowed: none: the operator fetches no URL)" in message
    assert "--allow-program-url PREFIX (Helm chart value allowedProgramUrls)" in message
    assert "local:///path/in/image.py" in message and "spec.job.source" in message


class Server(http.server.ThreadingHTTPServer):
    """Serves /jobs/etl.py, redirects from other paths, and records every path requested."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requested: list[str] = []

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    server: Server
    REDIRECTS: ClassVar[dict[str, str]] = {
        "/jobs/moved.py": "/jobs/etl.py",
        "/jobs/escape.py": "/private/token",
        "/jobs/loop.py": "/jobs/loop.py",
    }

    def do_GET(self) -> None:
        self.server.requested.append(self.path)
        if self.path in self.REDIRECTS:
            self.send_response(302)
            self.send_header("Location", self.REDIRECTS[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/jobs/overloaded.py":
            self.send_error(503)
        elif self.path in ("/jobs/etl.py", "/private/token"):
            body = b"print('etl')\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Server]:
    server = Server()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_an_allowed_url_is_fetched_and_a_redirect_under_the_prefix_followed(server, tmp_path, allowed):
    allow_program_urls([f"{server.base}/jobs/"])
    program = job_program(parse_spec({"job": {"program": f"{server.base}/jobs/moved.py"}}).job, "etl", tmp_path)
    assert program.script.read_text() == "print('etl')\n"
    assert server.requested == ["/jobs/moved.py", "/jobs/etl.py"]


def test_a_redirect_out_of_the_allowed_prefixes_is_refused_before_it_is_requested(server):
    urls = ProgramUrls.of([f"{server.base}/jobs/"])
    with pytest.raises(InvalidSpecError) as raised:
        urls.fetch(f"{server.base}/jobs/escape.py")
    assert raised.value.reason == "ProgramUrlNotAllowed"
    assert str(raised.value).startswith(
        f"{server.base}/jobs/escape.py redirects to {server.base}/private/token, which is not under a URL prefix"
    )
    assert f"(allowed: {server.base}/jobs/)" in str(raised.value)
    assert server.requested == ["/jobs/escape.py"]


def test_endless_redirects_and_errors_are_not_fetched(server):
    urls = ProgramUrls.of([f"{server.base}/jobs/"])
    with pytest.raises(InvalidSpecError, match=f"more than {programs.MAX_REDIRECTS} redirects") as raised:
        urls.fetch(f"{server.base}/jobs/loop.py")
    assert raised.value.reason == "ProgramNotFetched" and len(server.requested) == programs.MAX_REDIRECTS + 1
    with pytest.raises(InvalidSpecError, match="HTTP 404") as raised:
        urls.fetch(f"{server.base}/jobs/missing.py")
    assert raised.value.reason == "ProgramNotFetched" and not raised.value.transient, "a URL that is not there is a wrong spec"


def test_a_server_that_fails_or_does_not_answer_is_asked_again_later(server):
    urls = ProgramUrls.of([f"{server.base}/jobs/", "http://127.0.0.1:9/jobs/"])
    with pytest.raises(InvalidSpecError, match="HTTP 503") as raised:
        urls.fetch(f"{server.base}/jobs/overloaded.py")
    assert raised.value.transient
    with pytest.raises(InvalidSpecError, match="cannot fetch") as raised:
        urls.fetch("http://127.0.0.1:9/jobs/etl.py")  # the discard port: nothing listens
    assert raised.value.transient
