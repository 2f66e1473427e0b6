"""Benchmark: each local target next to what Spark itself offers for it, in one invocation.

    .venv/bin/python benchmarks/startup_side_by_side.py --input CORPUS_DIR [--runs 3]

Runs, alternating in one invocation, WordCount on the corpus with:

- ``jobcluster run -t local -p 4 -D taskmanager.numberOfTaskSlots=2``: the MiniCluster, 2 TaskExecutors
  x 2 slots in one process, the program's Spark in ``local[4]``;
- ``spark-submit --master local[4]``, its counterpart;
- ``jobcluster run -t local-cluster -p 4 -D taskmanager.numberOfTaskSlots=2``: 2 TaskExecutor processes
  x 2 slots, each with a Spark worker;
- the same standalone cluster started by hand, with the same sizes (``standalone_cluster.py``).

Each command's phases in seconds from its start (jobcluster: REST up, all
slots offered, first Spark tasks, job FINISHED, command returned; by hand:
master up, workers registered, first tasks, job done, stopped), the medians, and the
ratios the issue sets goals for: ``local`` / ``local[4]`` <= 1.1, ``local-cluster`` /
by hand <= 1.0.  Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jobcluster.spark.home import spark_home

REPO = Path(__file__).resolve().parents[1]
WORDCOUNT = REPO / "examples" / "wordcount.py"

JOBCLUSTER_PHASES = (
    ("rest_up", re.compile(r"is up; REST API")),
    ("slots_offered", re.compile(r"Slots offered to the job: (\d+)/\1$")),
    ("first_tasks", re.compile(r"Spark \S+: \d+/\d+ Spark jobs, \d+/[1-9]\d* tasks done")),
    ("job_finished", re.compile(r" FINISHED in ")),
)


def jobcluster(corpus: str, out: str, target: str) -> dict[str, float]:
    argv = [sys.executable, "-m", "jobcluster", "run", "-t", target, "-p", "4", "-D", "taskmanager.numberOfTaskSlots=2"]
    argv += [str(WORDCOUNT), "--input", corpus, "--output", out]
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    times: dict[str, float] = {}
    for line in proc.stderr:
        for name, pattern in JOBCLUSTER_PHASES:
            if name not in times and pattern.search(line.rstrip()):
                times[name] = time.monotonic() - start
    if proc.wait() != 0:
        raise SystemExit(f"jobcluster run failed: {argv}")
    times["returned"] = time.monotonic() - start
    return times


def by_hand(corpus: str, out: str) -> dict[str, float]:
    argv = [sys.executable, str(REPO / "benchmarks" / "standalone_cluster.py"), "--workers", "2", "--slots", "2"]
    argv += [str(WORDCOUNT), "--input", corpus, "--output", out]
    start = time.monotonic()
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"the hand-started cluster failed: {result.stdout}{result.stderr}")
    times = {m.group(1): float(m.group(2)) for m in re.finditer(r"^PHASE (\S+) (\S+)$", result.stdout, re.M)}
    times["returned"] = time.monotonic() - start
    return times


def local4(corpus: str, out: str) -> dict[str, float]:
    submit = spark_home() / "bin" / "spark-submit"  # the venv's wrapper script needs Spark's env on PATH
    argv = [
        str(submit),
        "--master",
        "local[4]",
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        str(WORDCOUNT),
        "--input",
        corpus,
        "--output",
        out,
    ]
    start = time.monotonic()
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return {"returned": time.monotonic() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="the corpus directory")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    commands = {
        "local": lambda out: jobcluster(args.input, out, "local"),
        "local[4]": lambda out: local4(args.input, out),
        "local-cluster 2x2": lambda out: jobcluster(args.input, out, "local-cluster"),
        "by hand 2x2": lambda out: by_hand(args.input, out),
    }
    results: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
    for run in range(args.runs):
        for name, command in commands.items():
            with tempfile.TemporaryDirectory() as tmp:
                times = command(os.path.join(tmp, "out"))
            results[name].append(times)
            print(f"run {run + 1} {name:<17} " + "  ".join(f"{k} {v:.1f}" for k, v in times.items()), flush=True)
    medians = {name: {k: statistics.median(t[k] for t in runs) for k in runs[0]} for name, runs in results.items()}
    print("\nmedians (seconds from the command's start):")
    for name, times in medians.items():
        print(f"  {name:<17} " + "  ".join(f"{k} {v:.1f}" for k, v in times.items()))
    wall = {name: times["returned"] for name, times in medians.items()}
    print(f"\nlocal / local[4]:                 {wall['local'] / wall['local[4]']:.2f}x (goal <= 1.1)")
    print(f"local-cluster 2x2 / by hand 2x2:  {wall['local-cluster 2x2'] / wall['by hand 2x2']:.2f}x (goal <= 1.0)")
    first, by_hand_first = medians["local-cluster 2x2"].get("first_tasks"), medians["by hand 2x2"].get("first_tasks")
    if first is not None and by_hand_first is not None:
        print(f"first Spark tasks: local-cluster 2x2 at {first:.1f} s, by hand at {by_hand_first:.1f} s")
    for name in ("local", "local-cluster 2x2"):
        after = wall[name] - medians[name]["job_finished"]
        print(f"after the job: {name} returns {after:.1f} s after FINISHED")


if __name__ == "__main__":
    main()
