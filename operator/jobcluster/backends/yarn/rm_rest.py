"""The ResourceManager's REST API (``/ws/v1/cluster/apps``): application reports without a JVM.

Why beside the Java YarnClient: looking at an application is what a watcher
does every few seconds (the FlinkJob operator, for each of its YARN jobs), and
a JVM per look, or one per job kept alive, costs far more than one HTTP GET.
Deploying and killing stay with the Java client (``yarn_client.py``), which
carries Hadoop RPC's security.

Every call has ``timeout`` seconds; errors become :class:`YarnClientError`
naming the URL (:class:`YarnUnavailableError`, which the operator retries, when
the ResourceManager does not answer or answers 5xx). The Hadoop configuration
may come from a FlinkJob's author (its ConfigMap), so the client follows a
redirect only to a ResourceManager of that configuration (a standby sends to
the active one) and quotes no answer's body but the message of Hadoop's own
``RemoteException``.  Reports are the same :class:`ApplicationReport` the Java
client gives (``host``/``rpc_port`` from ``amRPCAddress``, where the
ApplicationMaster registered its REST endpoint).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests

from jobcluster.backends.yarn.errors import YarnClientError, YarnUnavailableError
from jobcluster.backends.yarn.statuses import finish_time_of
from jobcluster.backends.yarn.yarn_client import ACTIVE_STATES, ApplicationReport

DEFAULT_TIMEOUT = 10.0
"""Seconds for one REST call (connect and read)."""
MAX_REDIRECTS = 3
_ACCEPT = {"Accept": "application/json"}


def _remote_exception(response: requests.Response) -> str:
    """``: <message>`` of a Hadoop ``RemoteException`` answer (the ResourceManager's own errors), else nothing."""
    try:
        message = response.json()["RemoteException"]["message"]
    except (ValueError, KeyError, TypeError):
        return ""
    return f": {str(message)[:300]}"


class ResourceManagerRest:
    """The web services of the ResourceManager at ``url`` (``http://host:port``, see
    ``HadoopConfiguration.resourcemanager_webapp_url``); ``user``: the simple-auth user name; ``peers``: the other
    ResourceManagers of an HA cluster (``resourcemanager_webapp_urls``), the only places a redirect is followed to."""

    def __init__(self, url: str, user: str | None = None, timeout: float = DEFAULT_TIMEOUT, peers: Iterable[str] = ()) -> None:
        self.url = url.rstrip("/")
        self.user = user
        self.timeout = timeout
        self._session = requests.Session()
        self._resource_managers = {urlsplit(base)[:2] for base in (url, *peers)}

    def close(self) -> None:
        self._session.close()

    def _get(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any] | None:
        url = f"{self.url}/ws/v1/cluster/{path}"
        query = {**(params or {}), **({"user.name": self.user} if self.user else {})}
        try:
            response = self._follow(self._session.get(url, params=query, timeout=self.timeout, headers=_ACCEPT, allow_redirects=False))
        except requests.RequestException as error:
            raise YarnUnavailableError(f"the YARN ResourceManager's REST API at {self.url} cannot be reached: {error}") from error
        if response.status_code == 404:
            return None
        if response.status_code >= 500:
            raise YarnUnavailableError(f"GET {url} answered {response.status_code}{_remote_exception(response)}")
        if not response.ok:
            raise YarnClientError(f"GET {url} answered {response.status_code}{_remote_exception(response)}")
        document: dict[str, Any] = response.json()
        return document

    def _follow(self, response: requests.Response) -> requests.Response:
        """``response``, or where its redirects lead while each leads to a ResourceManager of the configuration.

        Raises:
            YarnClientError: a redirect elsewhere (not followed), or more than :data:`MAX_REDIRECTS`.
        """
        for _ in range(MAX_REDIRECTS):
            if not response.is_redirect:
                return response
            target = urljoin(response.url, response.headers.get("Location", ""))
            if urlsplit(target)[:2] not in self._resource_managers:
                raise YarnClientError(
                    f"GET {response.url} redirected to {target}, which is no ResourceManager of the Hadoop configuration: not followed"
                )
            response = self._session.get(target, timeout=self.timeout, headers=_ACCEPT, allow_redirects=False)
        if response.is_redirect:
            raise YarnClientError(f"GET {response.url}: more than {MAX_REDIRECTS} redirects")
        return response

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
