"""Configuration: options, typed reads, fallback keys, loading files and -D overrides."""

import dataclasses
from pathlib import Path

import pytest

from jobcluster.backends import registry
from jobcluster.config import options as o
from jobcluster.config.config_option import ConfigOption
from jobcluster.config.configuration import Configuration, InvalidValueError
from jobcluster.config.loader import (
    CONFIG_FILE_NAME,
    default_conf_dir,
    load_configuration,
    parse_dynamic_property,
    read_config_file,
)
from jobcluster.config.validation import validate_configuration
from jobcluster.config.values import java_double_text, parse_duration, parse_port_ranges
from jobcluster.errors import IllegalConfigurationError, JobClusterError

MiB = 1 << 20


# -- options -------------------------------------------------------------------


def test_every_option_is_documented_and_unique():
    assert len(registry.ALL_OPTIONS) >= 40
    keys = [option.key for option in registry.ALL_OPTIONS]
    assert len(keys) == len(set(keys))
    for option in registry.ALL_OPTIONS:
        assert len(option.description) > 20, option.key


@pytest.mark.parametrize(
    ("option", "default"),
    [
        (o.TASK_MANAGER_FRAMEWORK_HEAP_MEMORY, 128 * MiB),
        (o.TASK_MANAGER_FRAMEWORK_OFF_HEAP_MEMORY, 128 * MiB),
        (o.TASK_MANAGER_TASK_OFF_HEAP_MEMORY, 0),
        (o.TASK_MANAGER_NETWORK_MEMORY_MIN, 64 * MiB),
        (o.TASK_MANAGER_NETWORK_MEMORY_MAX, 2**63 - 1),  # unlimited since Flink 1.17
        (o.TASK_MANAGER_JVM_METASPACE, 256 * MiB),
        (o.TASK_MANAGER_JVM_OVERHEAD_MIN, 192 * MiB),
        (o.TASK_MANAGER_JVM_OVERHEAD_MAX, 1024 * MiB),
        (o.TASK_MANAGER_MANAGED_MEMORY_FRACTION, 0.4000000059604645),
        (o.TASK_MANAGER_NETWORK_MEMORY_FRACTION, 0.10000000149011612),
        (o.TASK_MANAGER_JVM_OVERHEAD_FRACTION, 0.10000000149011612),
        (o.TASK_MANAGER_TOTAL_PROCESS_MEMORY, None),
        (o.TASK_MANAGER_TOTAL_FLINK_MEMORY, None),
        (o.TASK_MANAGER_TASK_HEAP_MEMORY, None),
        (o.TASK_MANAGER_MANAGED_MEMORY_SIZE, None),
        (o.JOB_MANAGER_OFF_HEAP_MEMORY, 128 * MiB),
        (o.JOB_MANAGER_JVM_METASPACE, 256 * MiB),
        (o.JOB_MANAGER_JVM_DIRECT_MEMORY_LIMIT_ENABLED, False),
        (o.NUM_TASK_SLOTS, 1),
        (o.PARALLELISM_DEFAULT, 1),
        (o.EXECUTION_TARGET, "local"),
        (o.HEARTBEAT_INTERVAL, 10.0),
        (o.HEARTBEAT_TIMEOUT, 50.0),
        (o.RESOURCE_MANAGER_TASK_MANAGER_TIMEOUT, 30.0),
        (o.TASK_MANAGER_REGISTRATION_TIMEOUT, 300.0),
        (o.SLOT_REQUEST_TIMEOUT, 300.0),
        (o.SLOT_MANAGER_MAX_SLOTS, 2**31 - 1),
        (o.RPC_ASK_TIMEOUT, 10.0),
        (o.REST_PORT, 8081),
        (o.RESTART_STRATEGY, "none"),
        (o.RESTART_ATTEMPTS, 1),
        (o.RESTART_DELAY, 1.0),
        (o.CLUSTER_STAGING_KEEP, False),
        (o.TASK_MANAGER_MANAGED_MEMORY_CONSUMER_WEIGHTS, {"OPERATOR": "70", "STATE_BACKEND": "70", "PYTHON": "30"}),
        (o.PYTHON_USE_MANAGED_MEMORY, True),
    ],
)
def test_defaults_of_an_empty_configuration(option, default):
    assert Configuration().get(option) == default


#: The type of each kind's values (ConfigOption[T]'s T, without None), as its constructor's overloads declare it.
KIND_TYPES = {"memory": int, "int": int, "float": float, "double": float, "duration": float, "str": str, "bool": bool, "map": dict}


def test_every_default_and_every_read_value_has_its_kinds_type():
    # mypy checks a declaration's default against its kind; an int default of a float kind would pass it (int is a float
    # to mypy), and a str enum member would pass as a str: the runtime types are checked here.
    for option in registry.ALL_OPTIONS:
        assert option.default is None or type(option.default) is KIND_TYPES[option.kind], option.key
    config = Configuration({"taskmanager.cpu.cores": "2", "heartbeat.interval": "10", "taskmanager.memory.process.size": "1g"})
    assert type(config.get(o.TASK_MANAGER_CPU_CORES)) is float
    assert type(config.get(o.HEARTBEAT_INTERVAL)) is float
    assert type(config.get(o.TASK_MANAGER_TOTAL_PROCESS_MEMORY)) is int


def test_option_fields_as_given():
    option = ConfigOption("jobcluster.test.retries", "int", 3, description="Retries.", minimum=0, deprecated_keys=("old.retries",))
    assert (option.key, option.kind, option.default, option.description) == ("jobcluster.test.retries", "int", 3, "Retries.")
    assert (option.minimum, option.fallback_keys, option.maximum, option.positive, option.choices) == (0, (), None, False, ())
    assert option.all_keys == ("jobcluster.test.retries", "old.retries")
    assert option == ConfigOption("jobcluster.test.retries", "int", 3, description="Retries.", minimum=0, deprecated_keys=("old.retries",))
    assert option != ConfigOption("jobcluster.test.retries", "int", 4, description="Retries.", minimum=0, deprecated_keys=("old.retries",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        option.default = 5


def test_option_prints_like_flink():
    assert o.TASK_MANAGER_TOTAL_FLINK_MEMORY.flink_text() == ("Key: 'taskmanager.memory.flink.size' , default: null (fallback keys: [])")
    assert o.TASK_MANAGER_NETWORK_MEMORY_FRACTION.flink_text() == (
        "Key: 'taskmanager.memory.network.fraction' , default: 0.1 "
        "(fallback keys: [{key=taskmanager.network.memory.fraction, isDeprecated=true}])"
    )
    assert o.TASK_MANAGER_JVM_OVERHEAD_FRACTION.flink_text() == (
        "Key: 'taskmanager.memory.jvm-overhead.fraction' , default: 0.1 (fallback keys: [])"
    )


# -- typed reads -------------------------------------------------------------------


def test_values_are_kept_as_text_and_parsed_on_read():
    config = Configuration({"taskmanager.memory.process.size": "1728m", "taskmanager.numberOfTaskSlots": 4})
    assert config.get_raw("taskmanager.numberOfTaskSlots") == "4"
    assert config.get(o.NUM_TASK_SLOTS) == 4
    assert config.get(o.TASK_MANAGER_TOTAL_PROCESS_MEMORY) == 1728 * MiB
    assert config.get(o.TASK_MANAGER_TOTAL_FLINK_MEMORY) is None
    assert config.get_optional(o.NUM_TASK_SLOTS) == 4
    assert config.get_optional(o.PARALLELISM_DEFAULT) is None


def test_unknown_keys_pass_through_untouched():
    config = Configuration({"my.custom.key": " Some Value ", "taskmanager.heap.size": "1g"})
    config.set("another.key", True)
    assert config.to_dict() == {
        "my.custom.key": " Some Value ",
        "taskmanager.heap.size": "1g",
        "another.key": "true",
    }
    copy = config.copy()
    copy.set("my.custom.key", "x")
    assert config["my.custom.key"] == " Some Value "
    assert "another.key" in config and len(config) == 3


@pytest.mark.parametrize(
    ("deprecated", "option", "text", "value"),
    [
        ("taskmanager.memory.size", o.TASK_MANAGER_MANAGED_MEMORY_SIZE, "512m", 512 * MiB),
        ("taskmanager.network.memory.min", o.TASK_MANAGER_NETWORK_MEMORY_MIN, "32m", 32 * MiB),
        ("taskmanager.network.memory.max", o.TASK_MANAGER_NETWORK_MEMORY_MAX, "1g", 1024 * MiB),
        ("taskmanager.network.memory.fraction", o.TASK_MANAGER_NETWORK_MEMORY_FRACTION, "0.2", 0.20000000298023224),
        ("akka.ask.timeout", o.RPC_ASK_TIMEOUT, "30 s", 30.0),
        ("restart-strategy", o.RESTART_STRATEGY, "fixed-delay", "fixed-delay"),
    ],
)
def test_fallback_and_deprecated_keys(deprecated, option, text, value):
    config = Configuration({deprecated: text})
    assert config.contains(option)
    assert option in config
    assert config.get(option) == value
    assert option.key not in config  # the alias is read, not copied
    assert config.to_dict() == {deprecated: text}


def test_new_key_wins_over_deprecated_key():
    config = Configuration({"taskmanager.memory.size": "1g", "taskmanager.memory.managed.size": "256m"})
    assert config.get(o.TASK_MANAGER_MANAGED_MEMORY_SIZE) == 256 * MiB
    config = Configuration({"taskmanager.network.memory.fraction": "0.3", "taskmanager.memory.network.fraction": "0.2"})
    assert config.get(o.TASK_MANAGER_NETWORK_MEMORY_FRACTION) == 0.20000000298023224


def test_remove_drops_every_alias():
    config = Configuration({"taskmanager.memory.size": "1g", "taskmanager.memory.managed.size": "256m"})
    assert config.remove(o.TASK_MANAGER_MANAGED_MEMORY_SIZE)
    assert not config.contains(o.TASK_MANAGER_MANAGED_MEMORY_SIZE)
    assert not config.remove("absent")


def test_malformed_memory_names_the_key():
    config = Configuration({"taskmanager.memory.process.size": "1.5g"})
    with pytest.raises(IllegalConfigurationError) as caught:
        config.get(o.TASK_MANAGER_TOTAL_PROCESS_MEMORY)
    assert str(caught.value) == "Cannot read memory size from config option 'taskmanager.memory.process.size'."
    assert caught.value.__cause__ is not None


@pytest.mark.parametrize(
    ("key", "text", "option"),
    [
        ("taskmanager.numberOfTaskSlots", "two", o.NUM_TASK_SLOTS),
        ("taskmanager.numberOfTaskSlots", "2.0", o.NUM_TASK_SLOTS),
        ("taskmanager.numberOfTaskSlots", "3000000000", o.NUM_TASK_SLOTS),
        ("taskmanager.memory.managed.fraction", "forty", o.TASK_MANAGER_MANAGED_MEMORY_FRACTION),
        ("taskmanager.cpu.cores", "1,5", o.TASK_MANAGER_CPU_CORES),
        ("heartbeat.timeout", "fast", o.HEARTBEAT_TIMEOUT),
        ("heartbeat.timeout", "1.5 s", o.HEARTBEAT_TIMEOUT),
        ("jobcluster.staging.keep", "yes", o.CLUSTER_STAGING_KEEP),
        ("akka.ask.timeout", "soon", o.RPC_ASK_TIMEOUT),  # names the key actually used
        ("taskmanager.memory.managed.consumer-weights", "OPERATOR=70", o.TASK_MANAGER_MANAGED_MEMORY_CONSUMER_WEIGHTS),
        ("taskmanager.memory.managed.consumer-weights", "PYTHON:1:2", o.TASK_MANAGER_MANAGED_MEMORY_CONSUMER_WEIGHTS),
        ("taskmanager.memory.managed.consumer-weights", ":30", o.TASK_MANAGER_MANAGED_MEMORY_CONSUMER_WEIGHTS),
    ],
)
def test_malformed_values_name_the_key(key, text, option):
    with pytest.raises(InvalidValueError) as caught:
        Configuration({key: text}).get(option)
    assert str(caught.value) == f"Could not parse value '{text}' for key '{key}'."
    assert isinstance(caught.value, IllegalConfigurationError)
    assert isinstance(caught.value, JobClusterError)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("10 s", 10.0),
        ("10s", 10.0),
        ("500 ms", 0.5),
        ("500ms", 0.5),
        ("1 min", 60.0),
        ("1m", 60.0),
        ("2 h", 7200.0),
        ("1 d", 86400.0),
        ("3 seconds", 3.0),
        ("100", 0.1),  # plain number = milliseconds
        ("0", 0.0),
        ("250 us", 0.00025),
        (" 5 MIN ", 300.0),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)
    assert Configuration({"heartbeat.interval": text}).get(o.HEARTBEAT_INTERVAL) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "-1 s", "1 fortnight", "1.5 s"])
def test_bad_durations(text):
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "mapping"),
    [
        ("OPERATOR:70,PYTHON:30", {"OPERATOR": "70", "PYTHON": "30"}),
        (" OPERATOR : 70 , PYTHON:30, ", {"OPERATOR": "70", "PYTHON": "30"}),
        ("PYTHON:30,PYTHON:40", {"PYTHON": "40"}),  # the last one wins
        ("", {}),
    ],
)
def test_maps(text, mapping):
    option = o.TASK_MANAGER_MANAGED_MEMORY_CONSUMER_WEIGHTS
    assert Configuration({option.key: text}).get(option) == mapping
    # written back as Flink writes a map, and read again the same
    assert Configuration({option.key: mapping}).get_raw(option.key) == ",".join(f"{k}:{v}" for k, v in mapping.items())
    assert Configuration({option.key: mapping}).get(option) == mapping


def test_a_map_options_default_prints_like_flinks():
    assert o.TASK_MANAGER_MANAGED_MEMORY_CONSUMER_WEIGHTS.flink_text() == (
        "Key: 'taskmanager.memory.managed.consumer-weights' , default: OPERATOR:70,STATE_BACKEND:70,PYTHON:30 (fallback keys: [])"
    )


@pytest.mark.parametrize(("text", "value"), [("true", True), ("TRUE", True), ("False", False), (" false ", False)])
def test_booleans(text, value):
    assert Configuration({"jobcluster.staging.keep": text}).get(o.CLUSTER_STAGING_KEEP) is value


def test_doubles_and_java_text():
    assert Configuration({"taskmanager.cpu.cores": "1.5"}).get(o.TASK_MANAGER_CPU_CORES) == 1.5
    assert java_double_text(1.0) == "1.0"
    assert java_double_text(0.5) == "0.5"
    assert java_double_text(1e-4) == "1.0E-4"
    assert java_double_text(12345678.0) == "1.2345678E7"


# -- loading -------------------------------------------------------------------


def write_conf(tmp_path: Path, text: str) -> Path:
    (tmp_path / CONFIG_FILE_NAME).write_text(text)
    return tmp_path


def test_flat_yaml(tmp_path):
    conf = write_conf(
        tmp_path,
        "taskmanager.memory.process.size: 1728m\n"
        "taskmanager.numberOfTaskSlots: 4\n"
        "jobcluster.staging.keep: true\n"
        "heartbeat.timeout: 20 s\n"
        "taskmanager.memory.managed.fraction: 0.3\n"
        "some.unknown.key: [a, b]\n"
        "empty.key:\n",
    )
    config = load_configuration(conf)
    assert config.to_dict() == {
        "taskmanager.memory.process.size": "1728m",
        "taskmanager.numberOfTaskSlots": "4",
        "jobcluster.staging.keep": "true",
        "heartbeat.timeout": "20 s",
        "taskmanager.memory.managed.fraction": "0.3",
        "some.unknown.key": "a;b",
    }
    assert config.get(o.CLUSTER_STAGING_KEEP) is True
    assert config.get(o.TASK_MANAGER_MANAGED_MEMORY_FRACTION) == 0.30000001192092896


def test_nested_yaml_is_flattened(tmp_path):
    conf = write_conf(
        tmp_path,
        "taskmanager:\n"
        "  numberOfTaskSlots: 2\n"
        "  memory:\n"
        "    process.size: 2g\n"
        "    network:\n"
        "      fraction: 0.2\n"
        "jobmanager.memory:\n"
        "  process.size: 1600m\n",
    )
    config = load_configuration(conf)
    assert config.get(o.NUM_TASK_SLOTS) == 2
    assert config.get(o.TASK_MANAGER_TOTAL_PROCESS_MEMORY) == 2048 * MiB
    assert config.get(o.TASK_MANAGER_NETWORK_MEMORY_FRACTION) == 0.20000000298023224
    assert config.get(o.JOB_MANAGER_TOTAL_PROCESS_MEMORY) == 1600 * MiB


def test_flinks_config_yaml_is_read_beside_ours_and_a_conflict_names_both_files(tmp_path):
    """Flink 2's config.yaml (nested, standard YAML) alone, or beside jobcluster.yaml: one key set; a key both set
    differently is refused, naming both files; the same value in both is no conflict."""
    flink_2 = "taskmanager:\n  numberOfTaskSlots: 2\n  memory:\n    process.size: 2g\nrest.port: 8082\n"
    (tmp_path / "config.yaml").write_text(flink_2)
    alone = load_configuration(tmp_path)
    assert (alone.get(o.NUM_TASK_SLOTS), alone.get(o.REST_PORT)) == (2, 8082)
    write_conf(tmp_path, "taskmanager.memory.process.size: 2g\nheartbeat.timeout: 20 s\n")
    both = load_configuration(tmp_path)
    assert both.to_dict() == {**alone.to_dict(), "heartbeat.timeout": "20 s"}
    write_conf(tmp_path, "taskmanager.memory.process.size: 1728m\n")
    with pytest.raises(IllegalConfigurationError) as refused:
        load_configuration(tmp_path)
    message = str(refused.value)
    assert "taskmanager.memory.process.size" in message and "'1728m'" in message and "'2g'" in message
    assert str(tmp_path / CONFIG_FILE_NAME) in message and str(tmp_path / "config.yaml") in message


def test_dynamic_properties_win(tmp_path):
    conf = write_conf(tmp_path, "taskmanager.memory.process.size: 1728m\nrest.port: 8081\n")
    config = load_configuration(conf, {"taskmanager.memory.process.size": "4g", "new.key": "v"})
    assert config.get(o.TASK_MANAGER_TOTAL_PROCESS_MEMORY) == 4 * 1024 * MiB
    assert config.get(o.REST_PORT) == 8081
    assert config.get_raw("new.key") == "v"


def test_conf_dir_without_file_means_built_in_defaults(tmp_path):
    assert load_configuration(tmp_path).to_dict() == {}
    assert load_configuration(tmp_path, {"a": "b"}).to_dict() == {"a": "b"}


def test_missing_conf_dir_fails(tmp_path):
    with pytest.raises(IllegalConfigurationError, match="does not exist"):
        load_configuration(tmp_path / "absent")


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "key: [unclosed\n", "a: b\n  c: d\n"])
def test_bad_files_fail(tmp_path, text):
    with pytest.raises(IllegalConfigurationError, match=CONFIG_FILE_NAME):
        read_config_file(write_conf(tmp_path, text) / CONFIG_FILE_NAME)


def test_empty_file_is_empty(tmp_path):
    assert load_configuration(write_conf(tmp_path, "# nothing\n")).to_dict() == {}


def test_default_conf_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("JOBCLUSTER_CONF_DIR", raising=False)
    packaged = default_conf_dir()
    assert (packaged / CONFIG_FILE_NAME).is_file()
    monkeypatch.setenv("JOBCLUSTER_CONF_DIR", str(tmp_path))
    assert default_conf_dir() == tmp_path
    write_conf(tmp_path, "rest.port: 1234\n")
    assert load_configuration().get(o.REST_PORT) == 1234


@pytest.mark.parametrize(
    ("text", "pair"),
    [
        ("a.b=c", ("a.b", "c")),
        ("a = c ", ("a", "c")),
        ("k=v=w", ("k", "v=w")),
        ("k=", ("k", "")),
    ],
)
def test_parse_dynamic_property(text, pair):
    assert parse_dynamic_property(text) == pair


@pytest.mark.parametrize("text", ["=v", "", "  =x", "flag", "heartbeat.timeout"])
def test_parse_dynamic_property_needs_a_key_and_a_value(text):
    with pytest.raises(IllegalConfigurationError):
        parse_dynamic_property(text)


def test_shipped_configuration(monkeypatch):
    monkeypatch.delenv("JOBCLUSTER_CONF_DIR", raising=False)
    config = load_configuration()
    assert config.get(o.TASK_MANAGER_TOTAL_PROCESS_MEMORY) == 2560 * MiB
    assert config.get(o.JOB_MANAGER_TOTAL_PROCESS_MEMORY) == 1600 * MiB
    assert config.get(o.NUM_TASK_SLOTS) == 2
    assert config.get(o.PARALLELISM_DEFAULT) == 2
    assert config.get(o.REST_PORT) == 0
    assert config.get(o.RESTART_STRATEGY) == "none"
    assert config.get(o.EXECUTION_TARGET) == "local"
    assert config.get(o.HEARTBEAT_INTERVAL) < config.get(o.HEARTBEAT_TIMEOUT)


def test_prefixed_keys_are_read_as_a_map_by_name():
    config = Configuration(
        {
            "containerized.master.env.JAVA_HOME": "/usr/lib/jvm/java-21",
            "containerized.master.env.": "a bare prefix is no entry",
            "containerized.master.envX": "another key",
            "containerized.taskmanager.env.JAVA_HOME": "/usr/lib/jvm/java-25",
            "containerized.master.env.LD_LIBRARY_PATH": "/usr/lib/native",
        }
    )
    assert config.prefixed(o.CONTAINERIZED_MASTER_ENV) == {"JAVA_HOME": "/usr/lib/jvm/java-21", "LD_LIBRARY_PATH": "/usr/lib/native"}
    assert config.prefixed(o.CONTAINERIZED_TASK_MANAGER_ENV) == {"JAVA_HOME": "/usr/lib/jvm/java-25"}
    assert Configuration().prefixed(o.CONTAINERIZED_MASTER_ENV) == {}


def test_port_ranges_are_read_as_flink_writes_them():
    assert parse_port_ranges("8081") == (8081,)
    assert parse_port_ranges("0") == (0,)
    assert parse_port_ranges(" 50100-50102, 50300 ,50101") == (50100, 50101, 50102, 50300)
    for bad in ("", "x", "50200-50100", "70000", "1-2-3", "-5"):
        with pytest.raises(ValueError, match=r"port|range"):
            parse_port_ranges(bad)


def test_a_bad_rest_bind_port_is_refused_before_anything_runs():
    with pytest.raises(IllegalConfigurationError, match=r"rest\.bind-port: the range '50200-50100' ends below its start"):
        validate_configuration(Configuration({"rest.bind-port": "50200-50100"}), registry.ALL_OPTIONS)
    validate_configuration(Configuration({"rest.bind-port": "50100-50200,50300"}), registry.ALL_OPTIONS)
