"""The JobManager's DelegationTokenManager on YARN: fresh HDFS delegation tokens from the shipped keytab, in time.

The client's HDFS delegation token lives at most ``dfs.namenode.delegation.token.max-lifetime``
(7 days by default), however often YARN renews it; a streaming job that runs
longer needs new tokens, which only a Kerberos login can obtain. With a keytab
login (``security.kerberos.login.*``, shipped to the ApplicationMaster as
``krb5.keytab``) and ``security.delegation.tokens.enabled``, this manager does
what Flink's ``DefaultDelegationTokenManager`` with its
``HadoopFSDelegationTokenProvider`` does in the JobManager:

1. log in from the keytab (``UserGroupInformation.loginUserFromKeytabAndReturnUGI``:
   a fresh login, never the process's own user, whose tokens would be used
   instead of Kerberos and may not obtain tokens);
2. as that login, obtain HDFS delegation tokens for the default file system
   (``FileSystem.addDelegationTokens``) with the ResourceManager as renewer;
3. the first time, learn the NameNode's renewal interval as Flink does: obtain a
   token the login may renew itself, renew it, and take the new expiry minus the
   moment of the renewal (Flink: minus its issue date, a little later; the token is
   cancelled after);
4. hand the tokens to the ApplicationMaster's driver (``distribute``), which
   puts them where every process of the job finds them (``driver.py``);
5. do it again after ``security.delegation.tokens.renewal.time-ratio`` of the time
   until the earliest token must be renewed (issue date plus the interval, at most
   its maximum date) — :func:`renewal_delay`; a failure is logged and tried again
   after ``security.delegation.tokens.renewal.retry.backoff``, and the job runs on
   its current tokens meanwhile.

The calls run in the ApplicationMaster's JVM (the YARN gateway's) on a thread of
their own, never on an event loop; ``doAs`` takes a Java action, made from a
method handle (``MethodHandleProxies``), so no Java code of jobcluster's is needed.
The background task belongs to the manager, which :meth:`stop` cancels.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from py4j.protocol import Py4JError

from jobcluster.backends.yarn.config_options import (
    DELEGATION_TOKENS_ENABLED,
    DELEGATION_TOKENS_RENEWAL_RETRY_BACKOFF,
    DELEGATION_TOKENS_RENEWAL_TIME_RATIO,
    KERBEROS_LOGIN_PRINCIPAL,
)
from jobcluster.backends.yarn.errors import YarnConfigurationError
from jobcluster.backends.yarn.keytab import KEYTAB_RESOURCE
from jobcluster.backends.yarn.tokens import TOKEN_FILE_ENV
from jobcluster.config.configuration import Configuration

log = logging.getLogger(__name__)

OBTAIN_TIMEOUT = 120.0
"""Seconds one round of logging in and obtaining tokens may take before it counts as failed (the KDC and the
NameNode answer in milliseconds; Hadoop's own retries stay below this)."""


@dataclass(frozen=True)
class TokenRenewal:
    """What the manager needs: ``principal`` logs in from ``keytab`` (the shipped ``krb5.keytab``), obtains tokens that
    ``renewer`` may renew, again after ``ratio`` of their remaining time, or ``backoff`` seconds after a failure."""

    principal: str
    keytab: Path
    renewer: str
    ratio: float
    backoff: float


def token_renewal_of(config: Configuration, renewer: str, working_dir: Path) -> TokenRenewal | None:
    """The renewal ``config`` asks for in an ApplicationMaster whose working directory is ``working_dir``: None without a
    shipped keytab (the client logged in from a ticket cache) or with ``security.delegation.tokens.enabled: false``.

    Raises:
        YarnConfigurationError: ``security.delegation.tokens.renewal.time-ratio`` is above 1 (the tokens would expire
            before new ones come).
    """
    keytab = working_dir / KEYTAB_RESOURCE
    principal = (config.get(KERBEROS_LOGIN_PRINCIPAL) or "").strip()
    if not keytab.is_file() or not principal or not config.get(DELEGATION_TOKENS_ENABLED):
        return None
    ratio = config.get(DELEGATION_TOKENS_RENEWAL_TIME_RATIO)
    if ratio > 1:
        raise YarnConfigurationError(
            f"{DELEGATION_TOKENS_RENEWAL_TIME_RATIO.key} must be above 0 and at most 1 (a fraction of the tokens' remaining "
            f"time), got {ratio:g}"
        )
    return TokenRenewal(principal, keytab, renewer, ratio, config.get(DELEGATION_TOKENS_RENEWAL_RETRY_BACKOFF))


RENEWED_TOKEN_FILE = "renewed.tokens"
"""In the ApplicationMaster's working directory: the tokens every process it starts reads (``HADOOP_TOKEN_FILE_LOCATION``)."""


def renewed_token_file(working_dir: Path, environ: MutableMapping[str, str]) -> Path:
    """The file the manager keeps fresh, made now from the container's own tokens, and named by
    ``HADOOP_TOKEN_FILE_LOCATION`` in ``environ`` (the ApplicationMaster's), so that every process started from now on
    (the Spark driver, again after a restart) logs in with the newest tokens; the driver agent hands what changes in it
    to the running Spark driver (``spark/driver_agent/delegation_tokens.py``).

    Raises:
        OSError: the container's token file cannot be read, or the copy written.
    """
    path = working_dir / RENEWED_TOKEN_FILE
    write_token_file(path, Path(environ[TOKEN_FILE_ENV]).read_bytes())
    environ[TOKEN_FILE_ENV] = str(path)
    return path


def write_token_file(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` at once (a reader sees the old file or the new one), readable by this user only."""
    partial = path.with_name(f".{path.name}.partial")
    with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
        out.write(data)
    os.replace(partial, path)


def token_storage(jvm: Any, credentials: Any) -> bytes:
    """The Java ``Credentials`` as Hadoop's token storage bytes (``Credentials.writeTokenStorageToStream``)."""
    out = jvm.org.apache.hadoop.io.DataOutputBuffer()
    credentials.writeTokenStorageToStream(out)
    return bytes(jvm.java.util.Arrays.copyOf(out.getData(), out.getLength()))


def renewal_date(issue_date_ms: int, max_date_ms: int, interval_ms: int) -> int:
    """When a delegation token issued at ``issue_date_ms`` and never renewed expires: its issue date plus the NameNode's
    renewal interval, and never after its maximum date (epoch milliseconds)."""
    return min(issue_date_ms + interval_ms, max_date_ms) if max_date_ms > 0 else issue_date_ms + interval_ms


def renewal_delay(now_ms: int, renewal_dates_ms: Iterable[int], ratio: float) -> float | None:
    """Seconds until new tokens are due (Flink's ``calculateRenewalDelay``): ``ratio`` of the time from ``now_ms`` until
    the earliest renewal date, 0 when that has passed; None without any date (no token expires)."""
    dates = list(renewal_dates_ms)
    if not dates:
        return None
    return max(0.0, ratio * (min(dates) - now_ms) / 1000.0)


class DelegationTokenManager:
    """Obtains HDFS delegation tokens from a keytab and hands them on, before the previous ones expire (see the module
    docstring).

    ``jvm``: gives the py4j JVM view and gateway (the ApplicationMaster's YARN gateway; called on the manager's own
    thread); ``distribute(credentials)``: called on that thread with the Java ``Credentials`` just obtained.
    """

    def __init__(
        self,
        renewal: TokenRenewal,
        jvm: Callable[[], tuple[Any, Any]],
        distribute: Callable[[Any], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.renewal = renewal
        self._jvm = jvm
        self._distribute = distribute
        self._clock = clock
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="delegation-tokens")
        self._task: asyncio.Task[None] | None = None
        self._interval_ms: int | None = None
        self.obtained = 0
        """How many times new tokens were obtained and handed on."""

    def start(self) -> None:
        """Obtain tokens now (Flink's JobManager does at its start), and from then on in time; call on the owner's loop."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="delegation-token-renewal")

    async def stop(self) -> None:
        """Cancel the renewal and wait for it; a round that runs in Java is left to end on its own thread."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._thread.shutdown(wait=False)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                # asyncio.wait, not wait_for: Python 3.11's wait_for loses a cancellation that meets a finishing round
                round_ = loop.run_in_executor(self._thread, self.obtain_and_distribute)
                done, _ = await asyncio.wait({round_}, timeout=OBTAIN_TIMEOUT)
                if not done:
                    raise TimeoutError(f"no answer within {OBTAIN_TIMEOUT:g} s")
                dates = round_.result()
            except Exception as error:  # noqa: BLE001 - any failure is retried: the job must not lose its renewal
                log.warning(
                    "cannot obtain new delegation tokens as %s from %s (%s); trying again in %g s, the job runs on its current "
                    "tokens meanwhile",
                    self.renewal.principal,
                    self.renewal.keytab,
                    _reason(error),
                    self.renewal.backoff,
                )
                await asyncio.sleep(self.renewal.backoff)
                continue
            delay = renewal_delay(int(self._clock() * 1000), dates, self.renewal.ratio)
            if delay is None:
                log.info("the new delegation tokens do not expire: no renewal is scheduled")
                return
            log.info("new delegation tokens obtained and handed on; the next ones in %.1f s", delay)
            await asyncio.sleep(delay)

    def obtain_and_distribute(self) -> list[int]:
        """One round, on the manager's thread: log in, obtain, hand on; returns the tokens' renewal dates (epoch ms).

        Raises:
            Py4JError: the login, the NameNode or the hand-over failed in Java.
        """
        jvm, gateway = self._jvm()
        r = self.renewal
        ugi = jvm.org.apache.hadoop.security.UserGroupInformation.loginUserFromKeytabAndReturnUGI(r.principal, str(r.keytab))
        conf = jvm.org.apache.hadoop.conf.Configuration()
        new_instance = _method(jvm, gateway, "org.apache.hadoop.fs.FileSystem", "newInstance", "java.net.URI", CONF)
        # created as the login: its client keeps the login's Kerberos credentials for every call
        file_system = _as_user(jvm, gateway, ugi, None, new_instance, (jvm.org.apache.hadoop.fs.FileSystem.getDefaultUri(conf), conf))
        try:
            credentials = jvm.org.apache.hadoop.security.Credentials()
            _as_user(jvm, gateway, ugi, file_system, _add_tokens_method(jvm, gateway), (r.renewer, credentials))
            if self._interval_ms is None:
                self._interval_ms = self._renewal_interval(jvm, gateway, ugi, file_system, conf)
        finally:
            file_system.close()
        dates = _renewal_dates(jvm, credentials, self._interval_ms)
        self._distribute(credentials)
        self.obtained += 1
        return dates

    def _renewal_interval(self, jvm: Any, gateway: Any, ugi: Any, file_system: Any, conf: Any) -> int:
        """The NameNode's renewal interval in ms, as Flink learns it: a token the login may renew, renewed once (its
        new expiry minus the moment of the renewal), then cancelled."""
        own = jvm.org.apache.hadoop.security.Credentials()
        _as_user(jvm, gateway, ugi, file_system, _add_tokens_method(jvm, gateway), (ugi.getShortUserName(), own))
        intervals = []
        for token in own.getAllTokens().toArray():
            identifier = token.decodeIdentifier()
            if not _is_delegation_identifier(jvm, identifier):
                continue
            renew = _method(jvm, gateway, "org.apache.hadoop.security.token.Token", "renew", CONF)
            renewed_at = int(self._clock() * 1000)
            expiry = int(_as_user(jvm, gateway, ugi, token, renew, (conf,)))
            # Flink subtracts the issue date, which counts the time between issue and renewal into the interval;
            # the moment of the renewal (this side's clock) does not, and errs by the call's latency only
            intervals.append(expiry - max(int(identifier.getIssueDate()), renewed_at))
            with contextlib.suppress(Py4JError):  # only tidiness: it expires by itself
                _as_user(jvm, gateway, ugi, token, _method(jvm, gateway, "org.apache.hadoop.security.token.Token", "cancel", CONF), (conf,))
        if not intervals:
            raise Py4JError("the NameNode gave no delegation token to learn its renewal interval from")
        log.info("the NameNode renews delegation tokens for %d s at a time", min(intervals) // 1000)
        return min(intervals)


CONF = "org.apache.hadoop.conf.Configuration"


def _add_tokens_method(jvm: Any, gateway: Any) -> Any:
    return _method(
        jvm,
        gateway,
        "org.apache.hadoop.security.token.DelegationTokenIssuer",
        "addDelegationTokens",
        "java.lang.String",
        "org.apache.hadoop.security.Credentials",
    )


def _method(jvm: Any, gateway: Any, class_name: str, name: str, *parameter_types: str) -> Any:
    """The public Java method ``class_name.name(parameter_types...)``."""
    classes = gateway.new_array(jvm.java.lang.Class, len(parameter_types))
    for i, type_name in enumerate(parameter_types):
        classes[i] = jvm.java.lang.Class.forName(type_name)
    return jvm.java.lang.Class.forName(class_name).getMethod(name, classes)


def _as_user(jvm: Any, gateway: Any, ugi: Any, target: Any, method: Any, args: tuple[Any, ...]) -> Any:
    """``target.method(*args)`` (``target`` None: a static method) inside ``ugi.doAs``: the Java action is the method
    handle itself, bound to its receiver and arguments (``MethodHandleProxies.asInterfaceInstance``), so it runs on the
    thread ``doAs`` runs on, where ``UserGroupInformation.getCurrentUser()`` is ``ugi``."""
    invoke = jvm.java.lang.invoke
    handle = invoke.MethodHandles.publicLookup().unreflect(method)
    if target is not None:
        handle = handle.bindTo(target)
    if args:
        values = gateway.new_array(jvm.java.lang.Object, len(args))
        for i, value in enumerate(args):
            values[i] = value
        handle = invoke.MethodHandles.insertArguments(handle, 0, values)
    action_type = jvm.java.lang.Class.forName("java.security.PrivilegedExceptionAction")
    return ugi.doAs(invoke.MethodHandleProxies.asInterfaceInstance(action_type, handle))


def _is_delegation_identifier(jvm: Any, identifier: Any) -> bool:
    kind = jvm.java.lang.Class.forName("org.apache.hadoop.security.token.delegation.AbstractDelegationTokenIdentifier")
    return identifier is not None and bool(kind.isInstance(identifier))


def _renewal_dates(jvm: Any, credentials: Any, interval_ms: int | None) -> list[int]:
    if interval_ms is None:
        return []
    dates = []
    for token in credentials.getAllTokens().toArray():
        identifier = token.decodeIdentifier()
        if _is_delegation_identifier(jvm, identifier):
            dates.append(renewal_date(int(identifier.getIssueDate()), int(identifier.getMaxDate()), interval_ms))
    return dates


def _reason(error: BaseException) -> str:
    java = getattr(error, "java_exception", None)
    return str(java) if java is not None else (str(error) or type(error).__name__)
