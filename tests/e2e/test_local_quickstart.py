"""The local quick start (docs/try/local.md), run as it is written, on a real local job cluster.

Its commands run with bash from the repository root, ``jobcluster`` first on PATH, in a private
JOBCLUSTER_HOME (fixture ``home``: no process of the cluster may outlive the test).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import REPO, independent_word_count, read_word_counts, staging_dirs

from tests.support.quickstarts import output_of, run_all, with_jobcluster_on_path

pytestmark = pytest.mark.e2e

CORPUS = REPO / "examples" / "corpus"
OUT = REPO / "out" / "quickstart"  # where the page writes the counts, relative to the repository root


@pytest.fixture
def out_removed() -> Iterator[Path]:
    """The page's output directory, removed afterwards (and out/ too, when the test made it)."""
    made_parent = not OUT.parent.exists()
    yield OUT
    shutil.rmtree(OUT, ignore_errors=True)
    if made_parent:
        shutil.rmtree(OUT.parent, ignore_errors=True)


def test_the_local_quick_start_counts_the_example_corpus_and_leaves_nothing_running(home, out_removed):
    ran = run_all("local", with_jobcluster_on_path(os.environ), timeout=600)

    wordcount = output_of(ran, "jobcluster run")
    assert re.search(r"Job [0-9a-f]{32} \(wordcount\) FINISHED in \d+\.\d s", wordcount.stderr), wordcount.stderr[-3000:]
    assert "Slots offered to the job: 2/2" in wordcount.stderr, wordcount.stderr[-3000:]
    expected = independent_word_count(CORPUS)
    assert re.search(rf"^3 files, {sum(expected.values())} words, {len(expected)} distinct", wordcount.stdout, re.M), wordcount.stdout
    assert read_word_counts(out_removed) == expected

    top = output_of(ran, "sort").stdout.splitlines()
    most = sorted(expected.items(), key=lambda wc: -wc[1])[:5]
    assert [int(line.split("\t")[1]) for line in top] == [count for _, count in most], top

    memory = output_of(ran, "jobcluster memory")
    assert "Total Process Memory" in memory.stdout and "spark.executor.memory" in memory.stdout, memory.stdout

    assert staging_dirs(home) == [], "the staging directory is removed when the job ends"
    assert list((home / "log").glob("*/jobmanager.log")), "the logs the page points at are kept"
