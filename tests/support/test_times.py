"""Where a test run's time went: the test files that took longest, from pytest's JUnit XML reports.

``python -m tests.support.test_times A.xml [B.xml ...]`` prints, for each report, its total and its
slowest files (setup, call and teardown of every test in the file, so a module fixture's cluster start
counts where it is paid). ``tests/run_streams.sh`` runs it after the streams, so each CI log says
which files to split, shorten or move when the suite outgrows its budget.
"""

from __future__ import annotations

import sys
from pathlib import Path
from xml.etree import ElementTree

SHOWN = 12
"""Files listed per report."""


def seconds_by_file(report: Path) -> dict[str, float]:
    """Seconds per test file (``tests/e2e/test_x.py``) of one JUnit XML report; a test's ``classname`` is its
    module path with dots (and its class, if any, after the module)."""
    totals: dict[str, float] = {}
    for case in ElementTree.parse(report).iter("testcase"):
        parts = case.get("classname", "").split(".")
        module = next((i for i in range(len(parts), 0, -1) if parts[i - 1].startswith("test_")), len(parts))
        name = "/".join(parts[:module]) + ".py"
        totals[name] = totals.get(name, 0.0) + float(case.get("time") or 0)
    return totals


def summary(report: Path, shown: int = SHOWN) -> str:
    """The report's total and its ``shown`` slowest files, one line each, in minutes and seconds."""
    totals = seconds_by_file(report)
    lines = [f"{report.stem}: {_minutes(sum(totals.values()))} in {len(totals)} test files; the slowest:"]
    slowest = sorted(totals.items(), key=lambda item: -item[1])[:shown]
    lines += [f"  {_minutes(seconds):>8}  {name}" for name, seconds in slowest]
    return "\n".join(lines)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def main(argv: list[str]) -> int:
    reports = [Path(a) for a in argv if Path(a).is_file()]
    for report in reports:
        print(summary(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
