"""A login from a keytab (Flink's ``security.kerberos.login.keytab`` and ``.principal``), checked before anything is deployed.

With both options set, the client needs no ticket cache: as Flink's client does
(its ``KerberosLoginProvider`` logs the whole process in with
``UserGroupInformation.loginUserFromKeytab``), this process logs in from the
keytab, and so does its client JVM. The keytab is then shipped to the
ApplicationMaster, private to the application (``KEYTAB_RESOURCE``, mode 600 in
the 0700 staging directory, removed with it), for the JobManager's own logins.

What is checked, in order, each a :class:`KeytabError` naming what to do:

1. both options or neither (:func:`keytab_login_of`);
2. the file: there, a regular file, readable, a keytab (MIT's format, which
   ``ktutil``, ``kadmin ktadd``, Active Directory's ``ktpass`` and Java's
   ``ktab`` all write), holding a key of the principal (:func:`keytab_principals`);
3. the KDC: a first login (:func:`login`) shows whether the keys are the
   principal's current ones (a keytab made before the principal's password or
   keys changed is refused there, and only there).

The process's login (:func:`install`) is a private credential cache
(``KRB5CCNAME``, a file in a 0700 directory, removed at exit) filled from the
keytab, with the keytab as MIT Kerberos's client keytab (``KRB5_CLIENT_KTNAME``)
so that GSS-API (SPNEGO to WebHDFS and the ResourceManager) logs in again by
itself when the ticket ends; the JVM logs in from the keytab (:func:`java_login`).
"""

from __future__ import annotations

import atexit
import os
import shutil
import struct
import tempfile
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobcluster.backends.yarn.config_options import KERBEROS_LOGIN_KEYTAB, KERBEROS_LOGIN_PRINCIPAL
from jobcluster.backends.yarn.kerberos import KERBEROS_EXTRA, KerberosLoginError
from jobcluster.config.configuration import Configuration

KEYTAB_RESOURCE = "krb5.keytab"
"""The keytab's name in the ApplicationMaster's working directory (Flink's ``Utils.KEYTAB_FILE_NAME``)."""
KEYTAB_PERMISSION = "600"
"""The keytab's permission on HDFS, in the staging directory that only its owner may enter anyway."""

_KEYTAB_VERSIONS = (b"\x05\x01", b"\x05\x02")  # MIT's keytab file format, versions 1 and 2


class KeytabError(KerberosLoginError):
    """The keytab login cannot work (a missing option, an unreadable or foreign file, a principal it has no key of, keys
    the KDC refuses); the message says what to do."""


@dataclass(frozen=True)
class KeytabLogin:
    """``principal`` (as configured: ``alice`` or ``alice@REALM``, ``service/host@REALM``) logs in from ``keytab``
    (an absolute path on this machine)."""

    principal: str
    keytab: Path


def keytab_login_of(config: Configuration) -> KeytabLogin | None:
    """The keytab login ``config`` asks for, its file checked (see the module docstring); None when neither option is set.

    Raises:
        KeytabError: only one of the two options is set, or the file is missing, unreadable, not a keytab, or holds no
            key of the principal.
    """
    keytab = (config.get(KERBEROS_LOGIN_KEYTAB) or "").strip()
    principal = (config.get(KERBEROS_LOGIN_PRINCIPAL) or "").strip()
    if not keytab and not principal:
        return None
    if not keytab or not principal:
        missing, given = (
            (KERBEROS_LOGIN_KEYTAB, KERBEROS_LOGIN_PRINCIPAL) if not keytab else (KERBEROS_LOGIN_PRINCIPAL, KERBEROS_LOGIN_KEYTAB)
        )
        raise KeytabError(
            f"{given.key} is set but {missing.key} is not: a login from a keytab needs both (the principal and the keytab "
            "that holds its keys); set both, or neither to use the ticket cache (kinit)"
        )
    path = Path(keytab).expanduser()
    if not path.is_absolute():
        raise KeytabError(f"{KERBEROS_LOGIN_KEYTAB.key} {keytab!r} must be an absolute path (Flink's rule)")
    held = keytab_principals(_read_keytab(path))
    if not _holds(held, principal):
        raise KeytabError(
            f"the keytab {path} holds no key of {principal} (it holds: {', '.join(sorted(set(held))) or 'nothing'}); set "
            f"{KERBEROS_LOGIN_PRINCIPAL.key} to one of those, or export the principal's keys into a keytab (kadmin: "
            f"ktadd -k {path} {principal}; Active Directory: ktpass)"
        )
    return KeytabLogin(principal, path)


def _read_keytab(path: Path) -> bytes:
    try:
        if not path.is_file():
            what = "does not exist" if not path.exists() else "is not a file"
            raise KeytabError(f"the keytab {path} ({KERBEROS_LOGIN_KEYTAB.key}) {what}; give the path of the principal's keytab")
        data = path.read_bytes()
    except PermissionError as error:
        raise KeytabError(
            f"the keytab {path} ({KERBEROS_LOGIN_KEYTAB.key}) cannot be read by this user ({error.strerror}); make it readable "
            "for the user that runs jobcluster, and for that user only (chmod 600)"
        ) from error
    except OSError as error:
        raise KeytabError(f"the keytab {path} ({KERBEROS_LOGIN_KEYTAB.key}) cannot be read: {error}") from error
    if data[:2] not in _KEYTAB_VERSIONS:
        raise KeytabError(
            f"{path} ({KERBEROS_LOGIN_KEYTAB.key}) is not a Kerberos keytab (no keytab header); give the file that kadmin "
            "ktadd, ktutil or ktpass wrote"
        )
    return data


def keytab_principals(data: bytes) -> list[str]:
    """The principals (``name/instance@REALM``) of the entries of the keytab ``data``, one per entry, in file order.

    MIT's file format: two version bytes (5, 1 or 5, 2), then entries, each a signed 32-bit big-endian length (negative:
    a hole of that size) and the entry: component count, realm, components, (version 2) name type, timestamp and
    key version, key. Version 1 (of the 1990s) also counts the realm among the components; it is read big-endian here,
    as version 2 always is.

    Raises:
        KeytabError: ``data`` is not a keytab, or an entry runs past its end.
    """
    if data[:2] not in _KEYTAB_VERSIONS:
        raise KeytabError("not a Kerberos keytab (no keytab header)")
    version = data[1]
    principals = []
    pos = 2
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size == 0:
            break
        if size < 0:
            pos += -size
            continue
        entry = data[pos : pos + size]
        if len(entry) < size:
            raise KeytabError(f"the keytab is truncated: an entry of {size} bytes at offset {pos - 4} runs past its end")
        principals.append(_entry_principal(entry, version))
        pos += size
    return principals


def _entry_principal(entry: bytes, version: int) -> str:
    try:
        (count,) = struct.unpack_from(">H", entry, 0)
        if version == 1:
            count -= 1  # version 1 counts the realm among the components
        pos = 2
        parts = []
        for _ in range(count + 1):  # the realm, then the components
            (length,) = struct.unpack_from(">H", entry, pos)
            pos += 2
            if pos + length > len(entry):
                raise KeytabError("a keytab entry's name runs past the entry")
            parts.append(entry[pos : pos + length].decode("utf-8"))
            pos += length
    except (struct.error, UnicodeDecodeError) as error:
        raise KeytabError(f"a keytab entry cannot be read: {error}") from error
    realm, components = parts[0], parts[1:]
    return f"{'/'.join(components)}@{realm}"


def _holds(held: list[str], principal: str) -> bool:
    """Whether ``principal`` is among ``held``; without a realm it may be of any (the default realm decides at login)."""
    if "@" in principal:
        return principal in held
    return any(p.rpartition("@")[0] == principal for p in held)


def login(keytab_login: KeytabLogin, ccache: str) -> str:
    """Log in from the keytab into the credential cache ``ccache`` (``FILE:/path``, ``MEMORY:name``) through GSS-API's
    credential store (MIT's ``gss_acquire_cred_from`` with ``client_keytab``), which asks the KDC for a ticket at once;
    returns the principal as the KDC named it.

    Raises:
        KeytabError: the KDC refused the keys (the keytab is out of date) or cannot be reached, or the ``kerberos``
            extra is not installed.
    """
    try:
        import gssapi
        from gssapi.raw import acquire_cred_from
        from gssapi.raw.misc import GSSError
    except ImportError as error:
        raise KeytabError(f"a login from a keytab needs the kerberos extra, which is not installed ({error}): {KERBEROS_EXTRA}") from error
    name = gssapi.Name(keytab_login.principal, gssapi.NameType.kerberos_principal)
    store: dict[bytes | str, bytes | str] = {b"client_keytab": str(keytab_login.keytab).encode(), b"ccache": ccache.encode()}
    try:
        acquired: Any = acquire_cred_from(store, name, usage="initiate")
        credentials = gssapi.Credentials(acquired.creds)
        _ = credentials.lifetime  # asks the KDC, if the store did not already
    except GSSError as error:
        raise KeytabError(login_refused_message(keytab_login, str(error))) from error
    return str(credentials.name)


def login_refused_message(keytab_login: KeytabLogin, reason: str) -> str:
    """Why a login from a keytab failed at the KDC, and what to do (``reason``: GSS-API's message)."""
    if "integrity" in reason.lower() or "preauthentication" in reason.lower() or "password incorrect" in reason.lower():
        return (
            f"the KDC refused the keys of {keytab_login.principal} in the keytab {keytab_login.keytab} ({reason.strip()}): the "
            "keytab does not match the principal's current keys (its password or keys changed after the keytab was made); "
            "export a new keytab (kadmin: ktadd; Active Directory: ktpass) and try again"
        )
    return (
        f"cannot log in as {keytab_login.principal} from the keytab {keytab_login.keytab} ({reason.strip()}); check that the "
        "KDC of its realm is reachable from here (KRB5_CONFIG, else /etc/krb5.conf) and that the principal exists"
    )


def install(keytab_login: KeytabLogin, environ: MutableMapping[str, str] | None = None) -> str:
    """Make the keytab's login this process's: a private credential cache filled from it (``KRB5CCNAME``, in a 0700
    directory removed at exit) and the keytab as MIT's client keytab (``KRB5_CLIENT_KTNAME``), which GSS-API logs in
    from again when the ticket ends; returns the principal as the KDC named it.

    Raises:
        KeytabError: as :func:`login`; nothing is changed then.
    """
    env = os.environ if environ is None else environ
    directory = tempfile.mkdtemp(prefix="jobcluster-krb5-")  # mode 0700
    ccache = f"FILE:{directory}/ccache"
    try:
        principal = login(keytab_login, ccache)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    env["KRB5CCNAME"] = ccache
    env["KRB5_CLIENT_KTNAME"] = str(keytab_login.keytab)
    return principal


def java_login(jvm: Any, keytab_login: KeytabLogin) -> None:
    """Log the JVM's Hadoop user in from the keytab (``UserGroupInformation.loginUserFromKeytab``, as Flink's client
    does): its YARN client then acts as the principal, and Hadoop logs in again from the keytab when the ticket ends.

    Raises:
        py4j.protocol.Py4JJavaError: the login failed in Java (the caller checked the keytab with :func:`login` first).
    """
    jvm.org.apache.hadoop.security.UserGroupInformation.loginUserFromKeytab(keytab_login.principal, str(keytab_login.keytab))
