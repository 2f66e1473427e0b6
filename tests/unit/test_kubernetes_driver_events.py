"""The driver's bookkeeping of pod events, on its loop: each worker reported once, a pod that ends while created is retried.

The API server is replaced by a recorder of create/delete calls, because the
race tested here (a pod ending before its create call returns) cannot be
produced on demand on a real one; the driver against the real API server is
tests/integration/k8s/test_kubernetes_driver.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from jobcluster.backends.kubernetes.driver import KubernetesResourceManagerDriver
from jobcluster.backends.kubernetes.parameters import task_manager_parameters
from jobcluster.config.configuration import Configuration
from jobcluster.errors import ResourceManagerError
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from tests.support.fakes import RecordingEventHandler, launch_context

CONFIG = Configuration({"kubernetes.cluster-id": "wc", "taskmanager.memory.process.size": "1g"})
OWNER = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "wc", "uid": "u-1"}}


def exited(name: str, code: int) -> dict:
    state = {"terminated": {"exitCode": code, "reason": "Error"}}
    return {"metadata": {"name": name}, "status": {"phase": "Failed", "containerStatuses": [{"name": "main", "state": state}]}}


class Core:
    """Create and delete calls as the API server would take them; ``on_create`` runs inside the create call."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.deleted: list[str] = []
        self.on_create = None

    def create_namespaced_pod(self, namespace, body, **kwargs):
        self.created.append(body["metadata"]["name"])
        if self.on_create:
            self.on_create(body["metadata"]["name"])

    def delete_namespaced_pod(self, name, namespace, **kwargs):
        self.deleted.append(name)


def ready_driver(recorder: RecordingEventHandler) -> tuple[KubernetesResourceManagerDriver, Core]:
    """A driver past ``initialize`` (attempt 1, no earlier pods), talking to :class:`Core`."""
    driver = KubernetesResourceManagerDriver(None, task_manager_parameters(CONFIG, "job"), "10.0.0.1")  # type: ignore[arg-type]
    core = Core()
    driver._core, driver._handler, driver._owner, driver._attempt = core, recorder, OWNER, 1  # type: ignore[assignment]
    driver._context = launch_context(Path("."), cluster_id="wc", rm_address="10.0.0.1:6123")
    return driver, core


def test_a_worker_is_reported_once_however_many_events_say_it_ended():
    async def scenario() -> None:
        recorder = RecordingEventHandler()
        driver, core = ready_driver(recorder)
        name = await driver.request_resource(task_executor_process_spec_from_config(CONFIG))
        assert name == "wc-taskmanager-1-1"
        for event_type in ("MODIFIED", "MODIFIED", "DELETED"):
            await driver._on_pod_event(event_type, exited(name, 1))
        assert [resource_id for resource_id, _ in recorder.terminated] == [name] and recorder.errors == []
        assert core.deleted == [name]  # deleted once, after the first report; the DELETED event needs no deletion

    asyncio.run(scenario())


def test_a_released_worker_is_never_reported():
    async def scenario() -> None:
        recorder = RecordingEventHandler()
        driver, core = ready_driver(recorder)
        name = await driver.request_resource(task_executor_process_spec_from_config(CONFIG))
        await driver.release_resource(name)
        await driver._on_pod_event("DELETED", exited(name, 143))
        assert recorder.terminated == []
        assert core.deleted == [name]

    asyncio.run(scenario())


def test_a_pod_that_ends_before_its_creation_returns_fails_the_request():
    async def scenario() -> None:
        recorder = RecordingEventHandler()
        driver, core = ready_driver(recorder)
        loop = asyncio.get_running_loop()
        core.on_create = lambda name: asyncio.run_coroutine_threadsafe(driver._on_pod_event("MODIFIED", exited(name, 2)), loop).result()
        with pytest.raises(ResourceManagerError, match=r"wc-taskmanager-1-1 terminated right away: .*exitCode=2"):
            await driver.request_resource(task_executor_process_spec_from_config(CONFIG))
        assert recorder.terminated == []  # the request failed instead: the ResourceManager asks again
        assert core.deleted == ["wc-taskmanager-1-1"]
        core.on_create = None
        assert await driver.request_resource(task_executor_process_spec_from_config(CONFIG)) == "wc-taskmanager-1-2"

    asyncio.run(scenario())


def unschedulable(name: str, message: str) -> dict:
    conditions = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]
    return {"metadata": {"name": name}, "status": {"phase": "Pending", "conditions": conditions}}


class StartedWorkers(RecordingEventHandler):
    """Like the ResourceManager: a pending worker counts only once ``request_resource`` has given its name."""

    def __init__(self) -> None:
        super().__init__()
        self.started: set[str] = set()

    async def on_worker_pending(self, resource_id: str, reason: str) -> None:
        if resource_id in self.started:
            await super().on_worker_pending(resource_id, reason)


def test_a_pod_the_scheduler_refuses_before_its_creation_returns_is_reported_pending_after_it():
    async def scenario() -> None:
        recorder = StartedWorkers()
        driver, core = ready_driver(recorder)
        loop = asyncio.get_running_loop()
        driver._queue = queue = asyncio.Queue()
        consumer = loop.create_task(driver._consume(queue))
        message = "0/1 nodes are available: 1 Insufficient cpu."
        core.on_create = lambda name: loop.call_soon_threadsafe(queue.put_nowait, ("event", ("ADDED", unschedulable(name, message))))
        name = await driver.request_resource(task_executor_process_spec_from_config(CONFIG))
        recorder.started.add(name)  # as the ResourceManager does, before it next yields to the loop
        await asyncio.wait_for(recorder.changed.wait(), 5)
        consumer.cancel()
        assert recorder.pending == [(name, f"the pod cannot be scheduled: {message}")]

    asyncio.run(scenario())


def test_an_unschedulable_worker_is_reported_pending_once_with_the_schedulers_reason_and_not_ended():
    async def scenario() -> None:
        recorder = RecordingEventHandler()
        driver, _core = ready_driver(recorder)
        name = await driver.request_resource(task_executor_process_spec_from_config(CONFIG))
        message = "0/1 nodes are available: 1 Insufficient cpu."
        pending = {
            "metadata": {"name": name},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "message": message}]},
        }
        for _ in range(3):
            await driver._on_pod_event("MODIFIED", pending)
        assert recorder.pending == [(name, f"the pod cannot be scheduled: {message}")]
        assert recorder.terminated == []

    asyncio.run(scenario())
