"""The S3A connector: which Hadoop, which jars, when the client adds them (spark/s3a_connector.py, client/connectors.py).

Ivy itself runs in test_an_ivy_failure_is_named_with_its_words (real Java, Spark's own Ivy jar); fetching from Maven
Central runs in the object-storage end-to-end tests.
"""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from jobcluster.client.connectors import names_s3a, with_s3a_connector
from jobcluster.client.descriptor import PackagedProgram
from jobcluster.config.configuration import Configuration
from jobcluster.errors import JobGraphError
from jobcluster.spark.s3a_connector import (
    KNOWN_VERSIONS,
    ConnectorError,
    build_ivy_module,
    build_ivy_settings,
    connector_jars,
    hadoop_version,
    has_connector,
    versions_for,
)


def _spark(tmp_path: Path, *jars: str) -> Path:
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    for name in jars:
        (home / "jars" / name).write_bytes(b"")
    return home


def test_spark_s_hadoop_is_read_off_its_client_jar(tmp_path):
    home = _spark(tmp_path, "spark-core_2.13-4.3.0.jar", "hadoop-client-api-3.5.0.jar", "hadoop-client-runtime-3.5.0.jar")
    assert hadoop_version(home / "jars") == "3.5.0"
    assert hadoop_version(_spark(tmp_path / "old", "hadoop-common-3.4.1.jar") / "jars") == "3.4.1"
    with pytest.raises(ConnectorError, match="no Hadoop client jar"):
        hadoop_version(_spark(tmp_path / "none", "spark-core_2.13-4.3.0.jar") / "jars")


def test_hadoop_aws_is_recognised_as_maven_and_ivy_name_it():
    assert has_connector([Path("/x/hadoop-aws-3.5.0.jar")])
    assert has_connector([Path("/cache/org.apache.hadoop_hadoop-aws-3.4.1.jar")])
    assert not has_connector([Path("/x/hadoop-client-api-3.5.0.jar"), Path("/x/not-hadoop-aws.jar"), Path("/x/hadoop-aws.txt")])


def test_a_hadoop_release_not_known_here_names_the_way_out():
    assert versions_for("3.5.0").aws_sdk == "2.35.4"
    with pytest.raises(ConnectorError, match=r"Spark's Hadoop is 3\.3\.4: pass hadoop-aws-3\.3\.4\.jar .* with --jars"):
        versions_for("3.3.4")


@pytest.mark.parametrize("hadoop", sorted(KNOWN_VERSIONS))
def test_the_ivy_module_asks_for_the_connector_and_not_for_what_spark_carries(hadoop):
    versions = KNOWN_VERSIONS[hadoop]
    root = ElementTree.fromstring(build_ivy_module(versions))
    deps = {d.get("name"): d for d in root.iter("dependency")}
    assert deps["hadoop-aws"].get("rev") == hadoop and deps["hadoop-aws"].get("transitive") == "false"
    assert deps["s3"].get("rev") == deps["s3-transfer-manager"].get("rev") == versions.aws_sdk
    assert deps["s3"].get("transitive") == "true", "the SDK's own modules follow"
    assert ("analyticsaccelerator-s3" in deps) == (versions.analytics_accelerator is not None)
    assert "bundle" not in deps, "the 690 MB bundle is never fetched"
    assert {e.get("org") for e in root.iter("exclude")} >= {"io.netty", "org.slf4j"}


def test_the_ivy_settings_search_the_given_repositories_first_then_maven_central():
    root = ElementTree.fromstring(build_ivy_settings(["https://mirror.example/maven", "https://other.example/m2/"]))
    roots = [r.get("root") for r in root.iter("ibiblio")]
    assert roots == ["https://mirror.example/maven/", "https://other.example/m2/", "https://repo1.maven.org/maven2/"]


def test_an_ivy_failure_is_named_with_its_words(tmp_path):
    """A mirror that refuses connections, as the only repository (spark.jars.ivySettings)."""
    settings = tmp_path / "ivysettings.xml"
    settings.write_text(build_ivy_settings().replace("https://repo1.maven.org/maven2/", "http://127.0.0.1:9/"))
    with pytest.raises(ConnectorError, match=r"(?s)spark\.jars\.repositories.*--jars.*Ivy said:\n.*hadoop-aws"):
        connector_jars("3.5.0", cache=tmp_path / "cache", ivy_settings=str(settings))
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["ivy-cache"], "nothing half-resolved is kept"
    with pytest.raises(ConnectorError, match=r"spark.jars.ivySettings names .*/missing.xml, which is not a file"):
        connector_jars("3.5.0", cache=tmp_path / "cache", ivy_settings=str(tmp_path / "missing.xml"))


def _cached(tmp_path: Path, hadoop: str = "3.5.0") -> Path:
    """A ``$JOBCLUSTER_CACHE`` with a complete entry for ``hadoop``, as a resolution leaves it."""
    digest = hashlib.sha256(build_ivy_module(KNOWN_VERSIONS[hadoop]).encode()).hexdigest()[:12]
    entry = tmp_path / "s3a-connector" / f"hadoop-{hadoop}-{digest}"
    entry.mkdir(parents=True)
    for name in (f"org.apache.hadoop_hadoop-aws-{hadoop}.jar", "software.amazon.awssdk_s3-2.35.4.jar"):
        (entry / name).write_bytes(b"")
    (entry / ".complete").write_text("2.35.4")
    return tmp_path


S3A_CONFIG = Configuration({"execution.checkpointing.dir": "s3a://bucket/checkpoints"})


def test_a_job_names_s3a_in_its_arguments_or_its_configuration():
    assert names_s3a(PackagedProgram(Path("job.py"), ("--input", "s3a://b/in")), Configuration())
    assert names_s3a(PackagedProgram(Path("job.py")), S3A_CONFIG)
    assert not names_s3a(PackagedProgram(Path("job.py"), ("--input", "hdfs:///in", "s3://b/x")), Configuration({"a": "b"}))


def test_the_connector_is_added_once_and_only_where_the_cluster_runs_the_client_s_spark(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_HOME", str(_spark(tmp_path, "hadoop-client-api-3.5.0.jar")))
    monkeypatch.setenv("JOBCLUSTER_CACHE", str(_cached(tmp_path)))
    program = PackagedProgram(Path("job.py"), jars=(Path("/mine/kafka.jar"),))

    added = with_s3a_connector(program, S3A_CONFIG, runs_client_spark=True)
    assert added.jars[0] == Path("/mine/kafka.jar") and [j.name for j in added.jars[1:]] == [
        "org.apache.hadoop_hadoop-aws-3.5.0.jar",
        "software.amazon.awssdk_s3-2.35.4.jar",
    ]
    assert with_s3a_connector(added, S3A_CONFIG, runs_client_spark=True) == added, "hadoop-aws among the jars: nothing more"
    assert with_s3a_connector(program, S3A_CONFIG, runs_client_spark=False) == program, "the image's Spark"
    assert with_s3a_connector(program, Configuration(), runs_client_spark=True) == program, "no s3a:// named"
    never = Configuration({**S3A_CONFIG.to_dict(), "jobcluster.s3a.connector": "never"})
    assert with_s3a_connector(program, never, runs_client_spark=True) == program
    always = Configuration({"jobcluster.s3a.connector": "always"})
    assert len(with_s3a_connector(program, always, runs_client_spark=True).jars) == 3


def test_spark_with_hadoop_aws_of_its_own_gets_nothing_added(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_HOME", str(_spark(tmp_path, "hadoop-client-api-3.5.0.jar", "hadoop-aws-3.5.0.jar")))
    program = PackagedProgram(Path("job.py"))
    assert with_s3a_connector(program, S3A_CONFIG, runs_client_spark=True) == program


def test_a_connector_that_cannot_be_had_refuses_the_job_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_HOME", str(_spark(tmp_path, "hadoop-client-api-3.3.4.jar")))
    with pytest.raises(JobGraphError, match=r"the S3A connector cannot be added \(jobcluster.s3a.connector: auto\): .*--jars"):
        with_s3a_connector(PackagedProgram(Path("job.py")), S3A_CONFIG, runs_client_spark=True)
