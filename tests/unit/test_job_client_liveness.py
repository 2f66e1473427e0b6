"""The JobClient stops waiting as soon as the descriptor's liveness check says the JobManager is gone."""

from __future__ import annotations

import time

import pytest

from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.client.job_client import JobClient
from jobcluster.errors import ClusterClientError
from jobcluster.processes import find_free_port


def unreachable_client(**kwargs) -> RestClusterClient:
    return RestClusterClient(f"http://127.0.0.1:{find_free_port()}", "jobcluster-test", timeout=1.0, **kwargs)


def test_dead_job_manager_ends_the_wait_at_once_naming_the_logs():
    client = JobClient(unreachable_client(liveness=lambda: False, log_location="/logs/jobcluster-test"), "0" * 32)
    start = time.monotonic()
    with pytest.raises(ClusterClientError, match=r"its JobManager process has died \(see its logs in /logs/jobcluster-test\)"):
        client.wait_for_result(max_unreachable=60.0)
    assert time.monotonic() - start < 5


def test_without_a_liveness_check_the_client_waits_for_max_unreachable():
    client = JobClient(unreachable_client(), "0" * 32)
    assert client.cluster_client.job_manager_alive()
    with pytest.raises(ClusterClientError, match="lost contact with it for 0 s"):
        client.wait_for_result(max_unreachable=0.0)


def test_the_client_follows_the_rest_api_where_the_platform_says_it_moved():
    where = {"url": None}
    client = unreachable_client(locate=lambda: where["url"])
    first = client.rest_url
    assert not client.relocate() and client.rest_url == first  # the platform does not know one: stay
    where["url"] = first + "/"
    assert not client.relocate() and client.rest_url == first  # the same one
    where["url"] = "http://127.0.0.1:1/"
    assert client.relocate() and client.rest_url == "http://127.0.0.1:1"


def test_the_platforms_account_of_a_dead_cluster_is_part_of_the_error():
    client = JobClient(
        unreachable_client(liveness=lambda: False, end_report=lambda timeout: "YARN application a KILLED: by user"), "0" * 32
    )
    with pytest.raises(ClusterClientError, match="its JobManager process has died; YARN application a KILLED: by user"):
        client.wait_for_result(max_unreachable=60.0)


def test_an_answer_the_cluster_cannot_serve_now_is_told_from_a_refusal():
    """5xx and 429 mean "later" (the operator sends the same savepoint trigger again); other 4xx are refusals."""
    import http.server
    import threading

    from jobcluster.errors import ClusterClientError, ClusterUnavailableError

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status = int(self.path.rsplit("/", 1)[-1])
            body = b'{"errors": ["because"]}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = RestClusterClient(f"http://127.0.0.1:{server.server_port}", "jobcluster-test", timeout=5.0)
        for status in (503, 500, 429):
            with pytest.raises(ClusterUnavailableError, match=f"failed with {status}: because"):
                client._request("GET", f"/status/{status}")
        with pytest.raises(ClusterClientError, match="failed with 409") as refused:
            client._request("GET", "/status/409")
        assert not isinstance(refused.value, ClusterUnavailableError)
    finally:
        server.shutdown()
