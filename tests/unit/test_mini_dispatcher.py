"""MiniDispatcher: an attached cluster waits for its client's fetch, unless the job was cancelled."""

from __future__ import annotations

import asyncio

from jobcluster.jobgraph.job_status import ApplicationStatus, JobStatus
from jobcluster.runtime.dispatcher.mini_dispatcher import MiniDispatcher


class _Graph:
    job_id = "0" * 32


class _JobMaster:
    """Stands in for the JobMaster: cancel() makes the job CANCELED, as the real one does once Spark stopped."""

    graph = _Graph()
    result = None

    def __init__(self, on_terminal) -> None:
        self._on_terminal = on_terminal

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
