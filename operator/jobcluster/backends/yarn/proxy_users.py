"""Acting as another Hadoop user on a Kerberized cluster: Hadoop's proxy users.

A Kerberos ticket is one principal's. A process that deploys for several Hadoop
users (the FlinkJob operator, one user per namespace) keeps its own ticket as
the *real* user and names the *effective* user on every call, as Hadoop's
``UserGroupInformation.createProxyUser(user, loginUser)`` does (Flink's
``HADOOP_PROXY_USER``, Spark's ``--proxy-user``):

- WebHDFS: SPNEGO as the real user plus ``doas=<user>`` (``SpnegoWebHdfsClient``);
- the ResourceManager's REST API: SPNEGO plus ``doAs=<user>`` (``ResourceManagerRest``);
- YARN's RPC: the client JVM's login user becomes the proxy user
  (``yarn_client.act_as``), the real user's ticket authenticates the connection.

Each server decides with its own ``hadoop.proxyuser.<real short name>.hosts``
and ``.groups`` / ``.users`` (Hadoop's ``DefaultImpersonationProvider``); without
a rule that covers the user and the client's host it answers 403 "User: <real>
is not allowed to impersonate <user>". :func:`check_impersonation` asks the
NameNode once before anything is staged or submitted, and :func:`refused`
turns that answer (from any of the servers) into :class:`ProxyUserRefusedError`,
whose message names the settings to add.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from jobcluster.backends.yarn.errors import YarnConfigurationError
from jobcluster.backends.yarn.kerberos import SpnegoWebHdfsClient, check_ticket, remote_exception_message

HADOOP_PROXY_USER = "HADOOP_PROXY_USER"
"""The environment variable with which Hadoop's clients (``UserGroupInformation``) act as a proxy user of the
process's login; jobcluster's CLI honours it on a Kerberized cluster, as Flink's YARN client does."""

_REFUSAL = re.compile(r"User: (?P<real>\S+) is not allowed to impersonate (?P<user>[^\s\"',]+)")


class ProxyUserRefusedError(YarnConfigurationError):
    """A Hadoop server refused to let the client's principal act as another user (no ``hadoop.proxyuser.*`` rule
    allows it); the message names the settings the cluster needs. Raised before anything is deployed."""


def short_name(principal: str) -> str:
    """The short name Hadoop's ``DEFAULT`` ``auth_to_local`` rule gives a principal of the cluster's realm:
    ``operator@REALM`` and ``operator/host@REALM`` are ``operator`` (a site's own rules may map otherwise)."""
    return principal.split("@", 1)[0].split("/", 1)[0]


def proxy_user_of(user: str, ticket_principal: str) -> str | None:
    """The proxy user to name on each call for acting as Hadoop user ``user`` with the ticket of
    ``ticket_principal``: ``user``, unless it is the ticket's own short name, for which Hadoop needs no
    impersonation (and would still ask for a ``hadoop.proxyuser`` rule were it named): None."""
    return None if user == short_name(ticket_principal) else user


def proxy_user_to_act_as(user: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """On a Kerberized cluster, the proxy user every call names: ``user`` (the operator's per namespace), else
    ``HADOOP_PROXY_USER`` of ``environ`` (default: this process's); None without either, or when it is the ticket's
    own user (:func:`proxy_user_of`).

    Raises:
        KerberosLoginError: there is one, and no valid ticket to act from (what to run).
    """
    env = os.environ if environ is None else environ
    wanted = user or env.get(HADOOP_PROXY_USER, "").strip()
    return proxy_user_of(wanted, check_ticket(environ)) if wanted else None


def refusal_message(real: str, user: str, service: str, reason: str = "") -> str:
    """What to do when ``service`` refused to let the principal ``real`` act as Hadoop user ``user``."""
    short = short_name(real)
    because = f" ({reason})" if reason else ""
    return (
        f"{service} does not let {real} act as Hadoop user {user}{because}. Hadoop proxy users are allowed by the "
        f"cluster: set hadoop.proxyuser.{short}.hosts (the hosts this client runs on, or *) and "
        f"hadoop.proxyuser.{short}.groups (a group of {user}) or hadoop.proxyuser.{short}.users ({user}) in the "
        "core-site.xml of the NameNode and of the ResourceManager, then run hdfs dfsadmin -refreshSuperUserGroupsConfiguration "
        "and yarn rmadmin -refreshSuperUserGroupsConfiguration. Nothing was deployed"
    )


def refused(text: str, service: str) -> ProxyUserRefusedError | None:
    """The error for a server's answer ``text`` (a 403's body, a Java exception's message) when it is Hadoop's
    refusal to impersonate; None for any other answer."""
    match = _REFUSAL.search(text)
    if match is None:
        return None
    return ProxyUserRefusedError(refusal_message(match["real"], match["user"], service, f"it says: {match[0]}"))


def check_impersonation(client: SpnegoWebHdfsClient) -> None:
    """Ask each NameNode of ``client`` for its ``proxy_user``'s home directory (``GETHOMEDIRECTORY``): it reads
    nothing, and the NameNode authorizes the impersonation before any operation. A standby's refusal moves on to the
    next NameNode (HA); the first answer from an active one decides.

    Raises:
        ProxyUserRefusedError: the NameNode refused the impersonation.
        requests.RequestException: no NameNode answered.
    """
    base, response = client.ask_active_namenode({"op": "GETHOMEDIRECTORY"})
    if response.status_code == 403:
        refusal = refused(remote_exception_message(response) or response.text, f"The NameNode at {base}")
        if refusal is not None:
            raise refusal
