"""The one registry of the backends: each ``execution.target``'s ClusterDescriptor, and every option.

Why here: the composition roots (the CLI, the FlinkJob controller) pick a
ClusterDescriptor by target, and check a configuration against every option
jobcluster declares: the shared ones (``config/options.py``) and each backend's
own (``backends/<name>/config_options.py``), which ``config/`` may not import.

A backend's descriptor is imported only when its target is used (its options
modules import nothing but ``config/``), so a local run never imports the
Kubernetes or YARN client libraries.  Each backend package provides
``create_cluster_descriptor(config)`` (the local package's second target,
``local-cluster``, in a module of its own).  The JobManager's side does not come
here: each backend's process entry point (``backends/<name>/entrypoint.py``)
passes its own ResourceManagerDriver factory to the shared bootstrap.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from jobcluster.backends.kubernetes.config_options import KUBERNETES_OPTIONS
from jobcluster.backends.yarn.config_options import YARN_OPTIONS
from jobcluster.client.descriptor import ClusterDescriptor
from jobcluster.config import validation
from jobcluster.config.config_option import ConfigOption
from jobcluster.config.configuration import Configuration
from jobcluster.config.options import CORE_OPTIONS
from jobcluster.config.targets import DeploymentTarget
from jobcluster.errors import IllegalConfigurationError

TARGETS: dict[DeploymentTarget, str] = {
    DeploymentTarget.LOCAL: "jobcluster.backends.local",
    DeploymentTarget.LOCAL_CLUSTER: "jobcluster.backends.local.local_cluster",
    DeploymentTarget.YARN_APPLICATION: "jobcluster.backends.yarn",
    DeploymentTarget.KUBERNETES_APPLICATION: "jobcluster.backends.kubernetes",
}

#: Every option jobcluster declares, in documentation order: the shared ones, then YARN's, then Kubernetes'.
ALL_OPTIONS: tuple[ConfigOption[Any], ...] = (*CORE_OPTIONS, *YARN_OPTIONS, *KUBERNETES_OPTIONS)


def validate_configuration(config: Configuration) -> None:
    """Check ``config`` against every option jobcluster declares (:data:`ALL_OPTIONS`), before anything is deployed.

    Raises:
        IllegalConfigurationError: one line per problem, each naming the key, the value given and what is
            expected (:func:`jobcluster.config.validation.validate_configuration`).
    """
    validation.validate_configuration(config, ALL_OPTIONS)


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
