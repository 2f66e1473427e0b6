"""Typed gateway to a TaskExecutor."""

from __future__ import annotations

from typing import Any, cast

from jobcluster.rpc.gateway import RpcGateway
from jobcluster.rpc.service import RpcService
from jobcluster.runtime.messages import SlotID, dump

TASK_EXECUTOR_ENDPOINT = "taskexecutor"


class TaskExecutorGateway(RpcGateway):
    def __init__(self, service: RpcService, address: str, resource_id: str) -> None:
        super().__init__(service, address, TASK_EXECUTOR_ENDPOINT)
        self.resource_id = resource_id

    async def request_slot(
        self, slot_id: SlotID, job_id: str, allocation_id: str, job_master_address: str, job_master_id: str, resource_manager_id: str
    ) -> None:
        await self.call(
            "request_slot",
            slot_id=dump(slot_id),
            job_id=job_id,
            allocation_id=allocation_id,
            job_master_address=job_master_address,
            job_master_id=job_master_id,
            resource_manager_id=resource_manager_id,
        )

    async def heartbeat_from_resource_manager(self, resource_manager_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], await self.call("heartbeat_from_resource_manager", resource_manager_id=resource_manager_id))

    async def heartbeat_from_job_manager(self, job_id: str) -> None:
        await self.call("heartbeat_from_job_manager", job_id=job_id)

    async def free_slot(self, allocation_id: str, cause: str) -> None:
        await self.call("free_slot", allocation_id=allocation_id, cause=cause)

    async def request_metrics(self) -> dict[str, int]:
        return cast(dict[str, int], await self.call("request_metrics"))

    async def shutdown(self, cause: str) -> None:
        await self.call("shutdown", cause=cause)

    async def request_log_list(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], await self.call("request_log_list"))

    async def request_log_file(self, name: str | None) -> dict[str, Any] | None:
        return cast(dict[str, Any] | None, await self.call("request_log_file", name=name))
