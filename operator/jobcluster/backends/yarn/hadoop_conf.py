"""The client's Hadoop configuration: ``HADOOP_CONF_DIR`` (or ``YARN_CONF_DIR``) read from Python.

Why read the XML here when the JVM reads it too: the WebHDFS client runs in
Python, and a missing or empty configuration directory must be a clear error
before a JVM is started. Only what Python needs is derived: the default file
system (to qualify staged paths), the NameNode's HTTP address(es) for
WebHDFS, and whether a ResourceManager address is configured at all. The
Java clients keep reading the same directory themselves (it leads their
classpath, see ``gateway.py``).

Files are read in Hadoop's order (``core-site.xml``, ``hdfs-site.xml``,
``yarn-site.xml``), later files winning, with ``${name}`` references expanded
from the configuration itself, as Hadoop's ``Configuration`` does for the
common cases.
"""

from __future__ import annotations

import contextlib
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from jobcluster.backends.yarn.errors import YarnConfigurationError

SITE_FILES = ("core-site.xml", "hdfs-site.xml", "yarn-site.xml")

DEFAULT_NAMENODE_HTTP_PORT = 9870
"""Hadoop 3's ``dfs.namenode.http-address`` port."""

DEFAULT_RESOURCEMANAGER_PORT = 8032

_REFERENCE = re.compile(r"\$\{([^}$\s]+)\}")


def hadoop_conf_dir(environ: Mapping[str, str] | None = None, configured: str | None = None) -> Path:
    """The directory ``configured`` (``env.hadoop.conf.dir``), else the one named by ``HADOOP_CONF_DIR``,
    else by ``YARN_CONF_DIR`` (Flink's order).

    Raises:
        YarnConfigurationError: none is set, or the directory holds none of the site files.
    """
    env = os.environ if environ is None else environ
    candidates = [("env.hadoop.conf.dir", configured or "")] + [
        (variable, env.get(variable, "")) for variable in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")
    ]
    for variable, value in candidates:
        value = value.strip()
        if not value:
            continue
        path = Path(value)
        if not path.is_dir():
            raise YarnConfigurationError(
                f"{variable}={value} is not a directory; point it at the Hadoop client configuration (core-site.xml, yarn-site.xml)."
            )
        if not any((path / name).is_file() for name in SITE_FILES):
            raise YarnConfigurationError(
                f"{variable}={value} holds none of {', '.join(SITE_FILES)}; point it at the Hadoop client configuration."
            )
        return path
    raise YarnConfigurationError(
        "Neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set: the yarn-application target needs the Hadoop client configuration "
        "(export HADOOP_CONF_DIR=/etc/hadoop/conf, or -D env.hadoop.conf.dir=/etc/hadoop/conf)."
    )


@dataclass(frozen=True)
class HadoopConfiguration:
    """Key/value properties of the site files of one configuration directory."""

    conf_dir: Path
    properties: Mapping[str, str]

    @classmethod
    def load(cls, conf_dir: str | os.PathLike[str]) -> HadoopConfiguration:
        """Read the site files of ``conf_dir`` (absent files are skipped).

        Raises:
            YarnConfigurationError: a file is not well-formed XML.
        """
        directory = Path(conf_dir)
        props: dict[str, str] = {}
        for name in SITE_FILES:
            path = directory / name
            if path.is_file():
                props.update(_read_site_file(path))
        return cls(directory, props)

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value of ``key`` with ``${...}`` references expanded, or ``default``."""
        value = self.properties.get(key)
        if value is None:
            return default
        return self._expand(value, depth=0)

    def _expand(self, value: str, depth: int) -> str:
        if depth > 20:  # Hadoop's MAX_SUBST
            return value

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("env."):
                return os.environ.get(name[4:], match.group(0))
            inner = self.properties.get(name)
            return self._expand(inner, depth + 1) if inner is not None else match.group(0)

        return _REFERENCE.sub(replace, value)

    @property
    def default_fs(self) -> str:
        """``fs.defaultFS`` without a trailing slash, e.g. ``hdfs://namenode:8020``; ``file://`` when unset."""
        return (self.get("fs.defaultFS") or self.get("fs.default.name") or "file:///").rstrip("/")

    def webhdfs_urls(self) -> list[str]:
        """HTTP base URLs of the NameNode(s) for WebHDFS (``http://host:port``), in order.

        HA: every NameNode of the nameservice in ``fs.defaultFS`` (the ``hdfs`` package tries them in
        turn). An address bound to 0.0.0.0 is reached at the host of ``fs.defaultFS``.

        Raises:
            YarnConfigurationError: the default file system is not HDFS.
        """
        parts = urlsplit(self.default_fs)
        if parts.scheme != "hdfs":
            raise YarnConfigurationError(
                f"fs.defaultFS is {self.default_fs!r} in {self.conf_dir}: the yarn-application target stages files on HDFS, "
                "so the Hadoop configuration must name an hdfs:// default file system."
            )
        https = (self.get("dfs.http.policy") or "HTTP_ONLY").upper() == "HTTPS_ONLY"
        scheme, key = ("https", "dfs.namenode.https-address") if https else ("http", "dfs.namenode.http-address")
        nameservice = parts.hostname or ""
        namenodes = [n.strip() for n in (self.get(f"dfs.ha.namenodes.{nameservice}") or "").split(",") if n.strip()]
        if namenodes:
            addresses = [self.get(f"{key}.{nameservice}.{nn}") for nn in namenodes]
            return [f"{scheme}://{a}" for a in addresses if a]
        address = self.get(f"{key}.{nameservice}") or self.get(key) or f"0.0.0.0:{DEFAULT_NAMENODE_HTTP_PORT}"
        host, _, port = address.rpartition(":")
        if host in ("", "0.0.0.0"):
            host = nameservice
        return [f"{scheme}://{host}:{port}"]

    def resourcemanager_address(self) -> str:
        """``yarn.resourcemanager.address``, else ``<yarn.resourcemanager.hostname>:8032`` (HA: the first RM id's).

        Raises:
            YarnConfigurationError: the configuration names no ResourceManager.
        """
        address = self.get("yarn.resourcemanager.address")
        if address:
            return address
        rm_ids = [r.strip() for r in (self.get("yarn.resourcemanager.ha.rm-ids") or "").split(",") if r.strip()]
        for rm_id in rm_ids:
            address = self.get(f"yarn.resourcemanager.address.{rm_id}")
            host = self.get(f"yarn.resourcemanager.hostname.{rm_id}")
            if address or host:
                return address or f"{host}:{DEFAULT_RESOURCEMANAGER_PORT}"
        host = self.get("yarn.resourcemanager.hostname")
        if host and host != "0.0.0.0":
            return f"{host}:{DEFAULT_RESOURCEMANAGER_PORT}"
        raise YarnConfigurationError(
            f"The Hadoop configuration in {self.conf_dir} names no ResourceManager: set yarn.resourcemanager.address "
            "(or yarn.resourcemanager.hostname) in its yarn-site.xml."
        )

    def resourcemanager_webapp_url(self) -> str:
        """The base URL of the ResourceManager's web services (``/ws/v1/cluster``), e.g. ``http://rm:8088``.

        ``yarn.resourcemanager.webapp.address`` (``.https.address`` when ``yarn.http.policy``
        is HTTPS_ONLY), else the ResourceManager's host with YARN's default web port (8088,
        or 8090 for HTTPS); HA: the first RM id's (a standby redirects to the active one).

        Raises:
            YarnConfigurationError: the configuration names no ResourceManager.
        """
        return self.resourcemanager_webapp_urls()[0]

    def resourcemanager_webapp_urls(self) -> list[str]:
        """The base URL of each ResourceManager's web services (see :meth:`resourcemanager_webapp_url`): one, or one
        per RM id of ``yarn.resourcemanager.ha.rm-ids``, in its order.

        Raises:
            YarnConfigurationError: the configuration names no ResourceManager.
        """
        rm_ids = [r.strip() for r in (self.get("yarn.resourcemanager.ha.rm-ids") or "").split(",") if r.strip()]
        urls = [self._webapp_url(f".{rm_ids[0]}" if rm_ids else "")]
        for rm_id in rm_ids[1:]:
            with contextlib.suppress(YarnConfigurationError):  # an RM the configuration does not place: none to reach
                urls.append(self._webapp_url(f".{rm_id}"))
        return urls

    def _webapp_url(self, suffix: str) -> str:
        https = (self.get("yarn.http.policy") or "HTTP_ONLY").upper() == "HTTPS_ONLY"
        scheme, key, port = (
            ("https", "yarn.resourcemanager.webapp.https.address", 8090) if https else ("http", "yarn.resourcemanager.webapp.address", 8088)
        )
        address = self.get(f"{key}{suffix}") or self.get(key)
        if address:
            host, _, given_port = address.rpartition(":")
            if host not in ("", "0.0.0.0"):
                return f"{scheme}://{address}"
            port = int(given_port or port)
        host = (self.get(f"yarn.resourcemanager.hostname{suffix}") if suffix else None) or self.resourcemanager_address().rpartition(":")[0]
        return f"{scheme}://{host}:{port}"


def _read_site_file(path: Path) -> dict[str, str]:
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as error:
        raise YarnConfigurationError(f"cannot read the Hadoop configuration file {path}: {error}") from error
    props: dict[str, str] = {}
    for prop in root.iter("property"):
        name = (prop.findtext("name") or "").strip()
        if name:
            props[name] = (prop.findtext("value") or "").strip()
    return props
