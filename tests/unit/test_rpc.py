"""RpcService over real HTTP on loopback, and in-process (a MiniCluster's services): fencing tokens, the cluster secret,
timeouts, local calls; both transports behave alike."""

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


TRANSPORTS = pytest.mark.parametrize("in_process", [False, True], ids=["http", "in-process"])


async def _two_services(secret_b="s3cret", in_process=False):
    a = RpcService("127.0.0.1", "s3cret", ask_timeout=1.0, in_process=in_process)
    b = RpcService("127.0.0.1", secret_b, ask_timeout=1.0, in_process=in_process)
    await a.start()
    await b.start()
    return a, b


@TRANSPORTS
def test_remote_call_with_token_runs_on_the_endpoint_loop(in_process):
    async def scenario():
        a, b = await _two_services(in_process=in_process)
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


@TRANSPORTS
def test_stale_fencing_token_is_refused(in_process):
    async def scenario():
        a, b = await _two_services(in_process=in_process)
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


@TRANSPORTS
def test_wrong_secret_is_refused(in_process):
    async def scenario():
        a, b = await _two_services(in_process=in_process, secret_b="other")
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


@TRANSPORTS
def test_only_rpc_methods_are_callable(in_process):
    async def scenario():
        a, b = await _two_services(in_process=in_process)
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


@TRANSPORTS
def test_calls_time_out(in_process):
    async def scenario():
        a, b = await _two_services(in_process=in_process)
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


class Failing(RpcEndpoint):
    def __init__(self) -> None:
        super().__init__("failing")
        self.received: dict | None = None

    @rpc
    async def keep(self, data: dict) -> dict:
        self.received = data
        return data

    @rpc
    async def fail(self) -> None:
        raise ValueError("bad value")


def test_in_process_calls_skip_the_network_and_share_nothing_with_the_caller():
    async def scenario():
        a, b = await _two_services(in_process=True)
        endpoint = Failing()
        await a.start_endpoint(endpoint)
        try:
            await b._session.close()  # no client session: a call over the network would fail
            sent = {"items": [1, 2]}
            answer = await RpcGateway(b, a.address, "failing").call("keep", data=sent)
            assert answer == sent and answer is not sent and endpoint.received is not sent
            with pytest.raises(RpcError, match="ValueError: bad value"):  # as a remote caller gets it
                await RpcGateway(b, a.address, "failing").call("fail")
        finally:
            await a.stop()
            await b.stop()

    run(scenario())


def test_a_service_not_in_process_is_called_over_the_network():
    async def scenario():
        a = RpcService("127.0.0.1", "s3cret", ask_timeout=1.0)
        b = RpcService("127.0.0.1", "s3cret", ask_timeout=1.0, in_process=True)
        await a.start()
        await b.start()
        await a.start_endpoint(Failing())
        try:
            await b._session.close()
            with pytest.raises(RuntimeError, match="Session is closed"):  # the call went to the client session
                await RpcGateway(b, a.address, "failing").call("keep", data={})
        finally:
            await a.stop()
            await b.stop()

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
