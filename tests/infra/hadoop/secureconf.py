"""The Kerberized test cluster's configuration, as data: principals, keytabs and
the secure settings laid over the plain cluster's (``siteconf.py``).

Why a module of its own: what "secure" means here (which principals, which
name mapping, why TLS, how long tokens live) is decided in pure functions that
can be read without a KDC or a JVM; ``secure_cluster.py`` creates the principals
and files and runs the daemons.

What the secure cluster is, over the plain one:

- Kerberos for every RPC (``hadoop.security.authentication=kerberos``) and
  service-level authorization on (the NameNode checks that a DataNode is
  ``dn/...``, the ResourceManager that a NodeManager is ``nm/...``).
- SPNEGO on every web endpoint (NameNode and DataNode web servers, WebHDFS,
  ResourceManager and NodeManager web UIs and REST APIs), as
  ``HTTP/localhost``; the ResourceManager's REST API also takes its own
  delegation tokens (YARN swaps in ``RMAuthenticationFilterInitializer``).
- Block access tokens, and SASL on the DataNode's data transfer
  (``dfs.data.transfer.protection=authentication``), which Hadoop accepts
  instead of privileged ports only with ``dfs.http.policy=HTTPS_ONLY``: the
  NameNode's and DataNode's web servers speak HTTPS (``tls.py``). YARN's stay
  HTTP, Hadoop's default for them.
- Containers still run as the NodeManager's own OS user
  (DefaultContainerExecutor), whoever submitted them: a production cluster runs
  LinuxContainerExecutor, a setuid binary that runs each container as its
  Kerberos user's OS account. The test machine has neither the binary nor the
  accounts, and what the tests check (who YARN and HDFS think a user is, which
  tokens an application gets) does not depend on it.

Host name: everything is addressed and named as ``localhost`` (``HOST``). Kerberos
principals carry a host name, and Hadoop fills ``_HOST`` in from the address a
server binds (server side) or from the reverse lookup of the address a client
connects to (client side, ``SecurityUtil.getServerPrincipal``). ``localhost``
resolves to 127.0.0.1 and 127.0.0.1 back to ``localhost`` on any Linux machine
(``/etc/hosts``), so the daemons stay on loopback, as the plain cluster's do, and
both sides agree; the machine's own host name resolves differently from machine
to machine (here to 127.0.0.1, on CI runners often to a LAN address).
``secure_cluster.py`` checks both lookups before it starts. The NodeManager's
principal is written out (``nm/localhost``) rather than with ``_HOST``: the
NodeManager fills ``_HOST`` from the machine's canonical host name, not from an
address it binds.

User names: ``hadoop.security.auth_to_local`` maps ``nn/*`` and ``dn/*`` to
``hdfs`` and ``rm/*`` and ``nm/*`` to ``yarn``, as sites do, so HDFS's superuser
is ``hdfs`` (the NameNode's own user) and the principal ``hdfs`` (``ADMIN``) is
that superuser, for setting up the cluster. Test users (``alice``, ``bob``) map
to their own names, in the group ``users`` (``group_overrides``). The rules name
the realm, so that a JVM that reads another krb5.conf (a YARN container's, which
reads the machine's /etc/krb5.conf) still maps them the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.infra.hadoop.kdc import REALM
from tests.infra.hadoop.siteconf import Layout, NodeResources, Ports, core_site, hdfs_site, to_xml, yarn_site
from tests.infra.hadoop.tls import TlsStores

HOST = "localhost"
"""The host name every address and every service principal of the secure cluster uses (see the module docstring)."""

ADMIN = "hdfs"
"""The principal (and HDFS user) of the HDFS superuser, with a keytab; the infrastructure sets HDFS up as it."""

SERVICES: dict[str, str] = {
    "namenode": "nn",
    "datanode": "dn",
    "resourcemanager": "rm",
    "nodemanager": "nm",
}
"""Each daemon's service principal's first component."""

USERS_GROUP = "users"
"""The group of every test user (``KerberosSettings.users``), e.g. for ``ProxyUser(groups=USERS_GROUP)``."""

HTTP_SERVICE = "HTTP"
"""The SPNEGO service name: HTTP clients ask for ``HTTP/<host of the URL>``."""

MS_PER_MIN = 60_000


@dataclass(frozen=True)
class ProxyUser:
    """Who ``hadoop.proxyuser.<name>.*`` lets a user impersonate, and from where:
    Hadoop's own value syntax (``*`` or comma-separated lists). ``users`` None: the
    setting is left out (only ``groups`` decide)."""

    hosts: str = "*"
    groups: str = "*"
    users: str | None = None


@dataclass(frozen=True)
class KerberosSettings:
    """What a test may choose about the secure cluster.

    ``users``: user principals, each with a password and a keytab, and a home
    directory in HDFS; the first is the client the tests act as, the second
    one more user (impersonation, permissions).
    ``token_max_lifetime_min`` / ``token_renew_interval_min``: how long HDFS's
    and YARN's delegation tokens live at most, and how long each renewal
    extends one (Hadoop's defaults: 7 days, 1 day), in minutes.
    ``proxy_users``: ``hadoop.proxyuser.<short name>.*``, keyed by the short name.
    ``ticket_lifetime_min`` / ``ticket_renew_lifetime_min``: the KDC's longest
    ticket and renewal, in minutes (the daemons log in again from their keytabs).
    """

    users: tuple[str, ...] = ("alice", "bob")
    token_max_lifetime_min: int = 7 * 24 * 60
    token_renew_interval_min: int = 24 * 60
    proxy_users: Mapping[str, ProxyUser] = field(default_factory=dict)
    ticket_lifetime_min: int = 10 * 60
    ticket_renew_lifetime_min: int = 7 * 24 * 60
    realm: str = REALM

    def __post_init__(self) -> None:
        if not self.users:
            raise ValueError("KerberosSettings.users needs at least the client")
        if self.token_renew_interval_min > self.token_max_lifetime_min:
            raise ValueError("a delegation token's renew interval cannot exceed its max lifetime")

    @property
    def client(self) -> str:
        """The user principal the tests act as (short name)."""
        return self.users[0]


def service_principal(service: str, realm: str, host: str = "_HOST") -> str:
    """``service/host@REALM``; ``_HOST`` lets Hadoop fill in the host (see the module docstring)."""
    return f"{service}/{host}@{realm}"


@dataclass(frozen=True)
class SecureLayout:
    """Where the secure cluster's own files go, beside ``siteconf.Layout``'s.

    ``conf/krb5.conf`` is for clients and stays with the logs; the KDC's
    database, keytabs, credential caches and TLS stores are under ``data/`` and
    go when the cluster stops."""

    layout: Layout

    @property
    def krb5_conf(self) -> Path:
        return self.layout.conf_dir / "krb5.conf"

    @property
    def kdc_dir(self) -> Path:
        return self.layout.data_dir / "kdc"

    @property
    def keytab_dir(self) -> Path:
        return self.layout.data_dir / "keytabs"

    @property
    def ccache_dir(self) -> Path:
        return self.layout.data_dir / "ccache"

    @property
    def tls_dir(self) -> Path:
        return self.layout.data_dir / "tls"

    def keytab(self, name: str) -> Path:
        """``<name>.keytab``: a daemon's by its service (``nn``), a user's by its name."""
        return self.keytab_dir / f"{name.replace('/', '_')}.keytab"

    @property
    def http_keytab(self) -> Path:
        return self.keytab(HTTP_SERVICE)


def auth_to_local(realm: str) -> str:
    """Principal to user-name rules (see the module docstring); one rule a line, as Hadoop reads them."""
    r = realm.replace(".", r"\.")
    return "\n".join(
        [
            f"RULE:[2:$1/$2@$0]([nd]n/.*@{r})s/.*/hdfs/",
            f"RULE:[2:$1/$2@$0]([rn]m/.*@{r})s/.*/yarn/",
            f"RULE:[2:$1/$2@$0]({HTTP_SERVICE}/.*@{r})s/.*/{HTTP_SERVICE}/",
            f"RULE:[1:$1@$0](.*@{r})s/@.*//",
            "DEFAULT",
        ]
    )


def group_overrides(settings: KerberosSettings) -> str:
    """``hadoop.user.group.static.mapping.overrides``: the test users have no OS
    accounts for Hadoop's default (shell) group lookup to find, so their groups
    are given here, and a proxy-user rule by group can match them. ``hdfs`` and
    ``yarn`` too, as on a site; ``dr.who`` (anonymous web users) keeps no group,
    Hadoop's default."""
    groups = {"dr.who": "", ADMIN: "supergroup", "yarn": "hadoop", **dict.fromkeys(settings.users, USERS_GROUP)}
    return ";".join(f"{user}={group}" for user, group in groups.items())


def secure_core_site(ports: Ports, layout: Layout, settings: KerberosSettings) -> dict[str, str]:
    """core-site.xml: the plain one at ``HOST``, its proxy users replaced by ``settings.proxy_users``."""
    paths = SecureLayout(layout)
    conf = {k: v for k, v in core_site(ports, layout, ADMIN, HOST).items() if not k.startswith("hadoop.proxyuser.")}
    conf.update(
        {
            "hadoop.security.authentication": "kerberos",
            "hadoop.security.authorization": "true",
            "hadoop.security.auth_to_local": auth_to_local(settings.realm),
            "hadoop.http.authentication.type": "kerberos",
            "hadoop.http.authentication.kerberos.principal": service_principal(HTTP_SERVICE, settings.realm),
            "hadoop.http.authentication.kerberos.keytab": str(paths.http_keytab),
            "hadoop.http.authentication.simple.anonymous.allowed": "false",
            # The daemons log in again from their keytabs before their tickets
            # expire, not only when an RPC fails: tests may make tickets short.
            "hadoop.kerberos.keytab.login.autorenewal.enabled": "true",
            "hadoop.user.group.static.mapping.overrides": group_overrides(settings),
        }
    )
    for user, rule in settings.proxy_users.items():
        conf[f"hadoop.proxyuser.{user}.hosts"] = rule.hosts
        conf[f"hadoop.proxyuser.{user}.groups"] = rule.groups
        if rule.users is not None:
            conf[f"hadoop.proxyuser.{user}.users"] = rule.users
    return conf


def secure_hdfs_site(ports: Ports, layout: Layout, settings: KerberosSettings) -> dict[str, str]:
    """hdfs-site.xml: the plain one at ``HOST``, Kerberized, its web servers on HTTPS.

    The web servers keep the plain cluster's ports: under HTTPS_ONLY the HTTP
    addresses are never bound, so the HTTPS ones take their ports."""
    paths = SecureLayout(layout)
    realm = settings.realm
    conf = hdfs_site(ports, layout, HOST)
    for key in ("dfs.namenode.http-address", "dfs.datanode.http.address"):
        del conf[key]
    conf.update(
        {
            "dfs.namenode.https-address": f"{HOST}:{ports.namenode_http}",
            "dfs.datanode.https.address": f"{HOST}:{ports.datanode_http}",
            "dfs.http.policy": "HTTPS_ONLY",
            "dfs.client.https.need-auth": "false",
            "dfs.block.access.token.enable": "true",
            "dfs.data.transfer.protection": "authentication",
            "dfs.namenode.kerberos.principal": service_principal(SERVICES["namenode"], realm),
            "dfs.namenode.keytab.file": str(paths.keytab(SERVICES["namenode"])),
            # The NameNode's web server authenticates as this one, with the
            # NameNode's keytab, which therefore holds HTTP/localhost too.
            "dfs.namenode.kerberos.internal.spnego.principal": service_principal(HTTP_SERVICE, realm),
            "dfs.datanode.kerberos.principal": service_principal(SERVICES["datanode"], realm),
            "dfs.datanode.keytab.file": str(paths.keytab(SERVICES["datanode"])),
            "dfs.web.authentication.kerberos.principal": service_principal(HTTP_SERVICE, realm),
            "dfs.web.authentication.kerberos.keytab": str(paths.http_keytab),
            "dfs.namenode.delegation.token.max-lifetime": str(settings.token_max_lifetime_min * MS_PER_MIN),
            "dfs.namenode.delegation.token.renew-interval": str(settings.token_renew_interval_min * MS_PER_MIN),
        }
    )
    return conf


def secure_yarn_site(ports: Ports, layout: Layout, resources: NodeResources, settings: KerberosSettings) -> dict[str, str]:
    """yarn-site.xml: the plain one at ``HOST``, Kerberized, SPNEGO on both web servers."""
    paths = SecureLayout(layout)
    realm = settings.realm
    conf = yarn_site(ports, layout, resources, HOST)
    conf.update(
        {
            "yarn.resourcemanager.principal": service_principal(SERVICES["resourcemanager"], realm),
            "yarn.resourcemanager.keytab": str(paths.keytab(SERVICES["resourcemanager"])),
            "yarn.nodemanager.principal": service_principal(SERVICES["nodemanager"], realm, HOST),
            "yarn.nodemanager.keytab": str(paths.keytab(SERVICES["nodemanager"])),
            "yarn.resourcemanager.webapp.spnego-principal": service_principal(HTTP_SERVICE, realm),
            "yarn.resourcemanager.webapp.spnego-keytab-file": str(paths.http_keytab),
            "yarn.nodemanager.webapp.spnego-principal": service_principal(HTTP_SERVICE, realm),
            "yarn.nodemanager.webapp.spnego-keytab-file": str(paths.http_keytab),
            "yarn.resourcemanager.delegation.token.max-lifetime": str(settings.token_max_lifetime_min * MS_PER_MIN),
            "yarn.resourcemanager.delegation.token.renew-interval": str(settings.token_renew_interval_min * MS_PER_MIN),
        }
    )
    return conf


def ssl_server(stores: TlsStores) -> dict[str, str]:
    """ssl-server.xml, which Hadoop's HTTPS servers read from the classpath (the conf dir)."""
    return {
        "ssl.server.keystore.type": "pkcs12",
        "ssl.server.keystore.location": str(stores.keystore),
        "ssl.server.keystore.password": stores.password,
        "ssl.server.keystore.keypassword": stores.password,
        "ssl.server.truststore.type": "pkcs12",
        "ssl.server.truststore.location": str(stores.truststore),
        "ssl.server.truststore.password": stores.password,
    }


def ssl_client(stores: TlsStores) -> dict[str, str]:
    """ssl-client.xml: what Hadoop's HTTPS clients (swebhdfs://, the DataNode
    talking to the NameNode's web server) trust."""
    return {
        "ssl.client.truststore.type": "pkcs12",
        "ssl.client.truststore.location": str(stores.truststore),
        "ssl.client.truststore.password": stores.password,
    }


def secure_conf_files(
    ports: Ports, layout: Layout, resources: NodeResources, settings: KerberosSettings, stores: TlsStores, plain: Mapping[str, str]
) -> dict[str, str]:
    """Every file of the secure HADOOP_CONF_DIR, by name: ``plain`` (siteconf.conf_files)
    with its site files replaced by the secure ones, and the two SSL files."""
    return {
        **plain,
        "core-site.xml": to_xml(secure_core_site(ports, layout, settings)),
        "hdfs-site.xml": to_xml(secure_hdfs_site(ports, layout, settings)),
        "yarn-site.xml": to_xml(secure_yarn_site(ports, layout, resources, settings)),
        "ssl-server.xml": to_xml(ssl_server(stores)),
        "ssl-client.xml": to_xml(ssl_client(stores)),
    }
