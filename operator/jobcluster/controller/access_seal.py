"""The operator's signature on the cluster access it keeps in a FlinkJob's status (``status.clusterAccess``).

Why: the status is the operator's output, yet the files it keeps there (a yarn-application FlinkJob's site files) are
what it later reaches and kills the application with, once the FlinkJob's ConfigMap is gone. Whoever may write a
FlinkJob's status subresource could otherwise steer the operator's calls with files it never read. So the operator
signs what it writes (``status.clusterAccessSignature``: HMAC-SHA256 over the FlinkJob's uid and the files) and uses
kept files only when the signature is its own; anything else is ignored, as if nothing were kept.

The key is derived from the operator's key (``--cluster-secret-key-file``, which the chart mounts), so that every
replica and every restart signs alike; without one, each process draws its own, and files kept by an earlier
process are ignored.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping

#: Separates this key from the cluster secrets derived from the same operator key.
_PURPOSE = b"jobcluster status.clusterAccess"


class AccessSeal:
    """Signs and checks a FlinkJob's kept cluster access (file name → content)."""

    def __init__(self, operator_key: str | None = None) -> None:
        """``operator_key``: the operator's key (at least 32 characters); None: a random key of this process's."""
        secret = operator_key.encode() if operator_key is not None else secrets.token_bytes(32)
        self._key = hmac.new(secret, _PURPOSE, hashlib.sha256).digest()

    def sign(self, uid: str, access: Mapping[str, str]) -> str:
        """The signature (64 hex characters) of ``access`` kept for the FlinkJob with ``uid``."""
        message = json.dumps([uid, dict(access)], sort_keys=True, separators=(",", ":")).encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def opened(self, uid: str, access: Mapping[str, object] | None, signature: object) -> dict[str, str]:
        """``access`` as the operator may use it: the files when ``signature`` is this operator's for them and
        ``uid``, else nothing (``{}``: unsigned, altered, another FlinkJob's, or kept by an operator of another key)."""
        files = {str(name): value for name, value in (access or {}).items() if isinstance(value, str)}
        if not files or not isinstance(signature, str):
            return {}
        return files if hmac.compare_digest(self.sign(uid, files), signature) else {}
