"""MiniDispatcher: an attached cluster waits for its client's fetch, unless the job was cancelled; disposals are its own."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from jobcluster.jobgraph.job_status import ApplicationStatus, JobStatus
from jobcluster.runtime.dispatcher.mini_dispatcher import MiniDispatcher
from jobcluster.runtime.jobmaster.savepoint_operations import SavepointOperations


class _Graph:
    job_id = "0" * 32


class _JobMaster:
    """Stands in for the JobMaster: cancel() makes the job CANCELED, as the real one does once Spark stopped."""

    graph = _Graph()
    result = None

    def __init__(self, on_terminal) -> None:
        self._on_terminal = on_terminal
        self.checkpoints = SimpleNamespace(savepoints=SavepointOperations())
        self.disposed: list[str] = []

    async def dispose_savepoint(self, path: str) -> None:
        self.disposed.append(path)

    async def cancel(self) -> None:
        class _Result:
            job_id = _Graph.job_id
            status = JobStatus.CANCELED

        await self._on_terminal(_Result())


async def _dispatcher() -> MiniDispatcher:
    dispatcher = MiniDispatcher(_JobMaster, attached=True, result_retrieval_timeout=60.0)
    await dispatcher.on_start()
    return dispatcher


def test_cancel_of_an_attached_job_terminates_without_waiting_for_the_client():
    async def scenario() -> ApplicationStatus:
        dispatcher = await _dispatcher()
        await dispatcher.cancel_job(_Graph.job_id)
        return await asyncio.wait_for(dispatcher.termination, 5.0)

    assert asyncio.run(scenario()) == ApplicationStatus.CANCELED


def test_attached_job_waits_for_the_result_to_be_fetched():
    async def scenario() -> bool:
        dispatcher = await _dispatcher()

        class _Finished:
            job_id = _Graph.job_id
            status = JobStatus.FINISHED

        await dispatcher.job_master._on_terminal(_Finished())
        await asyncio.sleep(0.2)
        return dispatcher.termination.done()

    assert asyncio.run(scenario()) is False


def test_a_disposal_is_the_clusters_operation_not_a_savepoint_of_the_job():
    async def scenario() -> None:
        dispatcher = await _dispatcher()
        operations = dispatcher.trigger_disposal("a" * 32, "file:/sp/savepoint-000000-000000000000")
        await asyncio.gather(*(task for task in asyncio.all_tasks() if task is not asyncio.current_task()))
        assert operations.result("a" * 32).location == "file:/sp/savepoint-000000-000000000000"
        assert dispatcher.job_master.disposed == ["file:/sp/savepoint-000000-000000000000"]
        # the job's completed savepoints (its details, checkpoint statistics) do not list the disposed path
        assert dispatcher.savepoint_operations(_Graph.job_id).completed() == []
        assert not dispatcher.savepoint_operations(_Graph.job_id).known("a" * 32)

    asyncio.run(scenario())


def test_a_job_stopped_with_a_savepoint_ends_its_cluster_once_a_client_has_read_the_path():
    class _Finished:
        job_id = _Graph.job_id
        status = JobStatus.FINISHED

    async def stopped() -> str:
        return "file:/sp/savepoint-000000-000000000000"

    async def scenario() -> None:
        dispatcher = MiniDispatcher(_JobMaster, attached=False, result_retrieval_timeout=60.0)
        await dispatcher.on_start()
        savepoints = dispatcher.job_master.checkpoints.savepoints
        savepoints.start("a" * 32, stopped(), dispatcher.spawn, ends_job=True)
        await dispatcher.job_master._on_terminal(_Finished())
        await asyncio.sleep(0.2)
        assert not dispatcher.termination.done(), "a detached cluster waits for the stop's path to be read"
        assert dispatcher.savepoint_operations(_Graph.job_id).result("a" * 32).location.endswith("000000000000")
        assert await asyncio.wait_for(dispatcher.termination, 5.0) == ApplicationStatus.SUCCEEDED

    asyncio.run(scenario())
