"""The YARN quick start (docs/try/yarn.md), run as it is written, against the Hadoop test cluster.

Its commands run with bash from the repository root, ``jobcluster`` (and pyspark's ``spark-class``)
first on PATH and ``HADOOP_CONF_DIR`` naming the test cluster's client configuration, as the page
asks its reader to set it. Afterwards no jobcluster application is active and no staging directory
is left (fixture ``yarn_clean``), and the page's last step has removed what it put on HDFS.
"""

from __future__ import annotations

import os
import re

import pytest

from tests.e2e.support import independent_word_count
from tests.infra.hadoop.cluster import HadoopCluster
from tests.integration.hadoop.test_yarn_client import hadoop_conf, paths, yarn  # noqa: F401 - fixtures
from tests.integration.hadoop.test_yarn_job_cluster import yarn_clean  # noqa: F401 - fixture
from tests.support.quickstarts import REPO, output_of, run_all, with_jobcluster_on_path

pytestmark = pytest.mark.hadoop


@pytest.fixture
def user_env(hadoop_cluster: HadoopCluster, tmp_path) -> dict[str, str]:
    """A user's shell: HADOOP_CONF_DIR set to the cluster's client configuration, nothing else of the tests."""
    env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")}
    env.update(HADOOP_CONF_DIR=str(hadoop_cluster.hadoop_conf_dir), JOBCLUSTER_HOME=str(tmp_path / "home"))
    return with_jobcluster_on_path(env)


def test_the_yarn_quick_start_counts_the_example_corpus_on_hdfs(user_env, yarn_clean, paths):  # noqa: F811
    ran = run_all("yarn", user_env)

    wordcount = output_of(ran, "jobcluster run")
    assert re.search(r"Job [0-9a-f]{32} \(wordcount\) FINISHED in \d+\.\d s", wordcount.stderr), wordcount.stderr[-3000:]
    final = r"YARN application application_\d+_\d+ FINISHED with final status SUCCEEDED"
    assert re.search(final, wordcount.stderr), wordcount.stderr[-3000:]
    expected = independent_word_count(REPO / "examples" / "corpus")
    assert re.search(rf"^3 files, {sum(expected.values())} words, {len(expected)} distinct", wordcount.stdout, re.M), wordcount.stdout

    top = output_of(ran, "spark-class org.apache.hadoop.fs.FsShell -cat").stdout.splitlines()
    most = sorted(expected.values(), reverse=True)[:5]
    assert [int(line.split("\t")[1]) for line in top] == most, top

    for name in ("corpus", "wordcount"):  # the page's last step removed them from the HDFS home
        assert paths.client.status(name, strict=False) is None, name
