"""jobcluster.logs.max-age: the logs of ended local clusters go once old; a running cluster's logs never."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobcluster.backends.local.descriptor import CLUSTER_INFO_FILE, LocalClusterDescriptor
from jobcluster.backends.local.retention import expired_log_dirs, last_activity, prune_log_dirs

DAY = 86400.0
NOW = 1_800_000_000.0


def log_dir(root: Path, name: str, age_days: float, newest_file_age_days: float | None = None, now: float = NOW) -> Path:
    """A cluster log directory whose entries were all last written ``age_days`` ago (one file younger, if asked)."""
    directory = root / name
    (directory / f"{name}-work").mkdir(parents=True)
    files = [directory / "jobmanager.log", directory / f"{name}-work" / "stderr"]
    for path in files:
        path.write_text("log line\n")
    stamp = now - age_days * DAY
    for path in (*files, directory / f"{name}-work", directory):
        os.utime(path, (stamp, stamp))
    if newest_file_age_days is not None:
        young = now - newest_file_age_days * DAY
        os.utime(files[1], (young, young))
    return directory


def test_last_activity_is_the_newest_entry(tmp_path):
    directory = log_dir(tmp_path, "c1", age_days=10, newest_file_age_days=1)
    assert last_activity(directory) == pytest.approx(NOW - DAY)


def test_old_dirs_expire_new_and_running_ones_stay(tmp_path):
    old = log_dir(tmp_path, "old", age_days=8)
    log_dir(tmp_path, "new", age_days=1)
    log_dir(tmp_path, "old-but-running", age_days=30)
    log_dir(tmp_path, "old-but-recently-written", age_days=30, newest_file_age_days=2)
    (tmp_path / "a-file.log").write_text("not a cluster")
    assert expired_log_dirs(tmp_path, 7 * DAY, running={"old-but-running"}, now=NOW) == [old]


def test_prune_removes_only_the_expired(tmp_path):
    log_dir(tmp_path, "old", age_days=8)
    log_dir(tmp_path, "new", age_days=1)
    assert prune_log_dirs(tmp_path, 7 * DAY, running=(), now=NOW) == [tmp_path / "old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new"]


def test_missing_log_root_is_nothing_to_prune(tmp_path):
    assert prune_log_dirs(tmp_path / "log", DAY, running=()) == []


def test_descriptor_keeps_logs_of_running_and_deploying_clusters(tmp_path):
    """A live entrypoint (here: a sleeping process) or a staging dir without cluster.json protects its logs."""
    home = tmp_path / "home"
    for name in ("ended", "running", "deploying"):
        log_dir(home / "log", name, age_days=30, now=time.time())
    (home / "clusters" / "deploying").mkdir(parents=True)
    (home / "clusters" / "running").mkdir(parents=True)
    (home / "clusters" / "dead").mkdir(parents=True)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for name, pid in (("running", alive.pid), ("dead", 2**22 + 12345)):
            info = {"cluster_id": name, "job_id": "0" * 32, "job_name": "j", "pid": pid, "log_dir": str(home / "log" / name)}
            (home / "clusters" / name / CLUSTER_INFO_FILE).write_text(json.dumps(info))
        removed = LocalClusterDescriptor(home).prune_logs(7 * DAY)
    finally:
        alive.kill()
        alive.wait()
    assert removed == [str(home / "log" / "ended")]
    assert sorted(p.name for p in (home / "log").iterdir()) == ["deploying", "running"]
    assert not (home / "clusters" / "dead").exists()


def test_fresh_logs_survive_a_short_max_age(tmp_path):
    directory = tmp_path / "c"
    directory.mkdir()
    (directory / "x.log").write_text("now")
    assert expired_log_dirs(tmp_path, 60.0, running=(), now=time.time()) == []


def test_a_kept_staging_directory_outlives_its_cluster_and_an_ended_clusters_other_one_does_not(tmp_path):
    """jobcluster.staging.keep: `list` neither shows nor removes the ended cluster's kept staging directory."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    for cluster_id, keep in (("kept", True), ("gone", False)):
        cluster_dir = tmp_path / "clusters" / cluster_id
        cluster_dir.mkdir(parents=True)
        info = {"cluster_id": cluster_id, "pid": dead.pid, "log_dir": str(tmp_path / "log" / cluster_id), "keep_staging": keep}
        (cluster_dir / CLUSTER_INFO_FILE).write_text(json.dumps(info))
    assert LocalClusterDescriptor(home=tmp_path).list_clusters() == []
    assert (tmp_path / "clusters" / "kept").is_dir() and not (tmp_path / "clusters" / "gone").exists()
