"""The ``yarn.*`` options of one deployment, read and checked once.

Why a typed snapshot: the descriptor, the submission context and the
ApplicationMaster's driver each need a few of these values, and a malformed
one must fail before anything is created on the cluster, with an error that
names the key. Keys, defaults and meanings are Flink's ``YarnConfigOptions``
(declared in ``config_options.py``); how an unset value is filled in follows Flink's
``YarnClusterDescriptor`` and ``YarnWorkerResourceSpecFactory``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal

from jobcluster.backends.yarn.config_options import (
    PYTHON_ARCHIVES,
    PYTHON_EXECUTABLE,
    YARN_APPLICATION_ATTEMPTS,
    YARN_APPLICATION_ID,
    YARN_APPLICATION_NAME,
    YARN_APPLICATION_NODE_LABEL,
    YARN_APPLICATION_PRIORITY,
    YARN_APPLICATION_QUEUE,
    YARN_APPLICATION_TYPE,
    YARN_APPMASTER_VCORES,
    YARN_CONTAINER_REQUEST_HEARTBEAT_INTERVAL,
    YARN_CONTAINERS_VCORES,
    YARN_HEARTBEAT_INTERVAL,
    YARN_STAGING_DIRECTORY,
    YARN_TAGS,
)
from jobcluster.backends.yarn.errors import YarnConfigurationError
from jobcluster.backends.yarn.python_archives import PythonArchive, archived_interpreter, parse_archives
from jobcluster.config import options as o
from jobcluster.config.configuration import Configuration
from jobcluster.memory.spec import cpu_decimal

DEFAULT_APPLICATION_TYPE = "jobcluster"
"""``yarn.application.type`` when unset: ``jobcluster list`` finds job clusters by it."""

JOB_ID_TAG_PREFIX = "jobcluster-job-id:"
"""Prefix of the application tag that carries the JobID (``cancel JOB_ID`` finds the application by it)."""

# YARN's own limits on tags (ApplicationSubmissionContext: yarn.resourcemanager.application.max-tags
# defaults to 10, yarn.resourcemanager.application.max-tag.length to 100, ASCII only); YARN stores them
# lower-cased, so a tag is compared lower-cased too.
MAX_TAGS = 10
MAX_TAG_LENGTH = 100

_APPLICATION_ID = re.compile(r"application_\d+_\d+")


@dataclass(frozen=True)
class YarnOptions:
    """What a YARN deployment reads from the configuration.

    ``priority`` and ``attempts`` are ``None`` when YARN's default applies;
    ``tags`` are lower-cased, deduplicated, in order, the JobID tag last;
    ``heartbeat_interval`` and ``container_request_interval`` are seconds; ``python`` is ``python.executable``
    (absolute, or relative into one of ``python_archives``).
    """

    application_name: str
    queue: str | None
    priority: int | None
    application_type: str
    node_label: str | None
    attempts: int
    am_vcores: int
    tags: tuple[str, ...]
    staging_directory: str | None
    heartbeat_interval: float
    container_request_interval: float
    application_id: str | None
    python: str | None
    python_archives: tuple[PythonArchive, ...] = ()


def yarn_options(config: Configuration, job_name: str, job_id: str | None = None) -> YarnOptions:
    """The YARN options of ``config`` for the job ``job_name`` (whose JobID becomes a tag when given).

    Raises:
        YarnConfigurationError: a value is out of range or malformed; the message names the key.
        IllegalConfigurationError: a value cannot be parsed at all (from :meth:`Configuration.get`).
    """
    name = _blank_to_none(config.get(YARN_APPLICATION_NAME)) or job_name
    priority = config.get(YARN_APPLICATION_PRIORITY)
    if priority < -1:
        raise YarnConfigurationError(
            f"{YARN_APPLICATION_PRIORITY.key} must be a non-negative integer, or -1 for YARN's default; got {priority}."
        )
    attempts = config.get(YARN_APPLICATION_ATTEMPTS)
    if attempts is not None and attempts < 1:
        raise YarnConfigurationError(f"{YARN_APPLICATION_ATTEMPTS.key} must be at least 1, got {attempts}.")
    am_vcores = config.get(YARN_APPMASTER_VCORES)
    if am_vcores < 1:
        raise YarnConfigurationError(f"{YARN_APPMASTER_VCORES.key} must be at least 1, got {am_vcores}.")
    heartbeat = config.get(YARN_HEARTBEAT_INTERVAL)
    if heartbeat < 1:
        raise YarnConfigurationError(f"{YARN_HEARTBEAT_INTERVAL.key} must be at least 1 (seconds), got {heartbeat}.")
    request_interval = config.get(YARN_CONTAINER_REQUEST_HEARTBEAT_INTERVAL)
    if request_interval <= 0:
        raise YarnConfigurationError(f"{YARN_CONTAINER_REQUEST_HEARTBEAT_INTERVAL.key} must be positive, got {request_interval:g} s.")
    archives = parse_archives(config.get(PYTHON_ARCHIVES))
    return YarnOptions(
        application_name=name,
        queue=_blank_to_none(config.get(YARN_APPLICATION_QUEUE)),
        priority=priority if priority >= 0 else None,
        application_type=_blank_to_none(config.get(YARN_APPLICATION_TYPE)) or DEFAULT_APPLICATION_TYPE,
        node_label=_blank_to_none(config.get(YARN_APPLICATION_NODE_LABEL)),
        attempts=attempts or 1,
        am_vcores=am_vcores,
        tags=application_tags(config.get(YARN_TAGS), job_id),
        staging_directory=_staging_directory(config),
        heartbeat_interval=float(heartbeat),
        container_request_interval=request_interval,
        application_id=application_id(config),
        python=_python(config, archives),
        python_archives=archives,
    )


def application_tags(text: str, job_id: str | None = None) -> tuple[str, ...]:
    """``yarn.tags`` split at commas and trimmed (Flink), lower-cased as YARN stores them, plus the JobID tag.

    Raises:
        YarnConfigurationError: more than YARN's 10 tags, a tag over 100 characters, or not ASCII.
    """
    tags: list[str] = []
    candidates = [t.strip().lower() for t in (text or "").split(",")]
    if job_id:
        candidates.append(f"{JOB_ID_TAG_PREFIX}{job_id}".lower())
    for tag in candidates:
        if not tag or tag in tags:
            continue
        if len(tag) > MAX_TAG_LENGTH or not tag.isascii():
            raise YarnConfigurationError(f"{YARN_TAGS.key}: tag {tag!r} must be ASCII and at most {MAX_TAG_LENGTH} characters long.")
        tags.append(tag)
    if len(tags) > MAX_TAGS:
        raise YarnConfigurationError(f"{YARN_TAGS.key}: at most {MAX_TAGS} tags (including jobcluster's JobID tag), got {len(tags)}.")
    return tuple(tags)


def job_id_of_tags(tags: list[str] | tuple[str, ...]) -> str | None:
    """The JobID carried by an application's tags, or None."""
    for tag in tags:
        if tag.startswith(JOB_ID_TAG_PREFIX):
            return tag[len(JOB_ID_TAG_PREFIX) :]
    return None


def application_id(config: Configuration) -> str | None:
    """``yarn.application.id`` checked for YARN's form ``application_<timestamp>_<sequence>``, or None."""
    value = _blank_to_none(config.get(YARN_APPLICATION_ID))
    if value is not None and not _APPLICATION_ID.fullmatch(value):
        raise YarnConfigurationError(
            f"{YARN_APPLICATION_ID.key} {value!r} is not a YARN application id (application_<cluster timestamp>_<sequence>)."
        )
    return value


def task_manager_cpu_cores(config: Configuration) -> Decimal:
    """CPU cores of a TaskExecutor on YARN (Flink's ``YarnWorkerResourceSpecFactory``):
    ``taskmanager.cpu.cores``, else ``yarn.containers.vcores`` when positive, else the slots.

    Raises:
        YarnConfigurationError: ``yarn.containers.vcores`` is 0 or below -1.
    """
    configured = config.get(o.TASK_MANAGER_CPU_CORES)
    if configured is not None:
        return cpu_decimal(configured)
    vcores = config.get(YARN_CONTAINERS_VCORES)
    if vcores == 0 or vcores < -1:
        raise YarnConfigurationError(f"{YARN_CONTAINERS_VCORES.key} must be at least 1, or -1 for the number of slots; got {vcores}.")
    if vcores > 0:
        return cpu_decimal(vcores)
    return cpu_decimal(config.get(o.NUM_TASK_SLOTS))


def vcores_of(cpu_cores: Decimal) -> int:
    """A CPU amount as YARN vcores: rounded up to a whole number, at least 1 (Flink rounds up the same way)."""
    return max(1, math.ceil(cpu_cores))


def _staging_directory(config: Configuration) -> str | None:
    value = _blank_to_none(config.get(YARN_STAGING_DIRECTORY))
    if value is not None and value.startswith("file:"):
        raise YarnConfigurationError(
            f"{YARN_STAGING_DIRECTORY.key} {value!r} is on the local file system; "
            "the NodeManagers fetch staged files from a distributed one (an hdfs:// URI or an absolute HDFS path)."
        )
    return value


def _python(config: Configuration, archives: tuple[PythonArchive, ...]) -> str | None:
    value = _blank_to_none(config.get(PYTHON_EXECUTABLE))
    if value is not None:
        key = next(k for k in PYTHON_EXECUTABLE.all_keys if config.get_raw(k) is not None)  # the key the user wrote
        archived_interpreter(value, archives, key)  # validates
    return value


def _blank_to_none(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value or None
