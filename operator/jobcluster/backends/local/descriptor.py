"""LocalClusterDescriptor: job clusters as process trees on this machine.

Each cluster gets a staging directory ``$JOBCLUSTER_HOME/clusters/<cluster-id>``
(effective config, JobGraph, artifacts; removed when the job ends) and a log
directory ``$JOBCLUSTER_HOME/log/<cluster-id>`` (kept). The JobGraph records
the client's working directory and the program's path (ClientPaths): the
cluster shares this machine's file system, so the driver runs there. The entrypoint runs as
a separate process in its own session; the descriptor waits until it serves
REST, and on any failure stops what started and removes the staging directory.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import yaml

from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.client.descriptor import ClusterDescriptor, ClusterHandle, ClusterSpecification, PackagedProgram
from jobcluster.client.program import staged_files
from jobcluster.config.configuration import Configuration
from jobcluster.errors import DeploymentError
from jobcluster.jobgraph.model import ClientPaths, JobGraph, write_job_graph
from jobcluster.processes import kill_process_tree, session_members
from jobcluster.runtime.entrypoint import cluster_dir as layout
from jobcluster.spark.home import check_java

log = logging.getLogger(__name__)

CLUSTER_INFO_FILE = "cluster.json"
STARTUP_TIMEOUT = 120.0  # seconds until the entrypoint must serve REST


def jobcluster_home() -> Path:
    """``$JOBCLUSTER_HOME``, default ``~/.jobcluster``: where local clusters keep staging and logs."""
    return Path(os.environ.get("JOBCLUSTER_HOME", Path.home() / ".jobcluster"))


class LocalClusterDescriptor(ClusterDescriptor):
    target = "local"

    def __init__(self, home: Path | None = None, bind_host: str = "127.0.0.1") -> None:
        self.home = home or jobcluster_home()
        self.bind_host = bind_host

    def deploy_job_cluster(
        self, spec: ClusterSpecification, graph: JobGraph, program: PackagedProgram, config: Configuration
    ) -> RestClusterClient:
        check_java()  # the local cluster's Spark daemons run on this machine
        graph = with_client_paths(graph, program)
        cluster_id = f"jobcluster-{graph.job_id[:12]}"
        cluster_dir = self.home / "clusters" / cluster_id
        log_dir = self.home / "log" / cluster_id
        process: subprocess.Popen | None = None
        try:
            self._stage(cluster_dir, graph, program, config)
            log_dir.mkdir(parents=True, exist_ok=True)
            process = self._launch_entrypoint(cluster_id, cluster_dir, log_dir)
            _write_json(
                cluster_dir / CLUSTER_INFO_FILE,
                {
                    "cluster_id": cluster_id,
                    "target": self.target,
                    "job_id": graph.job_id,
                    "job_name": graph.job_name,
                    "pid": process.pid,
                    "log_dir": str(log_dir),
                },
            )
            rest_url = self._wait_until_serving(process, cluster_dir, log_dir)
        except BaseException:
            if process is not None:
                kill_process_tree(process.pid, 5.0, session_members(process.pid))
            shutil.rmtree(cluster_dir, ignore_errors=True)
            raise
        return RestClusterClient(rest_url, cluster_id)

    def _stage(self, cluster_dir: Path, graph: JobGraph, program: PackagedProgram, config: Configuration) -> None:
        artifacts = cluster_dir / layout.ARTIFACTS_DIR
        artifacts.mkdir(parents=True)
        for path in staged_files(program):
            shutil.copy2(path, artifacts / path.name)
        write_job_graph(graph, layout.job_graph_file(cluster_dir))
        layout.config_file(cluster_dir).write_text(yaml.safe_dump(config.to_dict(), sort_keys=True))

    def _launch_entrypoint(self, cluster_id: str, cluster_dir: Path, log_dir: Path) -> subprocess.Popen:
        env = {
            **os.environ,
            layout.ENV_CLUSTER_ID: cluster_id,
            layout.ENV_CLUSTER_DIR: str(cluster_dir),
            layout.ENV_LOG_DIR: str(log_dir),
            layout.ENV_CLUSTER_SECRET: secrets.token_hex(32),
            layout.ENV_BIND_HOST: self.bind_host,
        }
        with open(log_dir / "jobmanager.log", "ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", "jobcluster.runtime.entrypoint"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=cluster_dir,
            )

    def _wait_until_serving(self, process: subprocess.Popen, cluster_dir: Path, log_dir: Path) -> str:
        rest_info = cluster_dir / layout.REST_INFO_FILE
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if rest_info.exists():
                return json.loads(rest_info.read_text())["rest_url"]
            code = process.poll()
            if code is not None:
                raise DeploymentError(f"the job cluster failed to start: {_startup_failure(log_dir)} (logs: {log_dir})")
            time.sleep(0.2)
        raise DeploymentError(f"the job cluster did not start within {STARTUP_TIMEOUT:.0f} s (logs: {log_dir})")

    def list_clusters(self) -> list[ClusterHandle]:
        handles = []
        for info_file in sorted((self.home / "clusters").glob(f"*/{CLUSTER_INFO_FILE}")):
            cluster_dir = info_file.parent
            try:
                info = json.loads(info_file.read_text())
            except (OSError, ValueError):
                continue
            if not psutil.pid_exists(info["pid"]):
                shutil.rmtree(cluster_dir, ignore_errors=True)  # its entrypoint was killed; nothing can clean up but us
                continue
            rest_file = cluster_dir / layout.REST_INFO_FILE
            rest_url = json.loads(rest_file.read_text())["rest_url"] if rest_file.exists() else None
            handles.append(ClusterHandle(info["cluster_id"], self.target, rest_url, info["job_id"], info["job_name"], info["log_dir"]))
        return handles

    def kill_cluster(self, cluster_id: str) -> None:
        cluster_dir = self.home / "clusters" / cluster_id
        info_file = cluster_dir / CLUSTER_INFO_FILE
        if not info_file.exists():
            raise DeploymentError(f"no local cluster {cluster_id}")
        pid = json.loads(info_file.read_text())["pid"]
        kill_process_tree(pid, 10.0, session_members(pid))
        shutil.rmtree(cluster_dir, ignore_errors=True)


def with_client_paths(graph: JobGraph, program: PackagedProgram) -> JobGraph:
    """``graph`` with this process's working directory and the program's absolute path.

    A local cluster shares the client's file system, so its driver runs the
    program where it is, in the directory ``jobcluster run`` was started in,
    as ``spark-submit`` in client mode would.
    """
    paths = ClientPaths(working_directory=str(Path.cwd()), program=str(program.script.resolve()))
    return graph.model_copy(update={"client_paths": paths})


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2))


def _startup_failure(log_dir: Path) -> str:
    """The reason the entrypoint printed, or the last lines of its log."""
    try:
        lines = (log_dir / "jobmanager.log").read_text(errors="replace").splitlines()
    except OSError:
        return "no log was written"
    for line in reversed(lines):
        if line.startswith(layout.STARTUP_FAILURE_PREFIX):
            return line[len(layout.STARTUP_FAILURE_PREFIX) :]
    return " | ".join(lines[-5:]) or "the entrypoint exited without a message"
