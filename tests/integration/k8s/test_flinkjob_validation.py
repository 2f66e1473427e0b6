"""`kubectl apply` of an invalid FlinkJob is refused by the real API server, with the CRD's message (its CEL rules).

Server-side dry runs: the API server validates as for a real create (schema,
CEL rules) but stores nothing, so no operator is needed and each case takes a
fraction of a second.  The messages are the operator's own (resource.py), which
tests/unit/test_flinkjob_rules.py holds the CRD to.  The last test shows that
a FlinkJob stored before the CRD had its rules stays writable and deletable.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml

from jobcluster.controller import resource
from tests.integration.k8s.waiting import wait_for

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


def without_rules(schema: object) -> object:
    """``schema`` with every x-kubernetes-validations removed: the CRD as it was before it had rules."""
    if isinstance(schema, dict):
        return {key: without_rules(value) for key, value in schema.items() if key != "x-kubernetes-validations"}
    if isinstance(schema, list):
        return [without_rules(item) for item in schema]
    return schema


def test_a_flinkjob_stored_before_the_rules_can_still_be_written_and_deleted(k8s_cluster, tmp_path):
    # a copy of the CRD in a group of its own, so that the FlinkJob CRD the other tests use is never without its rules
    crd = yaml.safe_load(CRD.read_text())
    group = f"v{uuid.uuid4().hex[:8]}.jobcluster.test"
    crd["spec"]["group"], crd["metadata"]["name"] = group, f"flinkjobs.{group}"
    old, new = tmp_path / "old-crd.yaml", tmp_path / "new-crd.yaml"
    old.write_text(yaml.safe_dump(without_rules(crd)))
    new.write_text(yaml.safe_dump(crd))
    name = "a-name-longer-than-the-45-characters-of-a-cluster-id"
    stored = tmp_path / "flinkjob.yaml"
    stored.write_text(
        yaml.safe_dump(
            {
                "apiVersion": f"{group}/{resource.VERSION}",
                "kind": resource.KIND,
                "metadata": {"name": name, "namespace": "default", "finalizers": ["jobcluster.test/hold"]},
                "spec": {"job": {"program": "/opt/app/job.py"}},
            }
        )
    )
    resource_name = f"flinkjobs.{group}/{name}"
    try:
        k8s_cluster.kubectl("apply", "-f", str(old))
        # kubectl wait errors at once, rather than waiting, while the new CRD's status has no conditions yet
        established = ("wait", "--for=condition=Established", f"crd/flinkjobs.{group}", "--timeout=30s")
        wait_for(lambda: k8s_cluster.kubectl(*established, check=False).returncode == 0, timeout=60, interval=1, what="CRD established")
        k8s_cluster.kubectl("apply", "-f", str(stored))
        k8s_cluster.kubectl("apply", "-f", str(new))
        # the operator can still say why it fails, and its finalizer can still be removed
        status = {"status": {"lifecycleState": "FAILED", "error": "metadata.name ... is too long"}}
        k8s_cluster.kubectl("patch", "-n", "default", resource_name, "--subresource=status", "--type=merge", "-p", json.dumps(status))
        k8s_cluster.kubectl("delete", "-n", "default", resource_name, "--wait=false")
        k8s_cluster.kubectl("patch", "-n", "default", resource_name, "--type=merge", "-p", '{"metadata": {"finalizers": null}}')
        gone = k8s_cluster.kubectl("get", "-n", "default", resource_name, check=False)
        assert gone.returncode != 0 and "NotFound" in gone.stderr

        # a new one with such a name is refused, once the API server serves the new CRD's rules (a CRD's update reaches
        # its handler a moment after the update is stored: one created before is let go again)
        def refused() -> str | None:
            applied = k8s_cluster.kubectl("apply", "-f", str(stored), check=False)
            if applied.returncode == 0:
                k8s_cluster.kubectl("patch", "-n", "default", resource_name, "--type=merge", "-p", '{"metadata": {"finalizers": null}}')
                k8s_cluster.kubectl("delete", "-n", "default", resource_name, "--ignore-not-found")
                return None
            return " ".join(applied.stderr.split())

        assert resource.NAME_LENGTH_RULE in str(wait_for(refused, timeout=60, interval=1, what="the new CRD's rules in effect"))
    finally:
        k8s_cluster.kubectl(
            "patch", "-n", "default", resource_name, "--type=merge", "-p", '{"metadata": {"finalizers": null}}', check=False
        )
        k8s_cluster.kubectl("delete", "crd", f"flinkjobs.{group}", "--ignore-not-found", "--wait=false")
