"""`jobcluster memory`: JSON and table output, conf dirs, -D overrides and errors."""

import json

import pytest
from click.testing import CliRunner

from jobcluster.cli.memory import memory

TASK_EXECUTOR_KEYS = [
    "framework_heap",
    "task_heap",
    "framework_off_heap",
    "task_off_heap",
    "network",
    "managed",
    "jvm_metaspace",
    "jvm_overhead",
    "total_flink",
    "total_process",
    "pyspark_memory",
    "pyspark_memory_per_worker",
]


@pytest.fixture(autouse=True)
def no_conf_dir_env(monkeypatch):
    monkeypatch.delenv("JOBCLUSTER_CONF_DIR", raising=False)


MiB = 1 << 20


def run(*args: str):
    return CliRunner().invoke(memory, list(args))


@pytest.fixture
def flink_conf(tmp_path):
    """A conf dir holding Flink's shipped sizes."""
    (tmp_path / "jobcluster.yaml").write_text("taskmanager.memory.process.size: 1728m\njobmanager.memory.process.size: 1600m\n")
    return tmp_path


def test_json_task_executor_flink_default(flink_conf):
    result = run("-c", str(flink_conf), "--output", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {
        "framework_heap": 134217728,
        "task_heap": 402653174,
        "framework_off_heap": 134217728,
        "task_off_heap": 0,
        "network": 134217730,
        "managed": 536870920,
        "jvm_metaspace": 268435456,
        "jvm_overhead": 201326592,
        "total_flink": 1342177280,
        "total_process": 1811939328,
        # PYTHON's 30 % of the managed memory (153.6 MiB), for the one slot: floored to MiB
        "pyspark_memory": 153 * MiB,
        "pyspark_memory_per_worker": 153 * MiB,
    }
    # a Flink-valid configuration Spark cannot run: still exit 0, the warning on stderr
    assert "Spark cannot run this" in result.stderr and "450 MiB" in result.stderr


def test_json_job_manager_flink_default(flink_conf):
    result = run("-c", str(flink_conf), "--jobmanager", "--output", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "jvm_heap": 1073741824,
        "off_heap": 134217728,
        "jvm_metaspace": 268435456,
        "jvm_overhead": 201326592,
        "total_flink": 1207959552,
        "total_process": 1677721600,
    }
    assert result.stderr == ""


def test_dynamic_properties_override_the_file(flink_conf):
    result = run(
        "-c",
        str(flink_conf),
        "--output",
        "json",
        "-D",
        "taskmanager.memory.process.size=4g",
        "-Dtaskmanager.memory.managed.size=0",
    )
    document = json.loads(result.stdout)
    assert document["total_process"] == 4 << 30
    assert document["managed"] == 0


def test_default_conf_dir_is_the_packaged_one():
    result = run("--output", "json")
    assert result.exit_code == 0
    assert list(json.loads(result.stdout)) == TASK_EXECUTOR_KEYS
    assert json.loads(result.stdout)["total_process"] == 2560 << 20
    assert result.stderr == ""  # the shipped configuration meets Spark's minimums


def test_conf_dir_environment_variable(monkeypatch, flink_conf):
    monkeypatch.setenv("JOBCLUSTER_CONF_DIR", str(flink_conf))
    assert json.loads(run("--output", "json").stdout)["total_process"] == 1728 << 20


def test_nested_yaml_conf(tmp_path):
    (tmp_path / "jobcluster.yaml").write_text("taskmanager:\n  memory:\n    process.size: 1728m\n")
    assert json.loads(run("-c", str(tmp_path), "--output", "json").stdout)["task_heap"] == 402653174


def test_conf_dir_without_file_is_flinks_e1(tmp_path):
    result = run("-c", str(tmp_path))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "TaskManager memory configuration failed: Either required fine-grained memory" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_conf_dir_without_file_job_manager_is_e1_too(tmp_path):
    result = run("-c", str(tmp_path), "--jobmanager")
    assert result.exit_code == 1
    assert "JobManager memory configuration failed: Either required fine-grained memory" in result.stderr


def test_missing_conf_dir(tmp_path):
    result = run("-c", str(tmp_path / "nope"))
    assert result.exit_code == 1
    assert "does not exist" in result.stderr


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["-D", "taskmanager.memory.process.size=1.5g"], "Cannot read memory size from config option 'taskmanager.memory.process.size'."),
        (["-D", "taskmanager.numberOfTaskSlots=two"], "Could not parse value 'two' for key 'taskmanager.numberOfTaskSlots'."),
        (["-D", "taskmanager.memory.process.size=300m"], "exceed configured Total Process Memory"),
    ],
)
def test_errors_exit_1_with_the_reason_on_stderr(args, text):
    result = run(*args)
    assert result.exit_code == 1
    assert text in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("value", "text"), [("=oops", "has no key"), ("taskmanager.memory.process.size", "has no '='")])
def test_dynamic_property_without_key_or_value_is_a_usage_error(value, text):
    result = run("-D", value)
    assert result.exit_code == 2
    assert text in result.stderr


def test_error_shows_the_cause_that_adds_information():
    result = run(
        "-D",
        "taskmanager.memory.process.size=1000m",
        "-D",
        "taskmanager.memory.task.heap.size=100m",
        "-D",
        "taskmanager.memory.jvm-overhead.min=64m",
        "-D",
        "taskmanager.memory.jvm-overhead.max=256m",
    )
    assert result.exit_code == 1
    assert "the derived Network Memory is inconsistent with its configuration" in result.stderr
    assert "Caused by: Derived Network Memory size (30.400mb (31876706 bytes))" in result.stderr
    assert result.stderr.count("If Total Flink") == 1


def test_table_task_executor(flink_conf):
    result = run("-c", str(flink_conf))
    assert result.exit_code == 0
    out = result.stdout
    for label in (
        "Framework Heap",
        "Task Heap",
        "Network",
        "Managed",
        "JVM Metaspace",
        "JVM Overhead",
        "Total Flink Memory",
        "Total Process Memory",
    ):
        assert label in out
    assert "402653174" in out and "1.69 GiB" in out and "█" in out
    assert "-Xmx536870902 -Xms536870902 -XX:MaxDirectMemorySize=268435458 -XX:MaxMetaspaceSize=268435456" in out
    assert "spark.executor.memory=383m" in out and "SPARK_DAEMON_MEMORY=128m" in out
    assert "WARNING: Spark cannot run this configuration" in out
    assert "taskmanager.memory.task.heap.size to at least 450m" in out


def test_the_python_budget_has_a_line_of_its_own_in_all_and_per_worker():
    result = run()  # the shipped configuration: 2 slots, 768 MiB managed memory
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    (budget,) = [line for line in lines if line.startswith("  Python:")]
    assert budget == "  Python: 536.0 MiB = 2 PySpark workers (one per slot) x 268 MiB each (RLIMIT_DATA of each)"
    source = lines[lines.index(budget) + 1]
    assert "PYTHON's share of managed memory (weights OPERATOR:30,PYTHON:70) + task off-heap 0 B" in source
    assert "Managed              → executor off-heap memory     230.0 MiB  spark.memory.offHeap.size=230m" in result.stdout
    assert "Managed              → PySpark workers (PYTHON)     536.0 MiB  RLIMIT_DATA 268m per worker, 2 at once" in result.stdout
    document = json.loads(run("--output", "json").stdout)
    assert (document["pyspark_memory"], document["pyspark_memory_per_worker"]) == (536 * MiB, 268 * MiB)


@pytest.mark.parametrize(
    ("args", "budget", "source"),
    [
        (
            ["-D", "taskmanager.memory.managed.consumer-weights=OPERATOR:1,PYTHON:1", "-D", "taskmanager.numberOfTaskSlots=4"],
            "  Python: 384.0 MiB = 4 PySpark workers (one per slot) x 96 MiB each (RLIMIT_DATA of each)",
            "PYTHON's share of managed memory (weights OPERATOR:1,PYTHON:1)",
        ),
        (
            ["-D", "python.fn-execution.memory.managed=false", "-D", "taskmanager.memory.task.off-heap.size=200m"],
            "  Python: 200.0 MiB = 2 PySpark workers (one per slot) x 100 MiB each (RLIMIT_DATA of each)",
            "no managed memory (python.fn-execution.memory.managed: false) + task off-heap 200.0 MiB",
        ),
        (
            ["-D", "taskmanager.memory.managed.consumer-weights=OPERATOR:70,PYTHON:0"],
            "  Python: no limit: the PySpark workers use the JVM overhead",
            "no managed memory (PYTHON weighs 0 in OPERATOR:70,PYTHON:0)",
        ),
    ],
)
def test_the_python_line_follows_the_weights_the_slots_and_task_off_heap(args, budget, source):
    result = run(*args)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert budget in lines
    assert source in lines[lines.index(budget) + 1]


def test_a_negative_weight_exits_1_with_flinks_message():
    result = run("-D", "taskmanager.memory.managed.consumer-weights=OPERATOR:70,PYTHON:-30")
    assert result.exit_code == 1
    assert "Managed memory weight should not be negative. Configured weight for PYTHON is -30" in result.stderr


def test_table_job_manager_shows_direct_limit_when_enabled(flink_conf):
    result = run("-c", str(flink_conf), "--jobmanager", "-D", "jobmanager.memory.enable-jvm-direct-memory-limit=true")
    assert result.exit_code == 0
    assert "-Xmx1073741824 -Xms1073741824 -XX:MaxDirectMemorySize=134217728 -XX:MaxMetaspaceSize=268435456" in result.stdout
    assert "spark.driver.memory=1024m" in result.stdout
    assert "WARNING" not in result.stdout


def test_table_of_the_shipped_configuration_has_no_warning():
    for args in ([], ["--jobmanager"]):
        result = run(*args)
        assert result.exit_code == 0
        assert "WARNING" not in result.stdout
        assert "limits + overhead" in result.stdout


def test_bad_output_choice_is_a_usage_error():
    assert run("--output", "xml").exit_code == 2
