"""The pod watch's loop: after 410 Gone it lists again and resumes from the list; after other failures it backs off and resumes.

The API server is replaced here only where it cannot be made to answer so on
demand (an expired version needs an etcd compaction); the watch itself is
tested against the real one in tests/integration/k8s/test_kubernetes_pod_watch.py.
"""

from __future__ import annotations

import threading

import kubernetes

from jobcluster.backends.kubernetes import pod_watch
from jobcluster.backends.kubernetes.pod_watch import PodWatch


class ScriptedWatch(PodWatch):
    """Each watch request plays the next step of ``script``: a version it ends at, or an exception it raises."""

    def __init__(self, script: list, **kwargs) -> None:
        self.events: list = []
        self.lists: list = []
        super().__init__(None, "ns", "app=x", lambda *e: self.events.append(e), self.lists.append, **kwargs)  # type: ignore[arg-type]
        self.script = script
        self.started_from: list[str] = []
        self.done = threading.Event()

    def _watch_once(self, version: str) -> str:
        self.started_from.append(version)
        if not self.script:
            self.done.set()
            self._stopped.wait(5)
            return version
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


def test_gone_lists_again_and_resumes_from_the_list(monkeypatch):
    monkeypatch.setattr(pod_watch, "list_pods", lambda core, ns, selector: ([{"metadata": {"name": "x-1"}}], "50"))
    watch = ScriptedWatch(["12", kubernetes.client.ApiException(status=410, reason="Expired")])
    watch.start("10")
    assert watch.done.wait(5)
    watch.stop()
    assert watch.started_from == ["10", "12", "50"]
    assert watch.relists == 1
    assert watch.lists == [[{"metadata": {"name": "x-1"}}]]


def test_other_failures_back_off_and_resume_from_the_last_version(monkeypatch):
    monkeypatch.setattr(pod_watch, "list_pods", lambda *a: (_ for _ in ()).throw(AssertionError("no list expected")))
    watch = ScriptedWatch(["12", kubernetes.client.ApiException(status=500, reason="boom"), OSError("connection reset"), "13"])
    watch.start("10")
    assert watch.done.wait(10)
    watch.stop()
    assert watch.started_from == ["10", "12", "12", "12", "13"]
    assert watch.relists == 0


def test_stop_ends_the_thread_and_hands_on_nothing_more():
    watch = ScriptedWatch([])
    watch.start("1")
    assert watch.done.wait(5)
    watch.stop(wait_seconds=5)
    assert watch.stopped
    assert watch._thread is not None and not watch._thread.is_alive()
