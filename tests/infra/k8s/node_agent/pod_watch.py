"""List and watch the pods bound to this node, for as long as the agent runs.

Why: the agent learns about pods the way the kubelet does, from a field-selected
list (``spec.nodeName``) followed by a watch from the list's resourceVersion.
A relist after any watch error (410 Gone included) also tells which pods
vanished while nobody watched; the caller hears about those through
``relisted``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable

import kubernetes
from kubernetes.client.exceptions import ApiException

from tests.infra.k8s.node_agent.apiserver import API_TIMEOUT

log = logging.getLogger("node-agent")

# Server-side watch duration; the client read timeout must exceed it.
WATCH_SECONDS = 30
WATCH_TIMEOUT = (5, WATCH_SECONDS + 15)


def watch_pods(
    core: kubernetes.client.CoreV1Api,
    node_name: str,
    stopping: threading.Event,
    handle: Callable[[str, dict], None],
    relisted: Callable[[set[str]], None],
) -> None:
    """Call handle(event_type, pod) for every pod event until stopping is set.

    A listing is reported as one MODIFIED event per pod, then relisted(UIDs listed).
    """
    selector = f"spec.nodeName={node_name}"
    while not stopping.is_set():
        try:
            resp = core.list_pod_for_all_namespaces(field_selector=selector, _request_timeout=API_TIMEOUT, _preload_content=False)
            listing = json.loads(resp.data)  # type: ignore[attr-defined]  # _preload_content=False: the raw urllib3 response
            seen = set()
            for pod in listing["items"]:
                seen.add(pod["metadata"]["uid"])
                handle("MODIFIED", pod)
            relisted(seen)
            rv = listing["metadata"]["resourceVersion"]
            while not stopping.is_set():
                w = kubernetes.watch.Watch()
                for event in w.stream(
                    core.list_pod_for_all_namespaces,
                    field_selector=selector,
                    resource_version=rv,
                    allow_watch_bookmarks=True,
                    timeout_seconds=WATCH_SECONDS,
                    _request_timeout=WATCH_TIMEOUT,
                    deserialize=False,
                ):
                    obj = event["object"]
                    rv = obj.get("metadata", {}).get("resourceVersion", rv)
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        handle(event["type"], obj)
                    if stopping.is_set():
                        w.stop()
                        break
        except ApiException as e:
            if e.status != 410:
                log.warning("pod watch: %s %s", e.status, e.reason)
                stopping.wait(1)
        except Exception as e:  # noqa: BLE001 - the watch thread must outlive any error: logged, the watch restarted
            if not stopping.is_set():
                log.warning("pod watch: %s", e)
                stopping.wait(1)
