"""Typed gateway to the ResourceManager."""

from __future__ import annotations

from typing import Any, cast

from jobcluster.rpc.gateway import RpcGateway
from jobcluster.runtime.messages import SlotID, SlotReport, TaskExecutorRegistration, dump

RESOURCE_MANAGER_ENDPOINT = "resourcemanager"


class ResourceManagerGateway(RpcGateway):
    async def register_task_executor(self, registration: TaskExecutorRegistration, slot_report: SlotReport) -> dict[str, Any]:
        return cast(
            dict[str, Any], await self.call("register_task_executor", registration=dump(registration), slot_report=dump(slot_report))
        )

    async def register_job_master(self, job_id: str, address: str, job_master_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], await self.call("register_job_master", job_id=job_id, address=address, job_master_id=job_master_id))

    async def declare_required_resources(self, job_id: str, required_slots: int) -> None:
        await self.call("declare_required_resources", job_id=job_id, required_slots=required_slots)

    async def notify_slot_available(self, slot_id: SlotID, allocation_id: str) -> None:
        await self.call("notify_slot_available", slot_id=dump(slot_id), allocation_id=allocation_id)

    async def disconnect_task_manager(self, resource_id: str, cause: str) -> None:
        await self.call("disconnect_task_manager", resource_id=resource_id, cause=cause)

    async def request_task_manager_info(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], await self.call("request_task_manager_info"))

    async def request_resource_overview(self) -> dict[str, Any]:
        return cast(dict[str, Any], await self.call("request_resource_overview"))
