"""What a YARN container tells the process in it, and the TaskExecutor's launch line.

A NodeManager starts every container with (YARN's ``ApplicationConstants.Environment``):

- ``CONTAINER_ID``: ``container_[e<epoch>_]<cluster timestamp>_<app>_<attempt>_<n>``;
- ``NM_HOST``: the node's host name (where the ApplicationMaster binds its endpoints);
- ``LOCAL_DIRS``: comma-separated scratch directories of the application on this node
  (Spark's local and work directories go there; YARN deletes them with the application);
- ``LOG_DIRS``: comma-separated log directories of this container (what ``yarn logs`` shows).

The client adds :data:`ENV_LOCAL_RESOURCES` (the staged files as JSON, see
``local_resources.py``), :data:`ENV_STAGING_BASE` and :data:`ENV_CONTAINER_PYTHON` to the
ApplicationMaster's environment, so the ApplicationMaster can hand the very same files and
Python to its TaskExecutor containers and remove the files at the end. ``HADOOP_CONF_DIR``
comes from the NodeManager (it is in YARN's default ``yarn.nodemanager.env-whitelist``).

Pure functions over an environment mapping; errors are :class:`YarnDeploymentError`
naming the missing variable.
"""

from __future__ import annotations

import base64
import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from jobcluster.backends.yarn.errors import StagingError, YarnDeploymentError
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor, descriptors_from_json, descriptors_to_json
from jobcluster.runtime.entrypoint.layout import ENV_BIND_HOST, ENV_CLUSTER_DIR, ENV_LOG_DIR

ENV_LOCAL_RESOURCES = "JOBCLUSTER_YARN_LOCAL_RESOURCES"
"""The ApplicationMaster's staged LocalResources, as URL-safe base64 of their JSON (Flink's
``_CLIENT_SHIP_FILES`` idea). Encoded because the NodeManager writes each variable into its launch
script as ``export NAME="value"`` without escaping, so the JSON's double quotes would break it."""

ENV_STAGING_BASE = "JOBCLUSTER_YARN_STAGING_BASE"
"""The staging base on HDFS (the application's files are in ``<base>/.jobcluster/<application id>``): the
ApplicationMaster deletes that directory after it unregisters."""

ENV_CONTAINER_PYTHON = "JOBCLUSTER_YARN_PYTHON"
"""The Python the client chose for every container (``./environment/bin/python`` when it ships its own
environment, :data:`SKELETON_PYTHON` with an archived interpreter, else ``python.executable``): the
ApplicationMaster starts its TaskExecutors with it."""

ENV_ARCHIVED_PYTHON = "JOBCLUSTER_YARN_ARCHIVED_PYTHON"
"""The interpreter in one of ``python.archives`` (relative to the working directory, ``python/bin/python3.11``) that
runs the shipped environment through :data:`PYTHON_SKELETON`; unset otherwise."""

ENVIRONMENT_KEY = "environment"
"""The shipped environment's part in a container's working directory (``pyenv.py``)."""

PYTHON_SKELETON = ".jobcluster-python"
"""The virtual environment's skeleton a launch line makes in the working directory for an archived interpreter."""

SKELETON_PYTHON = f"./{PYTHON_SKELETON}/bin/python"
"""The Python a container runs with an archived interpreter."""

LOG_DIR_EXPANSION = "<LOG_DIR>"
"""What the NodeManager replaces with the container's log directory in a launch command."""

_DOUBLE_QUOTED_SPECIALS = re.compile(r'([\\"$`])')
"""What bash still interprets inside double quotes."""

_CONTAINER_ID = re.compile(r"container_(?:e\d+_)?(\d+)_(\d+)_(\d+)_(\d+)")


@dataclass(frozen=True)
class ContainerEnvironment:
    """The environment of a YARN container, read by the process in it."""

    container_id: str
    node_host: str
    local_dirs: tuple[str, ...]
    log_dirs: tuple[str, ...]
    hadoop_conf_dir: str | None
    local_resources: tuple[LocalResourceDescriptor, ...]
    staging_base: str | None = None
    python: str | None = None
    archived_python: str | None = None

    @property
    def application_id(self) -> str:
        """``application_<cluster timestamp>_<app>`` of the container's id."""
        return application_id_of(self.container_id)

    @property
    def log_dir(self) -> str:
        """The first log directory (the one YARN's log aggregation and ``yarn logs`` read)."""
        return self.log_dirs[0]

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ContainerEnvironment:
        """Read the container's environment.

        Raises:
            YarnDeploymentError: a variable the NodeManager always sets is missing (not in a YARN container),
                or the LocalResources JSON is malformed.
        """
        container_id = _required(environ, "CONTAINER_ID")
        application_id_of(container_id)  # validates
        resources = environ.get(ENV_LOCAL_RESOURCES)
        return cls(
            container_id=container_id,
            node_host=_required(environ, "NM_HOST"),
            local_dirs=_dirs(_required(environ, "LOCAL_DIRS")),
            log_dirs=_dirs(_required(environ, "LOG_DIRS")),
            hadoop_conf_dir=environ.get("HADOOP_CONF_DIR") or None,
            local_resources=tuple(decode_local_resources(resources)) if resources else (),
            staging_base=environ.get(ENV_STAGING_BASE) or None,
            python=environ.get(ENV_CONTAINER_PYTHON) or None,
            archived_python=environ.get(ENV_ARCHIVED_PYTHON) or None,
        )


def encode_local_resources(descriptors: Iterable[LocalResourceDescriptor]) -> str:
    """The value of :data:`ENV_LOCAL_RESOURCES` for ``descriptors``."""
    return base64.urlsafe_b64encode(descriptors_to_json(descriptors).encode()).decode("ascii")


def decode_local_resources(value: str) -> list[LocalResourceDescriptor]:
    """Inverse of :func:`encode_local_resources`.

    Raises:
        YarnDeploymentError: not such a value.
    """
    try:
        text = base64.urlsafe_b64decode(value.encode("ascii")).decode()
        return descriptors_from_json(text)
    except (ValueError, StagingError) as error:
        raise YarnDeploymentError(f"{ENV_LOCAL_RESOURCES} does not hold the staged LocalResources: {error}") from error


def application_id_of(container_id: str) -> str:
    """The application id of a container id (``container_e17_1700000000000_0003_01_000002`` →
    ``application_1700000000000_0003``).

    Raises:
        YarnDeploymentError: not a YARN container id.
    """
    match = _CONTAINER_ID.fullmatch(container_id)
    if match is None:
        raise YarnDeploymentError(f"{container_id!r} is not a YARN container id (container_<timestamp>_<app>_<attempt>_<n>)")
    return f"application_{match.group(1)}_{match.group(2)}"


#: glibc's malloc arenas per process in the containers, unless their environment says otherwise (see launch_command).
MALLOC_ARENAS = 4


def launch_command(argv: Sequence[str], dynamic_configs: Mapping[str, str], log_name: str, archived_python: str | None = None) -> str:
    r"""The shell line a NodeManager runs to start a jobcluster process in a container: ``argv`` with
    ``-D key=value`` per dynamic config, its stdout and stderr into ``<LOG_DIR>/<log_name>.out`` / ``.err``;
    with ``archived_python`` (:data:`ENV_ARCHIVED_PYTHON`), :func:`python_skeleton` first.

    The process gets its bind host, cluster directory and log directory from the container it runs in,
    whatever its environment says (a TaskExecutor's launch context is built in the ApplicationMaster's
    container): ``JOBCLUSTER_BIND_HOST`` = ``$NM_HOST`` (every endpoint on the node's address),
    ``JOBCLUSTER_CLUSTER_DIR`` = the working directory (the staged files are localized there, and it lies
    under one of ``LOCAL_DIRS``, so Spark's scratch space does too), ``JOBCLUSTER_LOG_DIR`` = the
    container's log directory (so ``yarn logs`` shows every log).

    The NodeManager writes the line unescaped into its launch script as ``exec /bin/bash -c "<line>"``
    (``ContainerLaunch``'s shell script builder), so each word is shell-quoted for the inner bash and then
    ``\``, ``"``, ``$`` and backquotes are escaped for the outer double quotes: every word arrives as given.

    ``MALLOC_ARENA_MAX`` is 4 unless the container's environment sets it (Hadoop's own value for its daemons,
    HADOOP-7154): glibc reserves 64 MiB of address space per malloc arena, up to 8 per core, in every process
    of the container (the Python processes and each JVM), which YARN's virtual memory check counts
    (``yarn.nodemanager.vmem-check-enabled``, on by Hadoop's default)."""
    words = list(argv)
    for key, value in dynamic_configs.items():
        words += ["-D", f"{key}={value}"]
    prepare = f"{python_skeleton(archived_python)} && " if archived_python else ""
    assignments = prepare + (
        f'{ENV_BIND_HOST}="$NM_HOST" {ENV_CLUSTER_DIR}="$PWD" {ENV_LOG_DIR}={LOG_DIR_EXPANSION} '
        f'MALLOC_ARENA_MAX="${{MALLOC_ARENA_MAX:-{MALLOC_ARENAS}}}" exec '
    )
    line = _DOUBLE_QUOTED_SPECIALS.sub(r"\\\1", assignments + " ".join(shlex.quote(w) for w in words))
    return f"{line} 1>{LOG_DIR_EXPANSION}/{log_name}.out 2>{LOG_DIR_EXPANSION}/{log_name}.err"


def application_master_command(argv: Sequence[str], log_name: str = "jobmanager", archived_python: str | None = None) -> str:
    """The ApplicationMaster's shell line: ``argv`` (the JobClusterEntrypoint, from the container's working
    directory) as :func:`launch_command` starts it."""
    return launch_command(argv, {}, log_name, archived_python)


def python_skeleton(archived_python: str) -> str:
    """Shell commands (for the launch line's bash, in the working directory) that make :data:`PYTHON_SKELETON`, a
    virtual environment's skeleton: ``bin/python`` links to ``archived_python`` (an interpreter unpacked from
    ``python.archives``), ``pyvenv.cfg``'s ``home`` is that interpreter's directory, ``lib`` links to the shipped
    environment's. Python then takes the archive as its base (the standard library) and the skeleton as its prefix,
    so the environment's site-packages and its ``.pth`` files apply, and the parts of the environment are found
    relative to the working directory as with ``./environment/bin/python`` (``pyenv_parts.py``). The links are
    absolute: a relative target would be read from the skeleton's own directories."""
    interpreter = shlex.quote(archived_python)
    home = shlex.quote(posixpath.dirname(archived_python) or ".")
    return (
        f"mkdir -p {PYTHON_SKELETON}/bin"
        f' && ln -sfn "$PWD"/{interpreter} {PYTHON_SKELETON}/bin/python'
        f' && ln -sfn "$PWD"/{ENVIRONMENT_KEY}/lib {PYTHON_SKELETON}/lib'
        f" && printf 'home = %s\\ninclude-system-site-packages = false\\n' \"$PWD\"/{home} > {PYTHON_SKELETON}/pyvenv.cfg"
    )


def task_executor_argv(command: Sequence[str], python: str | None) -> list[str]:
    """The TaskExecutor's argv in its container: the launch context's ``command`` (built in the
    ApplicationMaster, whose interpreter path is its own container's) with the interpreter replaced by
    ``python`` (the shipped ``./environment/bin/python`` or ``python.executable``); unchanged when None."""
    argv = list(command)
    if python and argv:
        argv[0] = python
    return argv


def _required(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name)
    if not value:
        raise YarnDeploymentError(f"{name} is not set: this process does not run in a YARN container")
    return value


def _dirs(value: str) -> tuple[str, ...]:
    return tuple(d for d in value.split(",") if d)
