"""Connecting to the API server as kubectl does, and its failures as clear errors.

Why this module: it is the one place that touches the ``kubernetes`` client's
configuration; descriptor and driver get an ``ApiClient`` and call the typed
APIs through :func:`api_call`, so every call has a timeout and every failure
reads the same way ("may not create pods in namespace x", "not reachable").

Where the configuration comes from, kubectl's order: ``kubernetes.config.file``,
else ``$KUBECONFIG`` (``:``-separated files are merged), else
``~/.kube/config``; ``kubernetes.context`` picks a context.  With none of these
files, inside a pod: the pod's service account (in-cluster configuration).
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

import kubernetes
import urllib3

from jobcluster.backends.kubernetes.config_options import KUBERNETES_CONFIG_FILE, KUBERNETES_CONTEXT
from jobcluster.config.configuration import Configuration
from jobcluster.errors import AlreadyExistsError, DeploymentError, IllegalConfigurationError, NotFoundError, PlatformUnavailableError

#: (connect, read) timeout of every API call, seconds.  Watches set their own read timeout.
REQUEST_TIMEOUT = (5.0, 30.0)
#: Connection attempts beyond the first: an unreachable API server is reported within 2 x 5 s.
CONNECT_RETRIES = 1

# The in-cluster credentials the kubelet mounts into every pod with a service account.
_SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

T = TypeVar("T")


def load_api_client(config: Configuration, environ: Mapping[str, str] | None = None) -> kubernetes.client.ApiClient:
    """An ``ApiClient`` for the cluster ``config`` names (see the module docstring for the order).

    Raises:
        IllegalConfigurationError: the kubeconfig file or context cannot be
            used, or there is neither a kubeconfig nor an in-cluster service
            account; names the key or the file.
    """
    env = os.environ if environ is None else environ
    config_file = config.get(KUBERNETES_CONFIG_FILE) or env.get("KUBECONFIG")
    context = config.get(KUBERNETES_CONTEXT)
    default_file = Path.home() / ".kube" / "config"
    client_config = kubernetes.client.Configuration()
    try:
        if config_file or default_file.exists() or "KUBERNETES_SERVICE_HOST" not in env:
            _load_kube_config(config_file or str(default_file), context, client_config)
        else:
            _load_in_cluster_config(env, client_config)
    except (kubernetes.config.ConfigException, OSError, ValueError) as exc:
        source = config_file or str(default_file)
        hint = f" (context '{context}', {KUBERNETES_CONTEXT.key})" if context else ""
        raise IllegalConfigurationError(
            f"cannot use the Kubernetes configuration {source}{hint}: {exc}. Set {KUBERNETES_CONFIG_FILE.key} "
            f"or $KUBECONFIG to a kubeconfig file, or run inside a pod with a service account"
        ) from exc
    if _is_loopback(client_config.host):
        client_config.proxy = None  # as kubectl (Go's ProxyFromEnvironment): a loopback API server is never proxied
    client_config.retries = CONNECT_RETRIES
    return kubernetes.client.ApiClient(client_config)


def _load_kube_config(config_file: str, context: str | None, client_config: kubernetes.client.Configuration) -> None:
    load: Any = kubernetes.config.load_kube_config  # the client has no type hints
    load(config_file=config_file, context=context, client_configuration=client_config, persist_config=False)


def _load_in_cluster_config(env: Mapping[str, str], client_config: kubernetes.client.Configuration) -> None:
    loader_class: Any = kubernetes.config.incluster_config.InClusterConfigLoader  # the client has no type hints
    loader = loader_class(token_filename=f"{_SERVICE_ACCOUNT_DIR}/token", cert_filename=f"{_SERVICE_ACCOUNT_DIR}/ca.crt", environ=env)
    loader.load_and_set(client_config)


class ObjectNotFoundError(DeploymentError, NotFoundError):
    """The object, or its namespace, does not exist (HTTP 404)."""


class ObjectExistsError(DeploymentError, AlreadyExistsError):
    """An object of that name exists already (HTTP 409, reason AlreadyExists)."""


class ForeignObjectError(ObjectExistsError):
    """An object of that name exists and is another workload's: it does not go by itself (not transient)."""

    transient = False


class ObjectChangedError(DeploymentError):
    """The object is not the one the call's precondition names (HTTP 409, reason Conflict: another uid or version)."""


def api_call(verb: str, resource: str, namespace: str | None, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` with :data:`REQUEST_TIMEOUT`, its failures as :class:`DeploymentError`.

    ``verb``/``resource``/``namespace`` say what was attempted, for the message:
    403 names the verb, resource and namespace the credentials lack (and
    manifests/rbac.yaml); an unreachable server names its address.  Absent and
    already existing are the project's :class:`~jobcluster.errors.NotFoundError`
    and :class:`~jobcluster.errors.AlreadyExistsError`, for the caller to decide
    (absent is often fine), and still a DeploymentError for a caller that does not.

    Raises:
        ObjectNotFoundError: status 404.
        ObjectExistsError: status 409 with reason AlreadyExists.
        ObjectChangedError: status 409 with reason Conflict (a precondition failed).
        PlatformUnavailableError: unreachable, or status 5xx or 429 (a DeploymentError that may pass).
        DeploymentError: forbidden, unauthorized, or any other API error.
    """
    kwargs.setdefault("_request_timeout", REQUEST_TIMEOUT)
    where = f" in namespace {namespace}" if namespace else ""
    try:
        return call(*args, **kwargs)
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            raise ObjectNotFoundError(f"{resource}{where}: not found ({_reason(exc)})") from exc
        if exc.status == 409 and _status_reason(exc) == "AlreadyExists":
            raise ObjectExistsError(f"{resource}{where}: {_reason(exc)}") from exc
        if exc.status == 409:
            raise ObjectChangedError(f"could not {verb} {resource}{where}: {exc.status} {_reason(exc)}") from exc
        if exc.status == 403:
            raise DeploymentError(
                f"not allowed to {verb} {resource}{where}: {_reason(exc)}. Grant the permission "
                "(for the JobManager's service account: manifests/rbac.yaml)"
            ) from exc
        if exc.status == 401:
            raise DeploymentError(f"the Kubernetes API server refused the credentials ({verb} {resource}{where}): {_reason(exc)}") from exc
        error = PlatformUnavailableError if exc.status in (0, 429) or exc.status >= 500 else DeploymentError
        raise error(f"could not {verb} {resource}{where}: {exc.status} {_reason(exc)}") from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        host = getattr(getattr(call, "__self__", None), "api_client", None)
        address = host.configuration.host if host is not None else "the configured address"
        raise PlatformUnavailableError(
            f"the Kubernetes API server at {address} is not reachable ({verb} {resource}{where}): {exc}"
        ) from exc


def _status_reason(exc: kubernetes.client.ApiException) -> str | None:
    """The API server's ``Status.reason`` (``AlreadyExists``, ``Conflict``, ...), if it sent a Status."""
    try:
        reason = json.loads(exc.body or "{}").get("reason")
    except (ValueError, AttributeError):
        return None
    return str(reason) if reason else None


def _reason(exc: kubernetes.client.ApiException) -> str:
    """The API server's ``Status.message``, else the HTTP reason."""
    try:
        message = json.loads(exc.body or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message or exc.reason)


def _is_loopback(url: str) -> bool:
    host = urlparse(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
