"""Program and --py-files arguments: plain paths and file:// are staged, local:/// is provided by the cluster's image."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobcluster.client.program import build_job_graph, check_program, packaged_program, parse_program_uri, staged_files
from jobcluster.config.configuration import Configuration
from jobcluster.errors import JobGraphError
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("job.py", (Path("job.py"), False)),
        ("/abs/job.py", (Path("/abs/job.py"), False)),
        ("file:///abs/job.py", (Path("/abs/job.py"), False)),
        ("local:///opt/app/job.py", (Path("/opt/app/job.py"), True)),
    ],
)
def test_parse_program_uri(text, expected):
    assert parse_program_uri(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("local://opt/app/job.py", "three slashes"),
        ("local:job.py", "absolute path"),
        ("hdfs:///jobs/job.py", "hdfs:// scheme is not supported"),
        ("https://example.com/job.py", "https:// scheme is not supported"),
    ],
)
def test_unsupported_uris_are_refused_with_the_fix(text, message):
    with pytest.raises(JobGraphError, match=message):
        parse_program_uri(text)


def test_provided_files_are_in_the_graph_by_absolute_path_and_never_staged(tmp_path):
    helper = tmp_path / "helper.py"
    helper.write_text("X = 1\n")
    program = packaged_program("local:///opt/app/job.py", ["--n", "3"], [str(helper), "local:///opt/app/lib.zip"])
    check_program(program)  # the provided files need not exist on the client
    config = Configuration({"taskmanager.memory.process.size": "2560m"})
    graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
    vertex = graph.vertices[0]
    assert vertex.program == "/opt/app/job.py"
    assert vertex.program_args == ["--n", "3"]
    assert [(a.name, a.path) for a in graph.user_artifacts] == [("helper.py", "helper.py"), ("lib.zip", "/opt/app/lib.zip")]
    assert staged_files(program) == [helper]
    assert graph.job_name == "job"


def test_a_missing_client_file_is_still_refused(tmp_path):
    program = packaged_program("local:///opt/app/job.py", py_files=[str(tmp_path / "missing.py")])
    with pytest.raises(JobGraphError, match=r"missing\.py does not exist"):
        check_program(program)


def test_local_target_needs_provided_files_on_this_machine(tmp_path):
    from jobcluster.backends.local.descriptor import _check_provided
    from jobcluster.errors import DeploymentError

    present = tmp_path / "job.py"
    present.write_text("print(1)\n")
    _check_provided(packaged_program(f"local://{present}"))
    with pytest.raises(DeploymentError, match=r"/nowhere/job.py \(given as local:///nowhere/job.py\) is not a file on this machine"):
        _check_provided(packaged_program("local:///nowhere/job.py"))
