"""The Spark JVMs' own metrics, as Flink names them: what the dashboard charts for the JobManager and each TaskManager.

Where they come from: Spark's metrics system, in each JVM, reports its JVM
source (``org.apache.spark.metrics.source.JvmSource``: heap, non-heap, memory
pools, buffer pools, collectors) and its executor metrics to a StatsD sink
(``org.apache.spark.metrics.sink.StatsdSink``), over UDP on loopback, to the
jobcluster process next to it: the driver's to the JobManager, an executor's to
its TaskExecutor. Each JVM finds the sink in ``metrics.properties``, which
Spark reads from the classpath when ``spark.metrics.conf`` is not set, and
whose folder is on the classpath: the ``SPARK_CONF_DIR`` of the driver (the
JobManager's) and of the executors (their worker's, one per TaskExecutor). So
every TaskExecutor hears only its own executors, on every target, and nothing
leaves the container.

Why StatsD, not a pull: Spark's pull endpoints (its UI's servlets) exist only in
the driver; an executor only pushes. The push period is Flink's
``metrics.fetcher.update-interval``, the dashboard's own metric refresh.

Units: bytes, milliseconds and counts, as Flink reports them.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: The file Spark's metrics system reads from its classpath (``MetricsConfig``'s default).
METRICS_PROPERTIES_FILE = "metrics.properties"
#: Spark's instance names of the JVMs whose metrics the dashboard shows.
DRIVER_INSTANCE = "driver"
EXECUTOR_INSTANCE = "executor"
#: Sources whose gauges are kept (Spark's ``<namespace>.<instance id>.<source>.<gauge>``); the others are dropped on arrival.
_KEPT_SOURCES = ("jvm", "ExecutorMetrics")
#: A StatsD line: ``name:value|type`` (Spark's StatsdReporter sends one per datagram).
_STATSD_LINE = re.compile(r"^(?P<name>[^:|]+):(?P<value>[^|]+)\|(?P<type>[a-z]+)")
#: Flink's JVM memory metrics and the JvmSource gauge each is read from.
_FLINK_JVM_GAUGES = {
    "Status.JVM.Memory.Heap.Used": "jvm.heap.used",
    "Status.JVM.Memory.Heap.Committed": "jvm.heap.committed",
    "Status.JVM.Memory.Heap.Max": "jvm.heap.max",
    "Status.JVM.Memory.NonHeap.Used": "jvm.non-heap.used",
    "Status.JVM.Memory.NonHeap.Committed": "jvm.non-heap.committed",
    "Status.JVM.Memory.NonHeap.Max": "jvm.non-heap.max",
    "Status.JVM.Memory.Metaspace.Used": "jvm.pools.Metaspace.used",
    "Status.JVM.Memory.Metaspace.Committed": "jvm.pools.Metaspace.committed",
    "Status.JVM.Memory.Metaspace.Max": "jvm.pools.Metaspace.max",
    "Status.JVM.Memory.Direct.Count": "jvm.direct.count",
    "Status.JVM.Memory.Direct.MemoryUsed": "jvm.direct.used",
    "Status.JVM.Memory.Direct.TotalCapacity": "jvm.direct.capacity",
    "Status.JVM.Memory.Mapped.Count": "jvm.mapped.count",
    "Status.JVM.Memory.Mapped.MemoryUsed": "jvm.mapped.used",
    "Status.JVM.Memory.Mapped.TotalCapacity": "jvm.mapped.capacity",
}
#: A collector's gauges in JvmSource: ``jvm.<name with - for spaces>.count|time``.
_GC_GAUGE = re.compile(r"^jvm\.(?P<name>[^.]+)\.(?P<what>count|time)$")
_NOT_COLLECTORS = {"heap", "non-heap", "total", "direct", "mapped"}
GC_PREFIX = "Status.JVM.GarbageCollector."
#: Flink's managed memory: Spark's off-heap memory is its OPERATOR share (spark.memory.offHeap.size, see spark/sizing.py);
#: the PySpark workers' share is not measured, so "used" is Spark's use, of the whole managed memory.
MANAGED_USED = "Status.Flink.Memory.Managed.Used"
MANAGED_TOTAL = "Status.Flink.Memory.Managed.Total"
_MANAGED_USED_GAUGES = ("ExecutorMetrics.OffHeapExecutionMemory", "ExecutorMetrics.OffHeapStorageMemory")


def metrics_properties(instance: str, port: int, period_seconds: float) -> str:
    """The ``metrics.properties`` text that makes Spark's ``instance`` (``driver`` or ``executor``) report its JVM
    source to ``127.0.0.1:port`` every ``period_seconds`` (rounded; at least 1 s, Spark's minimum)."""
    period = max(1, round(period_seconds))
    sink = f"{instance}.sink.statsd"
    return (
        f"{instance}.source.jvm.class=org.apache.spark.metrics.source.JvmSource\n"
        f"{sink}.class=org.apache.spark.metrics.sink.StatsdSink\n"
        f"{sink}.host=127.0.0.1\n"
        f"{sink}.port={port}\n"
        f"{sink}.period={period}\n"
        f"{sink}.unit=seconds\n"
    )


def parse_statsd(datagram: bytes) -> list[tuple[str, str, float]]:
    """``(instance id, gauge, value)`` of each gauge line of a kept source in ``datagram``.

    Spark names a metric ``<namespace>.<instance id>.<source>.<gauge...>`` (the
    namespace is the application's id unless ``spark.metrics.namespace`` says
    otherwise, and may hold dots: the source is found from the right of it);
    gauges only (``|g``); values that are not numbers are skipped.
    """
    found = []
    for line in datagram.decode("utf-8", "replace").splitlines():
        match = _STATSD_LINE.match(line.strip())
        if match is None or match["type"] != "g":
            continue
        try:
            value = float(match["value"])
        except ValueError:
            continue
        parts = match["name"].split(".")
        for i in range(len(parts) - 2, 0, -1):
            if parts[i] in _KEPT_SOURCES:
                found.append((parts[i - 1], ".".join(parts[i:]), value))
                break
    return found


def flink_jvm_metrics(gauges: Mapping[str, float]) -> dict[str, int]:
    """Flink's ``Status.JVM.*`` metrics (bytes, counts, ms) from one JVM's gauges (``parse_statsd``'s names).

    A collector's name is Flink's: the JVM's with ``_`` for spaces (``G1_Young_Generation``).
    """
    metrics = {flink: int(gauges[spark]) for flink, spark in _FLINK_JVM_GAUGES.items() if spark in gauges}
    for name, value in gauges.items():
        gc = _GC_GAUGE.match(name)
        if gc is not None and gc["name"] not in _NOT_COLLECTORS:
            metrics[f"{GC_PREFIX}{gc['name'].replace('-', '_')}.{gc['what'].capitalize()}"] = int(value)
    return metrics


def flink_task_manager_metrics(gauges: Mapping[str, float], managed_memory: int) -> dict[str, int]:
    """An executor's Flink metrics: the JVM's, and managed memory (``managed_memory`` bytes, all of it) with what
    Spark's execution and storage use of their share of it (Spark's off-heap memory)."""
    metrics = flink_jvm_metrics(gauges)
    metrics[MANAGED_TOTAL] = managed_memory
    if any(name in gauges for name in _MANAGED_USED_GAUGES):
        metrics[MANAGED_USED] = int(sum(gauges.get(name, 0.0) for name in _MANAGED_USED_GAUGES))
    return metrics


@dataclass
class _Instance:
    gauges: dict[str, float] = field(default_factory=dict)
    last_report: float = 0.0  # time.monotonic()


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, receiver: JvmMetricsReceiver) -> None:
        self._receiver = receiver

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self._receiver.record(parse_statsd(data), time.monotonic())


class JvmMetricsReceiver:
    """Spark's StatsD reports to this process, kept as the latest gauges of each reporting JVM (Spark instance id:
    ``driver``, or an executor's id).

    ``stale_after``: seconds without a report after which a JVM counts as gone (an
    executor replaced by another). Runs on the loop that starts it; ``close`` ends it.
    """

    def __init__(self, stale_after: float) -> None:
        self._stale_after = stale_after
        self._instances: dict[str, _Instance] = {}
        self._transport: asyncio.DatagramTransport | None = None
        self.port = 0

    async def start(self) -> int:
        """Listen on a free UDP port of loopback; returns it. Raises OSError."""
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(lambda: _Protocol(self), local_addr=("127.0.0.1", 0))
        self._transport = transport
        self.port = transport.get_extra_info("sockname")[1]
        return self.port

    def install(self, spark_conf_dir: Path, instance: str, period_seconds: float) -> None:
        """Write ``metrics.properties`` for Spark's ``instance`` into ``spark_conf_dir`` (its JVMs' SPARK_CONF_DIR). Raises OSError."""
        (spark_conf_dir / METRICS_PROPERTIES_FILE).write_text(metrics_properties(instance, self.port, period_seconds))

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def record(self, gauges: list[tuple[str, str, float]], now: float) -> None:
        for instance_id, name, value in gauges:
            instance = self._instances.setdefault(instance_id, _Instance())
            instance.gauges[name] = value
            instance.last_report = now

    def latest(self, now: float | None = None) -> dict[str, float]:
        """The gauges of the JVM that reported last, unless it went silent more than ``stale_after`` s ago: then ``{}``."""
        now = time.monotonic() if now is None else now
        self._instances = {k: i for k, i in self._instances.items() if now - i.last_report <= self._stale_after}
        live = self._instances.values()
        return dict(max(live, key=lambda i: i.last_report).gauges) if live else {}
