"""A client outside the cluster, as a user's machine is: a Python the YARN nodes lack, YARN through its front doors.

The client runs in a mount namespace of its own, from a virtualenv whose base
interpreter (a relocatable copy of this machine's CPython) is mounted only
there: outside, where the NodeManager runs, its path is an empty directory.
So the shipped environment's ``bin/python`` links to nothing on the node, as
for a laptop's pyenv or conda Python against a real cluster; both of PyFlink's
ways must run the job:

- ``python.executable`` naming a Python the nodes have (the tests' own
  virtualenv, with jobcluster and pyspark), nothing shipped. This client is
  also behind a firewall (``tests/support/firewall.py``) that lets it reach the
  ResourceManager's web port and HttpFS and no other TCP port, as a site that
  exposes only those does: it submits through the ResourceManager's REST API
  (``jobcluster.yarn.resourcemanager.api: rest``), stages through HttpFS
  (``jobcluster.yarn.webhdfs.url``) and follows the job through YARN's web
  proxy (``jobcluster.yarn.jobmanager.rest-access: web-proxy``);
- ``python.archives`` shipping the relocatable CPython and ``python.executable``
  pointing into it, the client's environment shipped as usual and run by it.

Behind the same firewall, a streaming job is listed, its dashboard read, a
savepoint taken, stopped with a savepoint, restored from it and cancelled: each
through the web proxy, which forwards only GET and PUT.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobcluster.backends.yarn.staging import HdfsPaths
from jobcluster.backends.yarn.yarn_client import YarnClient
from tests.infra.hadoop.cluster import HadoopCluster
from tests.integration.hadoop.test_wordcount_hdfs import CORPUS, count_words
from tests.integration.hadoop.test_yarn_client import hadoop_conf, paths, yarn  # noqa: F401 - fixtures
from tests.integration.hadoop.test_yarn_job_cluster import (  # noqa: F401 - fixtures
    JOB_TIMEOUT,
    REPO,
    WORDCOUNT,
    application_id_in,
    cli_env,
    hdfs_word_counts,
    job_id_in,
    yarn_clean,
)
from tests.integration.hadoop.test_yarn_job_cluster import wait_for as wait_until
from tests.support.firewall import only_ports

pytestmark = [pytest.mark.hadoop, pytest.mark.firewall]

VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
STREAMING_PROGRAM = REPO / "tests" / "e2e" / "programs" / "streaming_file_sink.py"
SKIPPED_STDLIB = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "site-packages", "dist-packages", "__pycache__")


def relocatable_cpython(target: Path) -> Path:
    """``target/python``: this machine's CPython as a relocatable build lays it out (``bin/python3.X``,
    ``lib/python3.X``), without the test suite and site-packages; Python finds its standard library from where it is."""
    home = target / "python"
    (home / "bin").mkdir(parents=True)
    shutil.copy2(os.path.realpath(sys._base_executable), home / "bin" / f"python{VERSION}")
    os.symlink(f"python{VERSION}", home / "bin" / "python3")
    stdlib = sysconfig.get_paths(vars={"installed_base": sys.base_prefix, "base": sys.base_prefix})["stdlib"]
    shutil.copytree(stdlib, home / "lib" / f"python{VERSION}", symlinks=True, ignore=shutil.ignore_patterns(*SKIPPED_STDLIB))
    return home


@pytest.fixture(scope="module")
def foreign_client(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The relocatable CPython as an archive, the empty mount point of the client's interpreter, and the client's
    virtualenv (made from the interpreter mounted there; its site-packages a hard-linked copy of this one's)."""
    root = tmp_path_factory.mktemp("foreign-python")
    build = relocatable_cpython(root / "build")
    archive = root / f"cpython-{VERSION}.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        tar.add(build, arcname="python")
    mount_point, venv = root / "mnt", root / "client-venv"
    mount_point.mkdir()
    in_namespace(mount_point, build, f"{mount_point}/bin/python{VERSION} -m venv --without-pip {venv}")
    site = venv / "lib" / f"python{VERSION}" / "site-packages"
    subprocess.run(["cp", "-al", f"{sysconfig.get_paths()['purelib']}/.", str(site)], check=True)
    return {"archive": archive, "build": build, "mount_point": mount_point, "python": venv / "bin" / "python"}


def in_namespace(
    mount_point: Path, build: Path, command: str, env: dict[str, str] | None = None, cgroup_procs: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``command`` (bash) in a mount namespace where ``build`` is mounted at ``mount_point``; in the cgroup of
    ``cgroup_procs`` when given (a firewall's)."""
    enter = f"echo $$ > {shlex.quote(str(cgroup_procs))} && " if cgroup_procs else ""
    script = f"{enter}mount --bind {shlex.quote(str(build))} {shlex.quote(str(mount_point))} && exec {command}"
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
        cwd=REPO,
        check=env is None,
    )


@pytest.fixture
def front_doors(hadoop_cluster: HadoopCluster) -> Iterator[tuple[Path, tuple[str, ...]]]:
    """A firewall that lets its processes reach only the ResourceManager's web port and HttpFS (its ``cgroup.procs``),
    and the options of a client behind it; checks that it refuses the ResourceManager's RPC port and HDFS."""
    httpfs = hadoop_cluster.start_httpfs()
    ports = hadoop_cluster.ports
    assert ports is not None
    settings = (
        "-D", "jobcluster.yarn.resourcemanager.api=rest",
        "-D", "jobcluster.yarn.jobmanager.rest-access=web-proxy",
        "-D", f"jobcluster.yarn.webhdfs.url={httpfs}",
    )  # fmt: skip
    with only_ports((ports.rm_webapp, int(httpfs.rsplit(":", 1)[1]))) as procs:
        for refused in (ports.rm_client, ports.namenode_http, ports.datanode_http):
            probe = (
                f"echo $$ > {procs} && exec {sys.executable} -c 'import socket; socket.create_connection((\"127.0.0.1\", {refused}), 5)'"
            )
            result = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
            assert result.returncode != 0 and "ConnectionRefusedError" in result.stderr, f"the firewall lets the client reach {refused}"
        yield procs, settings


def sink_words(output: Path) -> Counter[str]:
    """The words of every file Spark's file sink committed in ``output`` (its ``_spark_metadata`` log)."""
    words = Counter[str]()
    for log in (output / "_spark_metadata").glob("[0-9]*"):
        for entry in log.read_text().splitlines()[1:]:
            if entry:
                data = Path(json.loads(entry)["path"].removeprefix("file:")).read_text()
                words.update(json.loads(row)["word"] for row in data.splitlines() if row)
    return words


def tar_gz_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def run_wordcount(
    client: dict[str, Path], env: dict[str, str], corpus: str, output: str, *settings: str, cgroup_procs: Path | None = None
) -> str:
    argv = [str(client["python"]), "-m", "jobcluster", "run", "-t", "yarn-per-job", "-p", "2", "-D", "taskmanager.numberOfTaskSlots=2"]
    argv += settings
    argv += [str(WORDCOUNT), "--input", corpus, "--output", output]
    result = in_namespace(client["mount_point"], client["build"], shlex.join(argv), env, cgroup_procs)
    assert result.returncode == 0, result.stderr[-5000:]
    application = application_id_in(result.stderr)
    assert f"YARN application {application} FINISHED with final status SUCCEEDED" in result.stderr, result.stderr[-5000:]
    return result.stderr


def test_a_client_python_the_nodes_lack_runs_either_way_and_hdfs_through_httpfs_suffices(
    foreign_client: dict[str, Path],
    cli_env: dict[str, str],  # noqa: F811
    paths: HdfsPaths,  # noqa: F811
    front_doors: tuple[Path, tuple[str, ...]],
    yarn_clean: None,  # noqa: F811
) -> None:
    client_interpreter = foreign_client["mount_point"] / "bin" / f"python{VERSION}"
    assert not client_interpreter.exists(), "the client's interpreter must exist only in its own mount namespace"
    base = paths.qualify(paths.staging_base(None))
    corpus, expected = f"{base}/foreign-python-corpus", Counter[str]()
    for name, data in CORPUS.items():
        paths.client.write(f"{paths.staging_base(None)}/foreign-python-corpus/{name}", data=data, overwrite=True)
        expected += count_words(data)

    # A Python the nodes have (this test suite's virtualenv): nothing is packed or shipped. The client reaches only
    # the ResourceManager's web port and HttpFS: it submits through YARN's REST API, stages through HttpFS and
    # follows the job (its output, its end) through YARN's web proxy.
    procs, doors = front_doors
    node_python = ("-D", f"python.executable={sys.executable}", *doors)
    stderr = run_wordcount(foreign_client, cli_env, corpus, f"{base}/foreign-node-python", *node_python, cgroup_procs=procs)
    assert re.search(r"REST API at http://[^/]+/proxy/application_\d+_\d+", stderr), stderr
    assert "Python environment" not in stderr, stderr
    assert hdfs_word_counts(paths, f"{base}/foreign-node-python") == expected

    # The interpreter shipped as an archive, running the client's shipped environment; beside it an archive that is
    # on HDFS already, registered where it is (every container localizes both, or does not start).
    on_hdfs = f"{paths.staging_base(None)}/archives/extra.tar.gz"
    paths.client.write(on_hdfs, data=tar_gz_of({"extra/README": b"shipped from HDFS\n"}), overwrite=True)
    archives = f"{foreign_client['archive']}#cpython,{paths.qualify(on_hdfs)}#extra"
    archived = ("-D", f"python.archives={archives}", "-D", f"python.executable=cpython/python/bin/python{VERSION}")
    stderr = run_wordcount(foreign_client, cli_env, corpus, f"{base}/foreign-archived-python", *archived)
    assert f"Uploading {foreign_client['archive']}" in stderr, stderr
    assert hdfs_word_counts(paths, f"{base}/foreign-archived-python") == expected


def test_behind_the_front_doors_a_streaming_job_is_listed_savepointed_stopped_restored_and_cancelled(
    cli_env: dict[str, str],  # noqa: F811
    paths: HdfsPaths,  # noqa: F811
    yarn: YarnClient,  # noqa: F811
    front_doors: tuple[Path, tuple[str, ...]],
    yarn_clean: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    procs, doors = front_doors

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "jobcluster", *args[:3], *doors, *args[3:]]  # after the action and its target
        script = f"echo $$ > {shlex.quote(str(procs))} && exec {shlex.join(argv)}"
        return subprocess.run(["bash", "-c", script], env=cli_env, capture_output=True, text=True, timeout=JOB_TIMEOUT, cwd=REPO)

    inputs, out = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    base = paths.qualify(paths.staging_base(None))
    run = (
        "-d", "-p", "1", "-D", f"python.executable={sys.executable}",
        "-D", f"execution.checkpointing.dir={base}/front-door/checkpoints",
        "-D", f"execution.checkpointing.savepoint-dir={base}/front-door/savepoints",
    )  # fmt: skip
    program = (str(STREAMING_PROGRAM), "--input-dir", f"file://{inputs}", "--output", f"file://{out}")
    written = Counter[str]()

    def write(name: str, text: str) -> None:
        (tmp_path / name).write_text(text + "\n")
        (tmp_path / name).rename(inputs / f"{name}.txt")  # whole, or the file source may read half
        written.update(text.split())

    def counted(what: str) -> None:
        wait_until(lambda: sink_words(out) == written, f"the sink's words to be the input's ({what})", timeout=JOB_TIMEOUT)

    def final_status(application: str) -> str:
        return yarn.report(application).final_status

    started = cli("run", "-t", "yarn-per-job", *run, *program)
    assert started.returncode == 0, started.stderr[-5000:]
    application, job = application_id_in(started.stderr), job_id_in(started.stdout)
    write("1", "alpha bravo alpha")
    counted("the first file")

    listed = cli("list", "-t", "yarn-per-job")
    proxied = re.search(rf"{job}\s+RUNNING\s+{application}\s.*(http://\S+/proxy/{application})", listed.stdout)
    assert listed.returncode == 0 and proxied, listed
    # the dashboard and its REST calls, as a browser behind the same firewall gets them
    fetch = (
        "import requests, sys; base = sys.argv[1]; "
        "print(requests.get(base + '/', timeout=30).text.count('<flink-root>'), requests.get(base + '/jobs/overview', timeout=30).json())"
    )
    read = subprocess.run(
        ["bash", "-c", f"echo $$ > {procs} && exec {sys.executable} -c {shlex.quote(fetch)} {proxied.group(1)}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert read.returncode == 0 and read.stdout.startswith("1 ") and job in read.stdout, read

    taken = cli("savepoint", "-t", "yarn-per-job", job)
    assert taken.returncode == 0 and "Savepoint completed. Path: hdfs://" in taken.stdout + taken.stderr, taken
    write("2", "charlie alpha")
    counted("the second file")
    stopped = cli("stop", "-t", "yarn-per-job", job)
    found = re.search(r"Savepoint completed\. Path: (hdfs://\S+)", stopped.stdout + stopped.stderr)
    assert stopped.returncode == 0 and found, stopped
    wait_until(lambda: final_status(application) == "SUCCEEDED", f"{application} SUCCEEDED", timeout=120)

    restored = cli("run", "-t", "yarn-per-job", "-s", found.group(1), *run, *program)
    assert restored.returncode == 0, restored.stderr[-5000:]
    second, restored_job = application_id_in(restored.stderr), job_id_in(restored.stdout)
    write("3", "delta")
    counted("the file after the restore")
    cancelled = cli("cancel", "-t", "yarn-per-job", restored_job)
    assert cancelled.returncode == 0, cancelled
    wait_until(lambda: final_status(second) == "KILLED", f"{second} KILLED", timeout=120)
