"""The container entry points (entrypoints/jobmanager, entrypoints/taskmanager), run as the pods run them.

A stand-in interpreter (JOBCLUSTER_PYTHON) records what the script ``exec``s:
argv, environment and working directory; the staged directory is laid out as
the kubelet mounts a ConfigMap (files are symlinks into ``..data``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

ENTRYPOINTS = Path(__file__).resolve().parents[2] / "entrypoints"

RECORDER = """#!{python}
import json, os, sys
with open({out!r}, "w") as f:
    json.dump({{"argv": sys.argv, "env": dict(os.environ), "cwd": os.getcwd(), "umask": os.umask(0)}}, f)
"""


def staged_dir(root: Path) -> Path:
    """A ConfigMap mount as the kubelet makes it: ``..data`` holds the files, the names are symlinks."""
    staged = root / "staged"
    data = staged / "..2026_11_23"
    (data / "artifacts").mkdir(parents=True)
    (data / "jobcluster.yaml").write_text(yaml.safe_dump({"rest.address": "127.0.0.1", "parallelism.default": "2"}))
    (data / "jobgraph.json").write_text("{}")
    (data / "artifacts" / "wordcount.py").write_text("print('hi')\n")
    (staged / "..data").symlink_to(data.name)
    for name in ("jobcluster.yaml", "jobgraph.json", "artifacts"):
        (staged / name).symlink_to(f"..data/{name}")
    return staged


def secret_dir(root: Path) -> Path:
    """A Secret mount as the kubelet makes it, with the cluster's secret under its one key."""
    secret = root / "secret"
    data = secret / "..2026_11_25"
    data.mkdir(parents=True)
    (data / "cluster-secret").write_text("s3cr3t")
    (secret / "..data").symlink_to(data.name)
    (secret / "cluster-secret").symlink_to("..data/cluster-secret")
    return secret


def run_entrypoint(tmp_path: Path, name: str, args: list[str], extra_env: dict[str, str]) -> dict:
    out = tmp_path / "exec.json"
    recorder = tmp_path / "python"
    recorder.write_text(RECORDER.format(python=sys.executable, out=str(out)))
    recorder.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "JOBCLUSTER_PYTHON": str(recorder),
        "JOBCLUSTER_STAGED_DIR": str(staged_dir(tmp_path)),
        "JOBCLUSTER_WORK_DIR": str(tmp_path / "work"),
        "JOBCLUSTER_POD_IP": "127.7.0.9",
        "JOBCLUSTER_CLUSTER_ID": "wordcount",
        "JOBCLUSTER_SECRET_DIR": str(secret_dir(tmp_path)),
        **extra_env,
    }
    (tmp_path / "work").mkdir()
    result = subprocess.run([sys.executable, str(ENTRYPOINTS / name), *args], env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    recorded: dict = json.loads(out.read_text())
    return recorded


def test_jobmanager_copies_the_staged_files_binds_rest_to_the_pod_ip_and_execs_the_bootstrap(tmp_path):
    recorded = run_entrypoint(tmp_path, "jobmanager", [], {})
    cluster_dir = tmp_path / "work" / "cluster"
    assert recorded["argv"][1:] == ["-m", "jobcluster.backends.kubernetes.entrypoint"]
    assert recorded["cwd"] == str(cluster_dir)
    env = recorded["env"]
    assert env["JOBCLUSTER_CLUSTER_DIR"] == str(cluster_dir)
    assert env["JOBCLUSTER_LOG_DIR"] == str(tmp_path / "work" / "log")
    assert env["JOBCLUSTER_BIND_HOST"] == "127.7.0.9"
    # the secret arrives as a private file of the cluster directory, never in the environment or argv
    assert "s3cr3t" not in json.dumps(env) and "s3cr3t" not in " ".join(recorded["argv"])
    assert (cluster_dir / "cluster-secret").read_text() == "s3cr3t"
    assert (cluster_dir / "cluster-secret").stat().st_mode & 0o777 == 0o600
    assert recorded["umask"] == 0o077
    # real files (not links into the read-only mount), without the kubelet's bookkeeping
    assert sorted(p.name for p in cluster_dir.iterdir()) == ["artifacts", "cluster-secret", "jobcluster.yaml", "jobgraph.json"]
    assert not (cluster_dir / "artifacts").is_symlink()
    assert (cluster_dir / "artifacts" / "wordcount.py").read_text() == "print('hi')\n"
    config = yaml.safe_load((cluster_dir / "jobcluster.yaml").read_text())
    assert config == {"rest.address": "127.7.0.9", "rest.bind-address": "127.7.0.9,127.0.0.1", "parallelism.default": "2"}
    assert yaml.safe_load((tmp_path / "staged" / "jobcluster.yaml").read_text())["rest.address"] == "127.0.0.1"  # mount untouched


def test_taskmanager_passes_the_dynamic_configs_on_and_reads_the_staged_configuration(tmp_path):
    args = ["-D", "taskmanager.numberOfTaskSlots=2", "-D", "taskmanager.cpu.cores=2.0"]
    recorded = run_entrypoint(tmp_path, "taskmanager", args, {"JOBCLUSTER_RESOURCE_ID": "wordcount-taskmanager-1-1"})
    assert recorded["argv"][1:] == ["-m", "jobcluster.runtime.taskexecutor", *args]
    env = recorded["env"]
    # a writable copy of the staged files: the TaskExecutor writes its Spark conf and scratch space there
    cluster_dir = tmp_path / "work" / "cluster"
    assert env["JOBCLUSTER_CLUSTER_DIR"] == str(cluster_dir)
    assert (cluster_dir / "jobcluster.yaml").is_file() and not (cluster_dir / "jobcluster.yaml").is_symlink()
    assert env["JOBCLUSTER_LOG_DIR"] == str(tmp_path / "work" / "log")
    assert env["JOBCLUSTER_BIND_HOST"] == "127.7.0.9"
    assert recorded["cwd"] == str(tmp_path / "work" / "log")
    assert (cluster_dir / "cluster-secret").read_text() == "s3cr3t" and "s3cr3t" not in json.dumps(env)
