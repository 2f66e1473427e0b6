"""Typed gateway to a JobMaster."""

from __future__ import annotations

from typing import Any, cast

from jobcluster.rpc.gateway import RpcGateway
from jobcluster.runtime.messages import SlotOffer, dump

JOB_MASTER_ENDPOINT = "jobmaster"


class JobMasterGateway(RpcGateway):
    async def register_task_executor(self, resource_id: str, address: str, job_id: str) -> dict[str, Any]:
        """Returns ``{"spark_master_url": ..., "spark_master_web_url": ...}``."""
        return cast(dict[str, Any], await self.call("register_task_executor", resource_id=resource_id, address=address, job_id=job_id))

    async def offer_slots(self, resource_id: str, offers: list[SlotOffer]) -> list[str]:
        """Returns the allocation ids the JobMaster accepted."""
        return cast(list[str], await self.call("offer_slots", resource_id=resource_id, offers=[dump(o) for o in offers]))

    async def disconnect_task_manager(self, resource_id: str, cause: str, terminated: bool = False, memory_kill: bool = False) -> None:
        """The TaskExecutor ``resource_id`` is gone for ``cause``; ``terminated``: its worker ended (then ``memory_kill``: its
        platform killed it for its memory)."""
        await self.call("disconnect_task_manager", resource_id=resource_id, cause=cause, terminated=terminated, memory_kill=memory_kill)

    async def worker_pending(self, resource_id: str, reason: str) -> None:
        """The worker ``resource_id`` requested for the job cannot start yet, for ``reason`` (the platform's words)."""
        await self.call("worker_pending", resource_id=resource_id, reason=reason)

    async def heartbeat_from_resource_manager(self, resource_manager_id: str) -> None:
        await self.call("heartbeat_from_resource_manager", resource_manager_id=resource_manager_id)
