"""New Hadoop delegation tokens for the running Spark driver and its executors, from the token file.

A JVM reads its Hadoop tokens once, at its start, from the file
``HADOOP_TOKEN_FILE_LOCATION`` names. On YARN with a keytab login, the
JobManager's DelegationTokenManager rewrites that file before the tokens
expire (``backends/yarn/delegation_tokens.py``); a driver started later reads
the new file, but the running one must be told. This watcher looks at the file
every ``POLL_INTERVAL`` seconds and, when it changed, does what Spark's own
token renewal does on YARN and Kubernetes (``HadoopDelegationTokenManager``):
it sends Spark's ``UpdateDelegationTokens`` message with the file's bytes (Hadoop
token storage) to the driver's scheduler endpoint, which adds them to the
driver's Hadoop user, sends them to every registered executor, and gives them to
the executors that register later. Without a scheduler backend that takes the
message (Spark's local mode), they go to the driver's Hadoop user alone.

The watcher is a daemon thread of the program's process; each JVM call is one
py4j call, off the agent's endpoint loop. A file that cannot be read or a push
that fails is logged and tried again at the next look.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

TOKEN_FILE_ENV = "HADOOP_TOKEN_FILE_LOCATION"
POLL_INTERVAL = 5.0
"""Seconds between two looks at the token file: new tokens come at a fraction of the tokens' renewal interval (hours,
or at the very least minutes, before they expire), so a few seconds' delay costs nothing, and a look is one stat."""


class TokenFileWatcher:
    """Hands the token file's content to ``push`` whenever it changed (by modification time and size) since the last
    successful push, or since the watcher was made (what the file held then counts as handed on: the driver's JVM,
    started by the program, reads it itself); ``push(data)`` returns False when there is nothing to hand it to yet
    (it is tried again)."""

    def __init__(self, path: Path, push: Callable[[bytes], bool]) -> None:
        self.path = path
        self._push = push
        self._pushed = self._stamp()
        self._stop = threading.Event()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            status = self.path.stat()
        except OSError:
            return None
        return (status.st_mtime_ns, status.st_size)

    def look(self) -> bool:
        """One look; True when new content was handed on."""
        try:
            status = self.path.stat()
            stamp = (status.st_mtime_ns, status.st_size)
            if stamp == self._pushed:
                return False
            data = self.path.read_bytes()
        except OSError as error:
            log.warning("cannot read the token file %s: %s", self.path, error)
            return False
        try:
            if not self._push(data):
                return False
        except Exception as error:  # noqa: BLE001 - a py4j or Java error: tried again at the next look
            log.warning("cannot hand the new delegation tokens of %s to Spark: %s", self.path, error)
            return False
        self._pushed = stamp
        return True

    def run(self, interval: float = POLL_INTERVAL) -> None:
        while not self._stop.wait(interval):
            self.look()

    def stop(self) -> None:
        self._stop.set()


def push_to_spark(data: bytes) -> bool:
    """Hand Hadoop token storage ``data`` to the active SparkContext's driver (see the module docstring); False when no
    SparkContext runs."""
    from pyspark import SparkContext

    sc: Any = SparkContext._active_spark_context
    if sc is None or getattr(sc, "_jsc", None) is None:  # none, or one whose JVM side is still being made
        return False
    jvm = sc._jvm
    backend = sc._jsc.sc().schedulerBackend()
    coarse = jvm.java.lang.Class.forName("org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend")
    if coarse.isInstance(backend):
        message = getattr(jvm.org.apache.spark.scheduler.cluster, "CoarseGrainedClusterMessages$UpdateDelegationTokens")(data)
        backend.driverEndpoint().send(message)
    else:
        jvm.org.apache.spark.deploy.SparkHadoopUtil.get().addDelegationTokens(data, sc._jsc.sc().conf())
    log.info("handed %d bytes of new delegation tokens to the Spark driver", len(data))
    return True


def watch_token_file(environ: Mapping[str, str] | None = None) -> TokenFileWatcher | None:
    """Start the watcher of this process's token file in a daemon thread; None (nothing started) without one."""
    env = os.environ if environ is None else environ
    location = env.get(TOKEN_FILE_ENV)
    if not location:
        return None
    watcher = TokenFileWatcher(Path(location), push_to_spark)
    threading.Thread(target=watcher.run, name="jobcluster-delegation-tokens", daemon=True).start()
    return watcher
