"""Flink's web dashboard on a real local job cluster, in a real browser (Debian's headless Chromium).

One job cluster, deployed attached as the operator deploys (its JobManager waits
for the result to be fetched, so the page of the ended job can be looked at):
the dashboard shows the running job, its vertex and configuration, the
TaskManager with the sizes of its memory model, the JobManager's configuration
and log; then the program finishes and the ended job's page shows it FINISHED.
No page may log an error in the browser's console, and every REST path the
dashboard requested must have been answered: a path the endpoint lacks would
show up as a 404 here. Screenshots are kept in the test's artefacts folder
(docs/operations/web-dashboard.md shows them).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import requests

from jobcluster.backends import registry
from jobcluster.client.executor import PipelineExecutor
from jobcluster.client.program import build_job_graph, packaged_program
from jobcluster.config.loader import load_configuration
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.runtime.rest.dashboard import fetch_dashboard
from tests.support.browser import Browser, headless_chromium

pytestmark = [pytest.mark.browser]

PROGRAMS = Path(__file__).parent / "programs"
PAGE_TIMEOUT = 30  # seconds for a page to show what it must (the dashboard polls every 3 s)
#: Requests that fail in Flink's own dashboard too: its web manifest names icons at the server's root.
KNOWN_MISSING = re.compile(r"/android-chrome-\d+x\d+\.png$")


@pytest.fixture(scope="module")
def dashboard() -> Path:
    return fetch_dashboard()  # what `make test` fetched already; a download only on a machine without it


def test_the_dashboard_shows_a_running_and_an_ended_job_with_its_taskmanager_and_jobmanager(home, dashboard, browser_artefacts):
    config = load_configuration(
        None,
        {
            "execution.target": "local",
            "execution.attached": "true",
            "parallelism.default": "2",
            "taskmanager.numberOfTaskSlots": "2",
            "pipeline.name": "dashboard-demo",
        },
    )
    gate = home / "finish"  # the program finishes once it exists
    program = packaged_program(str(PROGRAMS / "waits.py"), ["600", str(gate)])
    graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
    client = PipelineExecutor(registry.cluster_descriptor("local", config)).execute(graph, program, config).cluster_client
    rest, job = client.rest_url, graph.job_id
    try:
        with headless_chromium(browser_artefacts) as browser:
            page = _Pages(browser, rest)
            browser.open(f"{rest}/")
            browser.wait_for_text("Running Jobs", PAGE_TIMEOUT)
            browser.wait_for_text("dashboard-demo", PAGE_TIMEOUT)
            browser.screenshot("overview")

            page(f"/job/running/{job}/overview")
            browser.wait_for_text("PySpark: waits.py", PAGE_TIMEOUT)
            browser.wait_for_text("RUNNING", PAGE_TIMEOUT)
            browser.screenshot("job")
            page(f"/job/running/{job}/configuration")
            browser.wait_for_text("Restart deactivated.", PAGE_TIMEOUT)
            page(f"/job/running/{job}/exceptions")
            browser.wait_for_text("No Root Exception", PAGE_TIMEOUT)

            (manager,) = requests.get(f"{rest}/taskmanagers", timeout=10).json()["taskmanagers"]
            page("/task-manager")
            browser.wait_for_text(manager["id"], PAGE_TIMEOUT)
            page(f"/task-manager/{manager['id']}/metrics")
            browser.wait_for_text("Framework Heap", PAGE_TIMEOUT)
            task_heap_mb = manager["memoryConfiguration"]["taskHeap"] / (1 << 20)
            browser.wait_for_text(f"{task_heap_mb:.0f}", PAGE_TIMEOUT)  # the memory model's task heap, as the page writes it
            browser.screenshot("taskmanager-memory")
            # its logs, which its TaskExecutor hands out: its own first (its process's output file on local)
            logs = requests.get(f"{rest}/taskmanagers/{manager['id']}/logs", timeout=10).json()["logs"]
            assert [entry["name"] for entry in logs][:2] == [f"{manager['id']}.log", f"spark-worker-{manager['id']}.log"], logs
            assert "registered at the ResourceManager" in requests.get(f"{rest}/taskmanagers/{manager['id']}/log", timeout=10).text

            page("/job-manager/config")
            browser.wait_for_text("taskmanager.numberOfTaskSlots", PAGE_TIMEOUT)
            page("/job-manager/logs")
            browser.wait_for_text("REST endpoint listening", PAGE_TIMEOUT)
            browser.screenshot("jobmanager-log")

            gate.touch()
            _wait_for_state(rest, job, "FINISHED")  # the cluster waits for the result to be fetched (attached)
            page(f"/job/completed/{job}/overview")
            browser.wait_for_text("FINISHED", PAGE_TIMEOUT)
            browser.screenshot("job-finished")

            assert browser.console_errors() == [], "the dashboard logged errors"
            failed = [(r.method, r.url, r.status) for r in browser.requests() if r.status is not None and r.status >= 400]
            assert [f for f in failed if not KNOWN_MISSING.search(f[1])] == [], "paths the dashboard asked for and did not get"
            asked = browser.paths(rest)
            assert {"/config", "/overview", "/jobs/overview", f"/jobs/{job}", f"/jobs/{job}/config", "/jobmanager/config"} <= asked
    finally:
        client.execution_result(job)  # fetched: the attached cluster goes
        client.close()
        assert client.wait_until_shut_down(60)


def _wait_for_state(rest: str, job: str, state: str) -> None:
    deadline = time.monotonic() + 60
    while requests.get(f"{rest}/jobs/{job}", timeout=10).json()["state"] != state:
        assert time.monotonic() < deadline, f"job {job} not {state} within 60 s"
        time.sleep(0.5)


class _Pages:
    """Opens each dashboard page anew, as from a bookmark (the query differs, so the browser loads it): a route change
    while the job graph's zoom transition runs makes Flink's own dashboard log an SVGLength error, not this cluster's."""

    def __init__(self, browser: Browser, rest: str) -> None:
        self.browser, self.rest, self.opened = browser, rest, 0

    def __call__(self, route: str) -> None:
        self.opened += 1
        self.browser.open(f"{self.rest}/?page={self.opened}#{route}")
