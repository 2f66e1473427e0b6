"""The client's Kerberos identity on a Kerberized Hadoop cluster: its ticket, SPNEGO, and HDFS delegation tokens.

A cluster is Kerberized when its ``core-site.xml`` says
``hadoop.security.authentication: kerberos`` (Hadoop's ``SecurityUtil``).
Then the client (the CLI, with the user's ``kinit`` ticket cache):

1. checks its ticket before anything else (:func:`check_ticket`): none, or an
   expired one, is an error naming ``kinit``, raised before anything is staged;
2. reaches WebHDFS and the ResourceManager's REST API with SPNEGO
   (:func:`spnego_auth`, requests-gssapi over MIT's GSS-API: the ticket cache
   ``KRB5CCNAME`` names, the realm configuration ``KRB5_CONFIG`` names) and
   the ResourceManager's RPC through YARN's Java client, which logs in from the
   same cache (:func:`client_java_options` gives its JVM the same ``krb5.conf``);
3. obtains an HDFS delegation token for the staging file system with the
   ResourceManager as renewer (:meth:`SpnegoWebHdfsClient.delegation_token`,
   WebHDFS's ``GETDELEGATIONTOKEN``; the renewer is :func:`token_renewer`, as
   Hadoop's ``Master.getMasterPrincipal`` gives it to Flink's
   ``HadoopFSDelegationTokenProvider`` and Spark's) and submits the application
   with it (``tokens.py``); the containers use it and need no ticket.

The ``kerberos`` extra (``pip install 'jobcluster[kerberos]'``) brings
requests-gssapi and gssapi; a cluster without Kerberos never imports them.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import requests
from hdfs import Client

from jobcluster.backends.yarn.errors import YarnConfigurationError
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.tokens import Token, decode_url_string

KERBEROS_EXTRA = "pip install 'jobcluster[kerberos]'"
RM_PRINCIPAL = "yarn.resourcemanager.principal"
DEFAULT_TIMEOUT = 30.0
"""Seconds for one WebHDFS token request (connect, and the answer)."""


class KerberosLoginError(YarnConfigurationError):
    """The client has no usable Kerberos login for a Kerberized cluster (no ticket, an expired one, one the cluster
    does not accept); the message says what to run."""


def is_kerberized(hadoop_conf: HadoopConfiguration) -> bool:
    """Whether ``hadoop.security.authentication`` is ``kerberos`` (Hadoop's default: ``simple``)."""
    return (hadoop_conf.get("hadoop.security.authentication") or "simple").strip().lower() == "kerberos"


def _missing_extra(what: str, error: ImportError) -> KerberosLoginError:
    return KerberosLoginError(
        f"the Hadoop cluster uses Kerberos (hadoop.security.authentication=kerberos) and {what} needs the kerberos extra, "
        f"which is not installed ({error}): {KERBEROS_EXTRA} (its gssapi builds against MIT Kerberos: "
        "Debian's libkrb5-dev, Red Hat's krb5-devel)"
    )


def spnego_auth() -> requests.auth.AuthBase:
    """SPNEGO for requests from the ticket cache (requests-gssapi's ``HTTPSPNEGOAuth``, which answers a 401's
    ``Negotiate`` challenge).

    Raises:
        KerberosLoginError: the ``kerberos`` extra is not installed.
    """
    try:
        from requests_gssapi import HTTPSPNEGOAuth
    except ImportError as error:
        raise _missing_extra("SPNEGO", error) from error
    auth: requests.auth.AuthBase = HTTPSPNEGOAuth()
    return auth


def spnego_refused_message(request: str, url: str) -> str:
    """Why ``request`` (``GET http://...``) to the server at ``url`` answered 401 although it came with SPNEGO: the
    client found no service ticket for the server, or the server took none of it."""
    host = urlsplit(url).hostname
    return (
        f"{request} answered 401: the server did not accept SPNEGO from the Kerberos ticket in {ticket_cache()}. "
        f"SPNEGO asks the KDC for a ticket for HTTP/{host} (the URL's host; krb5.conf's dns_canonicalize_hostname and "
        "rdns decide whether it is resolved first): the KDC must know that principal (the server's "
        "hadoop.http.authentication.kerberos.principal; reach the server by the host name it was made for, not an IP "
        "address or another alias), and the ticket must be valid (klist; kinit again once it has expired)"
    )


def ticket_cache(environ: Mapping[str, str] | None = None) -> str:
    """The credential cache the client reads: ``KRB5CCNAME``, else MIT's default (named as such)."""
    env = os.environ if environ is None else environ
    return env.get("KRB5CCNAME") or "the default credential cache (KRB5CCNAME is not set)"


def no_ticket_message(cache: str, user: str) -> str:
    """What to do without a ticket: kinit, or a keytab login (Flink's security.kerberos.login.*, ``keytab.py``)."""
    return (
        f"no Kerberos ticket in {cache}: run kinit <principal> (e.g. kinit {user}) before jobcluster, which uses the ticket "
        "cache as Hadoop's own clients do; or log in from a keytab with security.kerberos.login.keytab and "
        "security.kerberos.login.principal"
    )


def expired_ticket_message(cache: str) -> str:
    return f"the Kerberos ticket in {cache} has expired: run kinit <principal> again (or kinit -R while it is renewable)"


def check_ticket(environ: Mapping[str, str] | None = None) -> str:
    """The principal of the client's ticket (``alice@REALM``), checked before anything is deployed.

    Raises:
        KerberosLoginError: no ticket, an expired one, or the ``kerberos`` extra is missing; the message says what
            to run.
    """
    try:
        import gssapi
        from gssapi.exceptions import ExpiredCredentialsError
        from gssapi.raw.misc import GSSError
    except ImportError as error:
        raise _missing_extra("the client's Kerberos login", error) from error
    cache = ticket_cache(environ)
    try:
        credentials = gssapi.Credentials(usage="initiate")
        lifetime = credentials.lifetime
    except ExpiredCredentialsError as error:
        raise KerberosLoginError(expired_ticket_message(cache)) from error
    except GSSError as error:
        raise KerberosLoginError(no_ticket_message(cache, getpass.getuser())) from error
    if lifetime is not None and lifetime <= 0:
        raise KerberosLoginError(expired_ticket_message(cache))
    return str(credentials.name)


def client_java_options(environ: Mapping[str, str] | None = None) -> list[str]:
    """The client JVM's options for the realm the Python side uses: Java reads ``krb5.conf`` from
    ``-Djava.security.krb5.conf`` (else ``/etc/krb5.conf``), never from ``KRB5_CONFIG``; the ticket cache it
    finds through ``KRB5CCNAME`` itself (``sun.security.krb5.internal.ccache.FileCredentialsCache``)."""
    env = os.environ if environ is None else environ
    config = env.get("KRB5_CONFIG", "").split(":")[0]
    return [f"-Djava.security.krb5.conf={config}"] if config else []


def token_renewer(hadoop_conf: HadoopConfiguration) -> str:
    """The ResourceManager's principal with ``_HOST`` as its host (Hadoop's ``Master.getMasterPrincipal`` and
    ``SecurityUtil.getServerPrincipal``): the renewer of the delegation tokens, so that YARN renews them while the
    application runs and cancels them when it ends.

    Raises:
        YarnConfigurationError: ``yarn.resourcemanager.principal`` is not set (Hadoop's "Can't get Master Kerberos
            principal for use as renewer").
    """
    principal = (hadoop_conf.get(RM_PRINCIPAL) or "").strip()
    if not principal:
        raise YarnConfigurationError(
            f"the Hadoop configuration in {hadoop_conf.conf_dir} uses Kerberos but sets no {RM_PRINCIPAL}: the client "
            "cannot name the ResourceManager as the renewer of the job's HDFS delegation tokens; set it as the cluster has it "
            "(e.g. rm/_HOST@REALM) in yarn-site.xml"
        )
    service, _, rest = principal.partition("/")
    host, at, realm = rest.partition("@")
    if host == "_HOST":
        rm_host = hadoop_conf.resourcemanager_address().rpartition(":")[0]
        if rm_host in ("", "0.0.0.0"):
            rm_host = socket.getfqdn()
        principal = f"{service}/{rm_host.lower()}{at}{realm}"
    return principal


class SpnegoWebHdfsClient(Client):  # type: ignore[misc]
    """The ``hdfs`` package's WebHDFS client with SPNEGO on every request to the NameNode(s) of ``url`` (``;``
    between HA NameNodes); ``timeout``: seconds per request. No ``user.name`` is sent: the NameNode refuses one
    that differs from the ticket's user (Hadoop's ``JspHelper.getUGI``). ``proxy_user``: the Hadoop user every
    request acts as (WebHDFS's ``doas``, a proxy user: ``proxy_users.py``); None: the ticket's own."""

    def __init__(self, url: str, timeout: float, auth: requests.auth.AuthBase | None = None, proxy_user: str | None = None) -> None:
        session = requests.Session()
        session.auth = auth or spnego_auth()
        self.proxy_user = proxy_user
        super().__init__(url, timeout=timeout, session=session, proxy=proxy_user)
        self.session = session
        self.request_timeout = timeout

    def doas(self) -> dict[str, str]:
        """The query parameter that makes a request act as ``proxy_user`` (none without one), for requests made
        outside the ``hdfs`` package's API, which adds it itself."""
        return {"doas": self.proxy_user} if self.proxy_user else {}

    def delegation_token(self, renewer: str) -> Token:
        """A new HDFS delegation token of the ticket's user (of ``proxy_user`` when given: its owner) that ``renewer``
        may renew, as the HDFS RPC client and
        YARN use it (``Token.for_hdfs_rpc``): WebHDFS's ``GETDELEGATIONTOKEN`` on each NameNode in turn (a standby
        refuses; HA).

        Raises:
            KerberosLoginError: a NameNode refused the ticket (401: a ticket of a realm the cluster does not
                trust, or none) or the renewer (403).
            requests.RequestException: no NameNode answered.
        """
        base, response = self.ask_active_namenode({"op": "GETDELEGATIONTOKEN", "renewer": renewer})
        if response.status_code == 401:
            raise KerberosLoginError(unaccepted_ticket_message(base))
        if not response.ok:
            message = remote_exception_message(response)[:300]
            raise KerberosLoginError(
                f"the NameNode at {base} gave no delegation token for renewer {renewer} ({response.status_code}"
                f"{': ' + message if message else ''}); {RM_PRINCIPAL} must name the ResourceManager as the cluster runs it"
            )
        return decode_url_string(response.json()["Token"]["urlString"]).for_hdfs_rpc()

    def ask_active_namenode(self, params: Mapping[str, str]) -> tuple[str, requests.Response]:
        """The base URL and the answer of the first active NameNode of ``url`` to WebHDFS ``GET /webhdfs/v1/`` with
        ``params`` (and ``doas``): one that cannot be reached, or a standby's refusal, moves on to the next (HA).

        Raises:
            requests.RequestException: no NameNode answered.
        """
        last: Exception | None = None
        for base in self.urls:
            try:
                response = self.session.get(
                    f"{base.rstrip('/')}/webhdfs/v1/", params={**params, **self.doas()}, timeout=self.request_timeout
                )
            except requests.ConnectionError as error:
                last = error
                continue
            if response.status_code == 403 and "StandbyException" in response.text:
                last = requests.HTTPError(f"{base} is a standby NameNode")
                continue
            return base, response
        raise last or requests.ConnectionError("no NameNode to ask")


def unaccepted_ticket_message(service_url: str) -> str:
    """A 401 despite SPNEGO: the client's ticket could not become one for the service."""
    return (
        f"{service_url} did not accept the client's Kerberos ticket (401): the ticket is of a realm the cluster does not "
        "trust, or no service ticket for its HTTP principal could be had; run kinit with a principal of the cluster's realm "
        "(klist shows the current one)"
    )


def remote_exception_message(response: requests.Response) -> str:
    """The message of a Hadoop server's ``RemoteException`` answer (WebHDFS's, the ResourceManager's), "" for any other."""
    try:
        document: Any = response.json()
        return str(document["RemoteException"]["message"])
    except (ValueError, KeyError, TypeError):
        return ""
