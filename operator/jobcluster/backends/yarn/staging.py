"""Staging a job's files on HDFS, where the NodeManagers localize them from.

Layout (Flink's ``.flink/<appId>``, backends.md §1.3)::

    <base>/.jobcluster/<application id>/   mode 700: program, --py-files, job.graph, config
    <base>/.jobcluster/python/             shared by every job: the Python environments' parts (``pyenv.py``)
    <base>/.jobcluster/dashboard/          shared by every job: Flink's web dashboard (``dashboard_files.py``)

``<base>`` is ``yarn.staging-directory`` (an absolute HDFS path, an
``hdfs://`` URI on the default file system, or a path relative to the home
directory), else the user's HDFS home directory. The application directory
is readable by its owner only, because it also holds the cluster's secret
(docs/deployment/security.md). It is removed when the job ends, and by the
client when the deployment fails.

Files go through WebHDFS with the ``hdfs`` package (the NameNode's HTTP
API), so the client needs no JVM for HDFS. Each staged file's size and
modification time are read back from the NameNode afterwards: YARN refuses
a LocalResource whose recorded timestamp differs from the file's.

Errors: every failure of the file system (an HdfsError from the NameNode, a
connection error or timeout of the HTTP client, a local OSError) is raised
as :class:`StagingError` naming the path, with the original as the cause.
"""

from __future__ import annotations

import getpass
import os
import posixpath
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import requests
from hdfs import Client, InsecureClient
from hdfs.util import HdfsError

from jobcluster.backends.yarn.config_options import YARN_STAGING_DIRECTORY, YARN_WEBHDFS_URL
from jobcluster.backends.yarn.errors import StagingError, YarnConfigurationError
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.kerberos import SpnegoWebHdfsClient, check_ticket, is_kerberized
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor, LocalResourceType, LocalResourceVisibility
from jobcluster.backends.yarn.tokens import container_tokens, hdfs_token

STAGING_ROOT = ".jobcluster"
"""Name of jobcluster's directory under the staging base (Flink: ``.flink``)."""

APPLICATION_DIR_PERMISSION = "700"
SHARED_DIR_PERMISSION = "755"
"""``.jobcluster`` itself: other users must traverse it to reach PUBLIC files below it."""

DEFAULT_TIMEOUT = 60.0
"""Seconds for one WebHDFS request (connect, and each read of the answer); a large upload streams in many reads."""


def hadoop_user(environ: dict[str, str] | None = None) -> str:
    """The user HDFS and YARN see on a cluster without Kerberos: ``HADOOP_USER_NAME``, else the login name."""
    env = os.environ if environ is None else environ
    return env.get("HADOOP_USER_NAME") or getpass.getuser()


def webhdfs_client(
    hadoop_conf: HadoopConfiguration,
    user: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    url: str | None = None,
    environ: Mapping[str, str] | None = None,
    proxy_user: str | None = None,
) -> Client:
    """A WebHDFS client of ``url`` (``jobcluster.yarn.webhdfs.url``, a gateway such as HttpFS) when given, else of
    the NameNode(s) of ``hadoop_conf``. Without Kerberos it acts as ``user`` (simple authentication's
    ``user.name``); on a Kerberized cluster (``kerberos.is_kerberized``) as the holder of the HDFS delegation token
    of a YARN container (``HADOOP_TOKEN_FILE_LOCATION`` in ``environ``: the ApplicationMaster), else of the
    client's ticket over SPNEGO (``user`` is then not the client's to choose), acting as ``proxy_user`` when given
    (WebHDFS's ``doas``: Hadoop's proxy users, ``proxy_users.py``; the NameNode decides whether the ticket may).

    Raises:
        YarnConfigurationError: ``url`` is not an http(s) URL, or (without it) the default file system is not HDFS.
        KerberosLoginError: a Kerberized cluster, and the client has no ticket (or an expired one), or lacks the
            ``kerberos`` extra; raised before any request.
        TokenFormatError, OSError: the container's token file is unreadable.
    """
    if url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise YarnConfigurationError(f"{YARN_WEBHDFS_URL.key} {url!r} must be an http:// or https:// URL, e.g. http://httpfs:14000.")
        base = url.rstrip("/")
    else:
        base = ";".join(hadoop_conf.webhdfs_urls())
    if not is_kerberized(hadoop_conf):
        return InsecureClient(base, user=user or hadoop_user(), timeout=timeout)
    if hdfs_token(container_tokens(environ)) is not None:
        session = requests.Session()
        session.auth = ContainerTokenAuth(environ)
        return Client(base, timeout=timeout, session=session)
    check_ticket(environ)
    return SpnegoWebHdfsClient(base, timeout, proxy_user=proxy_user)


class ContainerTokenAuth(requests.auth.AuthBase):
    """WebHDFS's ``delegation=`` with the container's HDFS delegation token as it is when the request is sent: the
    ApplicationMaster's token file is rewritten when its DelegationTokenManager obtains new tokens
    (``delegation_tokens.py``), so a request late in a long job carries a token that is still valid."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = environ

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        token = hdfs_token(container_tokens(self.environ))
        if token is not None and request.url is not None:
            request.prepare_url(request.url, {"delegation": token.url_string()})
        return request


@contextmanager
def hdfs_errors(what: str) -> Iterator[None]:
    """Turn the file system's errors into StagingError("<what>: <reason>")."""
    try:
        yield
    except HdfsError as error:
        raise StagingError(f"{what}: {error.message}") from error
    except requests.RequestException as error:
        raise StagingError(f"{what}: WebHDFS is not reachable ({error})") from error
    except OSError as error:
        raise StagingError(f"{what}: {error}") from error


class HdfsPaths:
    """Where staged files live on one HDFS, and how their paths are qualified.

    ``default_fs``: ``hdfs://authority`` of the client configuration; every
    LocalResource path is ``default_fs`` + an absolute path.
    """

    def __init__(self, client: Client, default_fs: str) -> None:
        self.client = client
        self.default_fs = default_fs.rstrip("/")

    def qualify(self, path: str) -> str:
        """``/user/alice/x`` as ``hdfs://namenode:8020/user/alice/x``."""
        return f"{self.default_fs}{path}"

    def staging_base(self, staging_directory: str | None) -> str:
        """The absolute HDFS path of the staging base (see the module docstring).

        Raises:
            YarnConfigurationError: ``yarn.staging-directory`` names another file system.
            StagingError: the home directory cannot be read from the NameNode.
        """
        if not staging_directory:
            with hdfs_errors("cannot read the HDFS home directory"):
                return str(self.client.resolve(""))
        parts = urlsplit(staging_directory)
        if parts.scheme:
            fs = urlsplit(self.default_fs)
            if parts.scheme != fs.scheme or (parts.netloc and parts.netloc != fs.netloc):
                raise YarnConfigurationError(
                    f"{YARN_STAGING_DIRECTORY.key} {staging_directory!r} is not on the default file system {self.default_fs}; "
                    "use a path on it (an absolute path, or a URI with its authority)."
                )
            path = parts.path or "/"
        else:
            path = staging_directory
        if not posixpath.isabs(path):
            with hdfs_errors("cannot read the HDFS home directory"):
                path = posixpath.join(self.client.resolve(""), path)
        return posixpath.normpath(path)

    def describe(
        self,
        path: str,
        key: str,
        type: LocalResourceType = LocalResourceType.FILE,
        visibility: LocalResourceVisibility = LocalResourceVisibility.APPLICATION,
    ) -> LocalResourceDescriptor:
        """The LocalResource of the HDFS file ``path``, with size and modification time read from the NameNode."""
        with hdfs_errors(f"cannot read the status of {self.qualify(path)}"):
            status = self.client.status(path)
        if status["type"] != "FILE":
            raise StagingError(f"{self.qualify(path)} is a {status['type'].lower()}, not a file")
        return LocalResourceDescriptor(
            key=key,
            path=self.qualify(path),
            size=int(status["length"]),
            modification_time=int(status["modificationTime"]),
            type=type,
            visibility=visibility,
        )

    def ensure_directory(self, path: str, permission: str) -> None:
        """Create ``path`` (and missing parents) and give it ``permission`` (also when it existed:
        the NameNode applies its umask to a new directory)."""
        with hdfs_errors(f"cannot create {self.qualify(path)}"):
            self.client.makedirs(path, permission=permission)
            self.client.set_permission(path, permission)


class StagingDirectory:
    """The staging directory of one YARN application: ``<base>/.jobcluster/<application id>/``.

    Create it with :meth:`create`; :meth:`upload` and :meth:`write` stage a
    file under a key (its name in the container's working directory) and
    return its LocalResource; :meth:`remove` deletes everything. Used as a
    context manager, it removes itself when the block raises.
    """

    def __init__(self, paths: HdfsPaths, base: str, application_id: str) -> None:
        self.paths = paths
        self.base = base
        self.application_id = application_id
        self.path = posixpath.join(base, STAGING_ROOT, application_id)

    @property
    def uri(self) -> str:
        """The directory as a qualified URI (what the ApplicationMaster deletes at the end)."""
        return self.paths.qualify(self.path)

    @classmethod
    def create(cls, paths: HdfsPaths, staging_directory: str | None, application_id: str) -> StagingDirectory:
        """Create the application's directory, mode 700, under ``.jobcluster`` (755) of the staging base.

        Raises:
            StagingError: HDFS refused or is unreachable; nothing of this application is left on it.
            YarnConfigurationError: ``yarn.staging-directory`` is unusable.
        """
        staging = cls(paths, paths.staging_base(staging_directory), application_id)
        root = posixpath.join(staging.base, STAGING_ROOT)
        with hdfs_errors(f"cannot create {paths.qualify(root)}"):
            exists = paths.client.status(root, strict=False) is not None
        if not exists:
            paths.ensure_directory(root, SHARED_DIR_PERMISSION)
        try:
            paths.ensure_directory(staging.path, APPLICATION_DIR_PERMISSION)
        except StagingError:
            staging.remove(missing_ok=True)
            raise
        return staging

    def remote_path(self, key: str) -> str:
        """The HDFS path of ``key`` in this directory."""
        LocalResourceDescriptor(key=key, path=self.uri, size=0, modification_time=0)  # validates the key
        return posixpath.join(self.path, key)

    def upload(
        self, local_path: str | os.PathLike[str], key: str | None = None, type: LocalResourceType = LocalResourceType.FILE
    ) -> LocalResourceDescriptor:
        """Copy the local file ``local_path`` to ``<dir>/<key>`` (key: the file's name) and describe it (APPLICATION)."""
        source = Path(local_path)
        key = key or source.name
        remote = self.remote_path(key)
        with hdfs_errors(f"cannot upload {source} to {self.paths.qualify(remote)}"), open(source, "rb") as data:
            self.paths.client.write(remote, data=data, overwrite=True)
        return self.paths.describe(remote, key, type)

    def write(self, key: str, data: bytes, permission: str | None = None) -> LocalResourceDescriptor:
        """Store ``data`` as ``<dir>/<key>`` (with ``permission``, octal; None: the NameNode's umask) and describe it
        (APPLICATION, FILE)."""
        remote = self.remote_path(key)
        with hdfs_errors(f"cannot write {self.paths.qualify(remote)}"):
            self.paths.client.write(remote, data=data, overwrite=True, permission=permission)
        return self.paths.describe(remote, key)

    def exists(self) -> bool:
        with hdfs_errors(f"cannot read the status of {self.uri}"):
            return self.paths.client.status(self.path, strict=False) is not None

    def remove(self, missing_ok: bool = True) -> bool:
        """Delete the directory and everything in it (not to the trash); True if it existed.

        Raises:
            StagingError: HDFS refused or is unreachable, or the directory is missing and not ``missing_ok``.
        """
        with hdfs_errors(f"cannot remove the staging directory {self.uri}"):
            removed = bool(self.paths.client.delete(self.path, recursive=True))
        if not removed and not missing_ok:
            raise StagingError(f"the staging directory {self.uri} does not exist")
        return removed

    def __enter__(self) -> StagingDirectory:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is not None:
            try:
                self.remove()
            except StagingError as cleanup_error:
                exc.add_note(f"and the staging directory was not removed: {cleanup_error}")
