"""WordCount through the CLI on the local target (the MiniCluster): correct counts, the cluster's shape, nothing left behind."""

from __future__ import annotations

import re

import pytest
from support import WORDCOUNT, independent_word_count, jobcluster, read_word_counts, staging_dirs

pytestmark = pytest.mark.e2e


@pytest.mark.spark35
def test_wordcount_on_two_task_executors_with_two_slots(home, corpus, tmp_path):
    out = tmp_path / "out"
    result = jobcluster(
        "run",
        "-t",
        "local",
        "-p",
        "4",
        "-D",
        "taskmanager.numberOfTaskSlots=2",
        str(WORDCOUNT),
        "--input",
        str(corpus),
        "--output",
        str(out),
        check=True,
    )
    expected = independent_word_count(corpus)
    assert read_word_counts(out) == expected

    registered = set(re.findall(r"TaskExecutor (\S+) registered: 2 slots", result.stderr))
    assert len(registered) == 2, result.stderr
    assert "Slots offered to the job: 4/4" in result.stderr
    assert re.search(r"Job [0-9a-f]{32} is RUNNING", result.stderr)
    assert re.search(r"FINISHED in \d+\.\d s", result.stderr)

    top_word, top_count = sorted(expected.items(), key=lambda wc: (-wc[1], wc[0]))[0]
    assert re.search(rf"^\s+{top_count}\s+{top_word}$", result.stdout, re.M), result.stdout
    assert staging_dirs(home) == [], "the staging directory is removed when the job ends"
    (log,) = (home / "log").glob("*/jobmanager.log")
    assert "started TaskExecutor" in log.read_text() and "in this process" in log.read_text(), "TaskExecutors of the MiniCluster"
    offers = re.findall(r"offered (\d+) slot\(s\) to the JobMaster of job \S+; (\d+) accepted", log.read_text())
    assert sum(int(offered) for offered, _ in offers) == 4 and offers == [(n, n) for n, _ in offers], "each slot offered once"
    assert not list(log.parent.glob("spark-*.log")), "no Spark master or worker: the program's Spark runs in local mode"


def test_parallelism_one_with_one_slot_per_task_executor_and_a_quieter_log(home, corpus, tmp_path):
    out = tmp_path / "out"
    small = corpus if corpus.is_file() else sorted(p for p in corpus.rglob("*") if p.is_file())[0]
    quiet = ("-D", "jobcluster.log.level=WARNING")
    result = jobcluster(
        "run", "-p", "1", "-D", "taskmanager.numberOfTaskSlots=1", *quiet, str(WORDCOUNT), "--input", str(small), "--output", str(out),
        check=True,
    )  # fmt: skip
    assert read_word_counts(out) == independent_word_count(small)
    assert len(set(re.findall(r"TaskExecutor (\S+) registered: 1 slots", result.stderr))) == 1
    # nothing below WARNING in the JobManager's own log (at the default INFO it has "started TaskExecutor", see above)
    (log,) = (home / "log").glob("*/jobmanager.log")
    assert not re.search(r" (DEBUG|INFO) ", log.read_text()), log.read_text()[:2000]
