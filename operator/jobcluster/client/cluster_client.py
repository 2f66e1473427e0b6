"""ClusterClient: the client's view of a running cluster, over its REST API.

requests does the HTTP; every call has a timeout. Paths and bodies are
Flink's (``/jobs/overview``, ``/jobs/{id}``, ``/jobs/{id}/execution-result``,
``PATCH /jobs/{id}?mode=cancel``, ``/taskmanagers``, ``/overview``), plus the
program's output (``/jobs/{id}/stdout`` and ``/stderr`` from a byte offset).
"""

from __future__ import annotations

import time
from typing import Any

import requests

from jobcluster.errors import ClusterClientError, JobNotFoundError

REQUEST_TIMEOUT = 10.0  # seconds for one REST call


class RestClusterClient:
    """REST client of the cluster ``cluster_id`` at ``rest_url``."""

    def __init__(self, rest_url: str, cluster_id: str, timeout: float = REQUEST_TIMEOUT) -> None:
        self.rest_url = rest_url.rstrip("/")
        self.cluster_id = cluster_id
        self.timeout = timeout
        self._session = requests.Session()

    def _request(self, method: str, path: str, **params: Any) -> Any:
        url = f"{self.rest_url}{path}"
        try:
            resp = self._session.request(method, url, params=params or None, timeout=self.timeout)
        except requests.RequestException as exc:
            raise ClusterClientError(f"cluster {self.cluster_id} is not reachable at {self.rest_url}: {exc}") from exc
        if resp.status_code == 404:
            errors = _errors(resp)
            raise JobNotFoundError(errors or f"{path} not found on cluster {self.cluster_id}")
        if resp.status_code >= 400:
            raise ClusterClientError(f"{method} {url} failed with {resp.status_code}: {_errors(resp) or resp.text[:200]}")
        return resp.json() if resp.content else {}

    def overview(self) -> dict[str, Any]:
        return self._request("GET", "/overview")

    def list_jobs(self) -> list[dict[str, Any]]:
        return self._request("GET", "/jobs/overview")["jobs"]

    def job_details(self, job_id: str) -> dict[str, Any]:
        return self._request("GET", f"/jobs/{job_id}")

    def execution_result(self, job_id: str) -> dict[str, Any] | None:
        """The ``job-execution-result`` once the job is terminal, else None."""
        body = self._request("GET", f"/jobs/{job_id}/execution-result")
        return body.get("job-execution-result") if body.get("status", {}).get("id") == "COMPLETED" else None

    def job_output(self, job_id: str, stream: str, offset: int) -> bytes:
        """The program's ``stream`` (``stdout`` or ``stderr``) from byte ``offset``: what has been written since, maybe empty."""
        url = f"{self.rest_url}/jobs/{job_id}/{stream}"
        try:
            resp = self._session.get(url, params={"offset": offset}, timeout=self.timeout)
        except requests.RequestException as exc:
            raise ClusterClientError(f"cluster {self.cluster_id} is not reachable at {self.rest_url}: {exc}") from exc
        if resp.status_code == 404:
            raise JobNotFoundError(_errors(resp) or f"job {job_id} not found on cluster {self.cluster_id}")
        if resp.status_code >= 400:
            raise ClusterClientError(f"GET {url} failed with {resp.status_code}: {_errors(resp) or resp.text[:200]}")
        return resp.content

    def cancel(self, job_id: str) -> None:
        self._request("PATCH", f"/jobs/{job_id}", mode="cancel")

    def task_managers(self) -> list[dict[str, Any]]:
        return self._request("GET", "/taskmanagers")["taskmanagers"]

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
            time.sleep(0.5)
        return False

    def close(self) -> None:
        self._session.close()


def _errors(resp: requests.Response) -> str:
    try:
        return "; ".join(resp.json().get("errors", []))
    except ValueError:
        return ""
