"""Each backend's JobManager entry point: a process's ``__main__`` that runs the shared bootstrap with its own driver."""

from __future__ import annotations

import json
import os
import runpy
import warnings
from pathlib import Path

import pytest

from jobcluster.backends import registry
from jobcluster.backends.local import descriptor as local_descriptor
from jobcluster.backends.local.driver import LocalProcessDriver
from jobcluster.backends.local.mini_cluster import MiniClusterDriver
from jobcluster.config.configuration import Configuration
from jobcluster.runtime.entrypoint import bootstrap
from jobcluster.runtime.entrypoint.job_cluster_entrypoint import EntrypointContext


def run_as_main(module: str, monkeypatch: pytest.MonkeyPatch) -> tuple:
    """What ``python -m module`` passes to ``run_entrypoint`` (recorded instead of run)."""
    calls = []
    monkeypatch.setattr(
        bootstrap, "run_entrypoint", lambda context, create_driver, **kwargs: calls.append((context, create_driver, kwargs))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # runpy: the module may have been imported by another test
        runpy.run_module(module, run_name="__main__", alter_sys=False)
    (call,) = calls
    return call


def test_local_cluster_entry_point_runs_the_local_process_driver_against_a_spark_master(monkeypatch):
    context, create_driver, kwargs = run_as_main("jobcluster.backends.local.entrypoint", monkeypatch)

    assert context == EntrypointContext.from_env
    assert isinstance(create_driver(Configuration(), "http://127.0.0.1:8081"), LocalProcessDriver)
    assert not kwargs.get("spark_local_mode")


def test_mini_cluster_entry_point_runs_task_executors_in_process_and_spark_in_local_mode(monkeypatch):
    context, create_driver, kwargs = run_as_main("jobcluster.backends.local.mini_cluster_entrypoint", monkeypatch)

    assert context == EntrypointContext.from_env
    assert isinstance(create_driver(Configuration(), "http://127.0.0.1:8081"), MiniClusterDriver)
    assert kwargs == {"spark_local_mode": True}


@pytest.mark.parametrize(
    ("module", "driver_module", "context_name"),
    [
        ("jobcluster.backends.yarn.entrypoint", "jobcluster.backends.yarn.driver", "application_master_context"),
        ("jobcluster.backends.kubernetes.entrypoint", "jobcluster.backends.kubernetes.driver", "from_env"),
    ],
)
def test_platform_entry_points_run_their_own_driver(monkeypatch, module, driver_module, context_name):
    context, create_driver, _ = run_as_main(module, monkeypatch)

    assert (create_driver.__module__, create_driver.__name__) == (driver_module, "create_driver")
    assert context.__name__ == context_name


@pytest.mark.parametrize(
    ("target", "descriptor", "module"),
    [
        ("local", local_descriptor.MiniClusterDescriptor, "jobcluster.backends.local.mini_cluster_entrypoint"),
        ("local-cluster", local_descriptor.LocalClusterDescriptor, "jobcluster.backends.local.entrypoint"),
    ],
)
def test_each_local_descriptor_launches_its_entry_point(monkeypatch, tmp_path: Path, target, descriptor, module):
    launched = []
    monkeypatch.setattr(local_descriptor.subprocess, "Popen", lambda argv, **kwargs: launched.append((argv, kwargs)))

    chosen = registry.cluster_descriptor(target, Configuration())
    assert type(chosen) is descriptor and chosen.target == target
    descriptor(home=tmp_path)._launch_entrypoint("c1", tmp_path, tmp_path)

    ((argv, kwargs),) = launched
    assert argv[1:] == ["-m", module]
    assert kwargs["cwd"] == tmp_path
    assert "JOBCLUSTER_CLUSTER_SECRET" not in kwargs["env"], "the secret is a staged file"


def test_both_local_targets_find_every_local_cluster_each_with_its_own_target(tmp_path: Path):
    # one place for the clusters of both targets: `jobcluster list` and `cancel` reach either without -t
    for cluster_id, target in (("jobcluster-a", "local"), ("jobcluster-b", "local-cluster")):
        cluster_dir = tmp_path / "clusters" / cluster_id
        cluster_dir.mkdir(parents=True)
        info = {"cluster_id": cluster_id, "target": target, "job_id": "j", "job_name": "wc", "pid": os.getpid(), "log_dir": "x"}
        (cluster_dir / local_descriptor.CLUSTER_INFO_FILE).write_text(json.dumps(info))

    for descriptor in (local_descriptor.MiniClusterDescriptor, local_descriptor.LocalClusterDescriptor):
        handles = descriptor(home=tmp_path).list_clusters()
        assert [(h.cluster_id, h.target) for h in handles] == [("jobcluster-a", "local"), ("jobcluster-b", "local-cluster")]
