"""The user's Secrets in the job pods: Flink's ``kubernetes.secrets`` and ``kubernetes.env.secretKeyRef``.

Credentials a program needs (an object store's keys, a database password) come
from Kubernetes Secrets of the cluster's namespace, never from the
configuration: a configuration value lands in the cluster's ConfigMap (readable
with the built-in ``view`` role) and, for a FlinkJob, in its spec. As in Flink,
both options apply to the JobManager's and the TaskManagers' main containers:

- ``kubernetes.secrets``: ``foo:/opt/secrets-foo,bar:/opt/secrets-bar``, each
  Secret mounted read-only as a directory, a file per key;
- ``kubernetes.env.secretKeyRef``:
  ``env:FOO_ENV,secret:foo_secret,key:foo_key;env:BAR_ENV,...``, each
  environment variable set from one key of a Secret.

The kubelet reads the Secrets; neither the client nor the operator does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from jobcluster.backends.kubernetes import object_names
from jobcluster.backends.kubernetes.config_options import KUBERNETES_ENV_SECRET_KEY_REF, KUBERNETES_SECRETS
from jobcluster.backends.kubernetes.option_text import map_list_option, map_option
from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError

_SECRET_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a DNS-1123 subdomain, as Secret names are
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_KEY = re.compile(r"[-._a-zA-Z0-9]{1,253}")  # a Secret's key
_SECRET_KEY_REF_FIELDS = ("env", "secret", "key")
_OURS = (object_names.STAGED_MOUNT_PATH, object_names.WORK_MOUNT_PATH, object_names.SECRET_MOUNT_PATH)


@dataclass(frozen=True)
class SecretKeyRef:
    """The environment variable ``env`` set from key ``key`` of Secret ``secret``."""

    env: str
    secret: str
    key: str


@dataclass(frozen=True)
class UserSecrets:
    """``mounts``: Secret name → the directory it is mounted at; ``env``: the variables set from Secrets."""

    mounts: dict[str, str]
    env: tuple[SecretKeyRef, ...]

    def volumes(self) -> list[dict[str, Any]]:
        """The pod's volumes of the mounted Secrets (read by the container's user, whatever its uid)."""
        return [{"name": _volume(n), "secret": {"secretName": name, "defaultMode": 0o444}} for n, name in enumerate(self.mounts)]

    def volume_mounts(self) -> list[dict[str, Any]]:
        return [{"name": _volume(n), "mountPath": path, "readOnly": True} for n, path in enumerate(self.mounts.values())]

    def env_entries(self) -> list[dict[str, Any]]:
        return [{"name": ref.env, "valueFrom": {"secretKeyRef": {"name": ref.secret, "key": ref.key}}} for ref in self.env]


def user_secrets(config: Configuration) -> UserSecrets:
    """``kubernetes.secrets`` and ``kubernetes.env.secretKeyRef`` of ``config``.

    Raises:
        IllegalConfigurationError: a Secret name that Kubernetes would refuse, a mount path that is not absolute or
            is one of the cluster's own, a reference without ``env``, ``secret`` or ``key`` (or with another field),
            or two references to one variable; the message names the option.
    """
    mounts = map_option(config, KUBERNETES_SECRETS)
    for name, path in mounts.items():
        _check_secret_name(KUBERNETES_SECRETS.key, name)
        if not path.startswith("/") or any(path.rstrip("/") == ours or path.startswith(ours + "/") for ours in _OURS):
            raise IllegalConfigurationError(
                f"{KUBERNETES_SECRETS.key}: Secret {name} cannot be mounted at '{path}': give an absolute path outside "
                f"{', '.join(_OURS)} (the cluster's own), e.g. {name}:/opt/secrets-{name}"
            )
    refs = tuple(_secret_key_ref(item) for item in map_list_option(config, KUBERNETES_ENV_SECRET_KEY_REF))
    names = [ref.env for ref in refs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise IllegalConfigurationError(f"{KUBERNETES_ENV_SECRET_KEY_REF.key}: {', '.join(twice)} is set more than once")
    return UserSecrets(mounts, refs)


def _secret_key_ref(item: dict[str, str]) -> SecretKeyRef:
    option = KUBERNETES_ENV_SECRET_KEY_REF.key
    text = ",".join(f"{k}:{v}" for k, v in item.items())
    if sorted(item) != sorted(_SECRET_KEY_REF_FIELDS) or not all(item.values()):
        raise IllegalConfigurationError(
            f"{option}: '{text}' must have exactly env, secret and key, e.g. env:DB_PASSWORD,secret:db-credentials,key:password"
        )
    if not _ENV_NAME.fullmatch(item["env"]):
        raise IllegalConfigurationError(f"{option}: '{item['env']}' is not an environment variable's name")
    _check_secret_name(option, item["secret"])
    if not _KEY.fullmatch(item["key"]):
        raise IllegalConfigurationError(f"{option}: '{item['key']}' is not a Secret's key (letters, digits, '-', '_', '.')")
    return SecretKeyRef(item["env"], item["secret"], item["key"])


def _check_secret_name(option: str, name: str) -> None:
    if not _SECRET_NAME.fullmatch(name):
        raise IllegalConfigurationError(f"{option}: '{name}' is not a Secret's name (lower-case letters, digits, '-', '.')")


def _volume(index: int) -> str:
    return f"user-secret-{index}"
