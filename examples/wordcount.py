"""WordCount in PySpark: count the words of a text corpus.

An ordinary PySpark script: it runs unmodified with plain ``spark-submit`` and
with ``jobcluster run``. Words follow Flink's WordCount tokenizer: lower-case
the line, split it on runs of non-word characters (Java's ``\\W``, i.e. ASCII
``[^a-zA-Z0-9_]``), drop empty tokens.

Input: a text file, or a directory read recursively, on any file system
Spark reads: ``hdfs://...``, ``file://...``, or a path without a scheme,
which means what it means to Spark (a path on ``fs.defaultFS``: the local
file system unless HADOOP_CONF_DIR names another). Every file counts, also
names starting with ``_`` or ``.``, which Hadoop's input formats (so
``sc.textFile`` and ``spark.read`` too) skip as "hidden", even when named
explicitly. So the files are listed here, on the driver, and read like this:

- local files: each task opens its files itself (every worker sees them);
- files on HDFS (or another Hadoop file system): Spark's text reader reads
  them, split by Hadoop, except the few it would skip or transform (hidden
  names, names with the glob or list characters ``,{}[]*?\\``, names of a
  compression codec such as ``.gz``): the driver copies those and ships them
  to the tasks with ``sc.addFile``, and the tasks open them.

Either way lines end at \\n, \\r\\n or \\r and text is UTF-8 with invalid
bytes replaced, so the counts do not depend on where the corpus lives. An
input that does not exist is an error naming it (exit code 1).

Output: text files under OUTPUT (any file system, as for the input) with one
``word<TAB>count`` line per word; the most frequent words are printed at the end.
Without ``--output`` they are only printed (in a job cluster: the JobManager's log).

    spark-submit examples/wordcount.py --input CORPUS_DIR --output OUT_DIR
    spark-submit examples/wordcount.py --input hdfs:///corpus --output hdfs:///out/wc
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from operator import add
from typing import Any

from pyspark import RDD, SparkContext, SparkFiles
from pyspark.sql import SparkSession

NON_WORD = re.compile(r"\W+", re.ASCII)
# Files that Hadoop's FileInputFormat would not read as they are: it skips
# "hidden" names, expands glob syntax and splits its input on commas.
HADOOP_HIDDEN = ("_", ".")
HADOOP_PATH_SYNTAX = frozenset(",{}[]*?\\")


def tokenize(line: str) -> list[str]:
    return [token for token in NON_WORD.split(line.lower()) if token]


def read_lines(path: str) -> Iterator[str]:
    """Lines of a UTF-8 text file (split on \\n, \\r\\n or \\r, as Hadoop's text reader does)."""
    with open(path, encoding="utf-8", errors="replace", newline=None) as f:
        for line in f:
            yield line.rstrip("\n")


def input_files(path: str, name: str | None = None) -> list[str]:
    """The local ``path`` itself if it is a file, else every file below it (sorted); ``name``: the input as given."""
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise SystemExit(f"Error: input {name or path} does not exist (no file or directory {path})")
    return sorted(os.path.join(root, name) for root, _, names in os.walk(path) for name in names)


def hadoop_files(fs: Any, path: Any, name: str) -> list[Any]:
    """Every file at or below ``path`` on the Hadoop FileSystem ``fs`` (org.apache.hadoop.fs objects), sorted."""
    if not fs.exists(path):
        raise SystemExit(f"Error: input {name} does not exist (no file or directory {path.toString()})")
    found, listing = [], fs.listFiles(path, True)
    while listing.hasNext():
        found.append(listing.next().getPath())
    return sorted(found, key=lambda p: p.toString())


def hadoop_lines(sc: SparkContext, fs: Any, files: list[Any], scratch: str) -> RDD[str]:
    """The lines of Hadoop ``files``: Spark's text reader reads those it reads as they are, the tasks the rest
    (hidden names, glob or list syntax in the path, a compression codec's suffix), shipped with addFile."""
    codecs = sc._jvm.org.apache.hadoop.io.compress.CompressionCodecFactory(sc._jsc.hadoopConfiguration())
    ordinary, shipped = [], []
    for f in files:
        uri = f.toString()
        if not f.getName().startswith(HADOOP_HIDDEN) and not HADOOP_PATH_SYNTAX.intersection(uri) and codecs.getCodec(f) is None:
            ordinary.append(uri)
            continue
        # A name of our own: two shipped files may share a name, and SparkFiles is one directory.
        local = os.path.join(scratch, f"{len(shipped):06d}-{f.getName()}")
        fs.copyToLocalFile(False, f, sc._jvm.org.apache.hadoop.fs.Path(local), True)
        sc.addFile(local)
        shipped.append(os.path.basename(local))
    parts = []
    if ordinary:
        text = sc.textFile(",".join(ordinary))
        # Many small files make many tiny partitions (one per file at least).
        parts.append(text.coalesce(4 * sc.defaultParallelism) if text.getNumPartitions() > 4 * sc.defaultParallelism else text)
    if shipped:
        parts.append(sc.parallelize(shipped, min(len(shipped), 4 * sc.defaultParallelism)).flatMap(lambda n: read_lines(SparkFiles.get(n))))
    return sc.union(parts) if parts else sc.emptyRDD()


def input_lines(sc: SparkContext, name: str, scratch: str) -> tuple[list[Any], RDD[str]]:
    """The files of the input ``name`` and their lines; ``scratch``: a local directory for shipped copies."""
    # The input as Spark sees it: a path without a scheme is on fs.defaultFS.
    path = sc._jvm.org.apache.hadoop.fs.Path(name)
    fs = path.getFileSystem(sc._jsc.hadoopConfiguration())
    path = fs.makeQualified(path)
    if path.toUri().getScheme() == "file":
        files = input_files(path.toUri().getPath(), name)
        return files, sc.parallelize(files, max(1, min(len(files), 4 * sc.defaultParallelism))).flatMap(read_lines)
    files = hadoop_files(fs, path, name)
    return files, hadoop_lines(sc, fs, files, scratch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True, help="a text file or a directory of text files (read recursively)")
    parser.add_argument("--output", help="directory for the word<TAB>count files (replaced if present); none: only print")
    parser.add_argument("--top", type=int, default=10, help="how many of the most frequent words to print")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("WordCount").getOrCreate()
    sc = spark.sparkContext
    scratch = tempfile.mkdtemp(prefix="wordcount-")
    try:
        files, lines = input_lines(sc, args.input, scratch)
        counts = lines.flatMap(tokenize).map(lambda word: (word, 1)).reduceByKey(add).cache()
        if args.output:
            rows = counts.map(lambda wc: (f"{wc[0]}\t{wc[1]}",))
            spark.createDataFrame(rows, "value string").write.mode("overwrite").text(args.output)

        top = counts.takeOrdered(args.top, key=lambda wc: (-wc[1], wc[0]))
        total = counts.map(lambda wc: wc[1]).sum()
        print(f"{len(files)} files, {total} words, {counts.count()} distinct. Top {len(top)}:")
        for word, count in top:
            print(f"{count:>10}  {word}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
