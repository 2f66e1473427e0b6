"""Flink's web dashboard on the REST endpoint: its files served as Flink serves them (its index with jobcluster's link to
Spark's UI), fetched and checked once, and the paths its pages read answering in Flink's shapes (the real aiohttp
endpoint, a stand-in dispatcher).

The dashboard itself in a real browser against a real job cluster: tests/e2e/test_web_dashboard.py. Fetching from
Maven Central for real happens in ``make run`` and ``make test`` (the ``dashboard`` target); here a local server
plays Maven Central, because a download whose checksum does not match cannot be had from it on demand.
"""

from __future__ import annotations

import ast
import hashlib
import http.server
import io
import re
import threading
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
import requests

from jobcluster.config import options
from jobcluster.errors import RpcError, UnknownTaskExecutorError
from jobcluster.runtime.rest import dashboard
from jobcluster.runtime.rest.dashboard import dashboard_installed, fetch_dashboard
from jobcluster.runtime.rest.dashboard_additions import STATIC_DIR, with_additions
from jobcluster.runtime.rest.flink_bodies import PROGRAM_FAILURE_NAME
from jobcluster.runtime.taskexecutor.log_files import TaskExecutorLogs
from tests.support.rest_standin import JOB_ID, VERTEX_ID, StandInDispatcher, with_endpoint
from tests.support.rest_standin import TOKEN as STANDIN_TOKEN

INDEX = "<!doctype html><html><head><base href='./'><script type='module' src='main.abc.js'></script></head></html>"


def installed(tmp_path: Path) -> Path:
    """A dashboard folder as fetch_dashboard leaves it: ``web/`` with its files, ``.complete`` beside it."""
    web = tmp_path / "flink-runtime-web" / "web"
    (web / "assets").mkdir(parents=True)
    (web / "index.html").write_text(INDEX)
    (web / "main.abc.js").write_text("export const x = 1;")
    (web / "assets" / "flink.svg").write_text("<svg/>")
    (web.parent / ".complete").write_text("sha1")
    return web


def test_the_dashboard_is_served_at_the_root_with_flinks_types_and_cache_headers(tmp_path):
    def scenario(url, dispatcher):
        index = requests.get(f"{url}/", timeout=5)
        assert index.status_code == 200 and index.headers["Content-Type"] == "text/html; charset=utf-8"
        assert index.headers["Cache-Control"] == "private, max-age=300"
        # first in its head: the script that gives a page opened without its final slash (YARN's proxy) one
        head, script, rest = re.fullmatch("(.*<head>)(<script>.*?</script>)(.*)", index.text).groups()
        assert head + rest == with_additions(INDEX) and 'l.replace(p + "/" + l.search + l.hash)' in script
        assert requests.get(f"{url}/index.html", timeout=5).text == index.text
        script = requests.get(f"{url}/main.abc.js", timeout=5)
        assert script.headers["Content-Type"].split(";")[0] in ("application/javascript", "text/javascript"), "a module script"
        assert requests.get(f"{url}/assets/flink.svg", timeout=5).headers["Content-Type"] == "image/svg+xml"
        again = requests.get(f"{url}/main.abc.js", headers={"If-Modified-Since": script.headers["Last-Modified"]}, timeout=5)
        assert again.status_code == 304
        missing = requests.get(f"{url}/nothing.js", timeout=5)
        assert missing.status_code == 404 and missing.json() == {"errors": ["Not found: /nothing.js"]}
        assert requests.get(f"{url}/%2E%2E/%2E%2E/etc/passwd", timeout=5).status_code in (403, 404)
        config = requests.get(f"{url}/config", timeout=5).json()
        assert config["features"]["web-submit"] is False, "a REST path wins"
        assert config["spark-version"] == metadata.version("pyspark"), "the Spark the cluster runs"

    with_endpoint(scenario, dashboard=installed(tmp_path))


def test_the_dashboards_index_gets_the_link_script_at_the_end_of_its_body():
    index = "<html><body><flink-root></flink-root><script src='main.js' type='module'></script></body></html>"
    added = with_additions(index)
    assert added == index.replace("</body>", '<script src="jobcluster/spark-ui-link.js" defer></script></body>')
    assert with_additions("<p>no body end") == '<p>no body end<script src="jobcluster/spark-ui-link.js" defer></script>'


def test_the_link_script_is_served_and_links_relative_on_running_jobs_pages(tmp_path):
    def scenario(url, dispatcher):
        index = requests.get(f"{url}/", timeout=5).text
        assert '<script src="jobcluster/spark-ui-link.js" defer></script>' in index
        script = requests.get(f"{url}/jobcluster/spark-ui-link.js", timeout=5)
        assert script.status_code == 200 and script.headers["Content-Type"].split(";")[0] in ("application/javascript", "text/javascript")
        assert script.text == (STATIC_DIR / "spark-ui-link.js").read_text()
        assert 'link.href = "spark/"' in script.text and "#\\/job\\/running\\/" in script.text
        assert requests.get(f"{url}/jobcluster/other.js", timeout=5).status_code == 404

    with_endpoint(scenario, dashboard=installed(tmp_path))


def test_a_cluster_without_the_dashboards_files_says_how_to_get_them_and_its_api_works(tmp_path):
    def scenario(url, dispatcher):
        page = requests.get(f"{url}/", timeout=5)
        assert page.status_code == 404 and "python -m jobcluster.runtime.rest.dashboard" in page.text
        assert str(tmp_path / "none") in page.text
        assert requests.get(f"{url}/overview", timeout=5).status_code == 200

    with_endpoint(scenario, dashboard=tmp_path / "none")


class MavenCentral(http.server.BaseHTTPRequestHandler):
    """Serves ``jar`` and counts the downloads."""

    jar = b""
    downloads = 0

    def do_GET(self) -> None:
        type(self).downloads += 1
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.jar)))
        self.end_headers()
        self.wfile.write(self.jar)

    def log_message(self, *args: object) -> None:
        pass


def test_the_dashboard_is_fetched_once_and_a_download_with_another_checksum_is_refused(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as jar:
        jar.writestr("web/index.html", INDEX)
        jar.writestr("web/assets/vs/loader.js", "x")
        jar.writestr("org/apache/flink/Foo.class", "not the dashboard")
    MavenCentral.jar, MavenCentral.downloads = buffer.getvalue(), 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), MavenCentral)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url, sha256 = f"http://127.0.0.1:{server.server_port}/flink-runtime-web.jar", hashlib.sha256(MavenCentral.jar).hexdigest()
    try:
        refused = tmp_path / "refused" / "web"
        with pytest.raises(OSError, match="not the expected"):
            fetch_dashboard(refused, url, hashlib.sha1(MavenCentral.jar).hexdigest())  # Maven Central's SHA-1: no SHA-256
        assert not refused.parent.exists() or list(refused.parent.iterdir()) == [], "nothing of a bad download is kept"

        target = tmp_path / "cache" / "flink-runtime-web-1.20.3" / "web"
        assert fetch_dashboard(target, url, sha256) == target and dashboard_installed(target)
        assert (target / "assets" / "vs" / "loader.js").is_file() and not (target.parent / "org").exists()
        assert target.parent.stat().st_mode & 0o005 == 0o005, "other users (an image's JobManager) read and enter it"
        fetch_dashboard(target, url, sha256)
        assert MavenCentral.downloads == 2, "an installed dashboard is not fetched again"
        elsewhere = tmp_path / "opt" / "dashboard"
        assert dashboard_installed(fetch_dashboard(elsewhere, url, sha256)) and (elsewhere / "index.html").is_file()
        assert [p.name for p in target.parent.parent.iterdir()] == ["flink-runtime-web-1.20.3"], "no scratch folder left"
    finally:
        server.shutdown()
        server.server_close()


def test_the_job_pages_read_the_jobs_failures_configuration_and_vertex_in_flinks_shapes():
    dispatcher = StandInDispatcher()
    dispatcher.failures = [{"timestamp": 1100, "cause": "first\nTraceback"}, {"timestamp": 1300, "cause": "second"}]

    def scenario(url, dispatcher):
        exceptions = requests.get(f"{url}/jobs/{JOB_ID}/exceptions?maxExceptions=1", timeout=5).json()
        assert exceptions["root-exception"] == "second" and exceptions["exceptionHistory"]["truncated"] is True
        (entry,) = exceptions["exceptionHistory"]["entries"]
        assert (entry["exceptionName"], entry["stacktrace"], entry["concurrentExceptions"]) == (PROGRAM_FAILURE_NAME, "second", [])
        assert len(requests.get(f"{url}/jobs/{JOB_ID}/exceptions", timeout=5).json()["exceptionHistory"]["entries"]) == 2
        config = requests.get(f"{url}/jobs/{JOB_ID}/config", timeout=5).json()["execution-config"]
        assert config["restart-strategy"].startswith("Restart with fixed delay (1 s). #3") and config["job-parallelism"] == 4
        vertex = requests.get(f"{url}/jobs/{JOB_ID}/vertices/{VERTEX_ID}", timeout=5).json()
        assert [s["subtask"] for s in vertex["subtasks"]] == [0, 1, 2, 3] and all("metrics" in s for s in vertex["subtasks"])
        managers = requests.get(f"{url}/jobs/{JOB_ID}/vertices/{VERTEX_ID}/taskmanagers", timeout=5).json()["taskmanagers"]
        assert [m["taskmanager-id"] for m in managers] == ["tm-1"] and managers[0]["status-counts"] == {"RUNNING": 1}
        for path, body in (("watermarks", []), ("subtasks/metrics", []), ("backpressure", {"status": "deprecated"})):
            assert requests.get(f"{url}/jobs/{JOB_ID}/vertices/{VERTEX_ID}/{path}", timeout=5).json() == body, path
        assert requests.get(f"{url}/jobs/{JOB_ID}/vertices/{'0' * 32}", timeout=5).status_code == 404

    with_endpoint(scenario, dispatcher)


def test_the_dashboards_cancel_button_needs_the_token():
    def scenario(url, dispatcher):
        refused = requests.get(f"{url}/jobs/{JOB_ID}/yarn-cancel", timeout=5)
        assert refused.status_code == 401 and "token" in refused.json()["errors"][0] and dispatcher.cancelled == []
        headers = {"Authorization": f"Bearer {STANDIN_TOKEN}"}
        assert requests.get(f"{url}/jobs/{JOB_ID}/yarn-cancel", headers=headers, timeout=5).status_code == 202
        assert dispatcher.cancelled == [JOB_ID]

    with_endpoint(scenario)


def test_the_job_manager_pages_show_its_configuration_masked_its_logs_but_not_the_programs_output(tmp_path):
    logs = tmp_path / "log"
    logs.mkdir()
    (logs / "jobmanager.log").write_text("INFO up\n")
    (logs / "tm-1.log").write_text("INFO registered\n")  # local: the TaskManagers log into the same directory
    (logs / "driver.out.1").write_text("the user's data\n")

    def scenario(url, dispatcher):
        config = {e["key"]: e["value"] for e in requests.get(f"{url}/jobmanager/config", timeout=5).json()}
        assert config == {"parallelism.default": "4", "s3.secret-key": "******"}
        names = [entry["name"] for entry in requests.get(f"{url}/jobmanager/logs", timeout=5).json()["logs"]]
        assert names == ["jobmanager.log", "tm-1.log"], "the program's output is not listed"
        assert requests.get(f"{url}/jobmanager/log", timeout=5).text == "INFO up\n"
        assert requests.get(f"{url}/jobmanager/logs/driver.out.1", timeout=5).status_code == 404
        assert requests.get(f"{url}/jobmanager/logs/..%2Fsecret", timeout=5).status_code == 404
        assert requests.get(f"{url}/jobmanager/stdout", timeout=5).text == "", "no stdout file yet: empty, not an error"
        environment = requests.get(f"{url}/jobmanager/environment", timeout=5).json()
        assert environment["jvm"]["version"].startswith("Python 3.") and isinstance(environment["classpath"], list)
        threads = requests.get(f"{url}/jobmanager/thread-dump", timeout=5).json()["threadInfos"]
        assert any(t["threadName"] == "MainThread" and "\tat " in t["stringifiedThreadInfo"] for t in threads)
        manager = requests.get(f"{url}/taskmanagers/tm-1", timeout=5).json()
        assert manager["memoryConfiguration"]["taskHeap"] == 512 << 20 and manager["metrics"]["heapUsed"] == 0
        assert requests.get(f"{url}/taskmanagers/tm-2", timeout=5).status_code == 404
        for path in ("/jobmanager/profiler", "/taskmanagers/tm-1/profiler"):
            off = requests.get(f"{url}{path}", timeout=5)
            assert off.status_code == 404 and off.headers["Content-Type"].startswith("text/plain"), "off, without an error popup"

    with_endpoint(scenario, configuration={"parallelism.default": "4", "s3.secret-key": "hidden"}, log_dir=logs)


class OneTaskManagersLogs:
    """The ResourceManager's part in a TaskManager's logs, for the TaskExecutor ``logs`` (its real files):
    any other id is not registered; ``answering=False``: it does not answer (the ask timed out)."""

    def __init__(self, logs: TaskExecutorLogs, answering: bool = True) -> None:
        self.logs, self.answering = logs, answering

    def _check(self, resource_id: str) -> None:
        if resource_id != self.logs.resource_id:
            raise UnknownTaskExecutorError(f"TaskManager {resource_id} is not registered (it may have ended)")
        if not self.answering:
            raise RpcError("call taskexecutor.request_log_list at http://127.0.0.1:1 failed: TimeoutError()")

    async def request_task_manager_log_list(self, resource_id: str) -> list[dict]:
        self._check(resource_id)
        return self.logs.log_list()

    async def request_task_manager_log_file(self, resource_id: str, name: str | None) -> dict | None:
        self._check(resource_id)
        text = self.logs.read(name, max_bytes=64)
        return text.to_dict() if text is not None else None


def test_a_task_managers_logs_are_its_task_executors_files_and_a_gone_one_is_a_clear_404(tmp_path):
    logs = tmp_path / "log"  # laid out as on local: one directory for the JobManager and every TaskManager
    executor = logs / "tm-1-work" / "app-20250101000000-0000" / "0"
    executor.mkdir(parents=True)
    (logs / "tm-1.log").write_text("INFO registered at the ResourceManager\n")
    (logs / "spark-worker-tm-1.log").write_text("INFO Worker: Successfully registered with master\n" * 4)
    (executor / "stderr").write_text("INFO Executor: Running task 0.0\n")
    (executor / "stdout").write_text("what the program's functions print\n")
    (logs / "driver.out").write_text("the user's data\n")
    source = OneTaskManagersLogs(TaskExecutorLogs(logs, "tm-1", logs / "tm-1.log", "h"))
    executor_log = "spark-executor-0-app-20250101000000-0000.stderr"

    def scenario(url, dispatcher):
        listed = requests.get(f"{url}/taskmanagers/tm-1/logs", timeout=5).json()["logs"]
        assert [e["name"] for e in listed] == ["tm-1.log", "spark-worker-tm-1.log", executor_log]
        assert all(isinstance(e["size"], int) and e["mtime"] > 1_600_000_000_000 for e in listed), "bytes, ms"
        own = requests.get(f"{url}/taskmanagers/tm-1/log", timeout=5)
        assert own.text == "INFO registered at the ResourceManager\n" and own.headers["Content-Type"].startswith("text/plain")
        assert requests.get(f"{url}/taskmanagers/tm-1/logs/{executor_log}", timeout=5).text == "INFO Executor: Running task 0.0\n"
        worker = requests.get(f"{url}/taskmanagers/tm-1/logs/spark-worker-tm-1.log", timeout=5).text
        note, _, _ = worker.partition("\n")
        assert note.startswith("[jobcluster: the first ") and note.endswith(f"{logs / 'spark-worker-tm-1.log'} on h]"), note
        assert worker.endswith("INFO Worker: Successfully registered with master\n"), "its end, from a whole line on"
        for private in ("driver.out", "stdout", "..%2Fdriver.out", "tm-2.log"):
            assert requests.get(f"{url}/taskmanagers/tm-1/logs/{private}", timeout=5).status_code == 404, private
        gone = requests.get(f"{url}/taskmanagers/tm-2/logs", timeout=5)
        assert gone.status_code == 404 and gone.json() == {"errors": ["TaskManager tm-2 is not registered (it may have ended)"]}
        assert requests.get(f"{url}/taskmanagers/tm-2/log", timeout=5).status_code == 404
        source.answering = False
        silent = requests.get(f"{url}/taskmanagers/tm-1/log", timeout=5)
        assert silent.status_code == 503 and "did not hand out its logs" in silent.json()["errors"][0]

    with_endpoint(scenario, task_manager_logs=source, log_dir=logs)


def test_a_checkpoints_details_are_its_committed_micro_batch_under_the_programs_vertex():
    dispatcher = StandInDispatcher()
    history = [{"batchId": 7, "triggerTime": 1000, "durationMs": 250, "numInputRows": 20, "stateBytes": 4096}]
    dispatcher.queries = [{"id": "q", "name": "wordcount", "committedBatchId": 7, "checkpoint": "file:/cp/wordcount", "history": history}]

    def scenario(url, dispatcher):
        details = requests.get(f"{url}/jobs/{JOB_ID}/checkpoints/details/7", timeout=5).json()
        assert (details["id"], details["status"], details["external_path"]) == (7, "COMPLETED", "file:/cp/wordcount/commits/7")
        task = details["tasks"][VERTEX_ID]
        assert (task["state_size"], task["num_subtasks"], task["num_acknowledged_subtasks"]) == (4096, 4, 4)
        assert requests.get(f"{url}/jobs/{JOB_ID}/checkpoints/details/8", timeout=5).status_code == 404

    with_endpoint(scenario, dispatcher)


def test_the_module_that_fetches_the_dashboard_runs_alone_as_the_image_build_runs_it(tmp_path):
    # entrypoints/Dockerfile copies dashboard.py alone and runs it before jobcluster is installed: it imports nothing of it
    source = Path(dashboard.__file__).read_text()
    imported = {
        alias.name if isinstance(node, ast.Import) else node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [node])
    }
    assert not [name for name in imported if name and name.startswith("jobcluster")], imported
    assert "COPY operator/jobcluster/runtime/rest/dashboard.py" in (Path(__file__).parents[2] / "entrypoints" / "Dockerfile").read_text()


def test_flink_2_3s_dashboard_is_served_by_default_and_1_20s_is_one_option_away(tmp_path):
    assert dashboard.FLINK_WEB_VERSION == "2.3.0" and set(dashboard.FLINK_WEB_RELEASES) == {"2.3.0", "1.20.3"}
    assert all(re.fullmatch("[0-9a-f]{64}", digest) for digest in dashboard.FLINK_WEB_RELEASES.values()), "SHA-256 pins"
    # the option's choices and default are the module's pins (the module names the option: it imports nothing of jobcluster)
    assert options.WEB_DASHBOARD_VERSION.key == dashboard.VERSION_OPTION
    assert set(options.WEB_DASHBOARD_VERSION.choices or ()) == set(dashboard.FLINK_WEB_RELEASES)
    assert options.WEB_DASHBOARD_VERSION.default == dashboard.FLINK_WEB_VERSION
    env = {"JOBCLUSTER_CACHE": str(tmp_path)}
    assert dashboard.default_dashboard_dir(env) == tmp_path / "flink-runtime-web-2.3.0" / "web"
    assert dashboard.default_dashboard_dir(env, "1.20.3") == tmp_path / "flink-runtime-web-1.20.3" / "web"
    assert dashboard.dashboard_url("1.20.3").endswith("/org/apache/flink/flink-runtime-web/1.20.3/flink-runtime-web-1.20.3.jar")
    with pytest.raises(ValueError, match=r"jobcluster\.web\.dashboard-version '1\.19\.0' is not a pinned dashboard"):
        dashboard.default_dashboard_dir(env, "1.19.0")


def test_the_fetch_command_fetches_every_pinned_release_or_the_one_asked_for(monkeypatch, capsys, tmp_path):
    fetched: list[tuple[Path | None, str | None]] = []

    def fetch(directory=None, url=None, sha256=None, version=None):
        fetched.append((directory, version))
        return tmp_path / str(version)

    monkeypatch.setattr(dashboard, "fetch_dashboard", fetch)
    assert dashboard.main([]) == 0 and fetched == [(None, "2.3.0"), (None, "1.20.3")], "make venv and the image: both"
    assert capsys.readouterr().out.split() == [str(tmp_path / "2.3.0"), str(tmp_path / "1.20.3")]
    fetched.clear()
    assert dashboard.main(["--version", "1.20.3"]) == 0 and fetched == [(None, "1.20.3")]
    fetched.clear()
    assert dashboard.main([str(tmp_path / "web")]) == 0 and fetched == [(tmp_path / "web", "2.3.0")], "a folder: one release"
    with pytest.raises(SystemExit):
        dashboard.main(["--version", "1.19.0"])
