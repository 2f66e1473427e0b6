"""The typed FlinkJob status: what it refuses, what it keeps, and the CRD schema made from it."""

import pydantic
import pytest
import yaml

from jobcluster.controller.status_model import FlinkJobStatus, checked_patch, crd_status_schema, undeclared
from tests.support.reference_docs import CRD

WRITTEN = {
    "lifecycleState": "STABLE",
    "observedGeneration": 3,
    "jobStatus": {
        "jobId": "f" * 32,
        "state": "RUNNING",
        "savepointInfo": {"lastSavepoint": {"location": "hdfs:///sp/1", "triggerType": "MANUAL", "triggerNonce": 2}, "trigger": None},
        "checkpointInfo": {"queries": [{"name": "counts", "committedBatchId": 41}]},
    },
    "conditions": [{"type": "Ready", "status": "True", "reason": "Stable", "lastTransitionTime": "2026-11-28T12:00:00Z"}],
    "clusterAccess": {"core-site.xml": "<configuration/>", "yarn-site.xml": None},
    "deployRetry": None,
}


def test_a_status_the_operator_writes_is_declared_whole_nulls_included():
    checked_patch(WRITTEN)
    assert undeclared(WRITTEN) == []


@pytest.mark.parametrize(
    "patch",
    [
        {"lifecycleState": "RUNNING"},  # a job state, not a lifecycle state
        {"observedGeneration": "three"},
        {"jobStatus": {"savepointInfo": {"savepointHistory": {"location": "x"}}}},  # a list, not one savepoint
        {"conditions": [{"type": "Ready", "status": "Yes"}]},
    ],
)
def test_a_field_of_the_wrong_type_is_refused_before_it_is_written(patch):
    with pytest.raises(pydantic.ValidationError):
        checked_patch(patch)


def test_fields_no_model_declares_are_kept_and_named():
    """A status of another operator version reads back whole; the unit tests name what this one would write undeclared."""
    status = {**WRITTEN, "futureField": {"a": 1}, "jobStatus": {**WRITTEN["jobStatus"], "savepointInfo": {"lastSavepoint": {"size": 7}}}}
    assert sorted(undeclared(status)) == ["futureField", "jobStatus.savepointInfo.lastSavepoint.size"]
    dumped = FlinkJobStatus.model_validate(status).model_dump(by_alias=True, exclude_none=True)
    assert dumped["futureField"] == {"a": 1} and dumped["jobStatus"]["savepointInfo"]["lastSavepoint"] == {"size": 7}


def test_the_crd_status_schema_is_structural_and_is_the_models():
    """Structural (what the API server requires of a CRD): a type on every node, no references, no defaults (a
    default in status would be written by the API server), and the manifest holds exactly this schema."""
    schema = crd_status_schema()

    def nodes(node):
        yield node
        for child in (node.get("properties") or {}).values():
            yield from nodes(child)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                yield from nodes(node[key])

    for node in nodes(schema):
        assert "type" in node and not {"$ref", "anyOf", "default", "title"} & set(node), node
    crd = yaml.safe_load(CRD.read_text())
    assert crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] == schema
    assert schema["properties"]["conditions"]["items"]["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    assert {"deployedSpec", "failureReason", "upgrade", "ttlExpired", "deploySeconds", "deployedTarget"} <= set(schema["properties"])
