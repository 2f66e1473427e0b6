"""Savepoints on HDFS, read and deleted by the client through WebHDFS before anything is deployed.

Why: ``jobcluster run -t yarn-application -s hdfs://...`` must refuse a savepoint
that is missing or not a savepoint before YARN hears of an application, and
``jobcluster savepoint -t yarn-application --dispose hdfs://...`` must work
without a running cluster (``YarnClusterDescriptor.read_savepoint`` and
``dispose_savepoint``). The client reaches HDFS the way it stages files (``staging.py``): WebHDFS, with
the Hadoop configuration of ``env.hadoop.conf.dir``, ``HADOOP_CONF_DIR`` or
``YARN_CONF_DIR``. Only a URI on that configuration's default file system is
read here: another HDFS (or none configured) is left to the job's driver,
which reads it through Hadoop's own FileSystem.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from urllib.parse import urlsplit

import requests
from hdfs import Client
from hdfs.util import HdfsError

from jobcluster.backends.yarn.config_options import ENV_HADOOP_CONF_DIR, YARN_WEBHDFS_URL
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration, hadoop_conf_dir
from jobcluster.backends.yarn.kerberos import is_kerberized
from jobcluster.backends.yarn.proxy_users import proxy_user_to_act_as
from jobcluster.backends.yarn.staging import webhdfs_client
from jobcluster.client.savepoints import EntryKind
from jobcluster.config.configuration import Configuration

_CONF_DIR_VARIABLES = ("HADOOP_CONF_DIR", "YARN_CONF_DIR")


def hdfs_path_of(uri: str, default_fs: str) -> str | None:
    """The absolute HDFS path of ``uri`` when it is on ``default_fs`` (``hdfs://authority``); None otherwise.

    ``hdfs:///p`` (no authority) is on the default file system, as Hadoop reads it.
    """
    parts, fs = urlsplit(uri), urlsplit(default_fs)
    if parts.scheme != "hdfs" or fs.scheme != "hdfs" or parts.netloc not in ("", fs.netloc):
        return None
    return parts.path or "/"


@contextmanager
def _as_os_errors(uri: str) -> Iterator[None]:
    """WebHDFS's failures as OSError, which the client's savepoint rules report (client/savepoints.py)."""
    try:
        yield
    except HdfsError as error:
        raise OSError(error.message) from error
    except requests.RequestException as error:
        raise OSError(f"WebHDFS is not reachable ({error})") from error


class WebHdfsFileSystem:
    """One HDFS through WebHDFS, as a :class:`jobcluster.client.savepoints.SavepointFileSystem` of ``hdfs://`` URIs on it."""

    def __init__(self, client: Client, default_fs: str) -> None:
        self.client = client
        self.default_fs = default_fs

    def _path(self, uri: str) -> str:
        path = hdfs_path_of(uri, self.default_fs)
        if path is None:
            raise ValueError(f"{uri} is not on {self.default_fs}")
        return path

    def kind(self, uri: str) -> EntryKind | None:
        with _as_os_errors(uri):
            status = self.client.status(self._path(uri), strict=False)
        if status is None:
            return None
        return "directory" if status["type"] == "DIRECTORY" else "file"

    def read_text(self, uri: str) -> str:
        with _as_os_errors(uri), self.client.read(self._path(uri), encoding="utf-8") as reader:
            return str(reader.read())

    def delete(self, uri: str) -> None:
        with _as_os_errors(uri):
            if not self.client.delete(self._path(uri), recursive=True):
                raise OSError(f"{uri} does not exist")


def webhdfs_file_system(
    uri: str, config: Configuration, environ: Mapping[str, str] | None = None, user: str | None = None
) -> WebHdfsFileSystem | None:
    """WebHDFS for the savepoint ``uri`` when it is on the default file system of the client's Hadoop configuration;
    None when no configuration is set or ``uri`` is on another file system. ``user``: the Hadoop user to act as (the
    operator's per namespace: ``user.name`` without Kerberos, a proxy user with it); None: this process's own (on a
    Kerberized cluster, ``HADOOP_PROXY_USER`` if set: ``proxy_users.proxy_user_to_act_as``).

    Raises:
        YarnConfigurationError: a configuration directory is set but unusable.
    """
    env = os.environ if environ is None else environ
    configured = config.get(ENV_HADOOP_CONF_DIR)
    if not (configured or any(env.get(v, "").strip() for v in _CONF_DIR_VARIABLES)):
        return None
    hadoop_conf = HadoopConfiguration.load(hadoop_conf_dir(env, configured=configured))
    if hdfs_path_of(uri, hadoop_conf.default_fs) is None:
        return None
    proxy_user = proxy_user_to_act_as(user) if is_kerberized(hadoop_conf) else None
    client = webhdfs_client(hadoop_conf, user=user, url=config.get(YARN_WEBHDFS_URL), proxy_user=proxy_user)
    return WebHdfsFileSystem(client, hadoop_conf.default_fs)
