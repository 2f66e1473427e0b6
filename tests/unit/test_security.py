"""The cluster secret's derivations, private files, Spark's security settings, and the REST token check.

The REST checks run the real endpoint on loopback with the real client; only
the dispatcher behind it is a recording double.
"""

from __future__ import annotations

import asyncio
import os
import socket
import stat

import pytest
import requests

from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.config.values import parse_port_ranges
from jobcluster.errors import ClusterClientError, DeploymentError
from jobcluster.runtime.entrypoint.layout import ENV_CLUSTER_SECRET, SECRET_FILE, take_cluster_secret
from jobcluster.runtime.rest.endpoint import RestEndpoint
from jobcluster.security import new_cluster_secret, private_directory, rest_token, spark_secret, write_private_file
from jobcluster.spark.security import SPARK_DEFAULTS_FILE, SparkSecurity
from tests.support.ports import free_port_block
from tests.support.rest_standin import StandInDispatcher

JOB_ID = "0" * 32


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_derived_credentials_are_stable_distinct_and_not_the_secret():
    secret = new_cluster_secret()
    assert len(secret) == 64 and secret != new_cluster_secret()
    derived = {spark_secret(secret), rest_token(secret)}
    assert len(derived) == 2 and secret not in derived
    assert spark_secret(secret) == spark_secret(secret) and rest_token(secret) == rest_token(secret)
    assert spark_secret(new_cluster_secret()) != spark_secret(secret)


def test_private_files_and_directories(tmp_path):
    old_umask = os.umask(0)  # even a permissive umask must not open them up
    try:
        existing = tmp_path / "existing"
        existing.mkdir(mode=0o755)
        assert _mode(private_directory(existing)) == 0o700
        directory = private_directory(tmp_path / "a" / "b")
        write_private_file(directory / "f", "one")
        write_private_file(directory / "f", "two")
    finally:
        os.umask(old_umask)
    assert _mode(directory) == 0o700
    assert _mode(directory / "f") == 0o600 and (directory / "f").read_text() == "two"
    assert os.listdir(directory) == ["f"]


def test_cluster_secret_is_taken_out_of_the_environment():
    env = {ENV_CLUSTER_SECRET: "s", "OTHER": "x"}
    assert take_cluster_secret(env) == "s"
    assert env == {"OTHER": "x"}


def test_cluster_secret_comes_from_the_cluster_directorys_private_file_when_not_in_the_environment(tmp_path):
    with pytest.raises(KeyError, match=SECRET_FILE):
        take_cluster_secret({}, tmp_path)
    write_private_file(tmp_path / SECRET_FILE, "from-file\n")
    assert take_cluster_secret({}, tmp_path) == "from-file"
    assert take_cluster_secret({ENV_CLUSTER_SECRET: "from-env"}, tmp_path) == "from-env"


@pytest.mark.parametrize("encrypt", [False, True])
def test_spark_security_is_installed_as_a_private_spark_defaults_file(tmp_path, encrypt):
    env = SparkSecurity("the-spark-secret", "10.1.2.3", encrypt).install(tmp_path / "conf")
    assert env == {"SPARK_CONF_DIR": str(tmp_path / "conf"), "SPARK_LOCAL_IP": "10.1.2.3"}
    conf_file = tmp_path / "conf" / SPARK_DEFAULTS_FILE
    assert _mode(tmp_path / "conf") == 0o700 and _mode(conf_file) == 0o600
    properties = dict(line.split("=", 1) for line in conf_file.read_text().splitlines())
    assert properties["spark.authenticate"] == "true"
    assert properties["spark.authenticate.secret"] == "the-spark-secret"
    assert properties["spark.network.crypto.enabled"] == str(encrypt).lower()
    assert properties["spark.ui.killEnabled"] == "false"
    assert "the-spark-secret" not in SparkSecurity("the-spark-secret", "h").settings().values()


class RecordingDispatcher(StandInDispatcher):
    """One RUNNING job ``JOB_ID``; records cancels (tests/support/rest_standin.py)."""

    def job_ids(self) -> list[str]:
        return [JOB_ID]

    def _job(self, job_id: str) -> None:
        pass


def _with_endpoint(scenario):
    """Run ``scenario(url, dispatcher)`` (blocking, in a thread) against a real RestEndpoint with token 't0ken'."""

    async def main():
        endpoint = RestEndpoint("127.0.0.1", 0, "test", "t0ken")
        dispatcher = RecordingDispatcher()
        await endpoint.start()
        endpoint.serve(dispatcher, None, None)
        try:
            await asyncio.to_thread(scenario, endpoint.url, dispatcher)
        finally:
            await endpoint.stop()

    asyncio.run(main())


def test_cancel_without_the_token_is_401_and_reading_stays_open():
    def scenario(url, dispatcher):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "t0ken"}, {"Authorization": "Basic t0ken"}):
            resp = requests.patch(f"{url}/jobs/{JOB_ID}?mode=cancel", headers=headers, timeout=5)
            assert resp.status_code == 401, headers
            assert resp.headers["WWW-Authenticate"].startswith("Bearer") and "Authorization: Bearer" in resp.json()["errors"][0]
        assert dispatcher.cancelled == []
        assert requests.get(f"{url}/jobs/{JOB_ID}", timeout=5).json()["state"] == "RUNNING"
        assert requests.get(f"{url}/jobs", timeout=5).status_code == 200
        with pytest.raises(ClusterClientError, match="needs the cluster's token"):
            RestClusterClient(url, "c").cancel(JOB_ID)
        assert dispatcher.cancelled == []

    _with_endpoint(scenario)


def test_client_with_the_token_cancels():
    def scenario(url, dispatcher):
        assert requests.patch(f"{url}/jobs/{JOB_ID}?mode=cancel", headers={"Authorization": "bearer t0ken"}, timeout=5).status_code == 202
        RestClusterClient(url, "c", token="t0ken").cancel(JOB_ID)
        assert dispatcher.cancelled == [JOB_ID, JOB_ID]

    _with_endpoint(scenario)


def test_through_a_proxy_that_forwards_only_get_and_put_the_client_changes_with_put_and_the_token_in_the_query():
    """YARN's web proxy drops Authorization and answers 405 to PATCH and POST: the client's via_proxy form still
    cancels, and the endpoint takes the token from the query only when it is right."""

    def scenario(url, dispatcher):
        sent: list[tuple[str, str]] = []
        client = RestClusterClient(url, "c", token="t0ken", via_proxy=True)
        client._session.hooks["response"].append(lambda resp, **_: sent.append((resp.request.method, resp.request.url)))
        assert "Authorization" not in client._session.headers
        client.cancel(JOB_ID)
        assert dispatcher.cancelled == [JOB_ID]
        assert sent == [("PUT", f"{url}/jobs/{JOB_ID}?token=t0ken&mode=cancel")]
        for query in ("", "&token=wrong", "&token="):
            assert requests.put(f"{url}/jobs/{JOB_ID}?mode=cancel{query}", timeout=5).status_code == 401, query
        assert dispatcher.cancelled == [JOB_ID]
        assert requests.put(f"{url}/jobs/{JOB_ID}/savepoints?token=t0ken", json={}, timeout=5).status_code != 405

    _with_endpoint(scenario)


def test_rest_bind_port_takes_the_first_free_port_of_its_range_and_says_when_all_are_taken():
    """rest.bind-port as Flink parses it: the endpoint binds the first port of the range nobody holds."""
    ports = free_port_block(3)

    async def main():
        with socket.socket() as held:
            held.bind(("127.0.0.1", ports[0]))
            held.listen()
            endpoint = RestEndpoint("127.0.0.1", 8081, "test", "t0ken", bind_ports=parse_port_ranges(f"{ports[0]}-{ports[2]}"))
            await endpoint.start()
            try:
                assert endpoint.url == f"http://127.0.0.1:{ports[1]}"
                crowded = RestEndpoint("127.0.0.1", 8081, "test", "t0ken", bind_ports=(ports[0], ports[1]))
                crowded_error = rf"every port rest.bind-port names on 127.0.0.1 \(2 from {ports[0]} to {ports[1]}\) is in use"
                with pytest.raises(DeploymentError, match=crowded_error):
                    await crowded.start()
                single = RestEndpoint("127.0.0.1", 8081, "test", "t0ken", bind_ports=(ports[1],))
                with pytest.raises(DeploymentError, match=rf"rest.bind-port {ports[1]} on 127.0.0.1 is already in use"):
                    await single.start()
            finally:
                await endpoint.stop()

    asyncio.run(main())


def test_the_endpoint_binds_exactly_its_bind_addresses_on_one_port():
    """rest.bind-address: a Kubernetes JobManager serves its pod IP and its loopback (port-forwards), nothing else."""

    async def main():
        endpoint = RestEndpoint("127.0.0.2", 0, "test", "t0ken", bind_hosts=("127.0.0.2", "127.0.0.3"))
        await endpoint.start()
        endpoint.serve(RecordingDispatcher(), None, None)
        try:
            port = endpoint.port
            assert endpoint.url == f"http://127.0.0.2:{port}"

            def scenario() -> None:
                for host in ("127.0.0.2", "127.0.0.3"):
                    assert requests.get(f"http://{host}:{port}/jobs/{JOB_ID}", timeout=5).json()["state"] == "RUNNING"
                with pytest.raises(requests.ConnectionError):
                    requests.get(f"http://127.0.0.4:{port}/jobs", timeout=5)

            await asyncio.to_thread(scenario)
        finally:
            await endpoint.stop()

    asyncio.run(main())


def test_on_loopback_only_a_request_for_a_name_of_the_endpoint_is_served():
    """DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 reads as evil.example's own; the
    endpoint on loopback answers 421 to any Host that is not a loopback name or its own, and nothing runs."""

    def scenario(url, dispatcher):
        port = url.rsplit(":", 1)[1]
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.nip.io:{port}"):
            response = requests.get(f"{url}/jobs/{JOB_ID}", headers={"Host": host}, timeout=5)
            assert response.status_code == 421 and "Misdirected request" in response.json()["errors"][0], host
            assert (
                requests.patch(
                    f"{url}/jobs/{JOB_ID}?mode=cancel", headers={"Host": host, "Authorization": "Bearer t0ken"}, timeout=5
                ).status_code
                == 421
            )
        assert dispatcher.cancelled == []
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"{socket.gethostname()}:{port}", "LOCALHOST"):
            assert requests.get(f"{url}/jobs/{JOB_ID}", headers={"Host": host}, timeout=5).json()["state"] == "RUNNING", host

    _with_endpoint(scenario)
