"""ClusterClient: the client's view of a running cluster, over its REST API.

requests does the HTTP; every call has a timeout. Paths and bodies are
Flink's (``/jobs/overview``, ``/jobs/{id}``, ``/jobs/{id}/execution-result``,
``PATCH /jobs/{id}?mode=cancel``, ``/taskmanagers``, ``/overview``), plus the
program's output (``/jobs/{id}/stdout`` and ``/stderr`` from a byte offset).
With the cluster's token, every request carries it as ``Authorization: Bearer``,
as Flink's client sends ``FLINK_REST_CLIENT_HEADERS``; mutating calls and the
program's output need it. Through YARN's web proxy (``via_proxy``), which
forwards only GET and PUT and drops that header, changes go as PUT and the
token as the ``token`` query parameter (the endpoint takes both forms).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import requests

from jobcluster.errors import ClusterClientError, ClusterUnavailableError, ClusterUnreachableError, JobNotFoundError
from jobcluster.spark.checkpoints import SavepointError

REQUEST_TIMEOUT = 10.0  # seconds for one REST call
#: The query parameter of the token through YARN's web proxy (the endpoint's ``TOKEN_PARAMETER``).
TOKEN_PARAMETER = "token"
#: The header in which the cluster says at which logical offset the output it returns begins.
OUTPUT_OFFSET_HEADER = "X-Output-Offset"


@dataclass(frozen=True)
class ProgramOutput:
    """Bytes of the program's stdout or stderr: ``data`` begins at logical byte ``offset`` of the stream."""

    offset: int
    data: bytes


class RestClusterClient:
    """REST client of the cluster ``cluster_id`` at ``rest_url``.

    ``liveness``: a check the ClusterDescriptor may give (it knows how the
    target runs the JobManager, e.g. the local entrypoint's process), returning
    False once the JobManager is gone for good; without one the client learns
    of a dead JobManager only when REST stays unreachable.  ``log_location``
    names where the cluster's logs are, for error messages. ``token``: the
    cluster's REST token, if known (mutating calls need it). ``end_report``:
    how the platform saw the cluster end (e.g. YARN's final status and
    diagnostics), waiting up to the given seconds for it; None when it has not
    ended or the target has nothing to add. ``on_close``: releases what the
    descriptor keeps open for this client (e.g. its YARN client). ``locate``:
    where the cluster's REST API is now, as its platform knows (a restarted
    JobManager may serve elsewhere, e.g. a new YARN ApplicationMaster attempt).
    ``via_proxy``: ``rest_url`` is YARN's web proxy of the application (see the module docstring);
    ``proxy_auth``: how that proxy authenticates the client (a Kerberized cluster's SPNEGO), None for none.
    """

    def __init__(
        self,
        rest_url: str,
        cluster_id: str,
        timeout: float = REQUEST_TIMEOUT,
        *,
        liveness: Callable[[], bool] | None = None,
        log_location: str | None = None,
        token: str | None = None,
        end_report: Callable[[float], str | None] | None = None,
        on_close: Callable[[], None] | None = None,
        locate: Callable[[], str | None] | None = None,
        via_proxy: bool = False,
        proxy_auth: requests.auth.AuthBase | None = None,
    ) -> None:
        self.rest_url = rest_url.rstrip("/")
        self.via_proxy = via_proxy
        self.cluster_id = cluster_id
        self.timeout = timeout
        self.log_location = log_location
        self._liveness = liveness
        self._end_report = end_report
        self._on_close = on_close
        self._locate = locate
        self._session = requests.Session()
        if via_proxy and proxy_auth is not None:
            self._session.auth = proxy_auth
        if token and via_proxy:
            self._session.params = {TOKEN_PARAMETER: token}
        elif token:
            self._session.headers["Authorization"] = f"Bearer {token}"

    def job_manager_alive(self) -> bool:
        """False when the descriptor's liveness check says the JobManager is gone; True when alive or unknown."""
        return self._liveness is None or self._liveness()

    def relocate(self) -> bool:
        """Ask the platform where the REST API is now; True when it moved (and this client follows it)."""
        url = self._locate() if self._locate is not None else None
        if not url or url.rstrip("/") == self.rest_url:
            return False
        self.rest_url = url.rstrip("/")
        return True

    def end_report(self, timeout: float = 0.0) -> str | None:
        """How the platform saw the cluster end, waiting up to ``timeout`` seconds; None when unknown."""
        return None if self._end_report is None else self._end_report(timeout)

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None, **params: Any) -> Any:
        url = f"{self.rest_url}{path}"
        if self.via_proxy and method not in ("GET", "HEAD"):
            method = "PUT"
        try:
            resp = self._session.request(method, url, params=params or None, json=body, timeout=self.timeout)
        except requests.RequestException as exc:
            raise ClusterUnreachableError(f"cluster {self.cluster_id} is not reachable at {self.rest_url}: {exc}") from exc
        if resp.status_code == 404:
            errors = _errors(resp)
            raise JobNotFoundError(errors or f"{path} not found on cluster {self.cluster_id}")
        if resp.status_code == 401:
            raise ClusterClientError(
                f"cluster {self.cluster_id} refused {method} {path}: it needs the cluster's token, "
                "which only the user who deployed the cluster can read"
            )
        if resp.status_code >= 400:
            message = f"{method} {url} failed with {resp.status_code}: {_errors(resp) or resp.text[:200]}"
            busy = resp.status_code >= 500 or resp.status_code == 429
            raise ClusterUnavailableError(message) if busy else ClusterClientError(message)
        return resp.json() if resp.content else {}

    def overview(self) -> dict[str, Any]:
        return cast(dict[str, Any], self._request("GET", "/overview"))

    def list_jobs(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], self._request("GET", "/jobs/overview")["jobs"])

    def job_details(self, job_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], self._request("GET", f"/jobs/{job_id}"))

    def execution_result(self, job_id: str) -> dict[str, Any] | None:
        """The ``job-execution-result`` once the job is terminal, else None."""
        body = self._request("GET", f"/jobs/{job_id}/execution-result")
        return body.get("job-execution-result") if body.get("status", {}).get("id") == "COMPLETED" else None

    def job_output(self, job_id: str, stream: str, offset: int) -> ProgramOutput:
        """The program's ``stream`` (``stdout`` or ``stderr``) from logical byte ``offset``: what has been written since,
        maybe empty. Its ``offset`` is later than the one asked for when those bytes were rotated away in the cluster
        (the ``X-Output-Offset`` header; a cluster that does not send it rotates nothing)."""
        url = f"{self.rest_url}/jobs/{job_id}/{stream}"
        try:
            resp = self._session.get(url, params={"offset": offset}, timeout=self.timeout)
        except requests.RequestException as exc:
            raise ClusterUnreachableError(f"cluster {self.cluster_id} is not reachable at {self.rest_url}: {exc}") from exc
        if resp.status_code == 404:
            raise JobNotFoundError(_errors(resp) or f"job {job_id} not found on cluster {self.cluster_id}")
        if resp.status_code >= 400:
            raise ClusterClientError(f"GET {url} failed with {resp.status_code}: {_errors(resp) or resp.text[:200]}")
        try:
            start = int(resp.headers.get(OUTPUT_OFFSET_HEADER, offset))
        except ValueError as exc:
            raise ClusterClientError(f"GET {url}: {OUTPUT_OFFSET_HEADER} is not a number: {resp.headers[OUTPUT_OFFSET_HEADER]!r}") from exc
        return ProgramOutput(start, resp.content)

    def cancel(self, job_id: str) -> None:
        self._request("PATCH", f"/jobs/{job_id}", mode="cancel")

    def trigger_savepoint(
        self, job_id: str, target_directory: str | None, stop: bool, drain: bool = False, trigger_id: str | None = None
    ) -> str:
        """Start a savepoint of the job (``stop``: Flink's stop-with-savepoint, ``drain`` first); returns its trigger id.

        ``target_directory`` None: the cluster's ``execution.checkpointing.savepoint-dir``. ``trigger_id`` (32
        hexadecimal digits): the operation's id, chosen by the caller; a trigger repeated with it is the same
        operation (Flink's idempotent ``triggerId``), so a caller that does not know whether its request arrived
        may send it again.
        """
        chosen = {"triggerId": trigger_id} if trigger_id else {}
        if stop:
            body: dict[str, Any] = {"drain": drain} | ({"targetDirectory": target_directory} if target_directory else {})
            return str(self._request("POST", f"/jobs/{job_id}/stop", body | chosen)["request-id"])
        body = {"cancel-job": False} | ({"target-directory": target_directory} if target_directory else {})
        return str(self._request("POST", f"/jobs/{job_id}/savepoints", body | chosen)["request-id"])

    def savepoint_status(self, job_id: str, trigger_id: str) -> SavepointStatus:
        """What became of savepoint ``trigger_id`` of the job: ``UNKNOWN`` when the cluster never received it (Flink
        answers 404), ``IN_PROGRESS``, or ``COMPLETED`` with its location or its failure's message."""
        try:
            body = self._request("GET", f"/jobs/{job_id}/savepoints/{trigger_id}")
        except JobNotFoundError:
            return SavepointStatus("UNKNOWN")
        if body.get("status", {}).get("id") != "COMPLETED":
            return SavepointStatus("IN_PROGRESS")
        try:
            return SavepointStatus("COMPLETED", location=_operation_outcome(body["operation"], f"savepoint of job {job_id}"))
        except SavepointError as exc:
            return SavepointStatus("COMPLETED", failure=str(exc))

    def wait_for_savepoint(self, job_id: str, trigger_id: str, timeout: float, poll_interval: float = 0.5) -> str:
        """The location of savepoint ``trigger_id`` once complete. SavepointError when it failed, or after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            body = self._request("GET", f"/jobs/{job_id}/savepoints/{trigger_id}")
            if body.get("status", {}).get("id") == "COMPLETED":
                return _operation_outcome(body["operation"], f"savepoint of job {job_id}")
            if time.monotonic() > deadline:
                raise SavepointError(f"the savepoint of job {job_id} did not complete within {timeout:.0f} s; it may still complete")
            time.sleep(poll_interval)

    def dispose_savepoint(self, path: str, timeout: float, poll_interval: float = 0.5) -> None:
        """Have the cluster dispose of the savepoint at ``path`` (Flink's ``POST /savepoint-disposal``: its running job
        deletes it, reaching the storage it reaches), waiting up to ``timeout`` seconds.

        Raises:
            SavepointError: the disposal failed, or did not end within ``timeout`` seconds.
            ClusterClientError: the cluster refused or could not be reached.
        """
        trigger_id = str(self._request("POST", "/savepoint-disposal", {"savepoint-path": path})["request-id"])
        deadline = time.monotonic() + timeout
        while True:
            body = self._request("GET", f"/savepoint-disposal/{trigger_id}")
            if body.get("status", {}).get("id") == "COMPLETED":
                cause = (body.get("operation") or {}).get("failure-cause")
                if cause is not None:
                    _operation_outcome({"failure-cause": cause}, f"disposal of savepoint {path}")
                return
            if time.monotonic() > deadline:
                raise SavepointError(f"the disposal of savepoint {path} did not end within {timeout:.0f} s")
            time.sleep(poll_interval)

    def task_managers(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], self._request("GET", "/taskmanagers")["taskmanagers"])

    def wait_until_shut_down(self, timeout: float) -> bool:
        """Poll until the cluster's REST API is gone (the cluster stops it last); False after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self._session.get(f"{self.rest_url}/overview", timeout=self.timeout)
            except requests.ConnectionError:
                return True
            except requests.RequestException:
                pass
            time.sleep(0.1)  # the command returns this much after the cluster is gone, at most
        return False

    def close(self) -> None:
        """Close the HTTP session and what the descriptor keeps open for this client. Idempotent."""
        self._session.close()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


@dataclass(frozen=True)
class SavepointStatus:
    """A savepoint operation as its cluster reports it: ``state`` UNKNOWN, IN_PROGRESS or COMPLETED; a completed one
    has its ``location``, or the message of its ``failure``."""

    state: str
    location: str | None = None
    failure: str | None = None


def _errors(resp: requests.Response) -> str:
    try:
        return "; ".join(resp.json().get("errors", []))
    except ValueError:
        return ""


def _operation_outcome(operation: dict[str, Any], what: str) -> str:
    """An asynchronous operation's location, or SavepointError with the message of its ``failure-cause`` (Flink's shape)."""
    cause = operation.get("failure-cause")
    if cause is None:
        return str(operation["location"])
    message = str(cause.get("stack-trace", "")).splitlines()[0] if cause.get("stack-trace") else str(cause.get("class"))
    raise SavepointError(f"the {what} failed: {message.split(': ', 1)[-1]}")
