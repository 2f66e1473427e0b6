"""Benchmark: WordCount on a local job cluster, phase by phase, with the cluster's peak memory.

    .venv/bin/python benchmarks/wordcount_local.py --input CORPUS_DIR [--runs 3] [--target local|local-cluster]

Measures, per run, the seconds from `jobcluster run` until: the cluster serves
REST, all slots are offered, the job is RUNNING, the job is terminal, and the
command returns (cluster shut down); and the peak resident memory (MiB) of all
processes of the cluster, sampled every 0.2 s. Prints one row per run and the
medians. Numbers go to docs/development/benchmarks.md; they are never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]


def cluster_rss_mib(home: Path) -> float:
    total = 0
    for proc in psutil.process_iter(["cwd", "cmdline", "environ"]):
        try:
            info = proc.info
            if (
                str(home) in (info["cwd"] or "")
                or str(home) in " ".join(info["cmdline"] or [])
                or str(home) in (info["environ"] or {}).get("JOBCLUSTER_CLUSTER_DIR", "")
            ):
                total += proc.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total / (1 << 20)


def one_run(corpus: str, parallelism: int, slots: int, target: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = {**os.environ, "JOBCLUSTER_HOME": str(home)}
        argv = [
            sys.executable,
            "-m",
            "jobcluster",
            "run",
            "-t",
            target,
            "-p",
            str(parallelism),
            "-D",
            f"taskmanager.numberOfTaskSlots={slots}",
            str(REPO / "examples" / "wordcount.py"),
            "--input",
            corpus,
            "--output",
            str(Path(tmp) / "out"),
        ]
        start = time.monotonic()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO)
        times: dict[str, float] = {}
        peak = [0.0]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], cluster_rss_mib(home))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        for line in proc.stderr:
            now = time.monotonic() - start
            if "is up; REST API" in line:
                times.setdefault("cluster_up_s", now)
            elif "Slots offered to the job:" in line:
                held, required = line.rsplit(" ", 1)[1].strip().split("/")
                if held == required:
                    times.setdefault("slots_offered_s", now)
            elif " is RUNNING" in line:
                times.setdefault("running_s", now)
            elif " FINISHED in " in line or " FAILED in " in line:
                times.setdefault("terminal_s", now)
        proc.wait()
        times["returned_s"] = time.monotonic() - start
        done.set()
        sampler.join()
        times["peak_rss_mib"] = peak[0]
        if proc.returncode != 0:
            raise SystemExit(f"run failed with exit code {proc.returncode}")
        return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("-p", "--parallelism", type=int, default=4)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--target", default="local", choices=["local", "local-cluster"])
    args = parser.parse_args()
    rows = [one_run(args.input, args.parallelism, args.slots, args.target) for _ in range(args.runs)]
    keys = list(rows[0])
    print("run  " + "  ".join(f"{k:>14}" for k in keys))
    for i, row in enumerate(rows, 1):
        print(f"{i:<4} " + "  ".join(f"{row.get(k, float('nan')):>14.1f}" for k in keys))
    print("med  " + "  ".join(f"{statistics.median(r.get(k, float('nan')) for r in rows):>14.1f}" for k in keys))


if __name__ == "__main__":
    main()
