"""FlinkJobs on YARN clusters: what the operator knows of the yarn-application target (blocking calls).

The Hadoop client configuration comes from the ConfigMap the FlinkJob names
(``spec.hadoopConfigMap``, in its namespace): its keys are the files
(``core-site.xml``, ``yarn-site.xml``, ``hdfs-site.xml``), written to a
directory of the operator's (``<work dir>/<namespace>/<ConfigMap>/``) that
becomes the job's ``env.hadoop.conf.dir``.  Deployment goes through the same
YarnClusterDescriptor as ``jobcluster run -t yarn-application``, in this process.
The same files are kept in the FlinkJob's status (``status.clusterAccess``, see
:meth:`YarnOperatorHook.access`): once the ConfigMap is gone (``kubectl delete
namespace`` deletes it before the FlinkJob), an operator, even a restarted one,
still observes and kills the application with them.

Every application carries the tag ``flinkjob-uid:<uid>``: the operator finds a
FlinkJob's application by it even when the status does not name it yet (the
operator restarted while deploying), and removes every one of them.

Observation costs no JVM: the application report comes from the
ResourceManager's REST API and the job's state from the cluster's own REST API;
once the application has ended, its final status and diagnostics are the
job's result (YARN keeps them, so nothing is written for the FlinkJob).
Removal kills through YARN's Java client (and removes the staging directory).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from jobcluster.backends.yarn.client_jvms import ClientJvms
from jobcluster.backends.yarn.config_options import (
    ENV_HADOOP_CONF_DIR,
    OPERATOR_YARN_CLIENT_JVMS,
    OPERATOR_YARN_HADOOP_USERS,
    PYTHON_ARCHIVES,
    YARN_TAGS,
)
from jobcluster.backends.yarn.descriptor import YarnClusterDescriptor
from jobcluster.backends.yarn.errors import YarnConfigurationError
from jobcluster.backends.yarn.hadoop_conf import SITE_FILES
from jobcluster.backends.yarn.python_archives import parse_archives
from jobcluster.client.descriptor import ClusterDescriptor
from jobcluster.client.operator_hook import ClusterRef, InvalidSpecError
from jobcluster.config.configuration import Configuration
from jobcluster.config.values import parse_map
from jobcluster.errors import IllegalConfigurationError

TAG_PREFIX = "flinkjob-uid:"
ANY_NAMESPACE = "*"
_HADOOP_USER = re.compile(r"[A-Za-z_][A-Za-z0-9._-]{0,63}")
KEPT_DIR = ".kept"  # under the work dir: the files FlinkJobs kept in their status, by digest


def flinkjob_tag(uid: str) -> str:
    """The YARN application tag of the FlinkJob with ``uid`` (lower case, as YARN stores tags)."""
    return f"{TAG_PREFIX}{uid}".lower()


ConfigMapReader = Callable[[str, str], "dict[str, str] | None"]
"""``read(namespace, name)``: the data of a ConfigMap, None when it does not exist (the operator's Kubernetes
client, handed in: a backend never imports another); raises DeploymentError when the API server refuses."""


def yarn_client_jvms(defaults: Mapping[str, str]) -> ClientJvms:
    """The bound on the operator's YARN client JVMs its ``defaults`` set (``jobcluster.operator.yarn.client-jvms``).

    Raises:
        InvalidSpecError: the value is not a whole number of at least 1.
    """
    try:
        return ClientJvms(Configuration(dict(defaults)).get(OPERATOR_YARN_CLIENT_JVMS))
    except (IllegalConfigurationError, ValueError) as exc:
        raise InvalidSpecError(f"{OPERATOR_YARN_CLIENT_JVMS.key}: {exc}") from None


def hadoop_users(defaults: Mapping[str, str]) -> dict[str, str]:
    """The Hadoop user of each namespace the operator's ``defaults`` map (``jobcluster.operator.yarn.hadoop-users``;
    ``*``: any other namespace); empty: none, and no FlinkJob runs on YARN.

    Raises:
        InvalidSpecError: the map is malformed or a user name is not one Hadoop takes.
    """
    text = defaults.get(OPERATOR_YARN_HADOOP_USERS.key)
    try:
        users = parse_map(str(text)) if text else {}
    except ValueError as exc:
        raise InvalidSpecError(f"{OPERATOR_YARN_HADOOP_USERS.key}: {exc} (expected 'namespace1:user1,namespace2:user2')") from None
    for namespace, user in users.items():
        if not _HADOOP_USER.fullmatch(user):
            raise InvalidSpecError(f"{OPERATOR_YARN_HADOOP_USERS.key}: '{user}' (of namespace {namespace}) is not a Hadoop user name")
    return users


def site_files(files: Mapping[str, str]) -> dict[str, str]:
    """Those of ``files`` (file name → text) that are a Hadoop client's site files (``hadoop_conf.SITE_FILES``):
    other keys of a tenant's ConfigMap or of a FlinkJob's status never become files of the operator."""
    return {name: text for name, text in files.items() if name in SITE_FILES}


class YarnOperatorHook:
    """The :class:`~jobcluster.client.operator_hook.OperatorHook` of FlinkJobs on YARN clusters; ``read_config_map``
    reads the Hadoop ConfigMaps, ``work_dir`` holds their files; ``client_jvms`` bounds the YARN client JVMs of all
    its deployments and removals together (``jobcluster.operator.yarn.client-jvms``; None: unbounded);
    ``hadoop_users``: the Hadoop user of each namespace (:func:`hadoop_users`; None: every FlinkJob as the operator's
    own user)."""

    def __init__(
        self,
        read_config_map: ConfigMapReader,
        work_dir: Path,
        client_jvms: ClientJvms | None = None,
        hadoop_users: Mapping[str, str] | None = None,
    ) -> None:
        self.read_config_map = read_config_map
        self.client_jvms = client_jvms
        self.hadoop_users = None if hadoop_users is None else dict(hadoop_users)
        self.work_dir = work_dir
        self._written: dict[tuple[str, str], Path] = {}
        self._lock = threading.Lock()

    def access(self, ref: ClusterRef) -> dict[str, str]:
        """The site files of the FlinkJob's Hadoop ConfigMap (file name → XML text): kept in its status, they reach
        its application once the ConfigMap is gone.

        Raises:
            InvalidSpecError: the spec names no ConfigMap, or the ConfigMap does not exist or holds no file.
            DeploymentError: the API server refuses or cannot be reached.
        """
        return self._read_config_map(ref.namespace, self._config_map_name(ref))

    def hadoop_conf_dir(self, ref: ClusterRef, refresh: bool = False) -> Path:
        """The directory with the FlinkJob's Hadoop client files: its ConfigMap's, written now when ``refresh``
        (a deployment) or not written yet by this operator; else, when the ConfigMap is gone and not ``refresh``,
        the files kept from its deployment (``ref.access``).

        Raises:
            InvalidSpecError: the spec names no usable ConfigMap (one that exists and holds a site file), and no
                files were kept or this is a deployment.
            DeploymentError: the API server refuses or cannot be reached.
        """
        if ref.access and not refresh and not ref.hadoop_config_map:
            return self._kept_dir(ref.access)
        name = self._config_map_name(ref)
        key = (ref.namespace, name)
        with self._lock:
            if key in self._written and not refresh:
                return self._written[key]
        try:
            files = self._read_config_map(ref.namespace, name)
        except InvalidSpecError:
            if refresh or not ref.access:
                raise
            return self._kept_dir(ref.access)
        directory = self._write(self.work_dir / ref.namespace / name, files)
        with self._lock:
            self._written[key] = directory
        return directory

    def _kept_dir(self, files: Mapping[str, str]) -> Path:
        """A directory of ``files`` named by their digest: FlinkJobs that kept the same files share it, and a
        directory once written is never stale."""
        digest = hashlib.sha256(json.dumps(dict(files), sort_keys=True).encode()).hexdigest()[:16]
        key = ("", digest)  # no namespace is empty: no ConfigMap's key
        with self._lock:
            if key in self._written:
                return self._written[key]
        directory = self._write(self.work_dir / KEPT_DIR / digest, files)
        with self._lock:
            self._written[key] = directory
        return directory

    @staticmethod
    def _write(directory: Path, files: Mapping[str, str]) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in site_files(files).items():  # kept files come from the status: never another name
            # replaced whole, never seen half-written by a deployment of another FlinkJob reading it
            fd, partial = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
            with os.fdopen(fd, "w") as out:
                out.write(text)
            os.replace(partial, directory / name)
        return directory

    def _read_config_map(self, namespace: str, name: str) -> dict[str, str]:
        data = self.read_config_map(namespace, name)
        if data is None:
            raise InvalidSpecError(
                f"spec.hadoopConfigMap {name!r} does not exist in namespace {namespace}: create it from the Hadoop "
                f"client configuration (kubectl create configmap {name} --from-file=$HADOOP_CONF_DIR)",
                reason="HadoopConfigurationMissing",
                transient=True,  # applied after the FlinkJob, it is there at a later attempt
            )
        files = site_files(data)
        if not files:
            raise InvalidSpecError(
                f"ConfigMap {namespace}/{name} (spec.hadoopConfigMap) holds no Hadoop site file ({', '.join(SITE_FILES)})",
                reason="HadoopConfigurationMissing",
            )
        return files

    @staticmethod
    def _config_map_name(ref: ClusterRef) -> str:
        if not ref.hadoop_config_map:
            raise InvalidSpecError("spec.hadoopConfigMap is required for the yarn-application target", reason="HadoopConfigurationMissing")
        return ref.hadoop_config_map

    def descriptor(self, ref: ClusterRef, config: Configuration | None = None) -> ClusterDescriptor:
        """The YarnClusterDescriptor with the FlinkJob's Hadoop configuration, read anew for a deployment (``config``);
        to look (observe, remove), the files kept from the deployment serve when the ConfigMap is gone.

        Raises:
            InvalidSpecError: neither a usable ConfigMap nor (to look) kept files (see :meth:`hadoop_conf_dir`).
            DeploymentError: the API server refuses or cannot be reached.
        """
        deploying = config is not None
        config = config.copy() if config is not None else Configuration()
        config.set(ENV_HADOOP_CONF_DIR, str(self.hadoop_conf_dir(ref, refresh=deploying)))
        return YarnClusterDescriptor(config, self.client_jvms, self.hadoop_user(ref.namespace))

    def hadoop_user(self, namespace: str) -> str | None:
        """The Hadoop user of ``namespace``'s FlinkJobs (its own, else ``*``'s); None: the operator's own (no map, or
        a namespace no longer mapped, whose clusters are still looked at and removed)."""
        users = self.hadoop_users or {}
        return users.get(namespace) or users.get(ANY_NAMESPACE)

    def prepare(self, ref: ClusterRef, config: Configuration) -> Configuration:
        """``config`` with the FlinkJob's tag among ``yarn.tags``.

        Raises:
            InvalidSpecError: (reason ``HadoopUserNotMapped``) the operator maps Hadoop users and none to the
                FlinkJob's namespace; (reason ``LocalFileNotAllowed``) ``python.archives`` names a local file, which
                the operator would read from its own file system and upload.
        """
        try:
            local = [a.source for a in parse_archives(config.get(PYTHON_ARCHIVES)) if not a.remote]
        except YarnConfigurationError as exc:
            raise InvalidSpecError(str(exc)) from None
        if local:
            raise InvalidSpecError(
                f"{PYTHON_ARCHIVES.key}: {', '.join(local)} would be read from the operator's own file system; a "
                "FlinkJob's archives are hdfs:// files",
                reason="LocalFileNotAllowed",
            )
        if self.hadoop_users is not None and self.hadoop_user(ref.namespace) is None:
            raise InvalidSpecError(
                f"namespace {ref.namespace} has no Hadoop user to run yarn-application FlinkJobs as: the operator's "
                f"administrator maps it in {OPERATOR_YARN_HADOOP_USERS.key} (chart value yarn.hadoopUsers), "
                "so that its files on HDFS and its applications are that user's",
                reason="HadoopUserNotMapped",
            )
        config = config.copy()
        user_tags = [t for t in config.get(YARN_TAGS).split(",") if t.strip()]
        config.set(YARN_TAGS, ",".join([*user_tags, flinkjob_tag(ref.uid)]))
        return config

    def cluster_id(self, ref: ClusterRef, descriptor: ClusterDescriptor) -> str:
        """The application of the status, else the running one tagged with the FlinkJob's uid."""
        return ref.cluster_id or next(iter(self.running(ref, descriptor)), "")

    def running(self, ref: ClusterRef, descriptor: ClusterDescriptor) -> list[str]:
        """Every application tagged with the FlinkJob's uid that has not ended.

        Raises:
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        assert isinstance(descriptor, YarnClusterDescriptor)
        return descriptor.applications_tagged(flinkjob_tag(ref.uid))
