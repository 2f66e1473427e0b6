"""`jobcluster run -t yarn-per-job` through the CLI, against the real YARN and HDFS of the test cluster.

Every test ends with no application of type ``jobcluster`` active and no staging directory left
(fixture ``yarn_clean``). The Python environment is packed and uploaded by the first deployment
of the session (and cached on this machine across sessions), as it is for a user.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.staging import STAGING_ROOT, HdfsPaths
from jobcluster.backends.yarn.yarn_client import YarnClient
from jobcluster.config.loader import load_configuration
from jobcluster.memory.jobmanager import job_manager_process_spec_from_config
from jobcluster.memory.size import MiB
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.runtime.rest.dashboard import FLINK_WEB_VERSION
from tests.e2e.support import memory_error_cause, run_timing_stderr
from tests.e2e.test_web_dashboard import KNOWN_MISSING, SPARK_UI_LINK
from tests.infra.hadoop.cluster import HadoopCluster
from tests.integration.hadoop.test_wordcount_hdfs import CORPUS, count_words
from tests.integration.hadoop.test_yarn_client import hadoop_conf, paths, yarn  # noqa: F401 - fixtures
from tests.support.browser import Browser, headless_chromium
from tests.support.ports import free_port_block

pytestmark = pytest.mark.hadoop

REPO = Path(__file__).resolve().parents[3]
PROGRAMS = REPO / "tests" / "e2e" / "programs"
WORDCOUNT = REPO / "examples" / "wordcount.py"
JOB_TIMEOUT = 900.0
"""Seconds one CLI call may take; the first deployment of a session packs and uploads the environment."""


def staged_applications(paths: HdfsPaths) -> list[str]:  # noqa: F811
    root = f"{paths.staging_base(None)}/{STAGING_ROOT}"
    if paths.client.status(root, strict=False) is None:
        return []
    return [name for name in paths.client.list(root) if name.startswith("application_")]


@pytest.fixture
def yarn_clean(yarn: YarnClient, paths: HdfsPaths) -> Iterator[None]:  # noqa: F811
    """After the test: no jobcluster application active and no staging directory left (both are failures, and
    both are removed)."""
    yield
    deadline = time.monotonic() + 30
    active = [r.application_id for r in yarn.applications(["jobcluster"])]
    while active and time.monotonic() < deadline:
        time.sleep(1)
        active = [r.application_id for r in yarn.applications(["jobcluster"])]
    for application_id in active:
        yarn.kill(application_id)
    staged = staged_applications(paths)
    for name in staged:  # so that one test's leftovers fail that test, not every test after it
        paths.client.delete(f"{paths.staging_base(None)}/{STAGING_ROOT}/{name}", recursive=True)
    assert active == [], f"applications left active: {active}"
    assert staged == [], f"staging directories left: {staged}"


@pytest.fixture(scope="module")
def cli_env(hadoop_cluster: HadoopCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")}
    return {**env, "HADOOP_CONF_DIR": str(hadoop_cluster.hadoop_conf_dir), "JOBCLUSTER_HOME": str(tmp_path_factory.mktemp("home"))}


def cli(env: dict[str, str], *args: str, timeout: float = JOB_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jobcluster", *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO)


def application_id_in(text: str) -> str:
    match = re.search(r"application_\d+_\d+", text)
    assert match, f"no application id in:\n{text}"
    return match.group(0)


def job_id_in(text: str) -> str:
    match = re.search(r"JobID ([0-9a-f]{32})", text)
    assert match, f"no JobID in:\n{text}"
    return match.group(1)


def wait_for(condition, what: str, timeout: float = 300.0, interval: float = 1.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def node_containers(hadoop_conf: HadoopConfiguration, application_id: str) -> dict[str, int]:  # noqa: F811
    """The application's running containers as the NodeManager reports them: id -> memory in MiB."""
    address = hadoop_conf.get("yarn.nodemanager.webapp.address")
    body = requests.get(f"http://{address}/ws/v1/node/containers", headers={"Accept": "application/json"}, timeout=10).json()
    containers = (body.get("containers") or {}).get("container") or []
    return {
        c["id"]: int(c["totalMemoryNeededMB"]) for c in containers if application_id.split("_", 1)[1] in c["id"] and c["state"] == "RUNNING"
    }


def test_configuration_errors_are_refused_before_anything_runs(
    cli_env: dict[str, str],
    hadoop_cluster: HadoopCluster,
    tmp_path: Path,
    yarn_clean: None,
) -> None:
    program = str(PROGRAMS / "waits.py")
    unset = {k: v for k, v in cli_env.items() if k != "HADOOP_CONF_DIR"}
    result = cli(unset, "run", "-t", "yarn-per-job", program)
    assert result.returncode == 1 and "HADOOP_CONF_DIR" in result.stderr, result.stderr

    empty = tmp_path / "empty-conf"
    empty.mkdir()
    result = cli({**cli_env, "HADOOP_CONF_DIR": str(empty)}, "run", "-t", "yarn-per-job", program)
    assert result.returncode == 1 and "holds none of" in result.stderr, result.stderr

    # A ResourceManager that does not answer: the same configuration with a closed port.
    unreachable = tmp_path / "unreachable-conf"
    unreachable.mkdir()
    for site in hadoop_cluster.hadoop_conf_dir.glob("*.xml"):
        text = site.read_text()
        text = text.replace(hadoop_cluster.resourcemanager_address, "127.0.0.1:9")
        (unreachable / site.name).write_text(text)
    # Given as env.hadoop.conf.dir, which goes before the (working) HADOOP_CONF_DIR of the environment.
    started = time.monotonic()
    result = cli(cli_env, "run", "-t", "yarn-per-job", "-D", f"env.hadoop.conf.dir={unreachable}", program)
    assert result.returncode == 1 and "127.0.0.1:9" in result.stderr, result.stderr
    assert time.monotonic() - started < 60, "an unreachable ResourceManager must be reported within about 30 s"

    # Larger than YARN's maximum container: the message names the option to lower.
    result = cli(cli_env, "run", "-t", "yarn-per-job", "-D", "taskmanager.memory.process.size=64g", program)
    assert result.returncode == 1, result.stderr
    assert "maximum container memory" in result.stderr and "taskmanager.memory.process.size" in result.stderr, result.stderr

    # A queue the scheduler does not know: YARN refuses the application, which leaves nothing behind.
    result = cli(cli_env, "run", "-t", "yarn-per-job", "-D", "yarn.application.queue=no-such-queue", program)
    assert result.returncode == 1, result.stderr
    assert "no-such-queue" in result.stderr and "Error:" in result.stderr, result.stderr


@pytest.mark.browser
def test_detached_run_container_sizes_dashboard_list_and_cancel(
    cli_env: dict[str, str],
    yarn: YarnClient,  # noqa: F811
    hadoop_conf: HadoopConfiguration,  # noqa: F811
    hadoop_cluster: HadoopCluster,
    paths: HdfsPaths,  # noqa: F811
    browser_artefacts: Path,
    yarn_clean: None,
) -> None:
    settings = ("-D", "taskmanager.numberOfTaskSlots=2", "-D", "yarn.tags=Nightly,team-a")
    # the containers' Java, per job, other than the NodeManager's (Flink's containerized.*.env.* on YARN)
    java_home = other_java_home(hadoop_cluster)
    settings += ("-D", f"containerized.master.env.JAVA_HOME={java_home}", "-D", f"containerized.taskmanager.env.JAVA_HOME={java_home}")
    # the REST port in a range a firewall could open (Flink's rest.bind-port), not any free port of the node
    ports = free_port_block(20)
    settings += ("-D", f"rest.bind-port={ports[0]}-{ports[-1]}")
    result = cli(cli_env, "run", "-t", "yarn-per-job", "-d", "-p", "4", *settings, str(PROGRAMS / "waits.py"), "600")
    assert result.returncode == 0, result.stderr
    application, job_id = application_id_in(result.stderr), job_id_in(result.stdout)
    assert f"jobcluster cancel {job_id}" in result.stdout
    assert "ACCEPTED in queue default" in result.stderr and "RUNNING" in result.stderr, result.stderr

    report = yarn.report(application)
    assert report.application_type == "jobcluster" and report.name == "waits"
    assert ports[0] <= report.rpc_port <= ports[-1], report
    assert {"nightly", "team-a", f"jobcluster-job-id:{job_id}"} <= set(report.tags)

    # Two TaskExecutor containers of exactly the memory model's size, the ApplicationMaster of the
    # JobManager's (rounded up to YARN's minimum allocation of 256 MiB), as the NodeManager runs them.
    config = load_configuration(None, {"taskmanager.numberOfTaskSlots": "2"})  # the shipped defaults, as the CLI read them
    tm_mib = task_executor_process_spec_from_config(config).total_process // MiB
    jm_mib = job_manager_process_spec_from_config(config).total_process // MiB
    containers = wait_for(lambda: (c := node_containers(hadoop_conf, application)) and len(c) == 3 and c, "3 containers")
    am = next(cid for cid in containers if cid.endswith("_000001"))
    assert containers.pop(am) == -(-jm_mib // 256) * 256
    assert sorted(containers.values()) == [tm_mib, tm_mib]
    # every JVM of the job on that Java: the driver and the YARN client in the ApplicationMaster, a Spark worker and
    # its executor in each TaskExecutor's container
    jvms = wait_for(lambda: (j := container_jvms(application)) and len(j) == 3 and all(len(e) >= 2 for e in j.values()) and j, "the JVMs")
    assert {exe for exes in jvms.values() for exe in exes} == {os.path.join(java_home, "bin", "java")}, jvms

    # the dashboard went to HDFS once, for every job: an archive named by its content, readable by all (PUBLIC)
    (shared,) = paths.client.list(f"{paths.staging_base(None)}/{STAGING_ROOT}/dashboard", status=True)
    assert shared[0].startswith(f"flink-web-{FLINK_WEB_VERSION}-") and shared[1]["permission"] == "644", shared
    _dashboard_and_task_manager_logs_through_yarns_proxy(hadoop_cluster, application, job_id, browser_artefacts)

    listed = cli(cli_env, "list", "-t", "yarn-per-job")
    assert listed.returncode == 0, listed.stderr
    other = cli(cli_env, "list", "-t", "yarn-per-job", "-D", "yarn.application.id=application_1_0001")  # Flink's -yid
    assert other.returncode == 0 and job_id not in other.stdout, other.stdout
    line = next((line for line in listed.stdout.splitlines() if job_id in line), None)
    assert line is not None and application in line and re.search(r"\b(CREATED|RUNNING)\b", line), listed.stdout
    assert "http://" in line, "the REST URL the ApplicationMaster registered"

    cancelled = cli(cli_env, "cancel", job_id, "-t", "yarn-per-job")
    assert cancelled.returncode == 0, cancelled.stderr
    ended = yarn.follow(application, timeout=120)
    assert (ended.state, ended.final_status) == ("FINISHED", "KILLED"), ended

    unknown = cli(cli_env, "cancel", job_id, "-t", "yarn-per-job")
    assert unknown.returncode == 1 and "no running job" in unknown.stderr, unknown.stderr


def test_application_killed_through_yarn_while_attached(
    cli_env: dict[str, str],
    yarn: YarnClient,  # noqa: F811
    yarn_clean: None,
) -> None:
    # With a Python present on every node (here: this one), nothing is packed or shipped;
    # a local:// program is on every node too: it runs where it is, not staged.
    python = ("-D", f"python.executable={sys.executable}")
    program = f"local://{PROGRAMS / 'waits.py'}"
    argv = [sys.executable, "-m", "jobcluster", "run", "-t", "yarn-per-job", "-p", "1", *python, program, "600"]
    with subprocess.Popen(argv, env=cli_env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as client:
        assert client.stderr is not None
        seen = []
        for line in client.stderr:
            seen.append(line)
            if re.search(r"Spark \S+: [1-9]\d*/\d+ Spark jobs", line):  # the program runs
                break
        else:
            pytest.fail("".join(seen))
        application = application_id_in("".join(seen))
        assert not any("Python environment" in line for line in seen), "".join(seen)
        yarn.kill(application)
        try:
            rest = client.stderr.read()
            code = client.wait(timeout=120)
        finally:
            client.kill()
    assert code == 1, rest
    assert f"YARN application {application} KILLED" in rest, rest


# -- WordCount on HDFS, and the faults a job cluster on YARN survives -------------------------------------


@pytest.fixture(scope="module")
def hdfs_corpus(paths: HdfsPaths, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Counter[str]]:  # noqa: F811
    """A corpus on HDFS (the tricky files of test_wordcount_hdfs plus a slice of the real corpus), and its counts."""
    files = dict(CORPUS)
    real = Path(os.environ.get("JOBCLUSTER_CORPUS") or Path(json.__file__).parent)
    for path in sorted(p for p in real.rglob("*") if p.is_file())[:40]:
        files[f"real/{path.relative_to(real)}"] = path.read_bytes()
    root = f"{paths.staging_base(None)}/wordcount-corpus"
    expected: Counter[str] = Counter()
    for name, data in files.items():
        paths.client.write(f"{root}/{name}", data=data, overwrite=True)
        expected += count_words(data)
    return paths.qualify(root), expected


def hdfs_word_counts(paths: HdfsPaths, output: str) -> Counter[str]:  # noqa: F811
    counts: Counter[str] = Counter()
    directory = urlsplit(output).path
    for name in paths.client.list(directory):
        if name.startswith("part-"):
            with paths.client.read(f"{directory}/{name}", encoding="utf-8") as reader:
                for line in reader.read().splitlines():
                    word, count = line.rsplit("\t", 1)
                    assert word not in counts, f"{word!r} twice in the output"
                    counts[word] = int(count)
    return counts


def pmem_kills(hadoop_cluster: HadoopCluster, application_id: str) -> list[str]:
    """The NodeManager's lines about containers of the application killed for exceeding their memory."""
    log = (hadoop_cluster.log_dir / "nodemanager.log").read_text(errors="replace")
    suffix = application_id.split("_", 1)[1]
    return [line for line in log.splitlines() if suffix in line and "beyond the 'PHYSICAL' memory limit" in line]


@pytest.mark.spark35
def test_wordcount_on_hdfs_with_exact_counts(
    cli_env: dict[str, str],
    hadoop_cluster: HadoopCluster,
    hdfs_corpus: tuple[str, Counter[str]],
    paths: HdfsPaths,  # noqa: F811
    yarn_clean: None,
) -> None:
    corpus, expected = hdfs_corpus
    output = f"{paths.qualify(paths.staging_base(None))}/wordcount-out"
    python_dir = f"{paths.staging_base(None)}/{STAGING_ROOT}/python"
    expired = plant_shared_file(paths, f"{python_dir}/python-env-expired.tar.gz", unused_days=8)  # > the 7 d retention
    slots = ("-D", "taskmanager.numberOfTaskSlots=2")
    result = cli(cli_env, "run", "-t", "yarn-per-job", "-p", "4", *slots, str(WORDCOUNT), "--input", corpus, "--output", output)
    assert result.returncode == 0, result.stderr
    application = application_id_in(result.stderr)
    assert f"YARN application {application} FINISHED with final status SUCCEEDED" in result.stderr, result.stderr
    assert len(re.findall(r"TaskExecutor container_\S+ registered: 2 slots", result.stderr)) == 2, result.stderr
    assert "distinct. Top" in result.stdout, "the program's own stdout reached the client"
    assert hdfs_word_counts(paths, output) == expected
    assert pmem_kills(hadoop_cluster, application) == []

    # The environment went in its parts (the Spark workers imported pyspark and jobcluster from them), and the
    # deployment removed the archive no job used for longer than the retention.
    shipped = paths.client.list(python_dir)
    for prefix in ("python-env-", "pyspark-", "jobcluster-"):
        assert any(name.startswith(prefix) for name in shipped), shipped
    assert expired.rsplit("/", 1)[1] not in shipped

    # `jobcluster prune` removes what no job used for --older-than, and keeps what this job used.
    unused = plant_shared_file(paths, f"{python_dir}/pyspark-0.0-unused.tar", unused_days=1)
    pruned = cli(cli_env, "prune", "-t", "yarn-per-job", "--older-than", "1 h")
    assert pruned.returncode == 0, pruned.stderr
    assert f"Removed {paths.qualify(unused)}" in pruned.stdout, pruned.stdout
    assert sorted(paths.client.list(python_dir)) == sorted(shipped)


def plant_shared_file(paths: HdfsPaths, remote: str, unused_days: float) -> str:  # noqa: F811
    """A shared file that a job last used ``unused_days`` ago (its access time, which retention reads)."""
    paths.client.write(remote, data=b"old archive", overwrite=True, permission="644")
    paths.client.set_times(remote, access_time=int((time.time() - unused_days * 86400) * 1000))
    return remote


def test_missing_input_fails_the_job_with_the_programs_error(
    cli_env: dict[str, str],
    paths: HdfsPaths,  # noqa: F811
    yarn_clean: None,
) -> None:
    missing = f"{paths.qualify(paths.staging_base(None))}/no-such-corpus"
    result = cli(cli_env, "run", "-t", "yarn-per-job", "-p", "1", str(WORDCOUNT), "--input", missing, "--output", missing + "-out")
    assert result.returncode == 1, result.stderr
    assert "no-such-corpus does not exist" in result.stderr, result.stderr
    application = application_id_in(result.stderr)
    # YARN's own view carries the job's end and the program's error (the ApplicationMaster's diagnostics)
    yarn_view = f"YARN application {application} FINISHED with final status FAILED: job [0-9a-f]{{32}} FAILED: .*no-such-corpus"
    assert re.search(yarn_view, result.stderr, re.DOTALL), result.stderr


def other_java_home(hadoop_cluster: HadoopCluster) -> str:
    """A JDK of this machine other than the one the NodeManager runs on (and passes on to containers)."""
    nodemanager = os.path.realpath(hadoop_cluster.java_home)
    others = sorted(str(p) for p in Path("/usr/lib/jvm").glob("*") if (p / "bin" / "java").is_file() and os.path.realpath(p) != nodemanager)
    if not others:
        pytest.skip(f"no Java but the NodeManager's ({nodemanager}) under /usr/lib/jvm")
    return os.path.realpath(others[-1])


def container_jvms(application_id: str) -> dict[str, list[str]]:
    """The executables of the JVMs running in each container of the application, by container id.

    Fresh Process objects each call: process_iter's keep a process's name and executable from when they were
    first read, which for a process caught between fork and exec (a JVM starting another) are its parent's."""
    suffix = f"_{application_id.split('_', 1)[1]}_"
    found: dict[str, list[str]] = {}
    for pid in psutil.pids():
        try:
            proc = psutil.Process(pid)
            container, exe = proc.environ().get("CONTAINER_ID", ""), proc.exe()
        except psutil.Error:
            continue
        if suffix in container and os.path.basename(exe) == "java":
            found.setdefault(container, []).append(exe)
    return found


def container_process(application_id: str, container_suffix: str, module: str) -> psutil.Process:
    """The jobcluster process running ``module`` in the application's container ``..._<container_suffix>``."""
    wanted = f"{application_id.split('_', 1)[1]}_{container_suffix}"
    for proc in psutil.process_iter(["cmdline", "environ"]):
        try:
            env = proc.info["environ"] or {}
            if env.get("CONTAINER_ID", "").endswith(wanted) and module in " ".join(proc.info["cmdline"] or []):
                return proc
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    raise AssertionError(f"no process of {module} in container {wanted}")


def follow_until(client: subprocess.Popen[str], pattern: str, seen: list[str]) -> re.Match[str]:
    assert client.stderr is not None
    for line in client.stderr:
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return match
    pytest.fail(f"the client ended before {pattern!r}:\n{''.join(seen)}")


def test_killed_task_executor_and_application_master_are_replaced_with_exact_counts(
    cli_env: dict[str, str],
    hdfs_corpus: tuple[str, Counter[str]],
    paths: HdfsPaths,  # noqa: F811
    yarn: YarnClient,  # noqa: F811
    yarn_clean: None,
) -> None:
    """One attached run, two faults: a TaskExecutor's process killed mid-job (YARN reports its container
    completed, the ResourceManager starts another), then the ApplicationMaster's (YARN starts a second attempt,
    which runs the job again; the client follows it to its new REST address). The counts are still exact."""
    corpus, expected = hdfs_corpus
    output = f"{paths.qualify(paths.staging_base(None))}/wordcount-faults-out"
    argv = [sys.executable, "-m", "jobcluster", "run", "-t", "yarn-per-job", "-p", "2", "-D", "taskmanager.numberOfTaskSlots=1"]
    argv += ["-D", "yarn.application-attempts=2", "--py-files", str(WORDCOUNT), str(PROGRAMS / "slow_wordcount.py")]
    argv += ["--input", corpus, "--output", output, "--delay", "4"]
    seen: list[str] = []
    with subprocess.Popen(argv, env=cli_env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as client:
        try:
            follow_until(client, r"Spark app-\S+: .* [1-9]\d* executors", seen)
            application = application_id_in("".join(seen))
            container_process(application, "01_000002", "jobcluster.runtime.taskexecutor").kill()
            follow_until(client, r"TaskExecutor container_\S+_01_00000[4-9] registered", seen)
            follow_until(client, r"Spark app-\S+: .* [1-9]\d* executors", seen)
            container_process(application, "01_000001", "jobcluster.backends.yarn.entrypoint").kill()
            follow_until(client, r"TaskExecutor container_\S+_02_\d+ registered", seen)
            _, rest = client.communicate(timeout=JOB_TIMEOUT)
        finally:
            client.kill()
    assert client.returncode == 0, "".join(seen) + rest
    assert f"YARN application {application} FINISHED with final status SUCCEEDED" in rest, rest
    assert hdfs_word_counts(paths, output) == expected


def test_memory_heavy_job_stays_inside_its_containers(
    cli_env: dict[str, str],
    hadoop_cluster: HadoopCluster,
    yarn_clean: None,
) -> None:
    """Python objects, cached blocks and a shuffle under the shipped configuration, with YARN's physical-memory
    check on: the job finishes with its exact result and YARN killed no container for memory."""
    program = PROGRAMS / "memory_heavy.py"
    spec = importlib.util.spec_from_file_location("memory_heavy", program)
    assert spec is not None and spec.loader is not None
    memory_heavy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(memory_heavy)
    records, checksum = memory_heavy.expected(8, 24)

    result = cli(cli_env, "run", "-t", "yarn-per-job", "-p", "4", "-D", "taskmanager.numberOfTaskSlots=2", str(program))
    assert result.returncode == 0, result.stderr
    assert f"RESULT {records} {checksum}" in result.stdout, result.stdout
    application = application_id_in(result.stderr)
    assert f"YARN application {application} FINISHED with final status SUCCEEDED" in result.stderr, result.stderr
    assert pmem_kills(hadoop_cluster, application) == []


def test_a_python_task_past_its_pyspark_workers_limit_fails_with_memory_error_and_no_container_is_killed(
    cli_env: dict[str, str],
    hadoop_cluster: HadoopCluster,
    yarn_clean: None,
) -> None:
    """Issue 27's program with the shipped sizes (-p 2, 2 slots, YARN's physical-memory check on): each Python task
    fills 1,000 MiB, past the 268 MiB a PySpark worker may use. The tasks fail in seconds with Python's MemoryError,
    the job's cause (and YARN's diagnostics) says which options raise the limit, the one TaskExecutor container is
    never replaced, and YARN killed no container for memory."""
    argv = [sys.executable, "-m", "jobcluster", "run", "-t", "yarn-per-job", "-p", "2", "-D", "taskmanager.numberOfTaskSlots=2"]
    stderr, _ = memory_error_cause(*run_timing_stderr([*argv, str(PROGRAMS / "python_memory_hog.py"), "--mib", "1000"], cli_env))
    application = application_id_in(stderr)
    yarn_view = f"YARN application {application} FINISHED with final status FAILED: .*MemoryError\nA PySpark worker ran out"
    assert re.search(yarn_view, stderr, re.DOTALL), stderr
    assert len(re.findall(r"TaskExecutor container_\S+ registered", stderr)) == 1, stderr
    assert pmem_kills(hadoop_cluster, application) == []


PAGE_TIMEOUT = 60  # seconds for a dashboard page to show what it must (it polls every 3 s; the machine is busy)


def _dashboard_and_task_manager_logs_through_yarns_proxy(
    hadoop_cluster: HadoopCluster, application: str, job_id: str, artefacts: Path
) -> None:
    """Flink's web dashboard, which the client shipped, through YARN's web proxy (in the ResourceManager) at the
    tracking URL YARN gives for the application, opened without its final slash as a user may type it; and a
    TaskManager's logs, which its TaskExecutor hands out, through the same proxy."""
    rm = hadoop_cluster.resourcemanager_web_url
    app = requests.get(f"{rm}/ws/v1/cluster/apps/{application}", headers={"Accept": "application/json"}, timeout=10).json()["app"]
    tracking = app["trackingUrl"]
    assert urlsplit(tracking).path == f"/proxy/{application}/", tracking

    managers = wait_for(
        lambda: len(found := requests.get(f"{tracking}taskmanagers", timeout=10).json()["taskmanagers"]) == 2 and found,
        "both TaskManagers through the proxy",
        timeout=60,
    )
    manager = managers[0]["id"]

    def listed() -> list[str]:
        return [entry["name"] for entry in requests.get(f"{tracking}taskmanagers/{manager}/logs", timeout=10).json()["logs"]]

    # its own log (the container's stderr), its Spark worker's, and, once Spark started them, its executors' stderr
    names = wait_for(lambda: (names := listed()) and names[-1].startswith("spark-executor-") and names, "an executor's log", 120)
    assert names[:2] == ["taskmanager.err", f"spark-worker-{manager}.log"], names
    own = requests.get(f"{tracking}taskmanagers/{manager}/log", timeout=10)
    assert own.headers["Content-Type"].startswith("text/plain") and "registered at the ResourceManager" in own.text, own.text[-2000:]
    executor = requests.get(f"{tracking}taskmanagers/{manager}/logs/{names[-1]}", timeout=10).text
    assert "CoarseGrainedExecutorBackend" in executor, executor[-2000:]

    # YARN's proxy passes the endpoint's answers with their types (Jetty respells them): the page, its ES modules, JSON
    def media_type(url: str) -> str:
        return requests.get(url, timeout=10).headers["Content-Type"].split(";")[0].strip()

    index = requests.get(tracking, timeout=10).text
    module = re.search(r'<script src="(main\.[0-9a-f]+\.js)" type="module">', index).group(1)
    assert media_type(tracking) == "text/html" and media_type(f"{tracking}config") == "application/json"
    assert media_type(f"{tracking}{module}") in ("application/javascript", "text/javascript"), "what a module script needs"

    def before_the_slash(url: str) -> bool:
        # the page opened at /proxy/<application>: Chromium's preload scanner asks for its module scripts one level up
        # (/proxy/runtime.<hash>.js, which YARN's proxy refuses, 500) before the page's first script moves it to .../
        # (and jobcluster's own script: /proxy/jobcluster/spark-ui-link.js)
        path = urlsplit(url).path
        return path.startswith("/proxy/") and path != f"/proxy/{application}" and not path.startswith(f"/proxy/{application}/")

    with headless_chromium(artefacts) as browser:
        browser.open(tracking.rstrip("/"))
        browser.wait_for_text("Running Jobs", PAGE_TIMEOUT)
        browser.wait_for_text("waits", PAGE_TIMEOUT)
        assert urlsplit(browser.driver.current_url).path == f"/proxy/{application}/", browser.driver.current_url
        browser.open(f"{tracking}?page=job#/job/running/{job_id}/overview")
        browser.wait_for_text("PySpark: waits.py", PAGE_TIMEOUT)
        browser.wait_for_text("RUNNING", PAGE_TIMEOUT)
        browser.screenshot("yarn-proxy-job")
        _spark_ui_through_yarns_proxy(browser, tracking, application)
        # Flink 2.3's Applications pages (the default dashboard): the job cluster's application, and on its page the job
        browser.open(f"{tracking}?page=applications#/application/running")
        browser.wait_for_text("SingleJobApplication(waits)", PAGE_TIMEOUT)
        browser.open(f"{tracking}?page=application#/application/running/{job_id}")
        browser.wait_for_text(f"Application ID {job_id}", PAGE_TIMEOUT)
        jobs = browser.wait_for_text("Running Job List", PAGE_TIMEOUT).split("Running Job List", 1)[1]
        assert re.search(r"^waits ", jobs, re.M), jobs
        browser.screenshot("yarn-proxy-application")

        errors = [e for e in browser.console_errors() if not before_the_slash(e.message.split(" ", 1)[0])]
        assert errors == [], "the dashboard logged errors"
        failed = [(r.method, r.url, r.status) for r in browser.requests() if r.status is not None and r.status >= 400]
        assert [f for f in failed if not KNOWN_MISSING.search(f[1]) and not before_the_slash(f[1])] == [], "paths not answered"
        asked = browser.paths(tracking)
        assert {"/config", "/overview", "/jobs/overview", f"/jobs/{job_id}", "/spark/", "/spark/executors/"} <= asked, asked
        assert {"/applications/overview", f"/applications/{job_id}"} <= asked, asked
    _jvm_metrics_through_yarns_proxy(tracking, manager)


def _spark_ui_through_yarns_proxy(browser: Browser, tracking: str, application: str) -> None:
    """The job page's link to Spark's UI, behind YARN's proxy: Spark's pages link relative to the URL the browser
    shows, and its Executors page, whose script asks for Spark's API at the proxy's root with YARN's application id,
    lists the driver."""
    link = WebDriverWait(browser.driver, PAGE_TIMEOUT).until(expected_conditions.visibility_of_element_located((By.ID, SPARK_UI_LINK)))
    link.click()
    browser.wait_for_text("Spark Jobs", PAGE_TIMEOUT)
    assert urlsplit(browser.driver.current_url).path == f"/proxy/{application}/spark/", browser.driver.current_url
    browser.driver.find_element(By.LINK_TEXT, "Executors").click()
    driver_row = "//table[@id='active-executors-table']//td[text()='driver']"
    WebDriverWait(browser.driver, PAGE_TIMEOUT).until(expected_conditions.presence_of_element_located((By.XPATH, driver_row)))
    assert urlsplit(browser.driver.current_url).path == f"/proxy/{application}/spark/executors/", browser.driver.current_url
    browser.screenshot("yarn-proxy-spark-executors")


def _jvm_metrics_through_yarns_proxy(tracking: str, manager: str) -> None:
    """The Spark driver's JVM (in the ApplicationMaster's container) and an executor's (in a TaskManager's) report their
    metrics on YARN too."""

    def driver() -> dict[str, int]:
        answer = requests.get(f"{tracking}jobmanager/metrics", params={"get": "Status.JVM.Memory.Heap.Used"}, timeout=10).json()
        return {m["id"]: int(m["value"]) for m in answer}

    assert wait_for(driver, "the driver's JVM metrics", PAGE_TIMEOUT)["Status.JVM.Memory.Heap.Used"] > 0

    def reported() -> dict | None:
        metrics = requests.get(f"{tracking}taskmanagers/{manager}", timeout=10).json()["metrics"]
        return metrics if metrics["heapUsed"] else None

    executor = wait_for(reported, "an executor's JVM metrics", PAGE_TIMEOUT)
    assert 0 < executor["heapUsed"] <= executor["heapMax"]
