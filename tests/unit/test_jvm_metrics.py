"""The Spark JVMs' metrics as Flink names them: StatsD lines in, the dashboard's bodies out (spark/jvm_metrics.py,
flink_bodies.metric_collection and task_manager_metrics). What Spark really sends is checked end to end by
tests/e2e/test_web_dashboard.py."""

from __future__ import annotations

import asyncio
import socket
import time

from jobcluster.runtime.rest import flink_bodies
from jobcluster.spark.jvm_metrics import (
    JvmMetricsReceiver,
    flink_jvm_metrics,
    flink_task_manager_metrics,
    metrics_properties,
    parse_statsd,
)

APP = "app-20261126134621-0000"


def test_only_gauges_of_the_jvm_and_executor_sources_are_kept_with_their_instance():
    datagram = (
        f"{APP}.driver.jvm.heap.used:48757176|g\n"
        f"{APP}.3.ExecutorMetrics.OffHeapExecutionMemory:1024|g\n"
        f"{APP}.3.executor.bytesRead:10|g\n"  # another source
        f"{APP}.3.jvm.heap.used:7|c\n"  # not a gauge
        f"{APP}.3.jvm.heap.usage:not-a-number|g\n"
    ).encode()
    assert parse_statsd(datagram) == [("driver", "jvm.heap.used", 48757176.0), ("3", "ExecutorMetrics.OffHeapExecutionMemory", 1024.0)]


def test_a_namespace_with_dots_still_names_the_instance():
    assert parse_statsd(b"my.name.space.7.jvm.pools.Metaspace.used:5|g") == [("7", "jvm.pools.Metaspace.used", 5.0)]


def test_flink_names_of_memory_pools_and_collectors():
    gauges = {
        "jvm.heap.used": 10.0,
        "jvm.heap.max": 100.0,
        "jvm.pools.Metaspace.max": 50.0,
        "jvm.direct.capacity": 7.0,
        "jvm.G1-Young-Generation.count": 3.0,
        "jvm.G1-Young-Generation.time": 45.0,
        "jvm.direct.count": 2.0,
        "jvm.heap.usage": 0.1,  # a ratio: Flink has none
    }
    assert flink_jvm_metrics(gauges) == {
        "Status.JVM.Memory.Heap.Used": 10,
        "Status.JVM.Memory.Heap.Max": 100,
        "Status.JVM.Memory.Metaspace.Max": 50,
        "Status.JVM.Memory.Direct.TotalCapacity": 7,
        "Status.JVM.Memory.Direct.Count": 2,
        "Status.JVM.GarbageCollector.G1_Young_Generation.Count": 3,
        "Status.JVM.GarbageCollector.G1_Young_Generation.Time": 45,
    }


def test_managed_memory_is_sparks_off_heap_execution_and_storage():
    gauges = {"ExecutorMetrics.OffHeapExecutionMemory": 300.0, "ExecutorMetrics.OffHeapStorageMemory": 20.0}
    metrics = flink_task_manager_metrics(gauges, managed_memory=1000)
    assert metrics["Status.Flink.Memory.Managed.Used"] == 320
    assert metrics["Status.Flink.Memory.Managed.Total"] == 1000
    assert "Status.Flink.Memory.Managed.Used" not in flink_task_manager_metrics({}, managed_memory=1000)


def test_metrics_properties_send_the_instances_jvm_source_to_the_port():
    text = metrics_properties("executor", 4321, 0.2)
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["executor.source.jvm.class"] == "org.apache.spark.metrics.source.JvmSource"
    assert props["executor.sink.statsd.class"] == "org.apache.spark.metrics.sink.StatsdSink"
    assert (props["executor.sink.statsd.host"], props["executor.sink.statsd.port"]) == ("127.0.0.1", "4321")
    assert (props["executor.sink.statsd.period"], props["executor.sink.statsd.unit"]) == ("1", "seconds")  # Spark's minimum


def test_the_receiver_keeps_the_jvm_that_reported_last_and_forgets_silent_ones(tmp_path):
    async def scenario() -> None:
        receiver = JvmMetricsReceiver(stale_after=5.0)
        port = await receiver.start()
        try:
            receiver.install(tmp_path, "executor", 2)
            assert f"executor.sink.statsd.port={port}" in (tmp_path / "metrics.properties").read_text()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
                sender.sendto(f"{APP}.1.jvm.heap.used:11|g".encode(), ("127.0.0.1", port))
                await _until(lambda: receiver.latest() == {"jvm.heap.used": 11.0})
                sender.sendto(f"{APP}.2.jvm.heap.used:22|g".encode(), ("127.0.0.1", port))  # executor 1 replaced by 2
                await _until(lambda: receiver.latest() == {"jvm.heap.used": 22.0})
            assert receiver.latest(now=time.monotonic() + 3600) == {}
        finally:
            receiver.close()

    asyncio.run(scenario())


async def _until(condition, timeout: float = 5.0) -> None:  # noqa: ASYNC109 - a test's own bound
    async with asyncio.timeout(timeout):
        while not condition():  # noqa: ASYNC110 - the datagram arrives on the loop by itself; nothing to wait on
            await asyncio.sleep(0.01)


def test_metric_collection_lists_names_or_answers_the_known_ones_once():
    metrics = {"b": 2, "a": 1}
    assert flink_bodies.metric_collection(metrics, None) == [{"id": "a"}, {"id": "b"}]
    assert flink_bodies.metric_collection(metrics, "b,zzz,a,b") == [{"id": "b", "value": "2"}, {"id": "a", "value": "1"}]


def test_task_manager_details_metrics_carry_the_jvm_and_its_collectors():
    metrics = flink_jvm_metrics({"jvm.heap.used": 5.0, "jvm.G1-Old-Generation.count": 1.0, "jvm.G1-Old-Generation.time": 9.0})
    body = flink_bodies.task_manager_metrics(metrics)
    assert body["heapUsed"] == 5
    assert body["heapMax"] == 0  # not reported (yet)
    assert body["memorySegmentsTotal"] == 0
    assert body["garbageCollectors"] == [{"name": "G1_Old_Generation", "count": 1, "time": 9}]
