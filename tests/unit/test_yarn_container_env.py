"""The YARN container's environment as the ApplicationMaster reads it, and the TaskExecutor's launch line."""

import json
import os
import subprocess
import sys

import pytest

from jobcluster.backends.yarn.container_env import (
    ENV_CONTAINER_PYTHON,
    ENV_LOCAL_RESOURCES,
    ENV_STAGING_BASE,
    ContainerEnvironment,
    application_id_of,
    application_master_command,
    decode_local_resources,
    encode_local_resources,
    launch_command,
    task_executor_argv,
)
from jobcluster.backends.yarn.driver import task_executor_environment
from jobcluster.backends.yarn.errors import YarnDeploymentError
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor, LocalResourceType, LocalResourceVisibility
from jobcluster.config.configuration import Configuration
from jobcluster.runtime.entrypoint.layout import ENV_BIND_HOST, ENV_CLUSTER_DIR, ENV_LOG_DIR

FILES = (
    LocalResourceDescriptor("program.py", "hdfs://nn:8020/user/a/.jobcluster/application_1_0001/program.py", 12, 1700000000000),
    LocalResourceDescriptor(
        "environment", "hdfs://nn:8020/user/a/.jobcluster/env/abc.tar.gz", 99, 1, LocalResourceType.ARCHIVE, LocalResourceVisibility.PUBLIC
    ),
)

ENV = {
    "CONTAINER_ID": "container_e17_1700000000000_0003_01_000001",
    "NM_HOST": "node1.example.com",
    "LOCAL_DIRS": "/d1/usercache/a/appcache/application_1700000000000_0003,/d2/usercache/a/appcache/application_1700000000000_0003",
    "LOG_DIRS": "/logs/application_1700000000000_0003/container_e17_1700000000000_0003_01_000001",
    "HADOOP_CONF_DIR": "/etc/hadoop/conf",
    ENV_LOCAL_RESOURCES: encode_local_resources(FILES),
}


def test_reads_what_the_nodemanager_and_the_client_set():
    env = ContainerEnvironment.from_environ(ENV)

    assert env.application_id == "application_1700000000000_0003"
    assert env.node_host == "node1.example.com"
    assert len(env.local_dirs) == 2 and env.local_dirs[1].startswith("/d2/")
    assert env.log_dir == ENV["LOG_DIRS"]
    assert env.hadoop_conf_dir == "/etc/hadoop/conf"
    assert env.local_resources == FILES
    assert env.staging_base is None and env.python is None


def test_reads_the_staging_base_and_the_containers_python_the_client_chose():
    env = ContainerEnvironment.from_environ({**ENV, ENV_STAGING_BASE: "/user/a", ENV_CONTAINER_PYTHON: "./environment/bin/python"})
    assert (env.staging_base, env.python) == ("/user/a", "./environment/bin/python")


@pytest.mark.parametrize("missing", ["CONTAINER_ID", "NM_HOST", "LOCAL_DIRS", "LOG_DIRS"])
def test_outside_a_container_the_missing_variable_is_named(missing):
    with pytest.raises(YarnDeploymentError, match=f"{missing} is not set"):
        ContainerEnvironment.from_environ({k: v for k, v in ENV.items() if k != missing})


def test_the_local_resources_survive_the_nodemanagers_unescaped_export():
    value = encode_local_resources(FILES)
    # The launch script holds `export NAME="value"`: no character of the value may end or expand the quotes.
    assert not set(value) & set('"$`\\')
    assert decode_local_resources(value) == list(FILES)
    with pytest.raises(YarnDeploymentError, match=ENV_LOCAL_RESOURCES):
        decode_local_resources("not base64 json!")


@pytest.mark.parametrize(
    ("container_id", "application_id"),
    [
        ("container_1700000000000_0003_01_000002", "application_1700000000000_0003"),
        ("container_e17_1700000000000_12345_02_000001", "application_1700000000000_12345"),
    ],
)
def test_application_id_of_a_container_id(container_id, application_id):
    assert application_id_of(container_id) == application_id


def test_a_non_container_id_is_refused():
    with pytest.raises(YarnDeploymentError, match="not a YARN container id"):
        application_id_of("application_1_0001")


def test_every_word_arrives_as_given_through_the_nodemanagers_launch_script(tmp_path):
    argv = [sys.executable, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))", "a b"]
    configs = {"taskmanager.cpu.cores": "2.0", "odd": """it's "$HOME" `id` \\n; exit 1"""}
    line = launch_command(argv, configs, "taskmanager")
    assert line.endswith(" 1><LOG_DIR>/taskmanager.out 2><LOG_DIR>/taskmanager.err")

    # What ContainerLaunch writes: the line unescaped in double quotes, <LOG_DIR> expanded.
    script = tmp_path / "launch_container.sh"
    script.write_text('exec /bin/bash -c "' + line.replace("<LOG_DIR>", str(tmp_path)) + '"\n')
    subprocess.run(["/bin/bash", str(script)], check=True, env={"HOME": "/home/x", "PATH": os.environ["PATH"]})

    assert json.loads((tmp_path / "taskmanager.out").read_text()) == [
        "a b",
        "-D",
        "taskmanager.cpu.cores=2.0",
        "-D",
        configs["odd"].join(("odd=", "")),
    ]
    assert (tmp_path / "taskmanager.err").read_text() == ""


def test_the_application_master_binds_to_the_node_and_keeps_its_files_in_the_container(tmp_path):
    work, logs = tmp_path / "appcache" / "container_1", tmp_path / "logs"
    work.mkdir(parents=True)
    logs.mkdir()
    probe = "import json, os, sys; print(json.dumps([sys.argv[1:]] + [os.environ[k] for k in sys.argv[1:]]))"
    keys = [ENV_BIND_HOST, ENV_CLUSTER_DIR, ENV_LOG_DIR]
    line = application_master_command([sys.executable, "-c", probe, *keys])

    script = tmp_path / "launch_container.sh"
    script.write_text(f'cd {work}\nexec /bin/bash -c "' + line.replace("<LOG_DIR>", str(logs)) + '"\n')
    env = {"NM_HOST": "node1.example.com", "PATH": os.environ["PATH"]}
    subprocess.run(["/bin/bash", str(script)], check=True, env=env)

    assert json.loads((logs / "jobmanager.out").read_text()) == [keys, "node1.example.com", str(work), str(logs)]


def test_the_task_executor_runs_the_containers_python_not_the_application_masters():
    command = ["/data/nm/appcache/application_1_0001/container_1_0001_01_000001/environment/bin/python", "-m", "x"]
    assert task_executor_argv(command, "./environment/bin/python") == ["./environment/bin/python", "-m", "x"]
    assert task_executor_argv(command, None) == command


def test_a_task_executor_gets_the_users_containerized_environment_below_the_hadoop_configuration():
    config = Configuration(
        {
            "containerized.taskmanager.env.JAVA_HOME": "/usr/lib/jvm/java-25",
            "containerized.taskmanager.env.HADOOP_CONF_DIR": "/elsewhere",
            "containerized.master.env.ONLY_THE_AM": "1",
        }
    )
    environment = task_executor_environment(config, {"HADOOP_CONF_DIR": "/etc/hadoop", "PATH": "/bin"})
    assert environment == {"JAVA_HOME": "/usr/lib/jvm/java-25", "HADOOP_CONF_DIR": "/etc/hadoop"}
    assert task_executor_environment(Configuration(), {}) == {}


@pytest.mark.parametrize(("environment", "arenas"), [({}, "4"), ({"MALLOC_ARENA_MAX": ""}, "4"), ({"MALLOC_ARENA_MAX": "8"}, "8")])
def test_every_process_of_a_container_gets_few_malloc_arenas_unless_the_container_says_otherwise(tmp_path, environment, arenas):
    """YARN's admin-env may hand the container an empty MALLOC_ARENA_MAX (the NodeManager's own, unset): 4 then."""
    probe = "import os; print(os.environ['MALLOC_ARENA_MAX'])"
    line = application_master_command([sys.executable, "-c", probe])
    script = tmp_path / "launch_container.sh"
    script.write_text('exec /bin/bash -c "' + line.replace("<LOG_DIR>", str(tmp_path)) + '"\n')
    subprocess.run(["/bin/bash", str(script)], check=True, env={"NM_HOST": "n1", "PATH": os.environ["PATH"], **environment})
    assert (tmp_path / "jobmanager.out").read_text().strip() == arenas
