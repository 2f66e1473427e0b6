"""The one registry of targets: ``execution.target`` → the backend's ClusterDescriptor.

A dict of module paths, imported only when a target is used, so a local run
never imports the Kubernetes or YARN client libraries. Each backend package
provides ``create_cluster_descriptor(config)``.  The JobManager's side does not
come here: each backend's process entry point (``backends/<name>/entrypoint.py``)
passes its own ResourceManagerDriver factory to the shared bootstrap.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from jobcluster.client.descriptor import ClusterDescriptor
from jobcluster.config.configuration import Configuration
from jobcluster.config.targets import DeploymentTarget
from jobcluster.errors import IllegalConfigurationError

TARGETS: dict[DeploymentTarget, str] = {
    DeploymentTarget.LOCAL: "jobcluster.backends.local",
    DeploymentTarget.YARN_PER_JOB: "jobcluster.backends.yarn",
    DeploymentTarget.KUBERNETES_APPLICATION: "jobcluster.backends.kubernetes",
}


def known_targets() -> list[str]:
    """Every target's name, sorted."""
    return sorted(target.value for target in TARGETS)


def _backend(target: str) -> ModuleType:
    try:
        module = TARGETS[DeploymentTarget(target)]
    except ValueError:
        raise IllegalConfigurationError(f"unknown execution.target {target!r}; available targets: {', '.join(known_targets())}") from None
    return importlib.import_module(module)


def cluster_descriptor(target: str, config: Configuration) -> ClusterDescriptor:
    """The ClusterDescriptor of ``target``; IllegalConfigurationError for an unknown target."""
    descriptor: ClusterDescriptor = _backend(target).create_cluster_descriptor(config)
    return descriptor
