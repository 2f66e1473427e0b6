"""A real Apache Kafka broker on this machine: one KRaft node, broker and controller in one JVM.

Why: the streaming tests check exactly-once delivery against the broker that
production jobs meet, not a mock. The broker is Kafka's own ``kafka.Kafka``,
run straight from the jars that ``build.sh`` resolves from Maven Central; no
Kafka distribution, no ``kafka-server-start.sh``, no ZooKeeper.

Shape of a cluster (all under one base directory)::

    base/conf/   server.properties, log4j.properties
    base/logs/   broker.log (the JVM's output), format.log (the storage format)
    base/data/   the log dirs: topics and the KRaft metadata log

Listeners, each on a port picked free at start:

- ``HOST`` on 127.0.0.1 (``bootstrap_servers``): for this machine's processes,
  the tests' Python client and the Spark executors of the ``local`` and
  ``yarn-per-job`` targets; inter-broker traffic uses it as well;
- ``PODS`` on ``pod_address`` when one is given (``pod_bootstrap_servers``):
  for pods on the Kubernetes test node, which reach the node's address
  (``tests.infra.k8s.node.NODE_IP``) through their bridge's gateway but not
  this machine's loopback. A Kafka client connects to the address the broker
  advertises for the listener it bootstrapped through, so each listener
  advertises its own address;
- ``CONTROLLER`` on 127.0.0.1: KRaft's quorum, this broker talking to itself.

Nothing listens on any other address. Producing and consuming from Python
goes through confluent-kafka (librdkafka), a client the broker did not come
with, so a test that passes shows the broker speaks the protocol to others.

Use it as a context manager, or ``start()`` / ``stop()``. By hand, for
debugging (stops on Ctrl-C)::

    .venv/bin/python -m tests.infra.kafka.cluster
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic  # where it is defined: confluent_kafka.admin re-exports it without saying so to mypy

from tests.infra.hadoop import processes

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build.sh"
LOOPBACK = "127.0.0.1"

KAFKA_MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"

Key = str | bytes | None
Value = str | bytes


class KafkaClusterError(RuntimeError):
    """The test broker could not be built, started or used."""


@dataclass(frozen=True)
class KafkaJars:
    """What build.sh resolved: the broker's classpath and Spark's Kafka connector jars."""

    broker_classpath: str
    """':'-separated jars of the broker (kafka_2.13 and its runtime dependencies)."""
    spark_connector: tuple[Path, ...]
    """spark-sql-kafka-0-10 for pyspark's Spark version with the dependencies pyspark lacks, sorted by name."""


def build(timeout: float = 900.0) -> KafkaJars:
    """Run build.sh (a no-op once the cache is complete) and return what it resolved.

    ``timeout``: seconds, covering a cold Maven download. Raises KafkaClusterError
    when the build fails or times out, with the end of its stderr.
    """
    try:
        out = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise KafkaClusterError(f"{BUILD_SCRIPT} did not finish in {timeout:.0f} s") from e
    if out.returncode != 0:
        raise KafkaClusterError(f"{BUILD_SCRIPT} failed (exit {out.returncode}):\n{out.stderr[-4000:]}")
    classpath_file = Path(out.stdout.strip().splitlines()[-1])
    connector = tuple(sorted((classpath_file.parent / "spark-connector").glob("*.jar")))
    return KafkaJars(classpath_file.read_text().strip(), connector)


def spark_kafka_connector_jars() -> list[Path]:
    """Absolute paths of Spark's Kafka connector jars for pyspark's Spark version (``jobcluster run --jars``).

    Four jars: spark-sql-kafka-0-10, spark-token-provider-kafka-0-10,
    kafka-clients and commons-pool2; the rest of what the connector needs
    ships with pyspark. Runs build.sh when the cache is not complete yet.
    """
    return list(build().spark_connector)


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        raise KafkaClusterError("no 'java' on PATH (or in $JAVA_HOME); install JDK 17 (openjdk-17-jdk-headless), as make requires")
    return java


def _free_port(host: str) -> int:
    """A port the kernel says is free on ``host`` now (someone may take it before the broker binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def new_cluster_id() -> str:
    """A KRaft cluster id as Kafka's ``Uuid.randomUuid()`` prints one: 16 random bytes, URL-safe base64, no padding.

    Kafka's own generator redraws ids that begin with '-' (they read as a
    command-line option); so does this one.
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def server_properties(*, data_dir: Path, host_port: int, controller_port: int, pod_address: str | None, pod_port: int | None) -> str:
    """``server.properties`` of the one-node KRaft cluster, as text.

    Internal topics get one partition and one replica: there is one broker,
    and Kafka's 50 partitions of ``__consumer_offsets`` (created on a
    consumer group's first use) would cost a test several seconds.
    """
    listeners = [f"HOST://{LOOPBACK}:{host_port}", f"CONTROLLER://{LOOPBACK}:{controller_port}"]
    advertised = [f"HOST://{LOOPBACK}:{host_port}"]
    protocols = ["HOST:PLAINTEXT", "CONTROLLER:PLAINTEXT"]
    if pod_address is not None and pod_port is not None:
        listeners.append(f"PODS://{pod_address}:{pod_port}")
        advertised.append(f"PODS://{pod_address}:{pod_port}")
        protocols.append("PODS:PLAINTEXT")
    entries = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{LOOPBACK}:{controller_port}",
        "listeners": ",".join(listeners),
        "advertised.listeners": ",".join(advertised),
        "listener.security.protocol.map": ",".join(protocols),
        "inter.broker.listener.name": "HOST",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        # A consumer group's first member need not wait 3 s for others that never come.
        "group.initial.rebalance.delay.ms": "0",
        # Tests create their topics; a misspelt topic name fails instead of being created empty.
        "auto.create.topics.enable": "false",
        # Small threads pools: the machine has 2 cores and runs Spark and Hadoop next to the broker.
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
    }
    return "".join(f"{key}={value}\n" for key, value in entries.items())


LOG4J_PROPERTIES = """\
# Everything to stdout, which the cluster writes to logs/broker.log.
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
# One line per request at DEBUG/TRACE: far too much for a test log.
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.network.RequestChannel$=WARN
log4j.logger.state.change.logger=WARN
"""


class KafkaCluster:
    """One KRaft node (broker and controller) as a ``kafka.Kafka`` JVM.

    ``base_dir``: conf, logs and data go there; a new temp dir by default
    (removed by ``stop(keep_logs=False)``). ``pod_address``: an address of this
    machine to open the ``PODS`` listener on (see the module's docstring), none
    by default. ``heap``: the JVM's -Xmx. ``startup_timeout``: seconds from the
    JVM's start until the broker serves metadata on every listener (~5-10 s on 2 cores).
    """

    def __init__(
        self,
        base_dir: Path | None = None,
        *,
        pod_address: str | None = None,
        heap: str = "256m",
        startup_timeout: float = 120.0,
    ) -> None:
        self._owns_base = base_dir is None
        self.base = Path(base_dir or tempfile.mkdtemp(prefix="jobcluster-kafka-")).resolve()
        self.pod_address = pod_address
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.cluster_id: str | None = None
        self._host_port: int | None = None
        self._pod_port: int | None = None
        self._proc: subprocess.Popen | None = None
        self._marker = f"-Djobcluster.kafka.cluster={self.base}"

    # -- addresses -------------------------------------------------------------

    @property
    def conf_dir(self) -> Path:
        return self.base / "conf"

    @property
    def log_dir(self) -> Path:
        """``broker.log`` (the broker's output) and ``format.log``."""
        return self.base / "logs"

    @property
    def data_dir(self) -> Path:
        return self.base / "data"

    @property
    def bootstrap_servers(self) -> str:
        """``127.0.0.1:<port>``: for clients on this machine (Spark's ``kafka.bootstrap.servers`` too)."""
        if self._host_port is None:
            raise KafkaClusterError("the broker is not started")
        return f"{LOOPBACK}:{self._host_port}"

    @property
    def pod_bootstrap_servers(self) -> str:
        """``<pod_address>:<port>``: for clients in pods. KafkaClusterError without a ``pod_address``."""
        if self.pod_address is None:
            raise KafkaClusterError("this broker has no listener for pods: give KafkaCluster a pod_address")
        if self._pod_port is None:
            raise KafkaClusterError("the broker is not started")
        return f"{self.pod_address}:{self._pod_port}"

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> KafkaCluster:
        """Format the storage and start the broker; return once it serves metadata on every listener.

        On any failure the JVM is stopped (logs kept) and KafkaClusterError
        shows the end of its log. A port taken between choosing and binding it
        costs one retry with fresh ports.
        """
        if self._proc is not None:
            raise KafkaClusterError("the broker is already started")
        classpath = build().broker_classpath
        for attempt in (1, 2):
            try:
                self._start_once(classpath)
                return self
            except KafkaClusterError:
                self.stop(keep_logs=True)
                if attempt == 2 or not self._lost_a_port():
                    raise
            except BaseException:
                self.stop(keep_logs=True)
                raise
        raise AssertionError("unreachable")

    def _start_once(self, classpath: str) -> None:
        for d in (self.conf_dir, self.log_dir, self.data_dir):
            d.mkdir(parents=True, exist_ok=True)
        self._host_port = _free_port(LOOPBACK)
        controller_port = _free_port(LOOPBACK)
        self._pod_port = _free_port(self.pod_address) if self.pod_address is not None else None
        (self.conf_dir / "server.properties").write_text(
            server_properties(
                data_dir=self.data_dir,
                host_port=self._host_port,
                controller_port=controller_port,
                pod_address=self.pod_address,
                pod_port=self._pod_port,
            )
        )
        (self.conf_dir / "log4j.properties").write_text(LOG4J_PROPERTIES)
        self.cluster_id = new_cluster_id()
        self._format(classpath)
        self._proc = processes.spawn(
            self._argv(classpath, KAFKA_MAIN, str(self.conf_dir / "server.properties")),
            env=self._env(),
            log_path=self.log_dir / "broker.log",
            cwd=self.base,
        )
        self._wait_ready()

    def _lost_a_port(self) -> bool:
        """Whether the last attempt failed to bind a port; its log is renamed and its data removed for the retry."""
        log = self.log_dir / "broker.log"
        if log.exists() and "BindException" in log.read_text(errors="replace"):
            log.rename(log.with_suffix(".bindfailure.log"))
            shutil.rmtree(self.data_dir, ignore_errors=True)
            return True
        return False

    def stop(self, *, keep_logs: bool = False) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after 15 s). With ``keep_logs`` only
        ``data/`` is removed; otherwise a base dir this object created is removed entirely."""
        proc, self._proc = self._proc, None
        if proc is not None:
            processes.terminate([proc], timeout=15)
        processes.sweep(self._marker, self.base)
        if keep_logs or not self._owns_base:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        else:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop(keep_logs=exc_type is not None)

    # -- using it --------------------------------------------------------------

    def admin(self) -> AdminClient:
        """A confluent-kafka AdminClient on the host listener."""
        return AdminClient({"bootstrap.servers": self.bootstrap_servers})

    def create_topic(self, name: str, partitions: int = 1, timeout: float = 30.0) -> None:
        """Create ``name`` with ``partitions`` partitions (one replica) and wait until each has a leader.

        Raises KafkaClusterError when Kafka refuses (e.g. the topic exists) or
        the partitions have no leader within ``timeout`` seconds.
        """
        admin = self.admin()
        future = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)], operation_timeout=timeout)[name]
        try:
            future.result(timeout=timeout)
        except KafkaException as e:
            raise KafkaClusterError(f"creating topic {name!r}: {e.args[0]}") from e
        deadline = time.monotonic() + timeout
        while True:
            topic = admin.list_topics(topic=name, timeout=timeout).topics.get(name)
            complete = topic is not None and topic.error is None and len(topic.partitions) == partitions
            if complete and all(p.leader >= 0 and p.error is None for p in topic.partitions.values()):  # type: ignore[union-attr]
                return
            if time.monotonic() > deadline:
                raise KafkaClusterError(f"topic {name!r}: not every partition had a leader after {timeout:.0f} s")
            time.sleep(0.1)

    def produce(self, topic: str, records: Iterable[tuple[Key, Value]], timeout: float = 60.0, timestamp_ms: int | None = None) -> int:
        """Write ``records`` (key or None, value; str is sent UTF-8 encoded) to ``topic`` and wait for every ack.

        ``timestamp_ms``: every record's timestamp (ms since the epoch, event time for a
        streaming job), else the time it is sent.

        Idempotent producer with ``acks=all``: each record is written once, in
        order per key. Records with a key go to the partition of its hash
        (Kafka's default partitioner); keyless ones are spread. Returns how
        many were acknowledged; raises KafkaClusterError naming the first
        failure, or when not all were acknowledged within ``timeout`` seconds.
        """
        producer = Producer({"bootstrap.servers": self.bootstrap_servers, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
        errors: list[KafkaError] = []
        acked = 0

        def delivered(err: KafkaError | None, _msg: object) -> None:
            nonlocal acked
            if err is not None:
                errors.append(err)
            else:
                acked += 1

        sent = 0
        for key, value in records:
            while True:
                try:
                    producer.produce(topic, value=value, key=key, on_delivery=delivered, timestamp=timestamp_ms or 0)
                    break
                except BufferError:  # the local queue is full: let it drain
                    producer.poll(0.5)
            sent += 1
            producer.poll(0)
        left = producer.flush(timeout)
        if errors:
            raise KafkaClusterError(f"producing to {topic!r}: {len(errors)} of {sent} records failed; first: {errors[0]}")
        if left or acked != sent:
            raise KafkaClusterError(f"producing to {topic!r}: {acked} of {sent} records acknowledged after {timeout:.0f} s")
        return acked

    def consume_all(self, topic: str, timeout: float = 60.0) -> list[tuple[bytes | None, bytes]]:
        """Every committed record of ``topic`` from its beginning to its current end, as (key, value) bytes.

        Partition by partition in offset order (partitions in ascending order);
        records of aborted or open transactions are not read (``read_committed``).
        Reads without a consumer group's offsets, so it can be called any
        number of times. Raises KafkaClusterError when the end of every
        partition is not reached within ``timeout`` seconds.
        """
        admin_topic = self.admin().list_topics(topic=topic, timeout=timeout).topics.get(topic)
        if admin_topic is None or admin_topic.error is not None:
            raise KafkaClusterError(f"topic {topic!r} does not exist: {admin_topic.error if admin_topic else 'no metadata'}")
        partitions = sorted(admin_topic.partitions)
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "group.id": f"jobcluster-tests-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
            }
        )
        by_partition: dict[int, list[tuple[bytes | None, bytes]]] = {p: [] for p in partitions}
        try:
            # assign(), not subscribe(): no group rebalance to wait for, and every partition from offset 0.
            consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
            at_end: set[int] = set()
            deadline = time.monotonic() + timeout
            while at_end != set(partitions):
                if time.monotonic() > deadline:
                    raise KafkaClusterError(
                        f"reading {topic!r}: partitions {sorted(set(partitions) - at_end)} not read to their end after {timeout:.0f} s"
                    )
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        at_end.add(msg.partition())  # type: ignore[arg-type]  # set on every message from a partition
                        continue
                    raise KafkaClusterError(f"reading {topic!r}: {err}")
                by_partition[msg.partition()].append((msg.key(), msg.value()))  # type: ignore[index,arg-type]  # a record has both
        finally:
            consumer.close()
        return [record for p in partitions for record in by_partition[p]]

    def end_offsets(self, topic: str, timeout: float = 30.0) -> dict[int, int]:
        """Each partition of ``topic`` (by number) with its end offset: the offset its next record gets.

        A record's ``(partition, offset)`` is unique in a topic, so these name every
        record written so far. Raises KafkaClusterError when the topic does not exist
        or a partition's offsets are not known within ``timeout`` seconds.
        """
        admin_topic = self.admin().list_topics(topic=topic, timeout=timeout).topics.get(topic)
        if admin_topic is None or admin_topic.error is not None:
            raise KafkaClusterError(f"topic {topic!r} does not exist: {admin_topic.error if admin_topic else 'no metadata'}")
        # A consumer only to ask the broker: it joins no group and reads nothing.
        consumer = Consumer({"bootstrap.servers": self.bootstrap_servers, "group.id": f"jobcluster-tests-{uuid.uuid4().hex}"})
        try:
            ends = {}
            for partition in sorted(admin_topic.partitions):
                marks = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
                if marks is None:
                    raise KafkaClusterError(f"topic {topic!r}: no offsets of partition {partition} after {timeout:.0f} s")
                ends[partition] = int(marks[1])
        finally:
            consumer.close()
        return ends

    # -- internals ---------------------------------------------------------------

    def _argv(self, classpath: str, main: str, *args: str) -> list[str]:
        return [
            _java(),
            f"-Xmx{self.heap}",
            "-Xms64m",
            "-XX:+UseSerialGC",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            "-Djava.net.preferIPv4Stack=true",
            f"-Dlog4j.configuration={(self.conf_dir / 'log4j.properties').as_uri()}",
            f"-Dkafka.logs.dir={self.log_dir}",
            self._marker,
            "-cp",
            classpath,
            main,
            *args,
        ]

    def _env(self) -> dict[str, str]:
        # Kafka's launch scripts read these; the JVM is started without them, and the caller's must not leak in.
        return {k: v for k, v in os.environ.items() if k not in ("CLASSPATH", "KAFKA_OPTS", "KAFKA_HEAP_OPTS", "JAVA_TOOL_OPTIONS")}

    def _format(self, classpath: str) -> None:
        log = self.log_dir / "format.log"
        argv = self._argv(
            classpath, STORAGE_TOOL, "format", "--cluster-id", str(self.cluster_id), "--config", str(self.conf_dir / "server.properties")
        )
        with open(log, "ab") as out:
            try:
                rc = subprocess.run(
                    argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=self._env(), cwd=self.base, timeout=120
                ).returncode
            except subprocess.TimeoutExpired as e:
                raise KafkaClusterError(f"formatting the broker's storage took over 120 s; see {log}") from e
        if rc != 0:
            raise KafkaClusterError(f"formatting the broker's storage failed (exit {rc}):\n{processes.tail(log)}")

    def _listeners(self) -> list[str]:
        return [self.bootstrap_servers] + ([self.pod_bootstrap_servers] if self.pod_address is not None else [])

    def _serves_metadata(self, bootstrap: str) -> str | None:
        """None when the broker behind ``bootstrap`` lists itself as the one broker, else what is missing."""
        host, port = bootstrap.rsplit(":", 1)
        # A plain connect first: librdkafka would log every refused connection to stderr while the JVM starts.
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
        except OSError as e:
            return f"{bootstrap} not accepting connections ({e.__class__.__name__})"
        try:
            metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
        except KafkaException as e:
            return f"no metadata from {bootstrap} ({e.args[0]})"
        advertised = [f"{b.host}:{b.port}" for b in metadata.brokers.values()]
        if advertised != [bootstrap]:
            return f"{bootstrap} advertises {advertised}"
        return None

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        log = self.log_dir / "broker.log"
        while True:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise KafkaClusterError(
                    f"the broker exited with code {self._proc.returncode} during startup; end of {log}:\n{processes.tail(log)}"
                )
            waiting_for = next((w for w in map(self._serves_metadata, self._listeners()) if w), None)
            if waiting_for is None:
                return
            if time.monotonic() > deadline:
                raise KafkaClusterError(
                    f"the Kafka test broker was not ready after {self.startup_timeout:.0f} s: {waiting_for}; "
                    f"end of {log}:\n{processes.tail(log)}"
                )
            time.sleep(0.3)

    def describe(self) -> str:
        """Human-readable addresses, for the debugging CLI and test output."""
        lines = [f"bootstrap.servers  {self.bootstrap_servers}"]
        if self.pod_address is not None:
            lines.append(f"for pods           {self.pod_bootstrap_servers}")
        lines += [f"cluster id         {self.cluster_id}", f"logs               {self.log_dir}"]
        return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Start a broker, print its addresses, run until Ctrl-C (or SIGTERM)."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.infra.kafka.cluster", description="Run the jobcluster Kafka test broker until Ctrl-C."
    )
    parser.add_argument("--base-dir", type=Path, help="keep conf/logs/data here (default: a new temp dir)")
    parser.add_argument("--pod-address", help="also listen on this address of the machine, for pods (e.g. the Kubernetes test node's)")
    args = parser.parse_args(argv)
    cluster = KafkaCluster(args.base_dir, pod_address=args.pod_address)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("starting the Kafka test broker ...", flush=True)
    try:
        cluster.start()
        print(cluster.describe(), "\nCtrl-C stops it.", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    except KafkaClusterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        print("stopping ...", flush=True)
        cluster.stop(keep_logs=True)
        print(f"stopped; logs kept in {cluster.log_dir}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
