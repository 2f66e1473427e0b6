"""Flink's web dashboard in the ApplicationMaster's container: shipped from the client, once per dashboard.

The JobManager serves the dashboard from a folder where it runs
(``jobcluster.web.dashboard-dir``, ``runtime/rest/dashboard.py``); a YARN node has
no such folder. So the client ships its own copy, the one ``make venv`` (or
``python -m jobcluster.runtime.rest.dashboard``) fetched into its cache, as a
``.tar.gz`` ARCHIVE LocalResource named :data:`DASHBOARD_KEY`, which the
NodeManager unpacks into the ApplicationMaster's working directory; the
ApplicationMaster then serves ``<working dir>/flink-web-dashboard/web``
(``entrypoint.py``). TaskExecutor containers do not get it.

The files are the same for every job of a jobcluster version, so they are
shared, as the Python environment is (``shared_files.py``): the archive is
uploaded once to ``<staging base>/.jobcluster/dashboard/``, named by a digest of
the files' content, and registered PUBLIC where HDFS permissions allow (each
NodeManager then downloads and unpacks it once for every application).

What the client does when:

- ``jobcluster.web.dashboard-dir`` is set: nothing is shipped; the option names a
  folder on the nodes, which the ApplicationMaster serves;
- its cache has no dashboard: it fetches it from Maven Central first, as
  ``make run`` does; when that fails (no network), it deploys without, and says
  so: the job runs and its REST API answers, and ``/`` says that the dashboard is
  not installed.
"""

from __future__ import annotations

import hashlib
import logging
import os
import posixpath
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor, LocalResourceType
from jobcluster.backends.yarn.shared_files import is_complete, shared_directory, shared_resource, upload_atomically
from jobcluster.backends.yarn.staging import HdfsPaths, hdfs_errors
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.runtime.rest.dashboard import FLINK_WEB_VERSION, dashboard_installed, default_dashboard_dir, fetch_dashboard

log = logging.getLogger(__name__)

DASHBOARD_KEY = "flink-web-dashboard"
"""The archive's name in the ApplicationMaster's working directory."""

SHARED_DIR = "dashboard"
"""Directory under ``<staging base>/.jobcluster/`` holding the shipped dashboards."""

FINGERPRINT_VERSION = "jobcluster-dashboard-1"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ShippedDashboard:
    """The dashboard's archive on HDFS as a LocalResource, and whether this call ``uploaded`` it."""

    resource: LocalResourceDescriptor
    uploaded: bool


def container_dashboard_dir(working_dir: Path) -> Path:
    """Where the shipped dashboard is in a container whose working directory is ``working_dir``."""
    return working_dir / DASHBOARD_KEY / default_dashboard_dir().name


def fingerprint(home: Path) -> str:
    """A hex digest of every file below ``home`` (the dashboard folder's parent: ``web/`` and its completeness mark),
    by relative path and content."""
    digest = hashlib.sha256(f"{FINGERPRINT_VERSION}\0".encode())
    for path in _files(home):
        digest.update(path.relative_to(home).as_posix().encode() + b"\0")
        with open(path, "rb") as f:
            digest.update(hashlib.file_digest(f, "sha256").digest())
    return digest.hexdigest()


def archive_name(digest: str, version: str = FLINK_WEB_VERSION) -> str:
    """The shared archive's file name for the content ``digest`` of the dashboard of Flink ``version``."""
    return f"flink-web-{version}-{digest[:32]}.tar.gz"


def pack(home: Path, target: Path) -> None:
    """``target``: a ``.tar.gz`` of every file below ``home`` at its relative path, readable by everyone (a public
    LocalResource is unpacked for all users of a node)."""

    def readable(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mode = 0o755 if info.isdir() else 0o644
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    with tarfile.open(target, "w:gz") as archive:
        for path in _files(home):
            archive.add(path, arcname=path.relative_to(home).as_posix(), recursive=False, filter=readable)


def _files(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if p.is_file())


def ship_dashboard(paths: HdfsPaths, staging_base: str, directory: Path, progress: Progress) -> ShippedDashboard:
    """The dashboard folder ``directory`` (with its parent's completeness mark, as :func:`fetch_dashboard` leaves it)
    on HDFS under ``<staging_base>/.jobcluster/dashboard/``, packed and uploaded unless its archive is there already;
    an ARCHIVE named :data:`DASHBOARD_KEY`, PUBLIC where HDFS permissions allow.

    Raises:
        StagingError: HDFS refused or is unreachable, or the folder cannot be read or packed.
    """
    home = directory.parent
    with hdfs_errors(f"cannot read Flink's web dashboard in {home}"):
        digest = fingerprint(home)
    # the release, for the archive's name, from the cache's folder name (flink-runtime-web-<version>, fetch_dashboard's)
    version = home.name.removeprefix("flink-runtime-web-") if home.name.startswith("flink-runtime-web-") else FLINK_WEB_VERSION
    remote = posixpath.join(shared_directory(staging_base, SHARED_DIR), archive_name(digest, version))
    with hdfs_errors(f"cannot read the status of {paths.qualify(remote)}"):
        uploaded = not is_complete(paths.client.status(remote, strict=False))
    if uploaded:
        progress(f"Uploading Flink's web dashboard to {paths.qualify(posixpath.dirname(remote))} (once per dashboard) ...")
        with tempfile.TemporaryDirectory(prefix="jobcluster-dashboard-") as scratch:
            archive = Path(scratch) / archive_name(digest, version)
            with hdfs_errors(f"cannot pack Flink's web dashboard of {home}"):
                pack(home, archive)
            upload_atomically(paths, archive, remote)
    return ShippedDashboard(shared_resource(paths, remote, DASHBOARD_KEY, LocalResourceType.ARCHIVE), uploaded)


def client_dashboard(
    config: Configuration, progress: Progress, environ: dict[str, str] | None = None, url: str | None = None
) -> Path | None:
    """The client's dashboard folder to ship (see the module docstring), of the release
    ``jobcluster.web.dashboard-version`` names: None when ``jobcluster.web.dashboard-dir`` is set, or when the
    dashboard is missing and cannot be fetched from ``url`` (default Maven Central's; said through ``progress``).
    ``environ``: where ``$JOBCLUSTER_CACHE`` is read (default ``os.environ``)."""
    configured = config.get(options.WEB_DASHBOARD_DIR)
    if configured:
        log.info("%s is set: the ApplicationMaster serves the dashboard from %s on its node", options.WEB_DASHBOARD_DIR.key, configured)
        return None
    version = config.get(options.WEB_DASHBOARD_VERSION)
    directory = default_dashboard_dir(dict(os.environ) if environ is None else environ, version)
    if dashboard_installed(directory):
        return directory
    progress(f"Fetching Flink's web dashboard {version} from Maven Central into {directory} (once) ...")
    try:
        return fetch_dashboard(directory, url, version=version)
    except OSError as error:
        progress(
            f"Warning: Flink's web dashboard is not shipped, so the job cluster will not serve it ({error}). The job runs "
            "and its REST API answers; fetch the dashboard with `python -m jobcluster.runtime.rest.dashboard` for the next job."
        )
        return None
