"""The FlinkJob examples of manifests/examples: valid specs whose configuration Flink's rules accept, and
inline programs that are exactly examples/wordcount.py (so the examples cannot drift from the program)."""

from pathlib import Path

import pytest
import yaml

from jobcluster.controller.job_config import job_configuration
from jobcluster.controller.resource import parse_spec

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "manifests" / "examples").glob("*.yaml"))


def test_there_is_an_example_per_target():
    targets = {yaml.safe_load(p.read_text())["spec"].get("target", "kubernetes-application") for p in EXAMPLES}
    assert targets == {"kubernetes-application", "yarn-application"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_is_a_valid_flinkjob(path, tmp_path):
    document = yaml.safe_load(path.read_text())
    assert (document["apiVersion"], document["kind"]) == ("jobcluster.io/v1alpha1", "FlinkJob")
    spec = parse_spec(document["spec"])
    job_configuration(spec, document["metadata"]["name"], "default", "uid", {}, tmp_path)
    if spec.job.source is not None:
        assert spec.job.source == (REPO / "examples" / "wordcount.py").read_text()
