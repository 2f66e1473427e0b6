"""The driver's pod watch against the real API server: events from a list's version on, resumed after each watch ends.

(An expired version, 410, needs etcd to have compacted it, which the API
server does every 5 minutes; that path is unit-tested in test_kubernetes_pod_watch.py.)
"""

from __future__ import annotations

import time

import kubernetes
import pytest

from jobcluster.backends.kubernetes.pod_watch import PodWatch, list_pods
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s

TIMEOUT = (5, 30)


def test_the_watch_sees_changes_after_the_list_across_resumed_watches(k8s_api, k8s_namespace, k8s_image):
    core = kubernetes.client.CoreV1Api(k8s_api)
    container = {
        "name": "main",
        "image": k8s_image,  # the project's image, on the node (never pulled)
        "imagePullPolicy": "Never",
        "command": ["sleep", "600"],
        "resources": {"requests": {"cpu": "10m"}},
    }
    pod = {
        "metadata": {"name": "w-1", "labels": {"app": "w"}},
        "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [container]},
    }
    core.create_namespaced_pod(k8s_namespace, pod, _request_timeout=TIMEOUT)
    events: list[tuple[str, str]] = []
    lists: list[list[str]] = []
    watch = PodWatch(
        core,
        k8s_namespace,
        "app=w",
        lambda kind, p: events.append((kind, p["metadata"]["name"])),
        lambda pods: lists.append([p["metadata"]["name"] for p in pods]),
        timeout_seconds=2,
    )
    pods, version = list_pods(core, k8s_namespace, "app=w")
    assert [p["metadata"]["name"] for p in pods] == ["w-1"]
    watch.start(version)
    try:
        wait_for(lambda: watch.watches >= 3, timeout=30, what="the watch to be resumed after its own timeout")
        core.delete_namespaced_pod("w-1", k8s_namespace, _request_timeout=TIMEOUT)
        wait_for(lambda: ("DELETED", "w-1") in events, timeout=60, what="the DELETED event")
        assert ("ADDED", "w-1") not in events  # nothing before the list's version is replayed
        assert (watch.relists, lists) == (0, [])  # resumed from the last version seen, never listed again
    finally:
        watch.stop()


def test_stop_cuts_a_waiting_watch_off_at_once(k8s_api, k8s_namespace):
    core = kubernetes.client.CoreV1Api(k8s_api)
    watch = PodWatch(core, k8s_namespace, "app=none", lambda *e: None, lambda pods: None, timeout_seconds=120)
    _, version = list_pods(core, k8s_namespace, "app=none")
    watch.start(version)
    wait_for(lambda: watch.watches >= 1, timeout=10, what="the watch to start")
    time.sleep(1)  # blocked in its read: nothing happens in the namespace
    assert watch._thread is not None and watch._thread.is_alive()
    started = time.monotonic()
    watch.stop(wait_seconds=10)
    assert watch._thread is not None and not watch._thread.is_alive()
    assert time.monotonic() - started < 3
