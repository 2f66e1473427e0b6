"""The cluster's secret, what is derived from it, and files only the deploying user can read.

Why: one secret per cluster, made by the client, is all a target has to
deliver to the cluster's own processes (an environment variable of the
entrypoint locally, a Kubernetes Secret, a YARN credential). Every other
credential is derived from it with HMAC-SHA256 under a label of its own, so
that whoever holds a derived one learns nothing of the others: Spark's shared
secret reaches the Spark daemons, executors, PySpark workers and the user's
program, the REST token reaches the CLI, and neither can be turned back into
the cluster secret that the internal RPC requires.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

#: Bytes of randomness in a cluster secret (hex-encoded: twice as many characters).
CLUSTER_SECRET_BYTES = 32

_SPARK_SECRET_LABEL = "jobcluster spark.authenticate.secret"
_REST_TOKEN_LABEL = "jobcluster rest bearer token"
_CLUSTER_SECRET_LABEL = "jobcluster cluster secret of"


def new_cluster_secret() -> str:
    """A fresh cluster secret: 32 random bytes, hex-encoded (64 characters)."""
    return secrets.token_hex(CLUSTER_SECRET_BYTES)


def derived_cluster_secret(key: str, owner: str) -> str:
    """The cluster secret of the clusters of ``owner`` (e.g. ``namespace/name/uid`` of a FlinkJob) under a deployer's
    ``key``, 64 hex characters: who holds the key (the FlinkJob operator) derives each cluster's REST token again
    without reading the cluster's Secret, and no two owners share a secret."""
    return _derive(key, f"{_CLUSTER_SECRET_LABEL} {owner}")


def _derive(cluster_secret: str, label: str) -> str:
    return hmac.new(cluster_secret.encode(), label.encode(), hashlib.sha256).hexdigest()


def spark_secret(cluster_secret: str) -> str:
    """Spark's shared secret (``spark.authenticate.secret``) of the cluster, 64 hex characters."""
    return _derive(cluster_secret, _SPARK_SECRET_LABEL)


def rest_token(cluster_secret: str) -> str:
    """The bearer token mutating REST calls of the cluster must carry, 64 hex characters."""
    return _derive(cluster_secret, _REST_TOKEN_LABEL)


def token_matches(supplied: str, expected: str) -> bool:
    """Constant-time comparison, so that response times do not reveal how much of a guess was right."""
    return hmac.compare_digest(supplied.encode(), expected.encode())


def private_directory(path: Path) -> Path:
    """Create ``path`` (and parents) if missing and make it mode 0700; returns ``path``."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)  # mkdir's mode is masked by the umask, and an existing directory keeps its own
    return path


def write_private_file(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` with mode 0600 from the first byte on (never readable by others, not even briefly).

    The file is written next to ``path`` and renamed over it, so readers see
    either the old or the complete new content. Raises OSError.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    tmp.replace(path)
