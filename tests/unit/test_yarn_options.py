"""The yarn.* options: Flink's keys and defaults, how unset values are filled in, and the errors naming the key."""

from decimal import Decimal

import pytest

from jobcluster.backends import registry
from jobcluster.backends.yarn.config_options import (
    PYTHON_EXECUTABLE,
    YARN_APPLICATION_NAME,
    YARN_APPLICATION_PRIORITY,
    YARN_APPLICATION_QUEUE,
    YARN_APPLICATION_TYPE,
    YARN_APPMASTER_VCORES,
    YARN_CONTAINER_REQUEST_HEARTBEAT_INTERVAL,
    YARN_CONTAINERS_VCORES,
    YARN_HEARTBEAT_INTERVAL,
    YARN_OPTIONS,
    YARN_STAGING_DIRECTORY,
    YARN_TAGS,
)
from jobcluster.backends.yarn.errors import YarnConfigurationError
from jobcluster.backends.yarn.options import (
    application_tags,
    job_id_of_tags,
    task_manager_cpu_cores,
    vcores_of,
    yarn_options,
)
from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError

JOB_ID = "0123456789abcdef0123456789abcdef"


def test_defaults_are_flinks():
    opts = yarn_options(Configuration(), "wordcount.py", JOB_ID)

    assert opts.application_name == "wordcount.py"
    assert opts.queue is None
    assert opts.priority is None  # Flink's -1: YARN's default
    assert opts.application_type == "jobcluster"
    assert opts.node_label is None
    assert opts.attempts == 1
    assert opts.am_vcores == 1
    assert opts.tags == (f"jobcluster-job-id:{JOB_ID}",)
    assert opts.staging_directory is None
    assert opts.heartbeat_interval == 5.0
    assert opts.container_request_interval == 0.5
    assert opts.application_id is None
    assert opts.python is None


def test_option_defaults_as_declared():
    assert YARN_HEARTBEAT_INTERVAL.default == 5
    assert YARN_HEARTBEAT_INTERVAL.deprecated_keys == ("yarn.heartbeat-delay",)
    assert YARN_CONTAINER_REQUEST_HEARTBEAT_INTERVAL.default == 0.5
    assert YARN_CONTAINERS_VCORES.default == -1
    assert YARN_APPMASTER_VCORES.default == 1
    assert YARN_APPLICATION_PRIORITY.default == -1
    assert YARN_TAGS.default == ""
    for option in (YARN_APPLICATION_NAME, YARN_APPLICATION_QUEUE, YARN_APPLICATION_TYPE, YARN_STAGING_DIRECTORY, PYTHON_EXECUTABLE):
        assert option in YARN_OPTIONS and option in registry.ALL_OPTIONS


def test_configured_values():
    config = Configuration(
        {
            "yarn.application.name": "nightly wc",
            "yarn.application.queue": "etl",
            "yarn.application.priority": "3",
            "yarn.application.type": "Apache Flink",
            "yarn.application.node-label": "spark",
            "yarn.application-attempts": "2",
            "yarn.appmaster.vcores": "2",
            "yarn.tags": " Team-A , nightly,,team-a ",
            "yarn.staging-directory": "hdfs:///tmp/staging",
            "yarn.heartbeat.interval": "2",
            "yarn.heartbeat.container-request-interval": "250",  # a plain number is ms, as in Flink
            "yarn.application.id": "application_1700000000000_0042",
            "jobcluster.yarn.python": "/opt/py/bin/python3",
        }
    )

    opts = yarn_options(config, "ignored", JOB_ID)

    assert opts.application_name == "nightly wc"
    assert opts.queue == "etl"
    assert opts.priority == 3
    assert opts.application_type == "Apache Flink"
    assert opts.node_label == "spark"
    assert opts.attempts == 2
    assert opts.am_vcores == 2
    assert opts.tags == ("team-a", "nightly", f"jobcluster-job-id:{JOB_ID}")
    assert opts.staging_directory == "hdfs:///tmp/staging"
    assert opts.heartbeat_interval == 2.0
    assert opts.container_request_interval == 0.25
    assert opts.application_id == "application_1700000000000_0042"
    assert opts.python == "/opt/py/bin/python3"


def test_the_containers_python_is_pyflinks_key_with_jobclusters_older_key_as_its_alias():
    assert yarn_options(Configuration({"python.executable": "/opt/a/bin/python"}), "j").python == "/opt/a/bin/python"
    assert yarn_options(Configuration({"jobcluster.yarn.python": "/opt/b/bin/python"}), "j").python == "/opt/b/bin/python"
    both = Configuration({"python.executable": "/opt/a/bin/python", "jobcluster.yarn.python": "/opt/b/bin/python"})
    assert yarn_options(both, "j").python == "/opt/a/bin/python"


def test_old_heartbeat_key_still_read():
    assert yarn_options(Configuration({"yarn.heartbeat-delay": "7"}), "j").heartbeat_interval == 7.0


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("yarn.application.priority", "-2", "yarn.application.priority"),
        ("yarn.application-attempts", "0", "yarn.application-attempts"),
        ("yarn.appmaster.vcores", "0", "yarn.appmaster.vcores"),
        ("yarn.heartbeat.interval", "0", "yarn.heartbeat.interval"),
        ("yarn.heartbeat.container-request-interval", "0 ms", "yarn.heartbeat.container-request-interval"),
        ("yarn.application.id", "app_1", "yarn.application.id"),
        ("yarn.application.id", "application_17x_0001", "yarn.application.id"),
        ("yarn.staging-directory", "file:///tmp/x", "yarn.staging-directory"),
        ("python.executable", "python3", "python.executable"),
        ("jobcluster.yarn.python", "python3", "jobcluster.yarn.python"),  # the alias: the key the user wrote
        ("yarn.tags", ",".join(f"t{i}" for i in range(10)), "yarn.tags"),  # 10 + the JobID tag
        ("yarn.tags", "x" * 101, "yarn.tags"),
        ("yarn.tags", "équipe", "yarn.tags"),
    ],
)
def test_bad_values_name_the_key(key, value, named):
    with pytest.raises(YarnConfigurationError, match=named.replace(".", r"\.")):
        yarn_options(Configuration({key: value}), "job", JOB_ID)


def test_unparsable_value_names_the_key():
    with pytest.raises(IllegalConfigurationError, match=r"yarn\.appmaster\.vcores"):
        yarn_options(Configuration({"yarn.appmaster.vcores": "two"}), "job")


def test_tags_without_job_id_and_lookup():
    assert application_tags("") == ()
    tags = application_tags("a,b", JOB_ID.upper())
    assert tags[-1] == f"jobcluster-job-id:{JOB_ID}"
    assert job_id_of_tags(tags) == JOB_ID
    assert job_id_of_tags(("a", "b")) is None


@pytest.mark.parametrize(
    ("conf", "cores"),
    [
        ({}, Decimal(1)),  # slots default 1
        ({"taskmanager.numberOfTaskSlots": "3"}, Decimal(3)),  # yarn.containers.vcores -1 = slots
        ({"taskmanager.numberOfTaskSlots": "3", "yarn.containers.vcores": "2"}, Decimal(2)),
        ({"taskmanager.numberOfTaskSlots": "3", "yarn.containers.vcores": "2", "taskmanager.cpu.cores": "1.5"}, Decimal("1.5")),
    ],
)
def test_task_manager_cpu_cores_fallback_chain(conf, cores):
    assert task_manager_cpu_cores(Configuration(conf)) == cores


@pytest.mark.parametrize("vcores", ["0", "-2"])
def test_containers_vcores_out_of_range(vcores):
    with pytest.raises(YarnConfigurationError, match=r"yarn\.containers\.vcores"):
        task_manager_cpu_cores(Configuration({"yarn.containers.vcores": vcores}))


@pytest.mark.parametrize(("cpu", "vcores"), [("0", 1), ("0.1", 1), ("1", 1), ("1.00000001", 2), ("2.5", 3), ("4", 4)])
def test_vcores_round_up_to_at_least_one(cpu, vcores):
    assert vcores_of(Decimal(cpu)) == vcores
