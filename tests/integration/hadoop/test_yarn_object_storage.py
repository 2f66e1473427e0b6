"""Object storage on ``yarn-per-job``: WordCount from and to ``s3a://``, against a real S3 API (tests/infra/s3).

The client adds Hadoop's S3A connector to the job's jars (pyspark carries no
hadoop-aws) and stages it with the job; the ApplicationMaster's driver and
the TaskExecutors' executors read and write the bucket with the credentials
given to their containers' environment (Flink's ``containerized.*.env.*``).
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from tests.infra.s3.server import S3Server
from tests.integration.hadoop.test_wordcount_hdfs import CORPUS, count_words
from tests.integration.hadoop.test_yarn_client import hadoop_conf, paths, yarn  # noqa: F401 - fixtures
from tests.integration.hadoop.test_yarn_job_cluster import WORDCOUNT, application_id_in, cli, cli_env, yarn_clean  # noqa: F401

pytestmark = [pytest.mark.hadoop, pytest.mark.s3]


def s3_word_counts(server: S3Server, bucket: str, prefix: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for key in server.keys(bucket, f"{prefix}/"):
        if key.rsplit("/", 1)[-1].startswith("part-"):
            for line in server.read_text(bucket, key).splitlines():
                word, count = line.rsplit("\t", 1)
                assert word not in counts, f"{word!r} twice in the output"
                counts[word] = int(count)
    return counts


def test_wordcount_from_and_to_s3(cli_env: dict[str, str], s3_server: S3Server, yarn_clean: None) -> None:  # noqa: F811
    bucket = f"yarn-{uuid.uuid4().hex[:8]}"
    root = s3_server.create_bucket(bucket)
    expected: Counter[str] = Counter()
    for name, data in CORPUS.items():
        s3_server.put_text(bucket, f"corpus/{name}", data)
        expected += count_words(data)
    settings = [item for key, value in s3_server.hadoop_options().items() for item in ("-D", f"{key}={value}")]
    for key, value in S3Server.credentials_env().items():
        settings += ["-D", f"containerized.master.env.{key}={value}", "-D", f"containerized.taskmanager.env.{key}={value}"]

    result = cli(
        cli_env, "run", "-t", "yarn-per-job", "-p", "2", *settings, str(WORDCOUNT), "--input", f"{root}/corpus", "--output", f"{root}/wc"
    )
    assert result.returncode == 0, result.stderr
    application = application_id_in(result.stderr)
    assert f"YARN application {application} FINISHED with final status SUCCEEDED" in result.stderr, result.stderr
    assert s3_word_counts(s3_server, bucket, "wc") == expected
