"""What ``/jobmanager/config`` masks: every key Flink's web UI masks, and every one Spark's redaction hides."""

import pytest

from jobcluster.runtime.rest.flink_bodies import configuration_entries

MASKED = [
    "s3.secret-key",  # Flink
    "metrics.reporter.dghttp.apikey",
    "security.ssl.rest.keystore-password",
    "kubernetes.operator.rest.http-headers",
    "fs.azure.account.key.acct.blob.core.windows.net",
    "spark.hadoop.fs.s3a.access.key",  # Spark's spark.redaction.regex
    "spark.authenticate.secret",
    "spark.hadoop.fs.gs.auth.service.account.json.keyfile.credentials",
    "sasl.JAAS.config",
]


@pytest.mark.parametrize("key", MASKED)
def test_a_sensitive_key_is_masked(key):
    (entry,) = configuration_entries({key: "hunter2"})
    assert entry == {"key": key, "value": "******"}


def test_other_keys_are_shown_as_they_are():
    entries = configuration_entries({"taskmanager.numberOfTaskSlots": "2", "fs.s3a.endpoint": "http://minio:9000"})
    assert entries == [{"key": "fs.s3a.endpoint", "value": "http://minio:9000"}, {"key": "taskmanager.numberOfTaskSlots", "value": "2"}]
