"""The ResourceManager's REST API (``/ws/v1/cluster/apps``): application reports without a JVM.

Why beside the Java YarnClient: looking at an application is what a watcher
does every few seconds (the FlinkJob operator, for each of its YARN jobs), and
a JVM per look, or one per job kept alive, costs far more than one HTTP GET.
Deploying and killing stay with the Java client (``yarn_client.py``), which
carries Hadoop RPC's security.

Every call has ``timeout`` seconds; errors become :class:`YarnClientError`
naming the URL (:class:`YarnUnavailableError`, which the operator retries, when
the ResourceManager does not answer or answers 5xx).  Reports are the same :class:`ApplicationReport` the Java
client gives (``host``/``rpc_port`` from ``amRPCAddress``, where the
ApplicationMaster registered its REST endpoint).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import requests

from jobcluster.backends.yarn.errors import YarnClientError, YarnUnavailableError
from jobcluster.backends.yarn.statuses import finish_time_of
from jobcluster.backends.yarn.yarn_client import ACTIVE_STATES, ApplicationReport

DEFAULT_TIMEOUT = 10.0
"""Seconds for one REST call (connect and read)."""


class ResourceManagerRest:
    """The web services of the ResourceManager at ``url`` (``http://host:port``, see
    ``HadoopConfiguration.resourcemanager_webapp_url``); ``user``: the simple-auth user name."""

    def __init__(self, url: str, user: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self.user = user
        self.timeout = timeout
        self._session = requests.Session()

    def close(self) -> None:
        self._session.close()

    def _get(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any] | None:
        url = f"{self.url}/ws/v1/cluster/{path}"
        query = {**(params or {}), **({"user.name": self.user} if self.user else {})}
        try:
            response = self._session.get(url, params=query, timeout=self.timeout, headers={"Accept": "application/json"})
        except requests.RequestException as error:
            raise YarnUnavailableError(f"the YARN ResourceManager's REST API at {self.url} cannot be reached: {error}") from error
        if response.status_code == 404:
            return None
        if response.status_code >= 500:
            raise YarnUnavailableError(f"GET {url} answered {response.status_code}: {response.text[:300]}")
        if not response.ok:
            raise YarnClientError(f"GET {url} answered {response.status_code}: {response.text[:300]}")
        document: dict[str, Any] = response.json()
        return document

    def application(self, application_id: str) -> ApplicationReport | None:
        """The report of ``application_id``; None when the ResourceManager does not know it (any more).

        Raises:
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        document = self._get(f"apps/{application_id}")
        return report_of(document["app"]) if document and document.get("app") else None

    def applications(
        self, tag: str | None = None, states: tuple[str, ...] = ACTIVE_STATES, application_types: tuple[str, ...] = ()
    ) -> list[ApplicationReport]:
        """The applications carrying ``tag`` (as YARN stores tags: lower case; None: any) in one of ``states``, of one
        of ``application_types`` (empty: any).

        Raises:
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        query = {"states": ",".join(states)}
        if tag is not None:
            query["applicationTags"] = tag
        if application_types:
            query["applicationTypes"] = ",".join(application_types)
        document = self._get("apps", query) or {}
        return [report_of(app) for app in ((document.get("apps") or {}).get("app") or [])]


def report_of(app: Mapping[str, Any]) -> ApplicationReport:
    """An :class:`ApplicationReport` from one ``app`` object of the REST API."""
    host, _, port = str(app.get("amRPCAddress") or "").rpartition(":")
    return ApplicationReport(
        application_id=str(app["id"]),
        name=str(app.get("name", "")),
        application_type=str(app.get("applicationType", "")),
        queue=str(app.get("queue", "")),
        state=str(app.get("state", "")),
        final_status=str(app.get("finalStatus", "UNDEFINED")),
        diagnostics=str(app.get("diagnostics") or ""),
        host=host,
        rpc_port=int(port) if port.isdigit() else -1,
        tracking_url=str(app.get("trackingUrl") or ""),
        tags=tuple(t for t in str(app.get("applicationTags") or "").split(",") if t),
        finish_time=finish_time_of(app.get("finishedTime")),
        start_time_ms=int(app.get("startedTime") or 0),
    )
