"""Flink's web dashboard of a ``kubernetes-application`` job cluster, through ``kubectl port-forward``, in a browser.

The image carries the dashboard's files (fetched from Maven Central when it is
built, entrypoints/Dockerfile), so the JobManager pod serves them at ``/`` with
no option; a user reaches them as docs/operations/web-dashboard.md says, by a
port-forward to the cluster's REST Service. The page must render the job and
its TaskManager pod, log no console error, and get an answer to every path.
"""

from __future__ import annotations

import re
import subprocess
import uuid

import pytest

from tests.integration.k8s.flinkjobs import POD_TEMPLATE, PROGRAMS, WAITS
from tests.integration.k8s.pods import host_path_template
from tests.integration.k8s.test_kubernetes_e2e import cluster_options, job_namespace, jobcluster
from tests.support.browser import headless_chromium

pytestmark = [pytest.mark.k8s, pytest.mark.browser]

PAGE_TIMEOUT = 60  # seconds: the TaskManager pod starts while the page polls


@pytest.fixture
def namespace(k8s_cluster, k8s_api):
    yield from job_namespace(k8s_cluster, k8s_api, "dash")


def test_the_dashboard_of_a_kubernetes_job_cluster_through_a_port_forward(k8s_cluster, k8s_image, namespace, browser_artefacts, tmp_path):
    cluster_id = f"dash-{uuid.uuid4().hex[:6]}"
    programs = {POD_TEMPLATE: str(host_path_template(tmp_path / "pod-template.yaml", [PROGRAMS]))}
    submitted = jobcluster(
        k8s_cluster.env(),
        "run", "-d", "-t", "kubernetes-application", *cluster_options(namespace, k8s_image, cluster_id, programs),
        f"local://{WAITS}", "300",
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr[-3000:]
    job = re.search(r"JobID ([0-9a-f]{32})", submitted.stdout).group(1)
    kubectl = str(k8s_cluster.bin_dir / "kubectl")
    service = f"svc/{cluster_id}-rest"
    forward = subprocess.Popen(
        [kubectl, "port-forward", "-n", namespace, service, ":8081", "--address", "127.0.0.1"],
        env=k8s_cluster.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert forward.stdout is not None
        line = forward.stdout.readline()
        port = re.search(r"127\.0\.0\.1:(\d+) ->", line)
        assert port, f"kubectl port-forward said: {line}"
        rest = f"http://127.0.0.1:{port.group(1)}"
        with headless_chromium(browser_artefacts) as browser:
            browser.open(f"{rest}/#/job/running/{job}/overview")
            browser.wait_for_text("PySpark: waits.py", PAGE_TIMEOUT)
            browser.wait_for_text("RUNNING", PAGE_TIMEOUT)
            browser.open(f"{rest}/#/task-manager")
            browser.wait_for_text(f"{cluster_id}-taskmanager-1-1", PAGE_TIMEOUT)
            browser.screenshot("kubernetes-taskmanagers")
            assert browser.console_errors() == []
            assert [r for r in browser.requests() if r.status is not None and r.status >= 400] == []
    finally:
        forward.terminate()
        forward.wait(10)
        cancelled = jobcluster(k8s_cluster.env(), "cancel", "-t", "kubernetes-application", "-D", f"kubernetes.namespace={namespace}", job)
        assert cancelled.returncode == 0, cancelled.stderr[-2000:]
