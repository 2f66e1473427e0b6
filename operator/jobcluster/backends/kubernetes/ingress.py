"""The Ingress of a job cluster's REST API and web dashboard: its options, read into :class:`IngressParameters`.

The rule is the Flink Kubernetes Operator's ``spec.ingress`` (``IngressUtils``):
a template such as ``flink.example.com/{{namespace}}/{{name}}(/|$)(.*)`` whose
``{{name}}`` (the cluster id) and ``{{namespace}}`` are replaced (in any case,
an ``http(s)://`` in front ignored); what comes before the first ``/`` is the
rule's host, the rest its path (``pathType: ImplementationSpecific``, which the
ingress controller reads, e.g. as nginx's regular expressions).  A template
without a path routes all of the host (``/``, ``Prefix``); one that starts with
``/`` any host.  The Ingress itself is built beside the REST Service
(``jobmanager.build_ingress``) and owned by the Deployment like it.

Why the template is read here, with the cluster id and the namespace: a host
the API server would refuse is refused with the key's name before anything is
created.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from jobcluster.backends.kubernetes.config_options import (
    KUBERNETES_INGRESS_ANNOTATIONS,
    KUBERNETES_INGRESS_CLASS_NAME,
    KUBERNETES_INGRESS_LABELS,
    KUBERNETES_INGRESS_TEMPLATE,
    KUBERNETES_INGRESS_TLS,
)
from jobcluster.backends.kubernetes.option_text import map_option
from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError

_NAME = re.compile(re.escape("{{name}}"), re.IGNORECASE)
_NAMESPACE = re.compile(re.escape("{{namespace}}"), re.IGNORECASE)
_SCHEME = re.compile(r"^https?://", re.IGNORECASE)
#: An Ingress rule's host: a DNS-1123 subdomain, or one below a wildcard (``*.example.com``), as the API server checks it.
_HOST = re.compile(r"(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_MAX_HOST_LENGTH = 253
_TLS_FORM = '\'[{"hosts": ["flink.example.com"], "secretName": "flink-tls"}]\''


@dataclass(frozen=True)
class IngressParameters:
    """The Ingress ``<cluster-id>`` to the REST Service.

    ``host``: the rule's host, None for any host; ``path``: the rule's path
    (``ImplementationSpecific``), None for all of the host (``/``, ``Prefix``);
    ``class_name``: ``ingressClassName``, None for the cluster's default;
    ``annotations``/``labels``: user maps; ``tls``: ``spec.tls`` entries
    (``{"hosts": [...], "secretName": ...}``).
    """

    host: str | None
    path: str | None
    class_name: str | None
    annotations: dict[str, str]
    labels: dict[str, str]
    tls: list[dict[str, Any]]

    @property
    def address(self) -> str:
        """Host and path as the template wrote them, e.g. ``flink.example.com/ns/wc(/|$)(.*)``; ``*`` for any host."""
        return f"{self.host or '*'}{self.path or '/'}"


def ingress_parameters(config: Configuration, cluster_id: str, namespace: str) -> IngressParameters | None:
    """The Ingress the options ask for; None when ``jobcluster.kubernetes.ingress.template`` is unset or blank.

    Raises:
        IllegalConfigurationError: the template's host is not a DNS name (after
            the substitution), it names neither a host nor a path, a map option
            is not Flink's map form, or the TLS option is not a JSON list of
            ``{hosts, secretName}``; the message names the key.
    """
    template = (config.get(KUBERNETES_INGRESS_TEMPLATE) or "").strip()
    if not template:
        return None
    host, path = ingress_rule(template, cluster_id, namespace)
    class_name = (config.get(KUBERNETES_INGRESS_CLASS_NAME) or "").strip() or None
    return IngressParameters(
        host=host,
        path=path,
        class_name=class_name,
        annotations=map_option(config, KUBERNETES_INGRESS_ANNOTATIONS),
        labels=map_option(config, KUBERNETES_INGRESS_LABELS),
        tls=_tls(config.get(KUBERNETES_INGRESS_TLS)),
    )


def ingress_rule(template: str, name: str, namespace: str) -> tuple[str | None, str | None]:
    """``(host, path)`` of ``template`` with ``{{name}}`` and ``{{namespace}}`` replaced; None where it has none.

    Raises:
        IllegalConfigurationError: the host is not a DNS name, or there is neither host nor path.
    """
    key = KUBERNETES_INGRESS_TEMPLATE.key
    text = _NAMESPACE.sub(lambda _: namespace, _NAME.sub(lambda _: name, _SCHEME.sub("", template.strip(), count=1)))
    host, slash, rest = text.partition("/")
    path = slash + rest if slash else None
    if host and (len(host) > _MAX_HOST_LENGTH or not _HOST.fullmatch(host)):
        raise IllegalConfigurationError(
            f"{key}: the host '{host}' of '{template}' is not a DNS name (lowercase letters, digits, '-' and '.', "
            "optionally below '*.'); the path starts at the first '/'"
        )
    if not host and path is None:
        raise IllegalConfigurationError(f"{key}: '{template}' names neither a host nor a path")
    return host or None, path


def _tls(text: str | None) -> list[dict[str, Any]]:
    """The TLS option's JSON as ``spec.tls`` entries; ``[]`` when unset or blank."""
    key = KUBERNETES_INGRESS_TLS.key
    if text is None or not text.strip():
        return []
    try:
        entries = json.loads(text)
    except ValueError as exc:
        raise IllegalConfigurationError(f"{key}: '{text}' is not JSON ({exc}); expected {_TLS_FORM}") from None
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise IllegalConfigurationError(f"{key}: '{text}' is not a JSON list of objects; expected {_TLS_FORM}")
    for entry in entries:
        unknown = sorted(set(entry) - {"hosts", "secretName"})
        if unknown:
            raise IllegalConfigurationError(f"{key}: unknown TLS field '{unknown[0]}'; known fields: hosts, secretName")
        hosts = entry.get("hosts", [])
        if not isinstance(hosts, list) or not all(isinstance(host, str) for host in hosts):
            raise IllegalConfigurationError(f"{key}: hosts must be a list of strings, got {json.dumps(hosts)}")
        if not isinstance(entry.get("secretName", ""), str):
            raise IllegalConfigurationError(f"{key}: secretName must be a string, got {json.dumps(entry['secretName'])}")
    return entries
