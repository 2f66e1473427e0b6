"""WordCount in PySpark: count the words of a text corpus.

An ordinary PySpark script: it runs unmodified with plain ``spark-submit`` and
with ``jobcluster run``. Words follow Flink's WordCount tokenizer: lower-case
the line, split it on runs of non-word characters (Java's ``\\W``, i.e. ASCII
``[^a-zA-Z0-9_]``), drop empty tokens.

Output: text files under OUTPUT with one ``word<TAB>count`` line per word;
the most frequent words are printed at the end.

    spark-submit examples/wordcount.py --input CORPUS_DIR --output OUT_DIR
"""

from __future__ import annotations

import argparse
import re
from operator import add

from pyspark.sql import SparkSession

NON_WORD = re.compile(r"\W+", re.ASCII)


def tokenize(line: str) -> list[str]:
    return [token for token in NON_WORD.split(line.lower()) if token]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True, help="a text file or a directory of text files (read recursively)")
    parser.add_argument("--output", required=True, help="directory for the word<TAB>count files (replaced if present)")
    parser.add_argument("--top", type=int, default=10, help="how many of the most frequent words to print")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("WordCount").getOrCreate()
    lines = spark.read.option("recursiveFileLookup", "true").text(args.input).rdd.map(lambda row: row.value)
    counts = lines.flatMap(tokenize).map(lambda word: (word, 1)).reduceByKey(add).cache()
    spark.createDataFrame(counts.map(lambda wc: (f"{wc[0]}\t{wc[1]}",)), ["value"]).write.mode("overwrite").text(args.output)

    top = counts.takeOrdered(args.top, key=lambda wc: (-wc[1], wc[0]))
    total = counts.map(lambda wc: wc[1]).sum()
    print(f"{counts.count()} distinct words, {total} words in all. Top {len(top)}:")
    for word, count in top:
        print(f"{count:>10}  {word}")
    spark.stop()


if __name__ == "__main__":
    main()
