"""`kubectl apply` of an invalid FlinkJob is refused by the real API server, with the CRD's message (its CEL rules).

Server-side dry runs: the API server validates as for a real create (schema,
CEL rules) but stores nothing, so no operator is needed and each case takes a
fraction of a second.  The messages are the operator's own (resource.py), which
tests/unit/test_flinkjob_rules.py holds the CRD to.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jobcluster.controller import resource

pytestmark = pytest.mark.k8s

REPO = Path(__file__).resolve().parents[3]
CRD = REPO / "manifests" / "crd" / "flinkjobs.jobcluster.io.yaml"
PROGRAM = {"program": "local:///opt/jobcluster/examples/wordcount.py"}


@pytest.fixture(scope="module")
def apply(k8s_cluster, tmp_path_factory):
    """``apply(name, spec)``: the CompletedProcess of `kubectl apply --dry-run=server` of that FlinkJob."""
    k8s_cluster.kubectl("apply", "-f", str(CRD))
    k8s_cluster.kubectl("wait", "--for=condition=Established", "crd/flinkjobs.jobcluster.io", "--timeout=30s")
    work = tmp_path_factory.mktemp("flinkjobs")

    def run(name: str, spec: dict):
        manifest = work / f"{name[:60]}.yaml"
        body = {"apiVersion": resource.API_VERSION, "kind": resource.KIND, "metadata": {"name": name}, "spec": spec}
        manifest.write_text(yaml.safe_dump(body))
        return k8s_cluster.kubectl("apply", "--dry-run=server", "-n", "default", "-f", str(manifest), check=False)

    return run


def test_a_valid_flinkjob_is_accepted(apply):
    result = apply("wordcount", {"job": PROGRAM, "target": "yarn-per-job", "hadoopConfigMap": "hadoop-conf"})
    assert result.returncode == 0, result.stderr
    assert "created (server dry run)" in result.stdout
    assert apply("a" * 45, {"job": {"source": "print(1)\n"}, "hadoopConfigMap": "kept-from-yarn"}).returncode == 0


@pytest.mark.parametrize(
    ("name", "spec", "where", "message"),
    [
        ("a" * 46, {"job": PROGRAM}, "metadata.name", f"metadata.name '{'a' * 46}' is too long; {resource.NAME_LENGTH_RULE}"),
        (
            "etl.daily",
            {"job": PROGRAM},
            "metadata.name",
            f"metadata.name 'etl.daily' is not a valid cluster id; {resource.NAME_FORMAT_RULE}",
        ),
        ("1st-job", {"job": PROGRAM}, "metadata.name", resource.NAME_FORMAT_RULE),
        ("no-program", {"job": {"parallelism": 2}}, "spec.job", resource.ONE_PROGRAM_RULE),
        ("both", {"job": {**PROGRAM, "source": "print(1)\n"}}, "spec.job", resource.ONE_PROGRAM_RULE),
        ("path", {"job": {"program": "/opt/app/job.py"}}, "spec.job.program", resource.PROGRAM_URI_RULE),
        ("s3", {"job": {**PROGRAM, "pyFiles": ["s3://bucket/lib.zip"]}}, "spec.job.pyFiles[0]", resource.PROGRAM_URI_RULE),
        ("yarn", {"job": PROGRAM, "target": "yarn-per-job"}, "spec.hadoopConfigMap: Required value", resource.HADOOP_CONFIG_MAP_RULE),
        (
            "zero-cpu",
            {"job": PROGRAM, "taskManager": {"resource": {"cpu": 0}}},
            "spec.taskManager.resource.cpu",
            "should be greater than 0",
        ),
        ("p0", {"job": {**PROGRAM, "parallelism": 0}}, "spec.job.parallelism", "should be greater than or equal to 1"),
    ],
    ids=["long-name", "dotted-name", "digit-name", "no-program", "both", "path", "s3", "yarn", "zero-cpu", "parallelism-0"],
)
def test_an_invalid_flinkjob_is_refused_with_what_to_fix(apply, name, spec, where, message):
    result = apply(name, spec)
    assert result.returncode != 0, result.stdout
    error = " ".join(result.stderr.split())
    assert f'The FlinkJob "{name}" is invalid' in error
    assert where in error and message in error, error
