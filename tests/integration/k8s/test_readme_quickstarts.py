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


@pytest.fixture
def left_clean(k8s_cluster):
    """Should a quick start fail half-way, what it made goes: the next one starts from the same empty cluster."""
    yield
    k8s_cluster.helm("uninstall", "jobcluster", "-n", "jobcluster-system", "--wait", check=False)
    k8s_cluster.kubectl("delete", "namespace", "analytics", "jobcluster-system", "--ignore-not-found", "--timeout=120s", check=False)


def test_the_kubernetes_quick_start_counts_the_images_corpus(k8s_cluster, left_clean):
    ran = [(command, run(k8s_cluster, command)) for command in quickstart("kubernetes")]
    (wordcount,) = [output for command, output in ran if command.startswith("jobcluster run")]
    assert re.search(r"Job [0-9a-f]{32} \(\S+\) FINISHED", wordcount.stderr), wordcount.stderr[-3000:]
    # the program's own output: the corpus in the image is 3 files, "the" among the top words
    assert re.search(r"^3 files, \d+ words, \d+ distinct", wordcount.stdout, re.M), wordcount.stdout
    assert re.search(r"^\s+\d+\s+the$", wordcount.stdout, re.M), wordcount.stdout
    namespaces = k8s_cluster.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert "namespace/analytics" not in namespaces or "Terminating" in k8s_cluster.kubectl("get", "namespace", "analytics").stdout


def test_the_operator_quick_start_installs_the_chart_runs_the_example_and_leaves_nothing(k8s_cluster, left_clean):
    ran = [(command, run(k8s_cluster, command)) for command in quickstart("operator")]
    (listed,) = [output for command, output in ran if command.startswith("kubectl get flinkjobs")]
    assert re.search(r"^wordcount\s", listed.stdout, re.M), listed.stdout
    (described,) = [output for command, output in ran if command.startswith("kubectl describe")]
    assert re.search(r"Lifecycle State:\s+FINISHED", described.stdout), described.stdout
    assert re.search(r"Type:\s+Succeeded", described.stdout) and "JobFinished" in described.stdout, described.stdout
    # uninstalled and deleted: no release, no operator's cluster-wide objects, no namespace
    assert k8s_cluster.helm("status", "jobcluster", "-n", "jobcluster-system", check=False).returncode != 0
    roles = k8s_cluster.kubectl("get", "clusterroles", "-o", "name").stdout.split()
    assert not [r for r in roles if r.startswith("clusterrole.rbac.authorization.k8s.io/jobcluster-operator")], roles
    namespaces = k8s_cluster.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert "namespace/analytics" not in namespaces and "namespace/jobcluster-system" not in namespaces, namespaces
