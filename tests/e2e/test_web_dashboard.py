"""Flink's web dashboard on a real local-cluster job cluster, in a real browser (Debian's headless Chromium).

On ``local-cluster``: its TaskManager is a process with a Spark executor whose JVM reports the metrics the
TaskManager's pages show, and whose worker's log it hands out.

One job cluster, deployed attached as the operator deploys (its JobManager waits
for the result to be fetched, so the page of the ended job can be looked at),
serving Flink 2.3.0's dashboard (the default): its Applications pages show the
job's application and, on the application's page, the job; the dashboard shows
the running job, its vertex and configuration, the
TaskManager with the sizes of its memory model, the JobManager's configuration
and log; the job page's link leads to Spark's own UI of the program, proxied
under /spark/ (its Jobs, Environment and Executors pages, the cluster's Spark
secret redacted, no POST without the token); then the program finishes and the
ended job's page shows it FINISHED.
No page may log an error in the browser's console, and every REST path the
dashboard requested must have been answered: a path the endpoint lacks would
show up as a 404 here. Screenshots are kept in the test's artefacts folder
(docs/operations/web-dashboard.md shows them).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
from selenium.webdriver.common.by import By

from jobcluster.backends import registry
from jobcluster.backends.local.descriptor import REST_TOKEN_FILE
from jobcluster.client.executor import PipelineExecutor
from jobcluster.client.program import build_job_graph, packaged_program
from jobcluster.config.loader import load_configuration
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.runtime.entrypoint.job_cluster_entrypoint import SPARK_CONF_DIR_NAME
from jobcluster.runtime.rest.dashboard import fetch_dashboard
from tests.support.browser import Browser, headless_chromium

pytestmark = [pytest.mark.browser]

PROGRAMS = Path(__file__).parent / "programs"
HTTP_TIMEOUT = 30  # seconds for one REST answer, on a busy machine
REFRESH = 3.5  # seconds: the dashboard's refresh interval and a little
PAGE_TIMEOUT = 90  # seconds for a page to show what it must: the dashboard polls every 3 s, but on a busy machine
# Spark may take a minute to give the program its executors, and its JVMs to report their metrics
SPARK_START_TIMEOUT = 300  # seconds for the program's first Spark job to succeed: with both streams of `make test` on two
# cores, Spark 4's driver and executor JVMs took 2.5 min from the job's start to it (measured)
#: Requests that fail in Flink's own dashboard too: its web manifest names icons at the server's root.
KNOWN_MISSING = re.compile(r"/android-chrome-\d+x\d+\.png$")
SPARK_UI_LINK = "jobcluster-spark-ui"  # the id of the job page's link to Spark's UI (runtime/rest/static/spark-ui-link.js)


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
            "metrics.fetcher.update-interval": "2s",  # the Spark JVMs report their metrics this often
        },
    )
    gate = home / "finish"  # the program finishes once it exists
    program = packaged_program(str(PROGRAMS / "waits.py"), ["600", str(gate)])
    graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
    client = PipelineExecutor(registry.cluster_descriptor("local-cluster", config)).execute(graph, program, config).cluster_client
    rest, job = client.rest_url, graph.job_id
    try:
        with headless_chromium(browser_artefacts) as browser:
            page = _Pages(browser, rest)
            browser.open(f"{rest}/")
            browser.wait_for_text("Running Jobs", PAGE_TIMEOUT)
            browser.wait_for_text("dashboard-demo", PAGE_TIMEOUT)
            browser.screenshot("overview")
            assert not browser.driver.find_element(By.ID, SPARK_UI_LINK).is_displayed(), "the link is a running job's"

            _applications(page, browser, job, "dashboard-demo", "RUNNING")

            page(f"/job/running/{job}/overview")
            browser.wait_for_text("PySpark: waits.py", PAGE_TIMEOUT)
            browser.wait_for_text("RUNNING", PAGE_TIMEOUT)
            _wait_until(lambda: browser.driver.find_element(By.ID, SPARK_UI_LINK).is_displayed(), "the link to Spark's UI")
            browser.screenshot("job")
            _spark_ui_through_the_link(browser, rest, home)
            page(f"/job/running/{job}/configuration")
            browser.wait_for_text("Restart deactivated.", PAGE_TIMEOUT)
            page(f"/job/running/{job}/exceptions")
            browser.wait_for_text("No Root Exception", PAGE_TIMEOUT)

            (manager,) = requests.get(f"{rest}/taskmanagers", timeout=HTTP_TIMEOUT).json()["taskmanagers"]
            page("/task-manager")
            browser.wait_for_text(manager["id"], PAGE_TIMEOUT)
            page(f"/task-manager/{manager['id']}/metrics")
            browser.wait_for_text("Framework Heap", PAGE_TIMEOUT)
            task_heap_mb = manager["memoryConfiguration"]["taskHeap"] / (1 << 20)
            browser.wait_for_text(f"{task_heap_mb:.0f}", PAGE_TIMEOUT)  # the memory model's task heap, as the page writes it
            browser.wait_for_text(OLD_COLLECTOR, PAGE_TIMEOUT)  # the executor JVM's collectors, reported by Spark
            browser.screenshot("taskmanager-memory")
            # its logs, which its TaskExecutor hands out: its own first (its process's output file on local)
            logs = requests.get(f"{rest}/taskmanagers/{manager['id']}/logs", timeout=HTTP_TIMEOUT).json()["logs"]
            assert [entry["name"] for entry in logs][:2] == [f"{manager['id']}.log", f"spark-worker-{manager['id']}.log"], logs
            own_log = requests.get(f"{rest}/taskmanagers/{manager['id']}/log", timeout=HTTP_TIMEOUT).text
            assert "registered at the ResourceManager" in own_log
            _assert_jvm_metrics(requests.get(f"{rest}/taskmanagers/{manager['id']}", timeout=HTTP_TIMEOUT).json(), manager)

            page("/job-manager/metrics")
            browser.wait_for_text(OLD_COLLECTOR, PAGE_TIMEOUT)  # the Spark driver's collectors
            time.sleep(REFRESH)  # the page asks for the collectors' counts on its next refresh: for the picture
            browser.screenshot("jobmanager-metrics")
            answer = requests.get(f"{rest}/jobmanager/metrics", params=JVM_QUERY, timeout=HTTP_TIMEOUT).json()
            driver = {m["id"]: int(m["value"]) for m in answer}
            assert 0 < driver["Status.JVM.Memory.Heap.Used"] <= driver["Status.JVM.Memory.Heap.Max"]
            assert driver["Status.JVM.Memory.Metaspace.Used"] > 0

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
            page("/application/completed")
            browser.wait_for_text(APPLICATION.format("dashboard-demo"), PAGE_TIMEOUT)
            browser.wait_for_text("FINISHED", PAGE_TIMEOUT)

            assert browser.console_errors() == [], "the dashboard logged errors"
            failed = [(r.method, r.url, r.status) for r in browser.requests() if r.status is not None and r.status >= 400]
            assert [f for f in failed if not KNOWN_MISSING.search(f[1])] == [], "paths the dashboard asked for and did not get"
            asked = browser.paths(rest)
            assert {"/config", "/overview", "/jobs/overview", f"/jobs/{job}", f"/jobs/{job}/config", "/jobmanager/config"} <= asked
            assert {"/applications/overview", f"/applications/{job}", f"/applications/{job}/exceptions"} <= asked
            assert {"/jobcluster/spark-ui-link.js", "/spark/", "/spark/environment/", "/spark/executors/"} <= asked
    finally:
        client.execution_result(job)  # fetched: the attached cluster goes
        client.close()
        assert client.wait_until_shut_down(60)


#: Flink 2.3's name of the application of a job submitted as a JobGraph (runtime/rest/flink2_views.py).
APPLICATION = "SingleJobApplication({})"


def _applications(page: Callable[[str], None], browser: Browser, job: str, name: str, state: str) -> None:
    """Flink 2.3's Applications pages: the list shows the job cluster's one application, named after its job and in
    ``state``; the application's page lists the job, and its Exceptions tab opens."""
    page("/application/running" if state == "RUNNING" else "/application/completed")
    browser.wait_for_text(APPLICATION.format(name), PAGE_TIMEOUT)
    browser.wait_for_text(state, PAGE_TIMEOUT)
    page(f"/application/running/{job}")
    browser.wait_for_text(f"Application ID {job}", PAGE_TIMEOUT)
    shown = browser.wait_for_text("Running Job List", PAGE_TIMEOUT)
    jobs = shown.split("Running Job List", 1)[1].split("Completed Job List", 1)[0]
    assert re.search(rf"^{re.escape(name)} ", jobs, re.M), jobs  # the job's row (its state is the job's, not the application's)
    browser.screenshot("application")
    page(f"/application/running/{job}/exceptions")
    browser.wait_for_text("No Root Exception", PAGE_TIMEOUT)


# The old generation's collector of the JVMs, by Flink's name for it: the serial collector's, which the tests' JVMs run
# (tests/conftest.py), or G1's, Java's default.
OLD_COLLECTOR = "MarkSweepCompact" if "-XX:+UseSerialGC" in os.environ.get("JAVA_TOOL_OPTIONS", "") else "G1_Old_Generation"
JVM_QUERY = {"get": "Status.JVM.Memory.Heap.Used,Status.JVM.Memory.Heap.Max,Status.JVM.Memory.Metaspace.Used"}


def _assert_jvm_metrics(details: dict, manager: dict) -> None:
    """The executor's JVM as Spark measured it, within the sizes the memory model gave its TaskManager."""
    jvm, memory = details["metrics"], manager["memoryConfiguration"]
    assert 0 < jvm["heapUsed"] <= jvm["heapMax"] <= memory["frameworkHeap"] + memory["taskHeap"]
    assert jvm["nonHeapUsed"] > 0
    assert [gc for gc in jvm["garbageCollectors"] if gc["name"] == OLD_COLLECTOR]


def _spark_ui_through_the_link(browser: Browser, rest: str, home: Path) -> None:
    """Follow the job page's link to Spark's UI: the program's Jobs page, its Environment (the cluster's secrets not
    shown) and Executors (filled by Spark's scripts through the proxy) tabs; a POST needs the token."""
    (application,) = _spark_applications(rest)
    jobs = f"{rest}/spark/api/v1/applications/{application['id']}/jobs?status=succeeded"
    # Spark's Jobs page lists it once it succeeded
    _wait_until(lambda: requests.get(jobs, timeout=HTTP_TIMEOUT).json(), "a Spark job of the program", SPARK_START_TIMEOUT)
    browser.driver.find_element(By.ID, SPARK_UI_LINK).click()
    browser.wait_for_text("Spark Jobs", PAGE_TIMEOUT)
    browser.wait_for_text(f"{application['name']} application UI", PAGE_TIMEOUT)
    browser.wait_for_text("Completed Jobs", PAGE_TIMEOUT)
    assert browser.driver.current_url == f"{rest}/spark/"
    browser.screenshot("spark-ui")

    browser.driver.find_element(By.LINK_TEXT, "Environment").click()
    browser.wait_for_text("Spark Properties", PAGE_TIMEOUT)
    for tab in browser.driver.find_elements(By.ID, "spark-props-tab"):  # Spark 4's page: a tab per table
        tab.click()
    shown = browser.wait_for_text("spark.authenticate.secret", PAGE_TIMEOUT)
    assert re.search(r"spark\.authenticate\.secret \*+\(redacted\)", shown), "Spark redacts the cluster's Spark secret"
    (spark_defaults,) = home.glob(f"clusters/*/{SPARK_CONF_DIR_NAME}/spark-defaults.conf")
    spark_secret = re.search(r"^spark\.authenticate\.secret=(\S+)$", spark_defaults.read_text(), re.MULTILINE)
    assert spark_secret is not None
    (token_file,) = home.glob(f"clusters/*/{REST_TOKEN_FILE}")
    page = browser.driver.page_source
    assert spark_secret.group(1) not in page and token_file.read_text().strip() not in page, "no secret of the cluster on the page"

    browser.driver.find_element(By.LINK_TEXT, "Executors").click()
    browser.wait_for_text("Executors", PAGE_TIMEOUT)
    driver_row = "//table[@id='active-executors-table']//td[text()='driver']"  # a row Spark's script adds from Spark's REST API
    _wait_until(lambda: browser.driver.find_elements(By.XPATH, driver_row), "the driver's row of the Executors page")

    refused = requests.post(f"{rest}/spark/jobs/job/kill/", data={"id": "0"}, timeout=HTTP_TIMEOUT)
    assert refused.status_code == 401, "a POST through the proxy needs the cluster's token"


def _spark_applications(rest: str) -> list[dict]:
    """Spark's applications, from its REST API through the proxy, once the driver's UI serves it (it comes up with the
    program's SparkContext, and answers its API paths with the Jobs page until it has attached them)."""
    deadline = time.monotonic() + SPARK_START_TIMEOUT
    while True:
        try:
            answer = requests.get(f"{rest}/spark/api/v1/applications", timeout=PAGE_TIMEOUT)
        except requests.Timeout:
            seen = "no answer"  # a starting driver's UI can be slow to answer on a busy machine
        else:
            if answer.status_code == 200 and answer.headers["Content-Type"].startswith("application/json") and answer.json():
                return answer.json()
            seen = answer.text[:300]
        assert time.monotonic() < deadline, f"no API of Spark's UI through the proxy within {SPARK_START_TIMEOUT} s: {seen}"
        time.sleep(0.5)


def _wait_until(condition, what: str, timeout: float = PAGE_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} not there within {timeout} s"
        time.sleep(0.2)


def _wait_for_state(rest: str, job: str, state: str) -> None:
    deadline = time.monotonic() + 60
    while requests.get(f"{rest}/jobs/{job}", timeout=HTTP_TIMEOUT).json()["state"] != state:
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
