"""A PySpark program reads a real Kafka topic on a local job cluster, with Spark's Kafka connector shipped by --jars."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import pytest
from support import PROGRAMS, jobcluster, staging_dirs

from tests.infra.kafka.cluster import KafkaCluster

pytestmark = [pytest.mark.e2e, pytest.mark.kafka]


def test_structured_streaming_reads_every_record_once_with_the_connector_from_jars(
    home, tmp_path, kafka_cluster: KafkaCluster, spark_kafka_jars: list[Path]
):
    topic = f"e2e-{uuid.uuid4().hex[:8]}"
    kafka_cluster.create_topic(topic, partitions=3)
    records = [(f"key-{i % 12}", f"value-{i}") for i in range(300)]  # 12 keys: Kafka's key hash puts some in each partition
    kafka_cluster.produce(topic, records)
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    # the jars both ways spark-submit takes them: comma-separated, and the option repeated
    jars = [str(j) for j in spark_kafka_jars]
    result = jobcluster(
        "run",
        "-p",
        "1",
        "-D",
        "taskmanager.numberOfTaskSlots=1",
        "--jars",
        ",".join(jars[:2]),
        "--jars",
        ",".join(jars[2:]),
        str(PROGRAMS / "kafka_counts.py"),
        kafka_cluster.bootstrap_servers,
        topic,
        str(output),
        str(checkpoint),
    )

    assert result.returncode == 0, result.stderr[-5000:]
    expected = Counter(key for key, _ in records)
    assert [line for line in result.stdout.splitlines() if line.startswith("COUNT ")] == [
        f"COUNT {key} {n}" for key, n in sorted(expected.items())
    ]
    assert "ROWS 300" in result.stdout.splitlines()
    written = [json.loads(line) for part in output.glob("part-*.json") for line in part.read_text().splitlines()]
    assert sorted((r["key"], r["value"]) for r in written) == sorted(records), "each record read exactly once"
    assert {r["partition"] for r in written} == {0, 1, 2}, "all three partitions were read"
    assert staging_dirs(home) == []
