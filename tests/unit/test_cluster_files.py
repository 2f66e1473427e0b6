"""The files every target stages for a job cluster, defined once (backends/cluster_files.py)."""

from __future__ import annotations

import yaml

from jobcluster.backends.cluster_files import cluster_files
from jobcluster.client.program import packaged_program
from jobcluster.config.configuration import Configuration
from jobcluster.jobgraph.model import JobGraph, read_job_graph
from tests.unit.test_jobgraph import graph as job_graph


def test_the_program_jobgraph_configuration_and_secret_under_the_entrypoints_names(tmp_path):
    (tmp_path / "wc.py").write_text("print('hello')\n")
    (tmp_path / "lib.zip").write_bytes(b"PK")
    program = packaged_program(str(tmp_path / "wc.py"), [], [str(tmp_path / "lib.zip")])
    graph: JobGraph = job_graph()
    config = Configuration({"parallelism.default": "4"})

    files = cluster_files(graph, program, config, "s3cr3t")

    assert [f.name for f in files] == ["artifacts/wc.py", "artifacts/lib.zip", "jobgraph.json", "jobcluster.yaml", "cluster-secret"]
    assert [f.name for f in files if f.private] == ["cluster-secret"]
    by_name = {f.name: f for f in files}
    assert by_name["artifacts/wc.py"].source == tmp_path / "wc.py", "a program file is staged from where it is, not copied into memory"
    assert by_name["cluster-secret"].read() == b"s3cr3t"
    assert yaml.safe_load(by_name["jobcluster.yaml"].read()) == {"parallelism.default": "4"}
    (tmp_path / "jobgraph.json").write_bytes(by_name["jobgraph.json"].read())
    assert read_job_graph(tmp_path / "jobgraph.json") == graph
