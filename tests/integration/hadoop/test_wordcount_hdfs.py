"""examples/wordcount.py on the real HDFS of the test cluster, under plain ``spark-submit --master local[2]``.

The corpus holds what Hadoop's input formats would skip or read differently (names starting with ``_`` or
``.``, files in hidden-named directories, the same hidden name in two directories with different contents,
glob and comma syntax in a name, a ``.gz`` suffix) and what makes line splitting and decoding matter
(\\r\\n, lone \\r, invalid UTF-8). The counts read back from HDFS must equal a plain-Python count of the bytes
uploaded, which is what the script counts for the same corpus on a local disk.
"""

from __future__ import annotations

import getpass
import gzip
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyspark
import pytest
from hdfs import InsecureClient

from tests.infra.hadoop.cluster import HadoopCluster

pytestmark = pytest.mark.hadoop

REPO = Path(__file__).resolve().parents[3]
WORDCOUNT = REPO / "examples" / "wordcount.py"
SPARK_SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"
SUBMIT_OPTIONS = ("--master", "local[2]", "--conf", "spark.ui.enabled=false", "--conf", "spark.default.parallelism=2")
"""Few shuffle partitions (and output files): each task is slow on a loaded 2-core machine."""
SUBMIT_TIMEOUT = 300.0
"""Seconds one spark-submit may take; ~20-40 s on a loaded 2-core machine."""

CORPUS: dict[str, bytes] = {
    "plain.txt": b"Hello world, hello HDFS.\nThe quick brown fox\n",
    "crlf.txt": b"Windows line\r\nends here\r\nand_here",
    "cr.txt": b"old mac\rline ends\rmac",
    "bad-utf8.txt": b"caf\xc3\xa9 na\xefve \xff\xfebroken\xe2\x28bytes end\n",
    "_underscore.txt": b"hidden by hadoop underscore\n",
    ".dotfile": b"hidden by hadoop dot\n",
    "_SUCCESS": b"",
    "pkg/__init__.py": b"import alpha\nalpha_one = 1\n",
    "lib/__init__.py": b"import beta\nbeta_two = 2\r\n",
    "lib/deep/more.txt": b"deep words words\n",
    "_private/inside.txt": b"inside a hidden directory\n",
    ".config/settings": b"key = value\n",
    "odd/x,y[1]{a}.txt": b"comma bracket brace\n",
    "notes.gz": gzip.compress(b"compressed words are counted as bytes\n", mtime=0),
}


def count_words(data: bytes) -> Counter[str]:
    """Flink's WordCount rule on raw bytes: UTF-8 (invalid bytes replaced), lower-cased, maximal runs of [a-z0-9_]."""
    return Counter(re.findall(r"[a-z0-9_]+", data.decode("utf-8", errors="replace").lower()))


@pytest.fixture(scope="module")
def hdfs(hadoop_cluster: HadoopCluster) -> InsecureClient:
    return InsecureClient(hadoop_cluster.webhdfs_url, user=getpass.getuser(), timeout=30)


def spark_submit(hadoop_cluster: HadoopCluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HADOOP_CONF_DIR": str(hadoop_cluster.hadoop_conf_dir),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    env.pop("SPARK_HOME", None)  # pyspark's own
    return subprocess.run(
        [str(SPARK_SUBMIT), *SUBMIT_OPTIONS, str(WORDCOUNT), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBMIT_TIMEOUT,
        check=False,
    )


def test_wordcount_reads_and_writes_hdfs_with_exact_counts(hadoop_cluster: HadoopCluster, hdfs: InsecureClient) -> None:
    for name, data in CORPUS.items():
        hdfs.write(f"/wordcount/corpus/{name}", data=data, overwrite=True)
    expected = count_words(b"\n".join(CORPUS.values()))
    # Words only the files Hadoop's reader would skip or misread contain:
    assert {"underscore", "dot", "alpha", "beta", "inside", "key", "bracket", "mac"} <= expected.keys()

    result = spark_submit(
        hadoop_cluster,
        "--input",
        f"{hadoop_cluster.fs_default_fs}/wordcount/corpus",
        "--output",
        "hdfs:///wordcount/out",  # no authority: fs.defaultFS's
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-6000:]}"

    got: Counter[str] = Counter()
    parts = sorted(name for name in hdfs.list("/wordcount/out") if name.startswith("part-"))
    assert parts, hdfs.list("/wordcount/out")
    for part in parts:
        with hdfs.read(f"/wordcount/out/{part}", encoding="utf-8") as reader:
            for line in reader.read().splitlines():
                word, count = line.rsplit("\t", 1)
                assert word not in got, f"{word!r} twice in the output"
                got[word] = int(count)
    assert got == expected, json.dumps({"missing": expected - got, "extra": got - expected})
    assert f"{len(CORPUS)} files, {sum(expected.values())} words, {len(expected)} distinct" in result.stdout, result.stdout


def test_a_missing_hdfs_input_is_the_programs_clear_error(hadoop_cluster: HadoopCluster) -> None:
    missing = "hdfs:///wordcount/no-such-corpus"

    result = spark_submit(hadoop_cluster, "--input", missing, "--output", "hdfs:///wordcount/never")

    # spark-submit merges the Python program's stderr into its stdout.
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"Error: input {missing} does not exist" in output, output[-4000:]
    assert "Traceback" not in output, output[-4000:]
