"""The user's spark.* settings: passed through, except those the cluster decides."""

from __future__ import annotations

import pytest

from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError
from jobcluster.spark.conf import RESERVED_SPARK_KEYS, merge_spark_conf, user_spark_conf


def test_spark_keys_pass_through_and_nothing_else():
    config = Configuration({"spark.sql.ansi.enabled": "true", "spark.jobcluster.marker": "x y", "parallelism.default": "2", "sparkle": "1"})
    assert user_spark_conf(config) == {"spark.sql.ansi.enabled": "true", "spark.jobcluster.marker": "x y"}


@pytest.mark.parametrize(
    ("key", "instead"),
    [
        ("spark.executor.memory", "taskmanager.memory.task.heap.size"),
        ("spark.executor.cores", "taskmanager.numberOfTaskSlots"),
        ("spark.cores.max", "-p (parallelism.default)"),
        ("spark.driver.memory", "jobmanager.memory.heap.size"),
        ("spark.memory.offHeap.size", "taskmanager.memory.managed.size"),
        ("spark.executor.pyspark.memory", "taskmanager.memory.task.off-heap.size"),
        ("spark.master", "execution.target"),
        ("spark.submit.deployMode", "execution.target"),
        ("spark.driver.host", "decided by the job cluster"),
        ("spark.driver.bindAddress", "decided by the job cluster"),
        ("spark.local.dir", "decided by the job cluster"),
        ("spark.ui.proxyBase", "serves the driver's UI under /spark/"),
        ("spark.ui.reverseProxy", "serves the driver's UI under /spark/"),
    ],
)
def test_keys_the_cluster_decides_are_refused_naming_the_option_to_use(key, instead):
    with pytest.raises(IllegalConfigurationError) as refused:
        user_spark_conf(Configuration({key: "1", "spark.sql.ansi.enabled": "true"}))
    message = str(refused.value)
    assert key in message and instead in message
    assert "spark.sql.ansi.enabled" not in message


def test_every_refusal_is_listed_at_once():
    with pytest.raises(IllegalConfigurationError) as refused:
        user_spark_conf(Configuration({"spark.executor.memory": "4g", "spark.driver.memory": "2g"}))
    assert "spark.executor.memory" in str(refused.value) and "spark.driver.memory" in str(refused.value)


def test_every_reserved_key_names_what_to_do():
    assert all(instead for instead in RESERVED_SPARK_KEYS.values())


@pytest.mark.parametrize(
    ("key", "flag", "instead"),
    [
        ("spark.executor.extraJavaOptions", "-Xmx4g", "taskmanager.memory.task.heap.size"),
        ("spark.executor.extraJavaOptions", "-XX:MaxDirectMemorySize=1g", "taskmanager.memory.network.min"),
        ("spark.driver.extraJavaOptions", "-XX:MaxMetaspaceSize=1g", "jobmanager.memory.jvm-metaspace.size"),
        ("spark.driver.extraJavaOptions", "-Dspark.ui.proxyBase=/elsewhere", "serves the driver's UI under /spark/"),
    ],
)
def test_jvm_options_that_set_a_limit_are_refused(key, flag, instead):
    with pytest.raises(IllegalConfigurationError, match=instead):
        user_spark_conf(Configuration({key: f"-Dfoo=1 {flag}"}))


def test_cluster_settings_win_and_jvm_options_are_joined_with_the_limits_last():
    user = {"spark.executor.extraJavaOptions": "-verbose:gc", "spark.sql.shuffle.partitions": "7", "spark.foo": "bar"}
    cluster = {"spark.executor.extraJavaOptions": "-XX:MaxDirectMemorySize=192m", "spark.executor.memory": "703m"}
    assert merge_spark_conf(user, cluster) == {
        "spark.executor.extraJavaOptions": "-verbose:gc -XX:MaxDirectMemorySize=192m",
        "spark.sql.shuffle.partitions": "7",
        "spark.foo": "bar",
        "spark.executor.memory": "703m",
    }


@pytest.mark.parametrize(
    "given",
    [{"spark.api.mode": "connect"}, {"spark.api.mode": " Connect "}, {"spark.remote": "sc://spark:15002"}, {"spark.remote": "local"}],
)
def test_spark_connect_is_refused_before_anything_is_deployed(given):
    with pytest.raises(IllegalConfigurationError) as refused:
        user_spark_conf(Configuration(given))
    message = str(refused.value)
    assert all(f"{key}={value}" in message for key, value in given.items())
    assert "Spark Connect: the job's driver runs in the JobManager as a classic PySpark driver" in message


def test_the_classic_api_mode_passes():
    assert user_spark_conf(Configuration({"spark.api.mode": "classic"})) == {"spark.api.mode": "classic"}
