"""The Kafka test broker (tests/infra/kafka) is a real broker: records go in and come back out through another client.

Produced and read with confluent-kafka (librdkafka), not with the broker's own
Java client; the session's broker is shared, so each test uses topics of its own.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.infra.kafka.cluster import KafkaCluster, KafkaClusterError, spark_kafka_connector_jars

pytestmark = pytest.mark.kafka


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_every_produced_record_is_read_back_once_in_order_per_key(kafka_cluster: KafkaCluster):
    topic = topic_name("smoke")
    kafka_cluster.create_topic(topic, partitions=3)
    records = [(f"key-{i % 7}", f"value-{i}") for i in range(500)]
    assert kafka_cluster.produce(topic, records) == 500

    read = kafka_cluster.consume_all(topic)

    assert sorted((k.decode(), v.decode()) for k, v in read if k is not None) == sorted(records)
    by_key: dict[str, list[str]] = defaultdict(list)
    for key, value in read:
        assert key is not None
        by_key[key.decode()].append(value.decode())
    for key, values in by_key.items():
        assert values == [v for k, v in records if k == key], f"records of {key} out of order"
    metadata = kafka_cluster.admin().list_topics(topic=topic, timeout=10)
    assert len(metadata.topics[topic].partitions) == 3
    assert kafka_cluster.consume_all(topic) == read, "reading does not consume: a second read sees the same records"


def test_keyless_records_and_an_empty_topic(kafka_cluster: KafkaCluster):
    topic = topic_name("keyless")
    kafka_cluster.create_topic(topic)
    assert kafka_cluster.consume_all(topic) == []
    kafka_cluster.produce(topic, [(None, b"\x00binary"), (None, "text")])
    assert kafka_cluster.consume_all(topic) == [(None, b"\x00binary"), (None, b"text")]


def test_misuse_is_refused_with_the_reason(kafka_cluster: KafkaCluster):
    topic = topic_name("twice")
    kafka_cluster.create_topic(topic)
    with pytest.raises(KafkaClusterError, match="already exists"):
        kafka_cluster.create_topic(topic)
    with pytest.raises(KafkaClusterError, match="does not exist"):
        kafka_cluster.consume_all(topic_name("never-created"), timeout=10)
    with pytest.raises(KafkaClusterError, match="no listener for pods"):
        _ = kafka_cluster.pod_bootstrap_servers


def test_a_second_listener_advertises_its_own_address_and_stop_leaves_nothing():
    """The listener for pods, on another address of this machine (127.0.0.2 stands in for the
    Kubernetes node's address): a client that bootstraps through it is sent back to it, not to 127.0.0.1."""
    cluster = KafkaCluster(pod_address="127.0.0.2")
    with cluster:
        pid = cluster._proc.pid if cluster._proc else None
        assert cluster.pod_bootstrap_servers.startswith("127.0.0.2:")
        assert cluster.bootstrap_servers.startswith("127.0.0.1:")
        producer = Producer({"bootstrap.servers": cluster.pod_bootstrap_servers})
        metadata = producer.list_topics(timeout=10)
        assert [f"{b.host}:{b.port}" for b in metadata.brokers.values()] == [cluster.pod_bootstrap_servers]
        topic = topic_name("pods")
        cluster.create_topic(topic)
        producer.produce(topic, value=b"through the pod listener")
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": cluster.pod_bootstrap_servers, "group.id": "pods", "enable.partition.eof": True})
        consumer.assign([TopicPartition(topic, 0, 0)])
        msg = consumer.poll(30)
        consumer.close()
        assert msg is not None and msg.error() is None and msg.value() == b"through the pod listener"
        assert cluster.consume_all(topic) == [(None, b"through the pod listener")], "the host listener sees the same log"
    assert pid is not None and not psutil.pid_exists(pid)
    assert not cluster.base.exists(), "a cluster that made its own directory removes it"


def test_spark_connector_is_of_pysparks_spark_line_with_only_what_pyspark_lacks():
    import pyspark

    jars = spark_kafka_connector_jars()
    names = sorted(j.name for j in jars)
    (core,) = (Path(pyspark.__file__).parent / "jars").glob("spark-core_*.jar")
    scala = core.name.removeprefix("spark-core_").split("-")[0]  # 2.13 for Spark 4, 2.12 for 3.5
    assert [n.rsplit("-", 1)[0] for n in names] == [
        "commons-pool2",
        "kafka-clients",
        f"spark-sql-kafka-0-10_{scala}",
        f"spark-token-provider-kafka-0-10_{scala}",
    ]
    # pyspark's own version where Maven Central serves it; here 4.2.0 beside 4.3.0 (spark-connector/pom.xml)
    connector = names[2].removeprefix(f"spark-sql-kafka-0-10_{scala}-").removesuffix(".jar")
    assert connector.split(".")[0] == pyspark.__version__.split(".")[0], "a connector of pyspark's Spark line"
    assert tuple(map(int, connector.split("."))) <= tuple(map(int, pyspark.__version__.split(".")[:3]))
    # by artifact, not file name: a second copy of a jar pyspark ships, at any version, must not be among them
    shipped = {p.name.rsplit("-", 1)[0] for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    assert not shipped & {n.rsplit("-", 1)[0] for n in names}
    assert all(j.is_absolute() and j.is_file() for j in jars)
