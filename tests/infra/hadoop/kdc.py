"""A Kerberos KDC of its own for one test cluster: MIT Kerberos's ``krb5kdc``, from Debian.

Why MIT's KDC rather than Apache Kerby (what Hadoop's MiniKdc embeds): it is a
real KDC that sites run, it starts in well under a second (creating the
database, every principal and keytab, and the daemon take about 0.2 s together;
a Kerby JVM takes seconds on 2 cores), and it comes with the client tools the
tests and a person debugging need anyway (``kinit``, ``klist``), built on the
same GSS-API library that ``curl --negotiate`` and Python's gssapi use. Debian's
``krb5-kdc``, ``krb5-admin-server`` and ``krb5-user`` packages provide it
(``make packages``); nothing here needs root or touches ``/etc/krb5.conf``.

Shape::

    kdc = Kdc(state_dir, krb5_conf=conf/krb5.conf, log_path=logs/kdc.log).start()
    kdc.add_principal("alice", password="...")       # or without: a random key
    kdc.export_keytab(path, ["nn/localhost"])
    env = kdc.kinit("alice", ccache, password="...")  # {"KRB5_CONFIG": ..., "KRB5CCNAME": ...}
    kdc.stop()

- ``state_dir`` holds the database, its stash and ``kdc.conf``; ``krb5_conf``
  is the clients' configuration (``KRB5_CONFIG`` for MIT's tools and libraries,
  ``-Djava.security.krb5.conf`` for a JVM, which ignores ``KRB5_CONFIG``).
- The KDC listens on TCP only, on 127.0.0.1 and a free port; the ``krb5.conf``
  tells every client to use TCP (``udp_preference_limit = 1``), as Java does
  anyway for large tickets.
- Host names are taken as written: no DNS canonicalization and no reverse
  lookup on the client side, so ``HTTP/localhost`` is asked for when a URL says
  ``localhost`` (the test cluster's host name; see ``secureconf.HOST``).
- Principal administration goes through ``kadmin.local``, on the database
  directly: no ``kadmind``, no admin principal.

Times are in minutes where Kerberos's own are (ticket lifetimes), seconds for
waiting.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.infra.hadoop import processes

REALM = "JOBCLUSTER.TEST"
"""The test realm: upper case, as Kerberos realms are by convention, under the
reserved ``.test`` top-level domain so that it can never be a real site's."""

TOOL_TIMEOUT = 30.0
"""Seconds for one run of kdb5_util, kadmin.local, kinit or kdestroy (each takes milliseconds)."""

PACKAGES_HINT = "install Debian's krb5-kdc, krb5-admin-server and krb5-user (`make packages` does, as root)"


class KdcError(RuntimeError):
    """The KDC could not be set up, started, or asked for a ticket."""


def _tool(name: str) -> str:
    """The path of one of MIT Kerberos's programs; Debian puts the KDC's in /usr/sbin, which a non-root PATH lacks."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if not found:
        raise KdcError(f"'{name}' not found: {PACKAGES_HINT}")
    return found


def _free_tcp_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def krb5_conf_text(realm: str, kdc_address: str, ticket_lifetime_min: int, renew_lifetime_min: int) -> str:
    """The clients' krb5.conf. ``kdc_address``: ``host:port``."""
    return f"""\
[libdefaults]
  default_realm = {realm}
  dns_lookup_kdc = false
  dns_lookup_realm = false
  dns_canonicalize_hostname = false
  rdns = false
  udp_preference_limit = 1
  ticket_lifetime = {ticket_lifetime_min}m
  renew_lifetime = {renew_lifetime_min}m
  forwardable = true

[realms]
  {realm} = {{
    kdc = {kdc_address}
  }}

[domain_realm]
  localhost = {realm}
"""


def kdc_conf_text(realm: str, state_dir: Path, port: int, ticket_lifetime_min: int, renew_lifetime_min: int) -> str:
    """The KDC's kdc.conf: TCP on 127.0.0.1 only (an empty ``kdc_listen`` opens no UDP socket), its
    files under ``state_dir``, AES keys only (what Java 17 and MIT 1.20 both take by default), and the
    log on stderr, which ``Kdc`` redirects to its log file."""
    return f"""\
[kdcdefaults]
  kdc_listen = ""
  kdc_tcp_listen = 127.0.0.1:{port}

[realms]
  {realm} = {{
    database_name = {state_dir / "principal"}
    key_stash_file = {state_dir / "stash"}
    acl_file = {state_dir / "kadm5.acl"}
    max_life = {ticket_lifetime_min}m
    max_renewable_life = {renew_lifetime_min}m
    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  }}

[logging]
  kdc = STDERR
"""


class Kdc:
    """One MIT KDC process and its database.

    ``state_dir``: database, stash, kdc.conf (created; its content is disposable).
    ``krb5_conf``: where the clients' krb5.conf is written. ``log_path``: the KDC's log.
    ``ticket_lifetime_min`` / ``renew_lifetime_min``: the longest ticket the KDC
    issues and how long it may be renewed, in minutes.
    """

    def __init__(
        self,
        state_dir: Path,
        *,
        krb5_conf: Path,
        log_path: Path,
        realm: str = REALM,
        ticket_lifetime_min: int = 10 * 60,
        renew_lifetime_min: int = 7 * 24 * 60,
    ) -> None:
        self.state_dir = state_dir
        self.krb5_conf = krb5_conf
        self.log_path = log_path
        self.realm = realm
        self.ticket_lifetime_min = ticket_lifetime_min
        self.renew_lifetime_min = renew_lifetime_min
        self.port: int | None = None
        self._proc: subprocess.Popen | None = None

    @property
    def kdc_conf(self) -> Path:
        return self.state_dir / "kdc.conf"

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>``, where the KDC takes TCP requests."""
        if self.port is None:
            raise KdcError("the KDC is not started")
        return f"127.0.0.1:{self.port}"

    def principal(self, name: str) -> str:
        """``name@REALM`` (``name`` may be ``service/host``)."""
        return name if "@" in name else f"{name}@{self.realm}"

    def client_env(self) -> dict[str, str]:
        """What MIT's tools and libraries (kinit, curl, Python's gssapi) need to use this realm."""
        return {"KRB5_CONFIG": str(self.krb5_conf)}

    def java_options(self) -> list[str]:
        """JVM flags for this realm: the JDK reads neither KRB5_CONFIG nor, without this, anything but /etc/krb5.conf."""
        return [f"-Djava.security.krb5.conf={self.krb5_conf}"]

    def _admin_env(self) -> dict[str, str]:
        return {**os.environ, **self.client_env(), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    # -- lifecycle -------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> Kdc:
        """Create the database and start the KDC; returns once it accepts
        connections. ``timeout``: seconds for that. A port taken between
        choosing and binding it costs one retry on another."""
        if self._proc is not None:
            raise KdcError("the KDC is already started")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._create_database()
        for attempt in (1, 2):
            try:
                self._start_once(timeout)
                return self
            except KdcError:
                log = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
                lost_port = "Address already in use" in log
                self.stop()
                if attempt == 2 or not lost_port:
                    raise
                self.log_path.rename(self.log_path.with_suffix(".bindfailure.log"))
        raise AssertionError("unreachable")

    def _create_database(self) -> None:
        # kdb5_util reads the database's location from kdc.conf, which needs a
        # port: a placeholder until _start_once writes the real one.
        self.kdc_conf.write_text(kdc_conf_text(self.realm, self.state_dir, 0, self.ticket_lifetime_min, self.renew_lifetime_min))
        self.krb5_conf.parent.mkdir(parents=True, exist_ok=True)
        self.krb5_conf.write_text(krb5_conf_text(self.realm, "127.0.0.1:0", self.ticket_lifetime_min, self.renew_lifetime_min))
        (self.state_dir / "kadm5.acl").write_text("")
        # -W: no strong random seed; the test database's keys need not resist
        # anyone, and reading /dev/random could block on an idle VM.
        master = os.urandom(12).hex()
        self._run([_tool("kdb5_util"), "create", "-s", "-W", "-r", self.realm, "-P", master], "creating the KDC database")

    def _start_once(self, timeout: float) -> None:
        self.port = _free_tcp_port("127.0.0.1")
        self.kdc_conf.write_text(kdc_conf_text(self.realm, self.state_dir, self.port, self.ticket_lifetime_min, self.renew_lifetime_min))
        self.krb5_conf.write_text(krb5_conf_text(self.realm, self.address, self.ticket_lifetime_min, self.renew_lifetime_min))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # -n: stay in the foreground, so the process we spawned is the KDC.
        self._proc = processes.spawn(
            [_tool("krb5kdc"), "-n", "-r", self.realm],
            env=self._admin_env(),
            log_path=self.log_path,
            cwd=self.state_dir,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self._proc.poll() is not None:
                tail = processes.tail(self.log_path)
                raise KdcError(f"krb5kdc exited with code {self._proc.returncode}; end of {self.log_path}:\n{tail}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise KdcError(f"krb5kdc did not listen on {self.address} within {timeout:.0f} s; see {self.log_path}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the KDC (bounded: a few seconds). The database stays in ``state_dir``."""
        proc, self._proc = self._proc, None
        if proc is not None:
            processes.terminate([proc], timeout=5)

    # -- principals --------------------------------------------------------------

    def add_principal(self, name: str, *, password: str | None = None) -> str:
        """Create ``name`` (``user`` or ``service/host``) with ``password``, or with
        a random key (services: only a keytab can log in). Returns the full principal."""
        return self.add_principals({name: password})[0]

    def add_principals(self, names: Mapping[str, str | None]) -> list[str]:
        """Several ``add_principal`` in one kadmin.local run: ``{name: password or None}``.
        Passwords go on kadmin's command line: no whitespace in them."""
        queries = [f"addprinc {f'-pw {pw}' if pw is not None else '-randkey'} {self.principal(n)}" for n, pw in names.items()]
        self._kadmin(queries, "creating principals")
        return [self.principal(n) for n in names]

    def export_keytab(self, path: Path, names: Iterable[str]) -> Path:
        """Write the keys of ``names`` into the keytab ``path`` (mode 0600).
        The keys are copied as they are (``-norandkey``): a user keeps the
        password it was given, and one principal may be in several keytabs."""
        names = list(names)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._kadmin([f"ktadd -k {path} -norandkey {self.principal(n)}" for n in names], f"writing {path}")
        if not path.is_file():
            raise KdcError(f"kadmin.local wrote no keytab {path}")
        path.chmod(0o600)
        return path

    def rekey(self, name: str) -> None:
        """Give ``name`` new random keys (as a password change does): keytabs exported before no longer match."""
        self._kadmin([f"cpw -randkey {self.principal(name)}"], f"new keys for {name}")

    def _kadmin(self, queries: list[str], what: str) -> None:
        # kadmin.local exits 0 even when a query fails, so its errors are read
        # off stderr: MIT formats each as "<query>: <reason> while <doing>".
        out = self._run([_tool("kadmin.local"), "-r", self.realm], what, stdin="\n".join(queries) + "\n")
        errors = [line for line in out.splitlines() if " while " in line]
        if errors:
            raise KdcError(f"{what} failed: {'; '.join(errors)}")

    def _run(self, argv: list[str], what: str, stdin: str | None = None, env: Mapping[str, str] | None = None) -> str:
        """Run one of MIT's tools (with the admin environment unless ``env``); its stderr. Raises KdcError."""
        try:
            done = subprocess.run(
                argv,
                input=stdin,
                capture_output=True,
                text=True,
                env=dict(env) if env is not None else self._admin_env(),
                timeout=TOOL_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise KdcError(f"{what}: {argv[0]} took over {TOOL_TIMEOUT:.0f} s") from e
        if done.returncode != 0:
            raise KdcError(f"{what} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        return done.stderr

    # -- tickets -------------------------------------------------------------------

    def kinit(
        self,
        name: str,
        ccache: Path,
        *,
        password: str | None = None,
        keytab: Path | None = None,
        lifetime_min: int | None = None,
        renewable_min: int | None = None,
    ) -> dict[str, str]:
        """Get a TGT for ``name`` into the credential cache file ``ccache`` (replacing
        what it held), with its ``password`` or from its ``keytab``. ``lifetime_min``
        / ``renewable_min``: ask for a shorter ticket than the KDC's maximum.

        Returns the environment a client process needs to act as ``name``:
        ``KRB5_CONFIG`` and ``KRB5CCNAME`` (the plain path, which MIT's libraries
        and the JDK's Krb5LoginModule both read as a file cache). A JVM also needs
        ``java_options()``."""
        if (password is None) == (keytab is None):
            raise KdcError("kinit needs a password or a keytab, not both")
        ccache.parent.mkdir(parents=True, exist_ok=True)
        env = {**self.client_env(), "KRB5CCNAME": str(ccache)}
        argv = [_tool("kinit")]
        if lifetime_min is not None:
            argv += ["-l", f"{lifetime_min}m"]
        if renewable_min is not None:
            argv += ["-r", f"{renewable_min}m"]
        if keytab is not None:
            argv += ["-k", "-t", str(keytab)]
        argv.append(self.principal(name))
        self._run(argv, f"kinit {name}", stdin=None if password is None else password + "\n", env={**os.environ, **env})
        return env


def kdestroy(env: Mapping[str, str]) -> None:
    """Empty the credential cache that ``env`` (from ``Kdc.kinit``) names; no error when it is gone already."""
    subprocess.run([_tool("kdestroy"), "-q"], env={**os.environ, **env}, capture_output=True, timeout=TOOL_TIMEOUT, check=False)
