"""The Kerberized Hadoop test cluster: the plain cluster's four daemons in secure
mode, and a KDC of their own.

Why beside the plain cluster rather than instead of it: hundreds of tests use
the plain one's simple authentication (``user.name``, any user), and a secure
cluster costs a KDC, keytabs, TLS and SPNEGO on every probe; only the tests of
Kerberos itself (and later of delegation tokens, keytabs and proxy users) need
it, so it starts only when one of them is selected.

What it adds to ``HadoopCluster`` (what the settings are and why:
``secureconf.py``)::

    base/conf/krb5.conf        the realm's client configuration (KRB5_CONFIG; -Djava.security.krb5.conf)
    base/conf/ssl-*.xml        the HTTPS servers' key store, the clients' trust store
    base/data/kdc/             the KDC's database (kdc.py); its log is logs/kdc.log
    base/data/keytabs/         <service>.keytab per daemon (service + HTTP/localhost), HTTP.keytab, hdfs.keytab, <user>.keytab
    base/data/ccache/          credential caches: the infrastructure's own (hdfs), and kinit's default for tests
    base/data/tls/             keystore.p12, truststore.p12, ca.pem (tls.py)

Start (on top of the plain cluster's steps): KDC and principals, keytabs and
TLS stores, then the daemons; ready when the plain cluster's conditions hold,
probed over SPNEGO (curl, as ``hdfs``); then HDFS gets ``/tmp`` (1777) and a home
directory for each user, owned by that user.

Use::

    with KerberizedHadoopCluster() as cluster:
        env = cluster.kinit("alice")                  # {"KRB5_CONFIG", "KRB5CCNAME"}
        cluster.run_tool(FS_SHELL, "-ls", "/", env=env)
        curl(f"{cluster.resourcemanager_web_url}/ws/v1/cluster/info", env, cacert=cluster.ca_cert)

By hand: ``.venv/bin/python -m tests.infra.hadoop.cluster --kerberos``.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.infra.hadoop import processes
from tests.infra.hadoop.cluster import HadoopCluster, HadoopClusterError, Unanswered, _java
from tests.infra.hadoop.kdc import Kdc, KdcError
from tests.infra.hadoop.secureconf import (
    ADMIN,
    HOST,
    HTTP_SERVICE,
    SERVICES,
    KerberosSettings,
    SecureLayout,
    secure_conf_files,
)
from tests.infra.hadoop.siteconf import Ports
from tests.infra.hadoop.tls import TlsError, TlsStores, make_stores, plan_stores

CURL_TIMEOUT = 30.0
"""Seconds for one curl request unless told otherwise."""
TOKEN_RENEWER_TRACKER = "DelegationTokenRenewer #0"
"""The secure ResourceManager's thread that runs Hadoop 3.3's DelegationTokenRenewerPoolTracker, a loop that never
waits (YARN-11178, fixed in 3.4.0; the renewer's pool gives its first thread to it when the service starts). It
took a third of a core from the tests for as long as the cluster ran, so it gets at most 1% of one, and only time
nothing else wants (``processes.idle_threads``). All it does is time out renewals that hang, which the tests' never
do."""


def check_host_resolution(host: str = HOST) -> None:
    """HadoopClusterError unless ``host`` resolves to 127.0.0.1 only and
    127.0.0.1 back to ``host``: the service principals name ``host``, and Hadoop's
    clients derive the name they expect from a reverse lookup (secureconf.py)."""
    try:
        forward = {info[4][0] for info in socket.getaddrinfo(host, None, socket.AF_INET)}
        reverse = socket.gethostbyaddr("127.0.0.1")[0]
    except OSError as e:
        raise HadoopClusterError(f"cannot resolve {host} or 127.0.0.1: {e}") from e
    if forward != {"127.0.0.1"} or reverse != host:
        raise HadoopClusterError(
            f"the Kerberized cluster needs {host} -> 127.0.0.1 -> {host}; this machine has {host} -> {sorted(forward)}, "
            f"127.0.0.1 -> {reverse} (see /etc/hosts)"
        )


def curl(
    url: str,
    env: Mapping[str, str] | None,
    *,
    method: str = "GET",
    cacert: Path | None = None,
    negotiate: bool = True,
    timeout: float = CURL_TIMEOUT,
) -> tuple[int, str]:
    """One HTTP request with curl, with SPNEGO (``--negotiate``) from the ticket cache
    ``env`` names (``Kdc.kinit``'s environment) unless ``negotiate`` is False:
    ``(status, body)``. ``cacert``: the PEM to verify HTTPS with.

    Why curl: Debian's curl is built on MIT's GSS-API library, so it negotiates
    exactly as MIT's kinit left the cache, with no Python dependency.
    Unanswered when curl got no HTTP answer at all."""
    argv = ["curl", "-sS", "-X", method, "-H", "Accept: application/json", "--max-time", f"{timeout:g}"]
    if negotiate:
        argv += ["--negotiate", "-u", ":"]
    if cacert is not None:
        argv += ["--cacert", str(cacert)]
    # The status on a line of its own after the body, to split them apart.
    argv += ["-o", "-", "-w", "\n%{http_code}", url]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=timeout + 5, check=False)
    except subprocess.TimeoutExpired as e:
        raise Unanswered(f"curl took over {timeout:g} s") from e
    body, _, status = done.stdout.rpartition("\n")
    if done.returncode != 0 or not status.isdigit() or status == "000":
        raise Unanswered(f"curl exit {done.returncode}: {done.stderr.strip()[:300]}")
    return int(status), body


class KerberizedHadoopCluster(HadoopCluster):
    """The plain cluster's daemons in secure mode, with a KDC; see the module docstring.

    ``settings``: users, token lifetimes, proxy users (``secureconf.KerberosSettings``).
    The other arguments are ``HadoopCluster``'s. Start takes about as long as
    the plain cluster's (measured: docs/development/test-clusters.md).
    """

    host = HOST
    web_scheme = "https"

    def __init__(self, base_dir: Path | None = None, *, settings: KerberosSettings | None = None, **kwargs) -> None:
        super().__init__(base_dir, **kwargs)
        self.settings = settings or KerberosSettings()
        self.paths = SecureLayout(self.layout)
        self.kdc = Kdc(
            self.paths.kdc_dir,
            krb5_conf=self.paths.krb5_conf,
            log_path=self.log_dir / "kdc.log",
            realm=self.settings.realm,
            ticket_lifetime_min=self.settings.ticket_lifetime_min,
            renew_lifetime_min=self.settings.ticket_renew_lifetime_min,
        )
        self.tls: TlsStores | None = None
        # The users' passwords: new for each cluster, so no test can depend on one.
        self._passwords = {user: os.urandom(9).hex() for user in self.settings.users}
        self._admin_env: dict[str, str] | None = None

    # -- what tests use ------------------------------------------------------------

    @property
    def realm(self) -> str:
        return self.settings.realm

    @property
    def krb5_conf(self) -> Path:
        """The realm's krb5.conf, for ``KRB5_CONFIG`` (MIT's tools, curl, gssapi) and ``-Djava.security.krb5.conf``."""
        return self.paths.krb5_conf

    @property
    def ca_cert(self) -> Path:
        """The PEM that verifies the NameNode's and DataNode's HTTPS (``curl --cacert``, requests' ``verify=``)."""
        return self._tls().ca_pem

    def principal(self, name: str) -> str:
        """``name@REALM``: ``principal("alice")``, ``principal("rm/localhost")``."""
        return self.kdc.principal(name)

    def password(self, user: str) -> str:
        """The password of one of ``settings.users``."""
        return self._passwords[user]

    def keytab(self, user: str) -> Path:
        """The keytab of one of ``settings.users`` (or of ``ADMIN``)."""
        return self.paths.keytab(user)

    def kinit(self, user: str | None = None, ccache: Path | None = None, *, use_keytab: bool = False, **kinit_args) -> dict[str, str]:
        """Log ``user`` (default: the client, ``settings.users[0]``) in with its
        password, or its keytab with ``use_keytab``, into ``ccache`` (default:
        ``data/ccache/<user>``). Returns ``{"KRB5_CONFIG", "KRB5CCNAME"}`` for the
        client process; a JVM also needs ``client_java_options()``. ``kinit_args``:
        ``Kdc.kinit``'s ``lifetime_min`` and ``renewable_min``."""
        user = user or self.settings.client
        ccache = ccache or self.paths.ccache_dir / user
        if use_keytab:
            return self.kdc.kinit(user, ccache, keytab=self.keytab(user), **kinit_args)
        return self.kdc.kinit(user, ccache, password=self.password(user), **kinit_args)

    def no_ticket_env(self) -> dict[str, str]:
        """A client environment of this realm with an empty ticket cache (and not the user's default one)."""
        return {**self.kdc.client_env(), "KRB5CCNAME": str(self.paths.ccache_dir / "none")}

    def client_env(self) -> dict[str, str]:
        return {**super().client_env(), **self.kdc.client_env()}

    def client_java_options(self) -> list[str]:
        return self.kdc.java_options()

    def webhdfs(
        self, path: str, op: str, env: Mapping[str, str] | None = None, *, method: str = "GET", params: Mapping[str, str] | None = None
    ) -> tuple[int, str]:
        """One WebHDFS request over SPNEGO as whoever ``env``'s ticket cache holds
        (default: the superuser ``hdfs``): ``(status, body)``. ``params``: the
        query's other parameters, URL-safe as given."""
        query = "".join(f"&{k}={v}" for k, v in (params or {}).items())
        url = f"{self.webhdfs_url}/webhdfs/v1{path}?op={op}{query}"
        return curl(url, env if env is not None else self._admin(), method=method, cacert=self.ca_cert)

    def start_httpfs(self, timeout: float = 120.0) -> str:
        raise HadoopClusterError("HttpFS is not set up for Kerberos on the secure test cluster")

    # -- lifecycle -----------------------------------------------------------------

    def _start_once(self, classpath: str) -> None:
        # Each attempt sets security up anew: a failed attempt's stop() removes
        # data/, keytabs and KDC database included.
        check_host_resolution()
        try:
            self._start_security()
        except KdcError as e:
            raise HadoopClusterError(f"setting up Kerberos failed: {e}") from e
        super()._start_once(classpath)
        processes.idle_threads(self._procs["resourcemanager"].pid, TOKEN_RENEWER_TRACKER)
        self._set_up_hdfs()

    def _start_security(self) -> None:
        self.paths.ccache_dir.mkdir(parents=True, exist_ok=True)
        self.kdc.start()
        services = [f"{service}/{HOST}" for service in SERVICES.values()]
        http = f"{HTTP_SERVICE}/{HOST}"
        self.kdc.add_principals({**dict.fromkeys([*services, http, ADMIN]), **self._passwords})
        # Each daemon's keytab holds HTTP/localhost too: the NameNode's and
        # DataNode's web servers log in with their daemon's keytab.
        for service in SERVICES.values():
            self.kdc.export_keytab(self.paths.keytab(service), [f"{service}/{HOST}", http])
        for name in (HTTP_SERVICE, ADMIN, *self.settings.users):
            self.kdc.export_keytab(self.paths.keytab(name), [http if name == HTTP_SERVICE else name])
        # Only planned here; _format_namenode makes them.
        self.tls = plan_stores(self.paths.tls_dir)
        self._admin_env = self.kdc.kinit(ADMIN, self.paths.ccache_dir / ADMIN, keytab=self.paths.keytab(ADMIN))

    def _set_up_hdfs(self) -> None:
        """``/tmp`` (1777) and ``/user/<user>`` (0755, the user's) for each user, as the superuser."""
        dirs = [("/tmp", ADMIN, "1777")] + [(f"/user/{u}", u, "755") for u in self.settings.users]
        for path, owner, mode in dirs:
            steps: list[tuple[str, dict[str, str]]] = [
                ("MKDIRS", {}),
                ("SETOWNER", {"owner": owner}),
                ("SETPERMISSION", {"permission": mode}),
            ]
            for op, params in steps:
                status, body = self.webhdfs(path, op, method="PUT", params=params)
                if status != 200:
                    raise HadoopClusterError(f"WebHDFS {op} {path} as {ADMIN}: {status} {body[:300]}")

    def stop(self, *, keep_logs: bool = False) -> None:
        try:
            super().stop(keep_logs=keep_logs)
        finally:
            self.kdc.stop()
            self.tls = None
            self._admin_env = None

    # -- hooks of HadoopCluster ----------------------------------------------------

    def _format_namenode(self, classpath: str) -> None:
        # The TLS stores are made meanwhile: keytool and the format are a JVM
        # start each (~3 s), nothing reads the stores before the daemons start,
        # and on 2 cores the two overlap almost entirely.
        with ThreadPoolExecutor(1, thread_name_prefix="keytool") as pool:
            stores = pool.submit(make_stores, self._tls(), java=_java(), host=HOST)
            super()._format_namenode(classpath)
            try:
                stores.result()
            except TlsError as e:
                raise HadoopClusterError(f"making the TLS stores failed: {e}") from e

    def _conf_files(self, ports: Ports) -> dict[str, str]:
        return secure_conf_files(ports, self.layout, self.resources, self.settings, self._tls(), super()._conf_files(ports))

    def _jvm_props(self) -> list[str]:
        return self.kdc.java_options()

    def _env(self) -> dict[str, str]:
        # A cache no one fills: the daemons log in from their keytabs and must
        # never pick up a ticket from the caller's default cache.
        return {**super()._env(), **self.kdc.client_env(), "KRB5CCNAME": str(self.paths.ccache_dir / "daemons")}

    def _get(self, url: str, timeout: float) -> tuple[int, str]:
        return curl(url, self._admin(), cacert=self.ca_cert, timeout=timeout)

    def _user_query(self) -> str:
        return ""  # the ticket says who asks

    def _admin(self) -> dict[str, str]:
        if self._admin_env is None:
            raise HadoopClusterError("the cluster is not started")
        return self._admin_env

    def _tls(self) -> TlsStores:
        if self.tls is None:
            raise HadoopClusterError("the cluster is not started")
        return self.tls

    def describe(self) -> str:
        users = ", ".join(f"{self.principal(u)} (password {self.password(u)}, keytab {self.keytab(u)})" for u in self.settings.users)
        return "\n".join(
            [
                super().describe(),
                f"KDC              {self.kdc.address}, realm {self.realm}",
                f"KRB5_CONFIG      {self.krb5_conf}",
                f"CA certificate   {self.ca_cert}",
                f"users            {users}",
                f"superuser        {self.principal(ADMIN)} (keytab {self.keytab(ADMIN)})",
                f"services         {', '.join(self.principal(f'{s}/{HOST}') for s in [*SERVICES.values(), HTTP_SERVICE])}",
            ]
        )
