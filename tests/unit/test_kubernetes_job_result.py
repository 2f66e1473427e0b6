"""The job result a finished cluster leaves for its owner: only with an owner, owned without control, Flink's job states."""

from __future__ import annotations

import datetime

from jobcluster.backends.kubernetes.job_result import build_job_result_config_map, parse_job_result

NOW = datetime.datetime(2026, 11, 23, 12, 0, 5, tzinfo=datetime.UTC)


def deployment(owners: list[dict]) -> dict:
    metadata = {"name": "wordcount", "namespace": "analytics", "labels": {"jobcluster.io/job-id": "ab" * 16}}
    if owners:
        metadata["ownerReferences"] = owners
    return {"metadata": metadata}


def test_without_an_owner_nothing_is_left_behind():
    assert build_job_result_config_map(deployment([]), "SUCCEEDED", None, NOW) is None


def test_the_result_is_owned_by_the_deployments_owner_and_reads_back():
    owner = {"apiVersion": "jobcluster.io/v1alpha1", "kind": "FlinkJob", "name": "wordcount", "uid": "u-1", "controller": True}
    config_map = build_job_result_config_map(deployment([owner]), "CANCELED", "job ab CANCELED", NOW)
    assert config_map is not None
    assert config_map["metadata"]["name"] == "wordcount-job-result"
    assert config_map["metadata"]["namespace"] == "analytics"
    assert config_map["metadata"]["ownerReferences"] == [
        {"apiVersion": "jobcluster.io/v1alpha1", "kind": "FlinkJob", "name": "wordcount", "uid": "u-1"}
    ]
    record = parse_job_result(config_map)
    assert record is not None
    assert (record.cluster_id, record.job_id, record.state, record.end_time) == ("wordcount", "ab" * 16, "CANCELED", "2026-11-23T12:00:05Z")
    assert record.diagnostics == "job ab CANCELED"


def test_application_statuses_map_to_flinks_job_states():
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u"}
    states = {}
    for status in ("SUCCEEDED", "FAILED", "CANCELED", "UNKNOWN"):
        config_map = build_job_result_config_map(deployment([owner]), status, None, NOW)
        assert config_map is not None
        record = parse_job_result(config_map)
        assert record is not None
        states[status] = record.state
    assert states == {"SUCCEEDED": "FINISHED", "FAILED": "FAILED", "CANCELED": "CANCELED", "UNKNOWN": "UNKNOWN"}
    assert parse_job_result({"data": {}}) is None
