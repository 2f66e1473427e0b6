"""JobGraph: JSON round trip and validation when read back."""

from __future__ import annotations

import json

import pytest

from jobcluster.errors import JobGraphError
from jobcluster.jobgraph.model import (
    ExecutionConfig,
    JobGraph,
    JobVertex,
    ResourceProfileSpec,
    RestartStrategy,
    UserArtifact,
    new_job_id,
    read_job_graph,
    write_job_graph,
)


def graph(**overrides) -> JobGraph:
    fields = {
        "job_id": new_job_id(),
        "job_name": "wc",
        "vertices": [
            JobVertex(id=new_job_id(), name="PySpark", program="wc.py", program_args=["--input", "x y"], parallelism=4, max_parallelism=128)
        ],
        "slot_profile": ResourceProfileSpec(cpu_cores=1.0, task_heap=100, task_off_heap=0, managed=50, network=10),
        "user_artifacts": [UserArtifact(name="lib.zip", path="lib.zip")],
        "execution_config": ExecutionConfig(restart_strategy=RestartStrategy(type="fixed-delay", attempts=3, delay_seconds=2.5)),
    }
    fields.update(overrides)
    return JobGraph(**fields)


def test_round_trip(tmp_path):
    original = graph()
    path = tmp_path / "jobgraph.json"
    write_job_graph(original, path)
    assert read_job_graph(path) == original
    assert json.loads(path.read_text())["version"] == 1


def test_required_slots_per_sharing_group():
    def v(p: int, group: str) -> JobVertex:
        return JobVertex(id=new_job_id(), name="v", program="p.py", parallelism=p, max_parallelism=128, slot_sharing_group=group)

    g = graph(vertices=[v(4, "default"), v(2, "default"), v(3, "other")])
    assert g.required_slots() == 7
    assert g.parallelism == 4


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(version=2), "version"),
        (lambda d: d.update(job_id="not-hex"), "JobID"),
        (lambda d: d["vertices"][0].update(parallelism=0), "parallelism"),
        (lambda d: d["vertices"][0].update(max_parallelism=2), "max parallelism"),
        (lambda d: d.update(unexpected=1), "unexpected"),
        (lambda d: d.update(vertices=[]), "vertices"),
    ],
)
def test_invalid_files_are_refused_with_the_reason(tmp_path, mutate, message):
    data = json.loads(graph().model_dump_json())
    mutate(data)
    path = tmp_path / "jobgraph.json"
    path.write_text(json.dumps(data))
    with pytest.raises(JobGraphError, match=message):
        read_job_graph(path)


def test_unreadable_file(tmp_path):
    path = tmp_path / "jobgraph.json"
    path.write_text("{not json")
    with pytest.raises(JobGraphError, match="cannot read"):
        read_job_graph(path)
