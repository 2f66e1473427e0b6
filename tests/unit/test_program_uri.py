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


def test_split_list_arguments_reads_commas_as_spark_submit_does_and_repeats_as_well():
    from jobcluster.client.program import split_list_arguments

    assert split_list_arguments(["a.jar,local:///opt/b.jar", "c.jar", ",d.jar,"]) == ["a.jar", "local:///opt/b.jar", "c.jar", "d.jar"]
    assert split_list_arguments([]) == []


def test_jars_are_staged_after_the_py_files_and_marked_as_jars_in_the_graph(tmp_path):
    script, helper, connector = tmp_path / "job.py", tmp_path / "helper.py", tmp_path / "connector.jar"
    for path in (script, helper, connector):
        path.write_text("x")
    program = packaged_program(str(script), [], [str(helper)], [str(connector), "local:///opt/jars/clients.jar"])
    config = Configuration({"taskmanager.memory.process.size": "2560m"})
    graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
    assert [(a.name, a.path, a.kind) for a in graph.user_artifacts] == [
        ("helper.py", "helper.py", "py-file"),
        ("connector.jar", "connector.jar", "jar"),
        ("clients.jar", "/opt/jars/clients.jar", "jar"),
    ]
    assert staged_files(program) == [script, helper, connector]


def test_a_missing_jar_is_refused_by_name_before_any_deployment(tmp_path):
    (tmp_path / "job.py").write_text("x")
    program = packaged_program(str(tmp_path / "job.py"), jars=[str(tmp_path / "nope.jar")])
    with pytest.raises(JobGraphError, match=r"jar .*nope\.jar \(--jars\) does not exist"):
        check_program(program)
    program = packaged_program(str(tmp_path / "job.py"), jars=[str(tmp_path)])
    with pytest.raises(JobGraphError, match=r"\(--jars\) is not a regular file"):
        check_program(program)


def test_two_files_that_would_be_staged_under_one_name_are_refused(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for path in (tmp_path / "job.py", tmp_path / "a" / "lib.jar", tmp_path / "b" / "lib.jar"):
        path.write_text("x")
    program = packaged_program(str(tmp_path / "job.py"), jars=[str(tmp_path / "a" / "lib.jar"), str(tmp_path / "b" / "lib.jar")])
    with pytest.raises(JobGraphError, match=r"would both be staged as lib\.jar"):
        check_program(program)


def test_run_refuses_a_missing_jar_with_exit_code_1_and_deploys_nothing(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from jobcluster.cli import run as run_module

    (tmp_path / "job.py").write_text("print(1)\n")
    deployed = []
    monkeypatch.setattr(run_module.PipelineExecutor, "execute", lambda *args: deployed.append(args))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(run_module.run, ["-t", "local", "--jars", "ok.jar,missing.jar", "job.py"])
    assert result.exit_code == 1
    assert "Error: jar ok.jar (--jars) does not exist" in result.stderr
    assert deployed == []


def test_a_fixed_jobid_is_the_graphs_and_one_that_is_not_a_jobid_is_refused():
    program = packaged_program("local:///opt/app/job.py")
    config = Configuration({"taskmanager.memory.process.size": "2560m", "$internal.pipeline.job-id": "AB" * 16})
    spec = task_executor_process_spec_from_config(config)
    assert build_job_graph(program, config, spec).job_id == "ab" * 16, "a job resumed in last-state mode keeps its JobID"
    assert build_job_graph(program, Configuration({"taskmanager.memory.process.size": "2560m"}), spec).job_id != "ab" * 16
    config = Configuration({"taskmanager.memory.process.size": "2560m", "$internal.pipeline.job-id": "wc-1"})
    with pytest.raises(JobGraphError, match=r"'wc-1' is not a JobID"):
        build_job_graph(program, config, spec)
