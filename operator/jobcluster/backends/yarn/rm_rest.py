"""The ResourceManager's REST API (``/ws/v1/cluster``): YARN without a JVM, through the web port only.

Two uses. Looking at an application is what a watcher does every few seconds
(the FlinkJob operator, for each of its YARN jobs), and a JVM per look costs far
more than one HTTP GET. And a client that reaches the ResourceManager only
through its web port (``jobcluster.yarn.resourcemanager.api: rest``: a firewall
in front of the cluster, a laptop) deploys and kills with it too: the same
calls as the Java YarnClient of ``yarn_client.py`` (new application, the
cluster's nodes and queues, submit, report, kill), which stays the default
because it carries Hadoop RPC's security. Submitting and killing act as
``user``, given as ``user.name``: the ResourceManager refuses an anonymous
caller, so the cluster must run Hadoop's HTTP authentication (``simple`` with
``AuthenticationFilterInitializer``, or Kerberos).

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

from jobcluster.backends.yarn.container_requests import ContainerResource
from jobcluster.backends.yarn.errors import YarnClientError, YarnUnavailableError
from jobcluster.backends.yarn.kerberos import spnego_refused_message
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor
from jobcluster.backends.yarn.proxy_users import refused
from jobcluster.backends.yarn.statuses import finish_time_of
from jobcluster.backends.yarn.validation import NodeCapacity, YarnClusterResources
from jobcluster.backends.yarn.yarn_client import (
    ACTIVE_STATES,
    ApplicationMasterSpec,
    ApplicationReport,
    NewApplication,
)

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
    ResourceManagers of an HA cluster (``resourcemanager_webapp_urls``), the only places a redirect is followed to;
    ``minimum_allocation_mb``: ``yarn.scheduler.minimum-allocation-mb`` of the client's configuration (the REST API
    does not report it); ``auth``: how requests authenticate (a Kerberized cluster's SPNEGO, ``kerberos.spnego_auth``,
    with no ``user``), None for ``user.name`` alone; ``do_as``: with ``auth``, the Hadoop user every call acts as
    (the ``doAs`` query parameter, Hadoop's proxy users: ``proxy_users.py``), None for the ticket's own."""

    def __init__(
        self,
        url: str,
        user: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        peers: Iterable[str] = (),
        minimum_allocation_mb: int = 1024,
        auth: requests.auth.AuthBase | None = None,
        do_as: str | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.resourcemanager_address = self.url  # what progress and errors name
        self.user = user
        self.do_as = do_as
        self.timeout = timeout
        self.minimum_allocation_mb = minimum_allocation_mb
        self._session = requests.Session()
        self._session.auth = auth
        self._resource_managers = {urlsplit(base)[:2] for base in (url, *peers)}

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> ResourceManagerRest:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(
        self, method: str, path: str, params: Mapping[str, str] | None = None, body: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """The JSON answer of ``method`` on ``/ws/v1/cluster/<path>``; None for 404 or an empty answer.

        Raises:
            YarnUnavailableError: no answer, or a 5xx one.
            YarnClientError: any other refusal (Hadoop's message quoted), or a redirect elsewhere.
        """
        url = f"{self.url}/ws/v1/cluster/{path}"
        query = {**(params or {}), **({"user.name": self.user} if self.user else {}), **({"doAs": self.do_as} if self.do_as else {})}
        try:
            response = self._follow(
                self._session.request(method, url, params=query, json=body, timeout=self.timeout, headers=_ACCEPT, allow_redirects=False),
                body,
            )
        except requests.RequestException as error:
            raise YarnUnavailableError(f"the YARN ResourceManager's REST API at {self.url} cannot be reached: {error}") from error
        if response.status_code == 404:
            return None
        if response.status_code == 403 and self.do_as:
            refusal = refused(_remote_exception(response) or response.text, f"The ResourceManager at {self.url}")
            if refusal is not None:
                raise refusal
        if response.status_code == 401 and self._session.auth is not None:
            raise YarnClientError(spnego_refused_message(f"{method} {url}", self.url))
        if response.status_code >= 500:
            raise YarnUnavailableError(f"{method} {url} answered {response.status_code}{_remote_exception(response)}")
        if response.status_code in (401, 403) and method != "GET":
            raise YarnClientError(
                f"{method} {url} answered {response.status_code}{_remote_exception(response)}: the ResourceManager's REST API "
                f"changes applications only for an authenticated user. Without Kerberos the cluster needs Hadoop's "
                "simple HTTP authentication (hadoop.http.filter.initializers=org.apache.hadoop.security.AuthenticationFilterInitializer, "
                "hadoop.http.authentication.type=simple), or use jobcluster.yarn.resourcemanager.api: rpc"
            )
        if not response.ok:
            raise YarnClientError(f"{method} {url} answered {response.status_code}{_remote_exception(response)}")
        if not response.content:
            return None
        document: dict[str, Any] = response.json()
        return document

    def _get(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any] | None:
        return self._call("GET", path, params)

    def _follow(self, response: requests.Response, body: Mapping[str, Any] | None) -> requests.Response:
        """``response``, or where its redirects lead while each leads to a ResourceManager of the configuration
        (the same method and body: a standby sends every call to the active one).

        Raises:
            YarnClientError: a redirect elsewhere (not followed), or more than :data:`MAX_REDIRECTS`.
        """
        for _ in range(MAX_REDIRECTS):
            if not response.is_redirect:
                return response
            target = urljoin(response.url, response.headers.get("Location", ""))
            if urlsplit(target)[:2] not in self._resource_managers:
                raise YarnClientError(
                    f"{response.request.method} {response.url} redirected to {target}, which is no ResourceManager of the "
                    "Hadoop configuration: not followed"
                )
            method = response.request.method or "GET"
            response = self._session.request(method, target, json=body, timeout=self.timeout, headers=_ACCEPT, allow_redirects=False)
        if response.is_redirect:
            raise YarnClientError(f"{response.request.method} {response.url}: more than {MAX_REDIRECTS} redirects")
        return response

    def check_access(self) -> None:
        """One cheap call (``GET info``), which the ResourceManager's authentication filter checks as any other:
        with ``do_as``, whether the ticket's user may act as that user.

        Raises:
            ProxyUserRefusedError: the ResourceManager refuses the impersonation.
            YarnClientError: the ResourceManager cannot be reached or refuses otherwise.
        """
        self._get("info")

    # -- what the Java YarnClient does (yarn_client.YarnClient), over HTTP -------------------

    def create_application(self) -> NewApplication:
        """A new application id and the maximum container (``yarn.scheduler.maximum-allocation-*``).

        Raises:
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        document = self._call("POST", "apps/new-application")
        if not document or "application-id" not in document:
            raise YarnClientError(f"POST {self.url}/ws/v1/cluster/apps/new-application gave no application id")
        maximum = document.get("maximum-resource-capability") or {}
        resource = ContainerResource(int(maximum.get("memory", 0)), int(maximum.get("vCores", 0)))
        return NewApplication(application_id=str(document["application-id"]), maximum=resource, handle=None)

    def cluster_resources(self, maximum: ContainerResource) -> YarnClusterResources:
        """The RUNNING nodes (capability and use), the queue names and the client's minimum allocation.

        Raises:
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        nodes = ((self._get("nodes", {"states": "RUNNING"}) or {}).get("nodes") or {}).get("node") or []
        scheduler = ((self._get("scheduler") or {}).get("scheduler") or {}).get("schedulerInfo") or {}
        return YarnClusterResources(
            maximum=maximum,
            minimum_allocation_mb=self.minimum_allocation_mb,
            nodes=tuple(node_capacity(node) for node in nodes),
            queues=tuple(queue_names(scheduler)),
        )

    def submit(self, application: NewApplication, spec: ApplicationMasterSpec) -> None:
        """Submit ``application`` with the ApplicationMaster of ``spec`` (``POST apps``).

        Raises:
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        self._call("POST", "apps", body=submission_context(application.application_id, spec))

    def report(self, application_id: str) -> ApplicationReport:
        """The report of ``application_id``.

        Raises:
            YarnClientError: the ResourceManager cannot be reached, refuses, or does not know it.
        """
        report = self.application(application_id)
        if report is None:
            raise YarnClientError(f"the YARN ResourceManager at {self.url} does not know application {application_id}")
        return report

    def kill(self, application_id: str) -> None:
        """Kill the application (``PUT apps/<id>/state``; nothing for one that has ended or that YARN forgot).

        Raises:
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        self._call("PUT", f"apps/{application_id}/state", body={"state": "KILLED"})

    # -- looking ----------------------------------------------------------------------

    def application(self, application_id: str) -> ApplicationReport | None:
        """The report of ``application_id``; None when the ResourceManager does not know it (any more).

        Raises:
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        document = self._get(f"apps/{application_id}")
        return report_of(document["app"]) if document and document.get("app") else None

    def applications(
        self, application_types: Iterable[str] = (), states: Iterable[str] = ACTIVE_STATES, tag: str | None = None
    ) -> list[ApplicationReport]:
        """The applications of one of ``application_types`` (empty: any) in one of ``states``, carrying ``tag`` (as
        YARN stores tags: lower case; None: any); the Java client's ``applications`` with a tag.

        Raises:
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        query = {"states": ",".join(states)}
        if tag is not None:
            query["applicationTags"] = tag
        types = ",".join(application_types)
        if types:
            query["applicationTypes"] = types
        document = self._get("apps", query) or {}
        return [report_of(app) for app in ((document.get("apps") or {}).get("app") or [])]


def submission_context(application_id: str, spec: ApplicationMasterSpec) -> dict[str, Any]:
    """The ``application-submission-context`` JSON of the REST API for ``spec``: what ``YarnClient.submit`` sets
    on the Java record, field by field."""
    context: dict[str, Any] = {
        "application-id": application_id,
        "application-name": spec.name,
        "application-type": spec.application_type,
        "am-container-spec": {
            "local-resources": {"entry": [{"key": r.key, "value": _local_resource(r)} for r in spec.local_resources]},
            "environment": {"entry": [{"key": k, "value": v} for k, v in spec.environment.items()]},
            "commands": {"command": spec.command},
            **({"credentials": {"tokens": {"entry": [{"key": k, "value": v} for k, v in spec.tokens.items()]}}} if spec.tokens else {}),
        },
        "resource": {"memory": spec.resource.memory_mib, "vCores": spec.resource.vcores},
        "max-app-attempts": spec.attempts,
        "unmanaged-AM": False,
        "keep-containers-across-application-attempts": False,
    }
    if spec.queue:
        context["queue"] = spec.queue
    if spec.priority is not None:
        context["priority"] = spec.priority
    if spec.node_label:
        context["app-node-label-expression"] = spec.node_label
    if spec.tags:
        context["application-tags"] = {"tag": list(spec.tags)}
    return context


def _local_resource(descriptor: LocalResourceDescriptor) -> dict[str, Any]:
    return {
        "resource": descriptor.path,
        "type": str(descriptor.type),
        "visibility": str(descriptor.visibility),
        "size": descriptor.size,
        "timestamp": descriptor.modification_time,
    }


def node_capacity(node: Mapping[str, Any]) -> NodeCapacity:
    """One ``node`` object of ``/nodes``: its capability is what it uses plus what it has free."""
    used = int(node.get("usedMemoryMB") or 0)
    total = node.get("totalResource") or {}
    memory = int(total.get("memory") or used + int(node.get("availMemoryMB") or 0))
    vcores = int(total.get("vCores") or int(node.get("usedVirtualCores") or 0) + int(node.get("availableVirtualCores") or 0))
    return NodeCapacity(memory_mib=memory, vcores=vcores, used_memory_mib=used)


def queue_names(scheduler: Mapping[str, Any]) -> list[str]:
    """Every queue's short name (``QueueInfo.getQueueName``) below the ``schedulerInfo`` of ``/scheduler``, leaf and
    parent; the root itself as the Java client lists it."""
    names: list[str] = []
    if scheduler.get("queueName"):
        names.append(str(scheduler["queueName"]))
    for queue in ((scheduler.get("queues") or {}).get("queue")) or []:
        names.extend(queue_names(queue))
    return names


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
        user=str(app.get("user") or ""),
        finish_time=finish_time_of(app.get("finishedTime")),
        start_time_ms=int(app.get("startedTime") or 0),
    )
