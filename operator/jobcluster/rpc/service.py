"""The RpcService: hosts endpoints and connects gateways to them.

Transport is JSON over HTTP with aiohttp (``POST /rpc/{endpoint}/{method}``),
a well-kept library rather than a home-made socket protocol. Every call
carries the cluster secret in a header, and fenced endpoints also require
their fencing token; anything else is refused before the method runs.
Calls to an endpoint hosted by the same service skip the network but go
through the same checks, so local and remote calls behave alike.

In-process RPC (Flink's MiniCluster, where the JobManager's components and
the TaskExecutors share one process): between RpcServices created with
``in_process`` in this process, on the same event loop, calls skip the
network too. It still goes
through every check a remote call meets (the cluster secret, the fencing
token), its arguments and result are copied through JSON as they would be on
the wire, and a failure of the called method reaches the caller as the same
RpcError a remote call raises, so an endpoint cannot tell the two apart.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from typing import Any

import aiohttp
from aiohttp import web

from jobcluster.errors import FencingTokenError, RpcError
from jobcluster.rpc.endpoint import RpcEndpoint, is_rpc_method

log = logging.getLogger(__name__)

SECRET_HEADER = "X-JobCluster-Secret"

#: The started RpcServices of this process by address, for in-process calls (see the module docstring).
_IN_PROCESS: dict[str, RpcService] = {}


class RpcService:
    """Hosts :class:`RpcEndpoint` s on one aiohttp server and makes remote calls.

    ``secret``: the per-cluster shared secret every internal call must carry.
    ``ask_timeout``: seconds a remote call may take before :class:`RpcError`
    (mirrors Flink's ``pekko.ask.timeout``). ``in_process``: calls between this
    service and the other ``in_process`` services of this process skip the
    network (a MiniCluster's; see the module docstring).
    """

    def __init__(self, bind_host: str, secret: str, ask_timeout: float, port: int = 0, in_process: bool = False) -> None:
        self.bind_host = bind_host
        self.in_process = in_process
        self._port = port
        self._secret = secret
        self.ask_timeout = ask_timeout
        self._endpoints: dict[str, RpcEndpoint] = {}
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def address(self) -> str:
        """Base URL other processes use to reach this service, e.g. ``http://127.0.0.1:41234``."""
        return f"http://{self.bind_host}:{self._port}"

    async def start(self, serve: bool = True) -> None:
        """Open the server its endpoints are reached at (unless not ``serve``: a client only) and the client session."""
        if serve:
            app = web.Application()
            app.router.add_post("/rpc/{endpoint}/{method}", self._handle)
            self._runner = web.AppRunner(app, access_log=None)
            await self._runner.setup()
            site = web.TCPSite(self._runner, self.bind_host, self._port)
            await site.start()
            self._port = self._runner.addresses[0][1]  # the bound port when 0 was asked for
            if self.in_process:
                self._loop = asyncio.get_running_loop()
                _IN_PROCESS[self.address] = self
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.ask_timeout))

    async def stop(self) -> None:
        if _IN_PROCESS.get(self.address) is self:
            del _IN_PROCESS[self.address]
        for endpoint in list(self._endpoints.values()):
            await endpoint.stop()
        self._endpoints.clear()
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def start_endpoint(self, endpoint: RpcEndpoint) -> None:
        """Register ``endpoint`` under its id and run its ``on_start``."""
        self._endpoints[endpoint.endpoint_id] = endpoint
        await endpoint.on_start()

    async def stop_endpoint(self, endpoint: RpcEndpoint) -> None:
        self._endpoints.pop(endpoint.endpoint_id, None)
        await endpoint.stop()

    def is_local(self, address: str) -> bool:
        return address == self.address

    async def invoke(
        self, address: str, endpoint_id: str, method: str, args: dict[str, Any], fencing_token: str | None, ask_timeout: float | None = None
    ) -> Any:
        """Call ``method`` of ``endpoint_id`` at ``address`` within ``ask_timeout`` seconds (default: the service's, as
        Flink's ``@RpcTimeout`` overrides ``pekko.ask.timeout`` for one call); raises RpcError or FencingTokenError."""
        timeout = self.ask_timeout if ask_timeout is None else ask_timeout
        if self.is_local(address):
            return await asyncio.wait_for(self._dispatch(endpoint_id, method, args, fencing_token), timeout)
        in_process = _IN_PROCESS.get(address) if self.in_process else None
        if in_process is not None and in_process._loop is asyncio.get_running_loop():
            return await self._invoke_in_process(in_process, endpoint_id, method, args, fencing_token, timeout)
        assert self._session is not None, "RpcService not started"
        url = f"{address}/rpc/{endpoint_id}/{method}"
        payload = {"args": args, "fencing_token": fencing_token}
        try:
            async with self._session.post(
                url, json=payload, headers={SECRET_HEADER: self._secret}, timeout=aiohttp.ClientTimeout(total=timeout)
            ) as resp:
                body = await resp.json(content_type=None)
        except (TimeoutError, aiohttp.ClientError, ValueError) as exc:
            raise RpcError(f"call {endpoint_id}.{method} at {address} failed: {exc!r}") from exc
        error = body.get("error")
        if error:
            kind = FencingTokenError if error.get("type") == "fencing" else RpcError
            raise kind(f"{endpoint_id}.{method} at {address}: {error.get('message')}")
        return body.get("result")

    async def _invoke_in_process(
        self, target: RpcService, endpoint_id: str, method: str, args: dict[str, Any], fencing_token: str | None, ask_timeout: float
    ) -> Any:
        """Call an endpoint of ``target``, another service of this process, as :meth:`_handle` would take the call."""
        where = f"{endpoint_id}.{method} at {target.address}"
        if not hmac.compare_digest(self._secret.encode(), target._secret.encode()):
            raise FencingTokenError(f"{where}: missing or wrong cluster secret")
        try:
            result = await asyncio.wait_for(target._dispatch(endpoint_id, method, _copied(args), fencing_token), ask_timeout)
        except FencingTokenError as exc:
            raise FencingTokenError(f"{where}: {exc}") from exc
        except TimeoutError as exc:
            raise RpcError(f"call {where} failed: {exc!r}") from exc
        except Exception as exc:  # as over the wire: the caller gets the failure as an RpcError
            raise RpcError(f"{where}: {type(exc).__name__}: {exc}") from exc
        return _copied(result)

    async def _handle(self, request: web.Request) -> web.Response:
        supplied = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(supplied.encode(), self._secret.encode()):
            return web.json_response({"error": {"type": "fencing", "message": "missing or wrong cluster secret"}}, status=403)
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": {"type": "rpc", "message": "body is not JSON"}}, status=400)
        try:
            result = await self._dispatch(
                request.match_info["endpoint"], request.match_info["method"], body.get("args") or {}, body.get("fencing_token")
            )
        except FencingTokenError as exc:
            return web.json_response({"error": {"type": "fencing", "message": str(exc)}}, status=409)
        except Exception as exc:  # the caller gets the failure; the endpoint keeps running
            log.debug("rpc %s.%s failed", request.match_info["endpoint"], request.match_info["method"], exc_info=True)
            return web.json_response({"error": {"type": "rpc", "message": f"{type(exc).__name__}: {exc}"}}, status=500)
        return web.json_response({"result": result})

    async def _dispatch(self, endpoint_id: str, method: str, args: dict[str, Any], fencing_token: str | None) -> Any:
        endpoint = self._endpoints.get(endpoint_id)
        if endpoint is None:
            raise RpcError(f"no endpoint {endpoint_id!r} here")
        expected = endpoint.fencing_token
        if expected is not None and fencing_token != expected:
            raise FencingTokenError(f"{endpoint_id} refused {method}: fencing token {fencing_token!r} is not current")
        target = getattr(endpoint, method, None)
        if not is_rpc_method(target):
            raise RpcError(f"{endpoint_id} has no rpc method {method!r}")
        return await target(**args)


def _copied(value: Any) -> Any:
    """``value`` as the other side of the wire would read it: a JSON copy, sharing nothing with the sender."""
    return json.loads(json.dumps(value))
