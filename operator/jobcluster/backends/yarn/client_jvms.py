"""A bound on the YARN client JVMs one process runs at once (the operator's, ``jobcluster.operator.yarn.client-jvms``).

Why: YARN is reached through Hadoop's Java clients, one JVM per deployment (held
until its ApplicationMaster serves) and per kill (see ``gateway.py``). The CLI
runs one at a time; the operator deploys and removes many FlinkJobs at once, in
a pod with a memory limit, where a JVM each would have it OOMKilled. A deployment
or kill past the bound waits for a JVM to end; one that waits too long fails
transiently (the operator tries it again later).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from jobcluster.backends.yarn.errors import YarnUnavailableError

log = logging.getLogger(__name__)

WAIT = 300.0  # seconds a deployment or kill waits for a client JVM before it fails transiently


class ClientJvms:
    """At most ``limit`` client JVMs at once (``limit`` >= 1); one past it waits up to ``wait`` seconds."""

    def __init__(self, limit: int, wait: float = WAIT) -> None:
        if limit < 1:
            raise ValueError(f"jobcluster.operator.yarn.client-jvms must be at least 1, not {limit}")
        self.limit = limit
        self.wait = wait
        self._slots = threading.BoundedSemaphore(limit)

    def acquire(self, on_wait: Callable[[str], None]) -> Callable[[], None]:
        """Take a slot for one JVM; returns its release, which may be called more than once. ``on_wait`` hears why,
        when the slot is not free at once.

        Raises:
            YarnUnavailableError: no slot freed within ``wait`` seconds (transient).
        """
        timeout = self.wait
        if not self._slots.acquire(blocking=False):
            waiting = (
                f"waiting for one of the {self.limit} YARN client JVMs this process runs at once (jobcluster.operator.yarn.client-jvms)"
            )
            log.info(waiting)  # the operator's descriptors report no progress: its log says why a deployment waits
            on_wait(waiting)
            if not self._slots.acquire(timeout=timeout):
                raise YarnUnavailableError(
                    f"all {self.limit} YARN client JVMs stayed busy for {timeout:.0f} s (jobcluster.operator.yarn.client-jvms): "
                    "other deployments or removals hold them; it will be tried again"
                )
        released = threading.Event()

        def release() -> None:
            if not released.is_set():
                released.set()
                self._slots.release()

        return release
