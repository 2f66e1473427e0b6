"""The one error that means "this pod cannot start yet, try again".

Why: a missing ConfigMap or Secret, an unsupported volume or fieldRef, or a
failed token request is not a crash: the pod worker reports it in the pod's
status (``CreateContainerConfigError``) and retries, as the kubelet does. The
modules that build a pod's volumes and environment raise it; the pod worker
catches it.
"""

from __future__ import annotations


class PodConfigError(Exception):
    """The pod cannot start yet (missing ConfigMap/Secret, unsupported volume); retried."""
