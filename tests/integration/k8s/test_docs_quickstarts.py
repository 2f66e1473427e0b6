"""The Kubernetes and operator quick starts (docs/try/kubernetes.md, docs/try/operator.md), run as written.

Each command of the pages' marked blocks runs with bash from the repository root, ``jobcluster`` and
the test cluster's ``kubectl``/``helm`` first on PATH and its kubeconfig in KUBECONFIG, as a user's
shell has them (tests/support/quickstarts.py). The image the pages name, ``jobcluster:0.1.0``, is the
working tree's on the test node.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.support import independent_word_count
from tests.support.quickstarts import REPO, output_of, run_all, with_jobcluster_on_path

pytestmark = pytest.mark.k8s


@pytest.fixture
def left_clean(k8s_cluster):
    """Should a quick start fail half-way, what it made goes: the next one starts from the same empty cluster."""
    yield
    k8s_cluster.helm("uninstall", "jobcluster", "-n", "jobcluster-system", "--wait", check=False)
    k8s_cluster.kubectl("delete", "namespace", "analytics", "jobcluster-system", "--ignore-not-found", "--timeout=120s", check=False)


def test_the_kubernetes_quick_start_counts_the_images_corpus(k8s_cluster, left_clean):
    ran = run_all("kubernetes", with_jobcluster_on_path(k8s_cluster.env()))
    wordcount = output_of(ran, "jobcluster run")
    assert re.search(r"Job [0-9a-f]{32} \(\S+\) FINISHED", wordcount.stderr), wordcount.stderr[-3000:]
    # the program's own output: the corpus in the image is 3 files, "the" among the top words
    assert re.search(r"^3 files, \d+ words, \d+ distinct", wordcount.stdout, re.M), wordcount.stdout
    assert re.search(r"^\s+\d+\s+the$", wordcount.stdout, re.M), wordcount.stdout
    namespaces = k8s_cluster.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert "namespace/analytics" not in namespaces or "Terminating" in k8s_cluster.kubectl("get", "namespace", "analytics").stdout


def test_the_operator_quick_start_installs_the_chart_runs_the_example_and_leaves_nothing(k8s_cluster, left_clean):
    ran = run_all("operator", with_jobcluster_on_path(k8s_cluster.env()))
    listed = output_of(ran, "kubectl get flinkjobs")
    assert re.search(r"^wordcount\s", listed.stdout, re.M), listed.stdout
    # the program's own output, in the JobManager's container log: the counts of the image's corpus
    counts = output_of(ran, "kubectl logs").stdout
    expected = independent_word_count(REPO / "examples" / "corpus")
    assert f"3 files, {sum(expected.values())} words, {len(expected)} distinct. Top 10:" in counts, counts
    top = [[str(c), w] for w, c in sorted(expected.items(), key=lambda wc: (-wc[1], wc[0]))]
    printed = [line.split() for line in counts.splitlines() if re.fullmatch(r"\s+\d+\s+\w+", line)]
    # grep's ten lines after the header are the top words, unless a line of the JobManager's own log came between
    assert len(printed) >= 8 and printed == top[: len(printed)], counts
    described = output_of(ran, "kubectl describe")
    assert re.search(r"Lifecycle State:\s+FINISHED", described.stdout), described.stdout
    assert re.search(r"Type:\s+Succeeded", described.stdout) and "JobFinished" in described.stdout, described.stdout
    # uninstalled and deleted: no release, no operator's cluster-wide objects, no namespace
    assert k8s_cluster.helm("status", "jobcluster", "-n", "jobcluster-system", check=False).returncode != 0
    roles = k8s_cluster.kubectl("get", "clusterroles", "-o", "name").stdout.split()
    assert not [r for r in roles if r.startswith("clusterrole.rbac.authorization.k8s.io/jobcluster-operator")], roles
    namespaces = k8s_cluster.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert "namespace/analytics" not in namespaces and "namespace/jobcluster-system" not in namespaces, namespaces
