"""RpcService over real HTTP on loopback: fencing tokens, the cluster secret, timeouts, local calls."""

from __future__ import annotations

import asyncio

import pytest

from jobcluster.errors import FencingTokenError, RpcError
from jobcluster.rpc.endpoint import FencedRpcEndpoint, RpcEndpoint, rpc
from jobcluster.rpc.gateway import RpcGateway
from jobcluster.rpc.service import RpcService


class Counter(FencedRpcEndpoint):
    def __init__(self) -> None:
        super().__init__("counter")
        self.value = 0
        self.loop = None

    @rpc
    async def add(self, amount: int) -> int:
        self.loop = asyncio.get_running_loop()
        self.value += amount
        return self.value

    @rpc
    async def slow(self) -> None:
        await asyncio.sleep(5)

    async def not_remote(self) -> None:  # no @rpc: must not be callable
        self.value = -1


def run(coro):
    return asyncio.run(coro)


async def _two_services(secret_b="s3cret"):
    a = RpcService("127.0.0.1", "s3cret", ask_timeout=1.0)
    b = RpcService("127.0.0.1", secret_b, ask_timeout=1.0)
    await a.start()
    await b.start()
    return a, b


def test_remote_call_with_token_runs_on_the_endpoint_loop():
    async def scenario():
        a, b = await _two_services()
        counter = Counter()
        await a.start_endpoint(counter)
        try:
            gw = RpcGateway(b, a.address, "counter", counter.fencing_token)
            assert await gw.call("add", amount=2) == 2
            assert await gw.call("add", amount=3) == 5
            assert counter.loop is asyncio.get_running_loop()
        finally:
            await a.stop()
            await b.stop()

    run(scenario())


def test_stale_fencing_token_is_refused():
    async def scenario():
        a, b = await _two_services()
        counter = Counter()
        await a.start_endpoint(counter)
        try:
            with pytest.raises(FencingTokenError):
                await RpcGateway(b, a.address, "counter", "stale").call("add", amount=1)
            assert counter.value == 0
        finally:
            await a.stop()
            await b.stop()

    run(scenario())


def test_wrong_secret_is_refused():
    async def scenario():
        a, b = await _two_services(secret_b="other")
        counter = Counter()
        await a.start_endpoint(counter)
        try:
            with pytest.raises(FencingTokenError, match="secret"):
                await RpcGateway(b, a.address, "counter", counter.fencing_token).call("add", amount=1)
            assert counter.value == 0
        finally:
            await a.stop()
            await b.stop()

    run(scenario())


def test_only_rpc_methods_are_callable():
    async def scenario():
        a, b = await _two_services()
        counter = Counter()
        await a.start_endpoint(counter)
        try:
            with pytest.raises(RpcError, match="no rpc method"):
                await RpcGateway(b, a.address, "counter", counter.fencing_token).call("not_remote")
            assert counter.value == 0
        finally:
            await a.stop()
            await b.stop()

    run(scenario())


def test_calls_time_out():
    async def scenario():
        a, b = await _two_services()
        counter = Counter()
        await a.start_endpoint(counter)
        try:
            with pytest.raises(RpcError):
                await RpcGateway(b, a.address, "counter", counter.fencing_token).call("slow")
        finally:
            await a.stop()
            await b.stop()

    run(scenario())


def test_local_calls_skip_the_network_but_keep_the_checks():
    async def scenario():
        a = RpcService("127.0.0.1", "s3cret", ask_timeout=1.0)
        await a.start()
        counter = Counter()
        await a.start_endpoint(counter)
        try:
            assert a.is_local(a.address)
            assert await RpcGateway(a, a.address, "counter", counter.fencing_token).call("add", amount=7) == 7
            with pytest.raises(FencingTokenError):
                await RpcGateway(a, a.address, "counter", None).call("add", amount=1)
        finally:
            await a.stop()

    run(scenario())


def test_unreachable_endpoint_is_an_rpc_error():
    async def scenario():
        a = RpcService("127.0.0.1", "s3cret", ask_timeout=1.0)
        await a.start()
        try:
            with pytest.raises(RpcError):
                await RpcGateway(a, "http://127.0.0.1:1", "counter").call("add", amount=1)
        finally:
            await a.stop()

    run(scenario())


def test_stop_cancels_owned_tasks():
    async def scenario():
        endpoint = RpcEndpoint("e")
        task = endpoint.spawn(asyncio.sleep(100), "sleeper")
        await endpoint.stop()
        assert task.cancelled()

    run(scenario())
