"""The TLS key and trust stores of the Kerberized test cluster, made with the JDK's keytool.

Why TLS at all: a secure DataNode must either bind privileged ports (root,
jsvc) or protect its data transfer with SASL, and Hadoop accepts SASL only when
the web endpoints are HTTPS_ONLY, because block access tokens would otherwise
travel in clear on the DataNode's HTTP port. So the NameNode's and DataNode's
web servers (WebHDFS included) speak HTTPS, with one self-signed certificate for
the cluster's host name.

What is made, in one directory (mode 0700)::

    keystore.p12     the server key and its certificate (ssl-server.xml)
    truststore.p12   the certificate alone (ssl-client.xml; JVM clients, swebhdfs://)
    ca.pem           the certificate as PEM: ``curl --cacert``, requests' ``verify=``

The certificate names ``localhost`` and ``127.0.0.1`` (subjectAltName), so
either URL verifies. PKCS12, the JDK's default store type since 9.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

KEYTOOL_TIMEOUT = 60.0
"""Seconds for one keytool run (a JVM start: about 1 s on 2 cores)."""


class TlsError(RuntimeError):
    """keytool failed."""


@dataclass(frozen=True)
class TlsStores:
    """Paths of the stores and their one password (key, keystore and truststore alike)."""

    keystore: Path
    truststore: Path
    ca_pem: Path
    password: str


def keytool_for(java: str) -> str:
    """The keytool of the JDK whose ``java`` runs the daemons, so the stores are in a format it reads."""
    keytool = Path(os.path.realpath(java)).parent / "keytool"
    if not os.access(keytool, os.X_OK):
        raise TlsError(f"no keytool next to {java}: a full JDK is needed (openjdk-17-jdk-headless)")
    return str(keytool)


def plan_stores(directory: Path) -> TlsStores:
    """Where the stores of ``directory`` go and their new password, before ``make_stores``
    makes them: configuration that names them can be written meanwhile."""
    return TlsStores(directory / "keystore.p12", directory / "truststore.p12", directory / "ca.pem", secrets.token_hex(12))


def make_stores(stores: TlsStores, *, java: str, host: str, validity_days: int = 30) -> TlsStores:
    """Make a self-signed certificate for ``host`` (and 127.0.0.1) and the three
    files above (``plan_stores``); about 3 s, three keytool runs."""
    directory = stores.keystore.parent
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    keytool = keytool_for(java)
    for path in (stores.keystore, stores.truststore, stores.ca_pem):
        path.unlink(missing_ok=True)
    store = ["-storetype", "PKCS12", "-storepass", stores.password]
    _keytool(
        keytool,
        "-genkeypair",
        "-alias",
        host,
        "-keyalg",
        "RSA",
        "-keysize",
        "2048",
        "-dname",
        f"CN={host}",
        "-ext",
        f"SAN=dns:{host},ip:127.0.0.1",
        "-validity",
        str(validity_days),
        "-keystore",
        str(stores.keystore),
        "-keypass",
        stores.password,
        *store,
    )
    _keytool(keytool, "-exportcert", "-rfc", "-alias", host, "-keystore", str(stores.keystore), "-file", str(stores.ca_pem), *store)
    _keytool(keytool, "-importcert", "-noprompt", "-alias", host, "-file", str(stores.ca_pem), "-keystore", str(stores.truststore), *store)
    return stores


def _keytool(keytool: str, *args: str) -> None:
    try:
        done = subprocess.run([keytool, *args], capture_output=True, text=True, timeout=KEYTOOL_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as e:
        raise TlsError(f"keytool {args[0]} took over {KEYTOOL_TIMEOUT:.0f} s") from e
    if done.returncode != 0:
        raise TlsError(f"keytool {args[0]} failed (exit {done.returncode}): {(done.stdout + done.stderr).strip()[-2000:]}")
