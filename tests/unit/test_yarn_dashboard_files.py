"""Flink's web dashboard shipped to YARN (backends/yarn/dashboard_files.py): the archive the NodeManager unpacks into
the ApplicationMaster's working directory, named by its content; what the client ships when; the ApplicationMaster
serving what was shipped. Uploading it to a real HDFS, and the dashboard through YARN's proxy:
tests/integration/hadoop/test_yarn_job_cluster.py."""

from __future__ import annotations

import tarfile

from jobcluster.backends.yarn import dashboard_files
from jobcluster.backends.yarn.entrypoint import application_master_context
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.runtime.entrypoint import layout
from jobcluster.runtime.rest.dashboard import FLINK_WEB_VERSION, dashboard_installed
from tests.unit.test_dashboard import installed


def test_the_archive_unpacks_in_a_working_directory_into_a_complete_dashboard_readable_by_everyone(tmp_path):
    web = installed(tmp_path / "cache")
    archive = tmp_path / "dashboard.tar.gz"

    dashboard_files.pack(web.parent, archive)
    working_dir = tmp_path / "container"
    with tarfile.open(archive) as unpacked:  # what the NodeManager does with an ARCHIVE: unpack into <working dir>/<key>
        members = unpacked.getmembers()
        unpacked.extractall(working_dir / dashboard_files.DASHBOARD_KEY, filter="data")

    assert dashboard_installed(dashboard_files.container_dashboard_dir(working_dir))
    assert {m.name for m in members} == {".complete", "web/index.html", "web/main.abc.js", "web/assets/flink.svg"}
    assert {(m.mode, m.uid, m.uname) for m in members} == {(0o644, 0, "")}


def test_the_archives_name_says_its_version_and_content(tmp_path):
    web = installed(tmp_path)
    digest = dashboard_files.fingerprint(web.parent)

    assert dashboard_files.fingerprint(web.parent) == digest
    assert dashboard_files.archive_name(digest) == f"flink-web-{FLINK_WEB_VERSION}-{digest[:32]}.tar.gz"
    assert dashboard_files.archive_name(digest, "1.20.3") == f"flink-web-1.20.3-{digest[:32]}.tar.gz"
    (web / "main.abc.js").write_text("export const x = 2;")
    assert dashboard_files.fingerprint(web.parent) != digest


def test_the_client_ships_its_cached_dashboard_and_nothing_when_the_option_names_the_nodes_copy(tmp_path):
    messages: list[str] = []
    cache = tmp_path / "cache"
    web = cache / f"flink-runtime-web-{FLINK_WEB_VERSION}" / "web"  # where fetch_dashboard puts it
    cache.mkdir()
    installed(tmp_path / "fetched").parent.rename(web.parent)

    assert dashboard_files.client_dashboard(Configuration(), messages.append, {"JOBCLUSTER_CACHE": str(cache)}) == web
    # the release the option selects, from its own folder of the cache
    old = cache / "flink-runtime-web-1.20.3" / "web"
    installed(tmp_path / "fetched-1.20").parent.rename(old.parent)
    selected = Configuration({options.WEB_DASHBOARD_VERSION.key: "1.20.3"})
    assert dashboard_files.client_dashboard(selected, messages.append, {"JOBCLUSTER_CACHE": str(cache)}) == old
    nodes = Configuration({options.WEB_DASHBOARD_DIR.key: "/opt/flink/web"})
    assert dashboard_files.client_dashboard(nodes, messages.append, {"JOBCLUSTER_CACHE": str(cache)}) is None
    assert messages == []


def test_a_client_that_cannot_fetch_the_dashboard_deploys_without_and_says_so(tmp_path):
    messages: list[str] = []

    shipped = dashboard_files.client_dashboard(
        Configuration(), messages.append, {"JOBCLUSTER_CACHE": str(tmp_path)}, url="http://127.0.0.1:9/flink-runtime-web.jar"
    )

    assert shipped is None
    fetching, warning = messages
    assert fetching.startswith("Fetching Flink's web dashboard") and str(tmp_path) in fetching
    assert warning.startswith("Warning: Flink's web dashboard is not shipped, so the job cluster will not serve it")
    assert "python -m jobcluster.runtime.rest.dashboard" in warning


def test_the_application_master_serves_the_dashboard_the_client_shipped(tmp_path, monkeypatch):
    for name, value in {
        "CONTAINER_ID": "container_1700000000000_0003_01_000001",
        "NM_HOST": "node-1",
        "LOCAL_DIRS": str(tmp_path / "local"),
        "LOG_DIRS": str(tmp_path / "logs"),
        layout.ENV_CLUSTER_DIR: str(tmp_path),
        layout.ENV_LOG_DIR: str(tmp_path / "logs"),
        layout.ENV_CLUSTER_SECRET: "s3cr3t",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)

    without = application_master_context()
    assert options.WEB_DASHBOARD_DIR.key not in without.config_overrides

    monkeypatch.setenv(layout.ENV_CLUSTER_SECRET, "s3cr3t")  # taken out of the environment by the first context
    archive = tmp_path / "dashboard.tar.gz"
    dashboard_files.pack(installed(tmp_path / "client").parent, archive)
    with tarfile.open(archive) as unpacked:
        unpacked.extractall(tmp_path / dashboard_files.DASHBOARD_KEY, filter="data")
    shipped = application_master_context()
    assert shipped.config_overrides[options.WEB_DASHBOARD_DIR.key] == str(tmp_path / dashboard_files.DASHBOARD_KEY / "web")
    assert shipped.config_overrides[options.REST_ADDRESS.key] == "node-1"
