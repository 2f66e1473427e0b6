"""The README's quick starts, run as they are written, on the test cluster.

Why: commands in the docs are part of the product; a quick start that no
longer works is the first thing a new user meets. Each block marked
``<!-- quickstart: NAME ... -->`` in README.md is run line by line (a line
ending in ``\\`` continues on the next) with bash from the repository root,
``jobcluster`` and the test cluster's ``kubectl``/``helm`` first on PATH.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.k8s

REPO = Path(__file__).resolve().parents[3]
README = REPO / "README.md"


def quickstart(name: str) -> list[str]:
    """The commands of the fenced block after the marker ``<!-- quickstart: name ... -->``."""
    match = re.search(rf"<!-- quickstart: {re.escape(name)}\b[^>]*-->\n```\n(.*?)\n```", README.read_text(), re.S)
    assert match, f"README.md has no quick start {name!r}"
    return [command.strip() for command in match.group(1).replace("\\\n", " ").splitlines() if command.strip()]


def run(k8s_cluster, command: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = k8s_cluster.env()
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"  # `jobcluster` as `make` installs it
    result = subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def test_the_kubernetes_quick_start_counts_the_images_corpus(k8s_cluster):
    outputs = [run(k8s_cluster, command) for command in quickstart("kubernetes")]
    (wordcount,) = [o for command, o in zip(quickstart("kubernetes"), outputs, strict=True) if command.startswith("jobcluster run")]
    assert re.search(r"Job [0-9a-f]{32} \(\S+\) FINISHED", wordcount.stderr), wordcount.stderr[-3000:]
    # the program's own output: the corpus in the image is 3 files, "the" among the top words
    assert re.search(r"^3 files, \d+ words, \d+ distinct", wordcount.stdout, re.M), wordcount.stdout
    assert re.search(r"^\s+\d+\s+the$", wordcount.stdout, re.M), wordcount.stdout
    namespaces = k8s_cluster.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert "namespace/analytics" not in namespaces or "Terminating" in k8s_cluster.kubectl("get", "namespace", "analytics").stdout
