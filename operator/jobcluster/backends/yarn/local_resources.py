"""YARN LocalResources as plain data: what a container localizes before it starts.

A NodeManager downloads each LocalResource into the container's working
directory under its key (a symlink named ``key``), and refuses it when the
file's modification time on the distributed file system differs from the
recorded ``modification_time`` ("changed on src filesystem"); so size and
time are always read back from HDFS after the upload, never taken from the
local file. ARCHIVE resources are unpacked (tar, tar.gz, tgz, zip, jar).

The descriptors travel as JSON, like Flink's ``YarnLocalResourceDescriptor``
in ``_CLIENT_SHIP_FILES``: the client registers them for the
ApplicationMaster and hands the same list to it, so TaskExecutor containers
localize the very same files without a second upload.

Visibility (YARN's ``LocalResourceVisibility``): PUBLIC resources are shared
by all users of a node and cached across applications, PRIVATE ones by the
applications of one user, APPLICATION ones by one application. A NodeManager
only accepts PUBLIC for a file that is world-readable in a directory chain
that is world-executable (``FSDownload.isPublic``); :func:`visibility_for`
applies the same rule, as Spark's ``ClientDistributedCacheManager`` does,
and falls back to PRIVATE.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from jobcluster.backends.yarn.errors import StagingError


class LocalResourceType(StrEnum):
    FILE = "FILE"
    ARCHIVE = "ARCHIVE"
    PATTERN = "PATTERN"


class LocalResourceVisibility(StrEnum):
    PUBLIC = "PUBLIC"
    PRIVATE = "PRIVATE"
    APPLICATION = "APPLICATION"


@dataclass(frozen=True)
class LocalResourceDescriptor:
    """One LocalResource.

    ``key``: the name in the container's working directory (relative, ``/``
    allowed for subdirectories); ``path``: a fully qualified URI
    (``hdfs://namenode:8020/user/alice/...``); ``size``: bytes;
    ``modification_time``: milliseconds since the epoch, as the file system
    reports it.
    """

    key: str
    path: str
    size: int
    modification_time: int
    type: LocalResourceType = LocalResourceType.FILE
    visibility: LocalResourceVisibility = LocalResourceVisibility.APPLICATION

    def __post_init__(self) -> None:
        key = self.key
        if not key or key.startswith("/") or ".." in key.split("/") or posixpath.normpath(key) != key:
            raise StagingError(f"LocalResource key {key!r} must be a plain relative path inside the container's working directory.")
        if "://" not in self.path:
            raise StagingError(f"LocalResource path {self.path!r} must be a fully qualified URI (scheme://authority/path).")
        if self.size < 0 or self.modification_time < 0:
            raise StagingError(f"LocalResource {key!r} has a negative size or modification time.")
        # Accept the enums' text too (descriptors read back from JSON).
        object.__setattr__(self, "type", LocalResourceType(self.type))
        object.__setattr__(self, "visibility", LocalResourceVisibility(self.visibility))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["type"] = str(self.type)
        data["visibility"] = str(self.visibility)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LocalResourceDescriptor:
        try:
            return cls(**data)
        except TypeError as error:
            raise StagingError(f"not a LocalResource description: {data!r}") from error


def descriptors_to_json(descriptors: Iterable[LocalResourceDescriptor]) -> str:
    """A compact JSON list (fits an environment variable of a launch context)."""
    return json.dumps([d.to_dict() for d in descriptors], separators=(",", ":"), sort_keys=True)


def descriptors_from_json(text: str) -> list[LocalResourceDescriptor]:
    """Inverse of :func:`descriptors_to_json`; StagingError when the text is not such a list."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise StagingError(f"not a JSON list of LocalResources: {text[:200]!r}") from error
    if not isinstance(data, list):
        raise StagingError(f"not a JSON list of LocalResources: {text[:200]!r}")
    return [LocalResourceDescriptor.from_dict(item) for item in data]


def is_world_readable(permission: str) -> bool:
    """Whether an octal permission (``"644"``, ``"1777"``) lets others read."""
    return bool(int(permission, 8) & 0o004)


def is_world_executable(permission: str) -> bool:
    """Whether an octal permission lets others traverse (execute)."""
    return bool(int(permission, 8) & 0o001)


def visibility_for(file_permission: str, ancestor_permissions: Iterable[str]) -> LocalResourceVisibility:
    """PUBLIC when the file is world-readable and every ancestor directory world-executable (YARN's
    ``FSDownload.isPublic``), else PRIVATE. Permissions are octal strings as WebHDFS reports them."""
    if is_world_readable(file_permission) and all(is_world_executable(p) for p in ancestor_permissions):
        return LocalResourceVisibility.PUBLIC
    return LocalResourceVisibility.PRIVATE
