"""Gateways: typed handles on remote endpoints.

A gateway names an endpoint (address + id) and the fencing token to present.
Subclasses (ResourceManagerGateway, TaskExecutorGateway, ...) give each remote
method a Python signature, so callers never build RPC payloads by hand.
"""

from __future__ import annotations

from typing import Any

from jobcluster.rpc.service import RpcService


class RpcGateway:
    """Handle on the endpoint ``endpoint_id`` served at ``address``."""

    def __init__(self, service: RpcService, address: str, endpoint_id: str, fencing_token: str | None = None) -> None:
        self.service = service
        self.address = address
        self.endpoint_id = endpoint_id
        self.fencing_token = fencing_token

    async def call(self, method: str, **args: Any) -> Any:
        """Invoke ``method`` remotely; raises RpcError / FencingTokenError after at most the ask timeout."""
        return await self.service.invoke(self.address, self.endpoint_id, method, args, self.fencing_token)

    async def call_with_timeout(self, method: str, ask_timeout: float, **args: Any) -> Any:
        """As :meth:`call`, for a method that may take longer than the service's ask timeout: at most ``ask_timeout`` seconds."""
        return await self.service.invoke(self.address, self.endpoint_id, method, args, self.fencing_token, ask_timeout)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.address}/{self.endpoint_id})"
