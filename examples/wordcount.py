"""WordCount in PySpark: count the words of a text corpus.

An ordinary PySpark script: it runs unmodified with plain ``spark-submit`` and
with ``jobcluster run``. Words follow Flink's WordCount tokenizer: lower-case
the line, split it on runs of non-word characters (Java's ``\\W``, i.e. ASCII
``[^a-zA-Z0-9_]``), drop empty tokens.

Input: a text file, or a directory read recursively. Every file counts, also
names starting with ``_`` or ``.``, which Hadoop's input formats would skip as
"hidden"; so the files are listed here and read by the Spark tasks.

Output: text files under OUTPUT with one ``word<TAB>count`` line per word;
the most frequent words are printed at the end.

    spark-submit examples/wordcount.py --input CORPUS_DIR --output OUT_DIR
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator
from operator import add

from pyspark.sql import SparkSession

NON_WORD = re.compile(r"\W+", re.ASCII)


def tokenize(line: str) -> list[str]:
    return [token for token in NON_WORD.split(line.lower()) if token]


def input_files(path: str) -> list[str]:
    """``path`` itself if it is a file, else every file below it (sorted)."""
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise SystemExit(f"input {path} is neither a file nor a directory")
    return sorted(os.path.join(root, name) for root, _, names in os.walk(path) for name in names)


def read_lines(path: str) -> Iterator[str]:
    """Lines of a UTF-8 text file (split on \\n, \\r\\n or \\r, as Spark's text reader does)."""
    with open(path, encoding="utf-8", errors="replace", newline=None) as f:
        for line in f:
            yield line.rstrip("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True, help="a text file or a directory of text files (read recursively)")
    parser.add_argument("--output", required=True, help="directory for the word<TAB>count files (replaced if present)")
    parser.add_argument("--top", type=int, default=10, help="how many of the most frequent words to print")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("WordCount").getOrCreate()
    sc = spark.sparkContext
    files = input_files(args.input)
    lines = sc.parallelize(files, max(1, min(len(files), 4 * sc.defaultParallelism))).flatMap(read_lines)
    counts = lines.flatMap(tokenize).map(lambda word: (word, 1)).reduceByKey(add).cache()
    spark.createDataFrame(counts.map(lambda wc: (f"{wc[0]}\t{wc[1]}",)), ["value"]).write.mode("overwrite").text(args.output)

    top = counts.takeOrdered(args.top, key=lambda wc: (-wc[1], wc[0]))
    total = counts.map(lambda wc: wc[1]).sum()
    print(f"{len(files)} files, {total} words, {counts.count()} distinct. Top {len(top)}:")
    for word, count in top:
        print(f"{count:>10}  {word}")
    spark.stop()


if __name__ == "__main__":
    main()
