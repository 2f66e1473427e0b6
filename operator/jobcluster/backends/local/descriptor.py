"""The descriptors of the two local targets: job clusters on this machine.

``local-cluster`` (:class:`LocalClusterDescriptor`, Spark's ``local-cluster``):
a standalone cluster of processes, an entrypoint process that starts a
TaskExecutor process per worker, each with its Spark worker. ``local``
(:class:`MiniClusterDescriptor`, Flink's MiniCluster): one process holding the
JobManager's components and the TaskExecutors, the program's Spark in local
mode. Both start their JobManager's process the same way and keep their
clusters in the same place, so ``jobcluster list``, ``cancel``, ``stop`` and
``savepoint`` find a cluster of either target.

Each cluster gets a staging directory ``$JOBCLUSTER_HOME/clusters/<cluster-id>``
(effective config, JobGraph, artifacts; removed when the job ends, unless
``jobcluster.staging.keep``) and a log
directory ``$JOBCLUSTER_HOME/log/<cluster-id>`` (kept for
``jobcluster.logs.max-age`` after the cluster ends; see retention.py).  Both are
private to the user: directories 0700, files 0600, and the cluster's processes
run with umask 077, except that the driver and the Spark workers (whose
executors write the job's output) get this shell's umask, as under
``spark-submit``; their logs stay in the 0700 directories. The JobGraph records the client's working directory and the
program's path (ClientPaths): the cluster shares this machine's file system, so
the driver runs there. The entrypoint runs as
a separate process in its own session; the descriptor waits until it serves
REST, and on any failure stops what started and removes the staging directory.

The cluster secret is a staged file like the others (``cluster-secret``, 0600 in
the 0700 staging directory), so it is in no process's environment; the REST token
derived from it is kept in ``rest-token`` (0600) beside it, where ``jobcluster
cancel`` from any shell of the same user finds it, and no other user can.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from jobcluster.backends.cluster_files import StagedFile, cluster_files
from jobcluster.backends.local.machine_fit import MachineResources, check_fits, check_job_manager_fits, cluster_demand
from jobcluster.backends.local.retention import prune_log_dirs
from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.client.descriptor import ClusterDescriptor, ClusterHandle, ClusterSpecification, JobResult, PackagedProgram
from jobcluster.client.savepoints import dispose_local_savepoint, read_local_savepoint
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.config.targets import DeploymentTarget
from jobcluster.errors import DeploymentError
from jobcluster.jobgraph.model import ClientPaths, JobGraph
from jobcluster.processes import ENV_PROGRAM_UMASK, PRIVATE_UMASK, current_umask, kill_process_tree, session_members
from jobcluster.runtime.entrypoint import layout
from jobcluster.security import new_cluster_secret, private_directory, rest_token, write_private_file
from jobcluster.spark.checkpoints import SavepointMetadata
from jobcluster.spark.home import check_java

log = logging.getLogger(__name__)

CLUSTER_INFO_FILE = "cluster.json"
REST_TOKEN_FILE = "rest-token"  # in the staging directory, mode 0600: the bearer token of mutating REST calls
STARTUP_TIMEOUT = 120.0  # seconds until the entrypoint must serve REST


def jobcluster_home() -> Path:
    """``$JOBCLUSTER_HOME``, default ``~/.jobcluster``: where local clusters keep staging and logs."""
    return Path(os.environ.get("JOBCLUSTER_HOME", Path.home() / ".jobcluster"))


class LocalClusterDescriptor(ClusterDescriptor):
    """``-t local-cluster``: the entrypoint and each TaskExecutor (with its Spark worker and executors) as processes."""

    target = DeploymentTarget.LOCAL_CLUSTER
    entrypoint_module = "jobcluster.backends.local.entrypoint"  # the JobManager process's ``python -m`` module

    def __init__(self, home: Path | None = None, bind_host: str = "127.0.0.1") -> None:
        self.home = home or jobcluster_home()
        self.bind_host = bind_host

    def deploy_job_cluster(
        self, spec: ClusterSpecification, graph: JobGraph, program: PackagedProgram, config: Configuration
    ) -> RestClusterClient:
        check_java()  # the local cluster's Spark daemons run on this machine
        _check_provided(program)
        self._check_machine_fits(spec, graph, config)
        graph = with_client_paths(graph, program)
        cluster_id = f"jobcluster-{graph.job_id[:12]}"
        cluster_dir = self.home / "clusters" / cluster_id
        log_dir = self.home / "log" / cluster_id
        self.prune_logs(config.get(options.LOGS_MAX_AGE))
        process: subprocess.Popen[bytes] | None = None
        secret = new_cluster_secret()
        try:
            self._stage(cluster_dir, cluster_files(graph, program, config, secret))
            _write_rest_token(cluster_dir, rest_token(secret))
            _private_dirs(log_dir, self.home)
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
                    "keep_staging": config.get(options.CLUSTER_STAGING_KEEP),
                },
            )
            rest_url = self._wait_until_serving(process, cluster_dir, log_dir)
        except BaseException:
            if process is not None:
                kill_process_tree(process.pid, 5.0, session_members(process.pid))
            shutil.rmtree(cluster_dir, ignore_errors=True)
            raise
        return RestClusterClient(
            rest_url,
            cluster_id,
            token=rest_token(secret),
            liveness=functools.partial(_entrypoint_alive, process, cluster_dir, config.get(options.CLUSTER_STAGING_KEEP)),
            log_location=str(log_dir),
        )

    @staticmethod
    def _check_machine_fits(spec: ClusterSpecification, graph: JobGraph, config: Configuration) -> None:
        """Refuse a cluster this machine cannot hold in memory; warn when it asks for more cores than there are."""
        cores = config.get_optional(options.TASK_MANAGER_CPU_CORES) or spec.slots_per_task_manager
        demand = cluster_demand(spec, graph.required_slots(), float(cores), config.get(options.SLOT_MANAGER_MAX_SLOTS))
        warning = check_fits(demand, MachineResources.of_this_machine(), spec)
        if warning:
            log.warning(warning)

    def _stage(self, cluster_dir: Path, files: list[StagedFile]) -> None:
        """Every file private to the user (0600 in 0700 directories): the secret among them needs no other channel."""
        _private_dirs(cluster_dir, self.home)
        (cluster_dir / layout.ARTIFACTS_DIR).mkdir(mode=0o700)
        for file in files:
            write_private_file(cluster_dir / file.name, file.read())

    def _launch_entrypoint(self, cluster_id: str, cluster_dir: Path, log_dir: Path) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            layout.ENV_CLUSTER_ID: cluster_id,
            layout.ENV_CLUSTER_DIR: str(cluster_dir),
            layout.ENV_LOG_DIR: str(log_dir),
            layout.ENV_BIND_HOST: self.bind_host,
            ENV_PROGRAM_UMASK: f"{current_umask():03o}",
        }
        with open(log_dir / "jobmanager.log", "ab", opener=_private_opener) as out:
            return subprocess.Popen(
                [sys.executable, "-m", self.entrypoint_module],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                umask=PRIVATE_UMASK,
                cwd=cluster_dir,
            )

    def _wait_until_serving(self, process: subprocess.Popen[bytes], cluster_dir: Path, log_dir: Path) -> str:
        rest_info = cluster_dir / layout.REST_INFO_FILE
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if rest_info.exists():
                rest_url: str = json.loads(rest_info.read_text())["rest_url"]
                return rest_url
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
                if not info.get("keep_staging"):  # kept for debugging (jobcluster.staging.keep): the user removes it
                    shutil.rmtree(cluster_dir, ignore_errors=True)  # its entrypoint was killed; nothing can clean up but us
                continue
            rest_file = cluster_dir / layout.REST_INFO_FILE
            rest_url = json.loads(rest_file.read_text())["rest_url"] if rest_file.exists() else None
            handles.append(
                ClusterHandle(
                    info["cluster_id"],
                    info.get("target", self.target),
                    rest_url,
                    info["job_id"],
                    info["job_name"],
                    info["log_dir"],
                    _read_rest_token(cluster_dir),
                )
            )
        return handles

    def retrieve(self, cluster_id: str) -> ClusterHandle | None:
        """The running cluster ``cluster_id`` of this user's ``$JOBCLUSTER_HOME``, or None once it is gone."""
        return next((handle for handle in self.list_clusters() if handle.cluster_id == cluster_id), None)

    def job_result(self, cluster_id: str) -> JobResult | None:
        """None: a local cluster hands its result to its attached client and keeps no record after it ends
        (its log directory stays for ``jobcluster.logs.max-age``)."""
        return None

    def read_savepoint(self, path: str) -> SavepointMetadata | None:
        """A local cluster shares this machine's file system: the savepoint is read here (None for another scheme, e.g. hdfs://)."""
        return read_local_savepoint(path)

    def dispose_savepoint(self, path: str) -> None:
        dispose_local_savepoint(path)

    def prune_logs(self, max_age: float) -> list[str]:
        """Remove the log directories of ended clusters older than ``max_age`` seconds (see retention.py).

        The logs of every cluster with a staging directory (running, or being
        deployed by another client right now) are kept.
        """
        try:
            self.list_clusters()  # removes the staging directories of clusters whose entrypoint is gone
            clusters = self.home / "clusters"
            active = {d.name for d in clusters.iterdir()} if clusters.is_dir() else set()
            return [str(d) for d in prune_log_dirs(self.home / "log", max_age, active)]
        except (OSError, ValueError, KeyError) as exc:  # pruning must never stop a deployment
            log.warning("could not prune old logs under %s: %s", self.home / "log", exc)
            return []

    def kill_cluster(self, cluster_id: str) -> None:
        cluster_dir = self.home / "clusters" / cluster_id
        info_file = cluster_dir / CLUSTER_INFO_FILE
        if not info_file.exists():
            raise DeploymentError(f"no local cluster {cluster_id}")
        pid = json.loads(info_file.read_text())["pid"]
        kill_process_tree(pid, 10.0, session_members(pid))
        shutil.rmtree(cluster_dir, ignore_errors=True)


class MiniClusterDescriptor(LocalClusterDescriptor):
    """``-t local`` (the embedded default): Flink's MiniCluster, the whole job cluster in one process.

    Its process holds the JobManager's components and the TaskExecutors
    (``mini_cluster.py``); the program's Spark runs in local mode, so the only
    JVM is the driver's. It is staged, started and followed as the
    local-cluster's entrypoint is. Only the JobManager's process takes memory:
    the TaskExecutors' sizes are the size of no process, so the machine is
    checked for the JobManager's process alone.
    """

    target = DeploymentTarget.LOCAL
    entrypoint_module = "jobcluster.backends.local.mini_cluster_entrypoint"

    @staticmethod
    def _check_machine_fits(spec: ClusterSpecification, graph: JobGraph, config: Configuration) -> None:
        check_job_manager_fits(spec, MachineResources.of_this_machine())


def _check_provided(program: PackagedProgram) -> None:
    """DeploymentError when a ``local://`` file is missing: a local cluster's file system is this machine's."""
    for path in sorted(program.provided):
        if not path.is_file():
            raise DeploymentError(f"{path} (given as local://{path}) is not a file on this machine, where the local target's cluster runs")


def with_client_paths(graph: JobGraph, program: PackagedProgram) -> JobGraph:
    """``graph`` with this process's working directory and the program's absolute path.

    A local cluster shares the client's file system, so its driver runs the
    program where it is, in the directory ``jobcluster run`` was started in,
    as ``spark-submit`` in client mode would.
    """
    paths = ClientPaths(working_directory=str(Path.cwd()), program=str(program.script.resolve()))
    return graph.model_copy(update={"client_paths": paths})


def _write_rest_token(cluster_dir: Path, token: str) -> None:
    """Keep the cluster's REST token where only this user can read it: a 0600 file in the 0700 staging directory."""
    write_private_file(private_directory(cluster_dir) / REST_TOKEN_FILE, token)


def _read_rest_token(cluster_dir: Path) -> str | None:
    """The cluster's REST token; None when it cannot be read (another user's cluster, or a cluster being removed)."""
    try:
        return (cluster_dir / REST_TOKEN_FILE).read_text().strip()
    except OSError:
        return None


def _entrypoint_alive(process: subprocess.Popen[bytes], cluster_dir: Path, keep_staging: bool) -> bool:
    """Whether the entrypoint (the JobManager process this client started) still runs.

    ``poll`` also reaps it, so a killed entrypoint does not linger as a zombie
    that would look alive.  An entrypoint killed by a signal could not remove
    its staging directory; this does, unless ``jobcluster.staging.keep``.
    """
    code = process.poll()
    if code is None:
        return True
    if code < 0 and not keep_staging:
        shutil.rmtree(cluster_dir, ignore_errors=True)
    return False


def _write_json(path: Path, data: dict[str, Any]) -> None:
    write_private_file(path, json.dumps(data, indent=2).encode())


def _private_dirs(directory: Path, home: Path) -> None:
    """Create ``directory`` and its missing parents up to ``home`` with mode 0700 (only the user may enter)."""
    missing = []
    for parent in (directory, *directory.parents):
        if parent.exists():
            break
        missing.append(parent)
        if parent == home:
            break
    for path in reversed(missing):
        path.mkdir(mode=0o700, exist_ok=True)


def _private_opener(path: str, flags: int) -> int:
    """``open(..., opener=)`` that creates the file with mode 0600."""
    return os.open(path, flags, 0o600)


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
