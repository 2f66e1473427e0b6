"""A client outside the cluster, as a user's machine is: a Python the YARN nodes lack, HDFS only through HttpFS.

The client runs in a mount namespace of its own, from a virtualenv whose base
interpreter (a relocatable copy of this machine's CPython) is mounted only
there: outside, where the NodeManager runs, its path is an empty directory.
So the shipped environment's ``bin/python`` links to nothing on the node, as
for a laptop's pyenv or conda Python against a real cluster; both of PyFlink's
ways must run the job:

- ``python.executable`` naming a Python the nodes have (the tests' own
  virtualenv, with jobcluster and pyspark), nothing shipped. This client is
  also behind a firewall (``tests/support/firewall.py``) that refuses it the
  NameNode and the DataNode, as a site that exposes HDFS only through HttpFS
  does: it stages through HttpFS (``jobcluster.yarn.webhdfs.url``);
- ``python.archives`` shipping the relocatable CPython and ``python.executable``
  pointing into it, the client's environment shipped as usual and run by it.
"""

from __future__ import annotations

import io
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from jobcluster.backends.yarn.staging import HdfsPaths
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
    yarn_clean,
)
from tests.support.firewall import refused_ports

pytestmark = pytest.mark.hadoop

VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
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
    hadoop_cluster: HadoopCluster,
    paths: HdfsPaths,  # noqa: F811
    yarn_clean: None,  # noqa: F811
) -> None:
    client_interpreter = foreign_client["mount_point"] / "bin" / f"python{VERSION}"
    assert not client_interpreter.exists(), "the client's interpreter must exist only in its own mount namespace"
    base = paths.qualify(paths.staging_base(None))
    corpus, expected = f"{base}/foreign-python-corpus", Counter[str]()
    for name, data in CORPUS.items():
        paths.client.write(f"{paths.staging_base(None)}/foreign-python-corpus/{name}", data=data, overwrite=True)
        expected += count_words(data)

    # A Python the nodes have (this test suite's virtualenv): nothing is packed or shipped. HDFS is refused to this
    # client but through HttpFS; its staging directory and the shared dashboard go there.
    httpfs = hadoop_cluster.start_httpfs()
    ports = hadoop_cluster.ports
    assert ports is not None
    hdfs_ports = (ports.namenode_rpc, ports.namenode_http, ports.datanode_data, ports.datanode_http, ports.datanode_ipc)
    node_python = ("-D", f"python.executable={sys.executable}", "-D", f"jobcluster.yarn.webhdfs.url={httpfs}")
    with refused_ports(hdfs_ports) as procs:
        probe = f"{sys.executable} -c 'import socket; socket.create_connection((\"127.0.0.1\", {ports.namenode_http}), 5)'"
        refused = in_namespace(foreign_client["mount_point"], foreign_client["build"], probe, cli_env, procs)
        assert refused.returncode != 0 and "ConnectionRefusedError" in refused.stderr, "the firewall lets the client reach HDFS"
        stderr = run_wordcount(foreign_client, cli_env, corpus, f"{base}/foreign-node-python", *node_python, cgroup_procs=procs)
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
