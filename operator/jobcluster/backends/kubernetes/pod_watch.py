"""A list-then-watch of the pods matching a label selector, on a thread of its own.

Why a thread: the ``kubernetes`` client blocks, and a watch blocks for as long
as it runs; the ResourceManager's loop must never.  The thread hands every
event to ``on_event`` and every fresh list to ``on_list`` (both called on the
thread; the driver passes them on to its loop).

How it keeps going (the informer pattern): each watch asks the API server to
end it after ``timeout_seconds`` and is resumed from the last resourceVersion
seen; when that version has expired (410 Gone) the pods are listed again,
the list is handed to ``on_list`` (so nothing missed stays unseen) and the
watch resumes from the list's version; any other failure is retried after a
back-off of 0.5 s doubling up to ``MAX_BACKOFF_SECONDS``.  Every call has a
connect and a read timeout.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import kubernetes

from jobcluster.backends.kubernetes.kube_client import REQUEST_TIMEOUT, api_call
from jobcluster.backends.kubernetes.pod_events import ADDED, DELETED, MODIFIED

log = logging.getLogger(__name__)

#: How long one watch request lasts before it is resumed, seconds (the API server ends it).
WATCH_TIMEOUT_SECONDS = 60
#: Read timeout beyond the watch's own, seconds: a silent connection is given up after this.
READ_GRACE_SECONDS = 10
MAX_BACKOFF_SECONDS = 10.0
_GONE = 410

EventSink = Callable[[str, dict[str, Any]], None]
ListSink = Callable[[list[dict[str, Any]]], None]


def list_pods(core: kubernetes.client.CoreV1Api, namespace: str, selector: str) -> tuple[list[dict[str, Any]], str]:
    """The pods matching ``selector`` as JSON dicts, and the list's resourceVersion.

    Raises:
        DeploymentError: the API server refused or is unreachable (see ``api_call``);
            an ObjectNotFoundError when the namespace is gone.
    """
    # the raw response (_preload_content=False): its JSON is parsed here, not into models
    response: Any = api_call(
        "list", "pods", namespace, core.list_namespaced_pod, namespace, label_selector=selector, _preload_content=False
    )
    document = json.loads(response.data)
    return list(document.get("items") or []), str(document["metadata"]["resourceVersion"])


class PodWatch:
    """Watches the pods of ``namespace`` matching ``selector`` from a given resourceVersion until stopped."""

    def __init__(
        self,
        core: kubernetes.client.CoreV1Api,
        namespace: str,
        selector: str,
        on_event: EventSink,
        on_list: ListSink,
        timeout_seconds: int = WATCH_TIMEOUT_SECONDS,
    ) -> None:
        self._core, self._namespace, self._selector = core, namespace, selector
        self._on_event, self._on_list = on_event, on_list
        self._timeout = timeout_seconds
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: Any = None  # kubernetes.watch.Watch, untyped in the client
        #: Watches started, and lists made after an expiry (for tests and logs).
        self.watches = 0
        self.relists = 0

    def start(self, resource_version: str) -> None:
        """Start watching from ``resource_version`` (a list's) on a daemon thread."""
        self._thread = threading.Thread(target=self._run, args=(resource_version,), name=f"pod-watch-{self._selector}", daemon=True)
        self._thread.start()

    def stop(self, wait_seconds: float = 5.0) -> None:
        """Stop (blocking, at most ``wait_seconds``); no event is handed on afterwards.

        The client's ``Watch.stop`` shuts the open connection's socket down, so
        a thread blocked in a read ends at once (tested against the API server);
        it hands nothing on afterwards.
        """
        self._stopped.set()
        watch = self._watch
        if watch is not None:
            watch.stop()
        if self._thread is not None:
            self._thread.join(wait_seconds)

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def _run(self, resource_version: str) -> None:
        version: str | None = resource_version
        backoff = 0.5
        while not self._stopped.is_set():
            try:
                if version is None:
                    pods, version = list_pods(self._core, self._namespace, self._selector)
                    self.relists += 1
                    if not self._stopped.is_set():
                        self._on_list(pods)
                version = self._watch_once(version)
                backoff = 0.5
            except kubernetes.client.ApiException as exc:
                if exc.status == _GONE:
                    log.info("the watch of pods %s expired (%s); listing them again", self._selector, exc.reason)
                    version = None
                    continue
                backoff = self._back_off(exc, backoff)
            except Exception as exc:  # noqa: BLE001 — the watch must outlive any failure of the API server or the network
                backoff = self._back_off(exc, backoff)

    def _watch_once(self, version: str) -> str:
        """One watch request from ``version``; the last resourceVersion seen when it ends."""
        watch_class: Any = kubernetes.watch.Watch  # untyped in the client
        watch = watch_class()
        self._watch = watch
        self.watches += 1
        stream = watch.stream(
            self._core.list_namespaced_pod,
            self._namespace,
            label_selector=self._selector,
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=self._timeout,
            _request_timeout=(REQUEST_TIMEOUT[0], self._timeout + READ_GRACE_SECONDS),
        )
        for event in stream:
            pod = event["raw_object"]
            version = str((pod.get("metadata") or {}).get("resourceVersion") or version)
            if self._stopped.is_set():
                watch.stop()
                break
            if event["type"] in (ADDED, MODIFIED, DELETED):
                self._on_event(event["type"], pod)
        return version

    def _back_off(self, exc: Exception, backoff: float) -> float:
        if not self._stopped.is_set():
            log.warning("the watch of pods %s failed (%s); retrying in %.1f s", self._selector, exc, backoff)
        self._stopped.wait(backoff)
        return min(backoff * 2, MAX_BACKOFF_SECONDS)
