"""The options of a Kubernetes job cluster, read once into frozen parameters objects.

Why: the ``build_*`` functions take these objects, not a Configuration, so every
option is parsed and checked in one place, before any object is created, and the
builders stay pure (Flink's ``KubernetesJobManagerParameters`` /
``KubernetesTaskManagerParameters``).  Every error names the key at fault.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from jobcluster.backends.kubernetes.cluster_id import cluster_id_from_config
from jobcluster.backends.kubernetes.config_options import (
    KUBERNETES_CONTAINER_IMAGE,
    KUBERNETES_CONTAINER_IMAGE_PULL_POLICY,
    KUBERNETES_CONTAINER_IMAGE_PULL_SECRETS,
    KUBERNETES_ENTRYPOINT_DIR,
    KUBERNETES_JOB_MANAGER_ANNOTATIONS,
    KUBERNETES_JOB_MANAGER_CPU,
    KUBERNETES_JOB_MANAGER_CPU_LIMIT_FACTOR,
    KUBERNETES_JOB_MANAGER_LABELS,
    KUBERNETES_JOB_MANAGER_MEMORY_LIMIT_FACTOR,
    KUBERNETES_JOB_MANAGER_NODE_SELECTOR,
    KUBERNETES_JOB_MANAGER_OWNER_REFERENCE,
    KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE,
    KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT,
    KUBERNETES_JOB_MANAGER_TOLERATIONS,
    KUBERNETES_NAMESPACE,
    KUBERNETES_REST_SERVICE_EXPOSED_TYPE,
    KUBERNETES_TASK_MANAGER_ANNOTATIONS,
    KUBERNETES_TASK_MANAGER_CPU,
    KUBERNETES_TASK_MANAGER_CPU_LIMIT_FACTOR,
    KUBERNETES_TASK_MANAGER_LABELS,
    KUBERNETES_TASK_MANAGER_MEMORY_LIMIT_FACTOR,
    KUBERNETES_TASK_MANAGER_NODE_SELECTOR,
    KUBERNETES_TASK_MANAGER_POD_TEMPLATE_FILE,
    KUBERNETES_TASK_MANAGER_SERVICE_ACCOUNT,
    KUBERNETES_TASK_MANAGER_TOLERATIONS,
)
from jobcluster.backends.kubernetes.ingress import IngressParameters, ingress_parameters
from jobcluster.backends.kubernetes.option_text import map_list_option, map_option
from jobcluster.backends.kubernetes.user_secrets import UserSecrets, user_secrets
from jobcluster.config import options
from jobcluster.config.config_option import ConfigOption, ConfigPrefix
from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError
from jobcluster.memory.jobmanager import job_manager_process_spec_from_config
from jobcluster.memory.taskexecutor import cpu_cores_from_config

log = logging.getLogger(__name__)

_MiB = 1 << 20

#: Kubernetes needs a fixed REST port (Service targetPort); Flink sets this one when rest.port is 0.
FIXED_REST_PORT = 8081

_TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")
_OWNER_REFERENCE_REQUIRED = ("apiVersion", "kind", "name", "uid")
_OWNER_REFERENCE_BOOLEANS = ("controller", "blockOwnerDeletion")


@dataclass(frozen=True)
class KubernetesPodParameters:
    """What the JobManager and TaskManager pods share; each side reads its own keys into it.

    ``labels``/``annotations``/``node_selector``: user maps; ``tolerations``:
    Kubernetes toleration dicts; ``env``: extra container environment
    (``containerized.{master,taskmanager}.env.*``); ``cpu_limit_factor`` and
    ``memory_limit_factor``: limits = requests x factor, both at least 1;
    ``image_pull_secrets``: names of Secrets in the namespace;
    ``pod_template_file``: a YAML Pod merged under the built pod, or None; ``secrets``: the user's Secrets in the
    main container (``kubernetes.secrets``, ``kubernetes.env.secretKeyRef``).
    """

    cluster_id: str
    namespace: str
    image: str
    image_pull_policy: str
    image_pull_secrets: list[str]
    entrypoint_dir: str
    service_account: str
    labels: dict[str, str]
    annotations: dict[str, str]
    node_selector: dict[str, str]
    tolerations: list[dict[str, Any]]
    env: dict[str, str]
    cpu_limit_factor: float
    memory_limit_factor: float
    pod_template_file: str | None
    secrets: UserSecrets


@dataclass(frozen=True)
class KubernetesJobManagerParameters(KubernetesPodParameters):
    """The JobManager side: the Deployment, its pod, the REST Service, the Ingress, the staged ConfigMap and the Secret.

    ``memory_mib``: the JobManager's Total Process Memory in MiB (the memory
    request); ``cpu``: cores requested (``kubernetes.jobmanager.cpu.amount``);
    ``rest_port``: the REST port the Service targets; ``rest_service_type``: a
    Kubernetes Service type, or ``Headless_ClusterIP``; ``owner_references``:
    owners of the Deployment itself; ``ingress``: the Ingress to the REST
    Service (``jobcluster.kubernetes.ingress.*``), None for none.
    """

    job_id: str
    memory_mib: int
    cpu: float
    rest_port: int
    rest_service_type: str
    owner_references: list[dict[str, Any]]
    ingress: IngressParameters | None


@dataclass(frozen=True)
class KubernetesTaskManagerParameters(KubernetesPodParameters):
    """The TaskManager pods' side; each pod's size comes from its TaskExecutorProcessSpec.

    ``cpu_cores``: the cores of a TaskManager by Flink's rule
    (``taskmanager.cpu.cores``, else ``kubernetes.taskmanager.cpu.amount`` if
    positive, else the slots); the descriptor pins it as ``taskmanager.cpu.cores``
    so that the runtime's process specs carry it.
    """

    cpu_cores: Decimal


def job_manager_parameters(config: Configuration, job_id: str) -> KubernetesJobManagerParameters:
    """Read the JobManager side's options from ``config``; ``job_id`` gives the default cluster id.

    Raises:
        IllegalConfigurationError: an invalid cluster id, map or toleration
            text, owner reference, limit factor below 1, memory configuration,
            or Ingress template or TLS list; the message names the key.
    """
    rest_port = config.get(options.REST_PORT)
    if rest_port == 0:
        log.info("Kubernetes deployment requires a fixed port. Configuration %s will be set to %d", options.REST_PORT.key, FIXED_REST_PORT)
        rest_port = FIXED_REST_PORT
    pod = _pod_parameters(
        config,
        job_id,
        service_account=KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT,
        labels=KUBERNETES_JOB_MANAGER_LABELS,
        annotations=KUBERNETES_JOB_MANAGER_ANNOTATIONS,
        node_selector=KUBERNETES_JOB_MANAGER_NODE_SELECTOR,
        tolerations=KUBERNETES_JOB_MANAGER_TOLERATIONS,
        cpu_limit_factor=KUBERNETES_JOB_MANAGER_CPU_LIMIT_FACTOR,
        memory_limit_factor=KUBERNETES_JOB_MANAGER_MEMORY_LIMIT_FACTOR,
        pod_template_file=KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE,
        env_prefix=options.CONTAINERIZED_MASTER_ENV,
    )
    return KubernetesJobManagerParameters(
        **pod,
        job_id=job_id,
        memory_mib=job_manager_process_spec_from_config(config).total_process // _MiB,
        cpu=_positive(config, KUBERNETES_JOB_MANAGER_CPU),
        rest_port=rest_port,
        rest_service_type=config.get(KUBERNETES_REST_SERVICE_EXPOSED_TYPE),
        owner_references=owner_references(config),
        ingress=ingress_parameters(config, pod["cluster_id"], pod["namespace"]),
    )


def task_manager_parameters(config: Configuration, job_id: str) -> KubernetesTaskManagerParameters:
    """Read the TaskManager side's options from ``config`` (the errors of :func:`job_manager_parameters`)."""
    return KubernetesTaskManagerParameters(
        **_pod_parameters(
            config,
            job_id,
            service_account=KUBERNETES_TASK_MANAGER_SERVICE_ACCOUNT,
            labels=KUBERNETES_TASK_MANAGER_LABELS,
            annotations=KUBERNETES_TASK_MANAGER_ANNOTATIONS,
            node_selector=KUBERNETES_TASK_MANAGER_NODE_SELECTOR,
            tolerations=KUBERNETES_TASK_MANAGER_TOLERATIONS,
            cpu_limit_factor=KUBERNETES_TASK_MANAGER_CPU_LIMIT_FACTOR,
            memory_limit_factor=KUBERNETES_TASK_MANAGER_MEMORY_LIMIT_FACTOR,
            pod_template_file=KUBERNETES_TASK_MANAGER_POD_TEMPLATE_FILE,
            env_prefix=options.CONTAINERIZED_TASK_MANAGER_ENV,
        ),
        cpu_cores=cpu_cores_from_config(config, config.get(KUBERNETES_TASK_MANAGER_CPU)),
    )


def _pod_parameters(
    config: Configuration,
    job_id: str,
    *,
    service_account: ConfigOption[str],
    labels: ConfigOption[str | None],
    annotations: ConfigOption[str | None],
    node_selector: ConfigOption[str | None],
    tolerations: ConfigOption[str | None],
    cpu_limit_factor: ConfigOption[float],
    memory_limit_factor: ConfigOption[float],
    pod_template_file: ConfigOption[str | None],
    env_prefix: ConfigPrefix,
) -> dict[str, Any]:
    return {
        "cluster_id": cluster_id_from_config(config, job_id),
        "namespace": _not_blank(config, KUBERNETES_NAMESPACE),
        "image": _not_blank(config, KUBERNETES_CONTAINER_IMAGE),
        "image_pull_policy": config.get(KUBERNETES_CONTAINER_IMAGE_PULL_POLICY),
        "image_pull_secrets": [name.strip() for name in config.get(KUBERNETES_CONTAINER_IMAGE_PULL_SECRETS).split(";") if name.strip()],
        "entrypoint_dir": _not_blank(config, KUBERNETES_ENTRYPOINT_DIR).rstrip("/") or "/",
        "service_account": _not_blank(config, service_account),
        "labels": map_option(config, labels),
        "annotations": map_option(config, annotations),
        "node_selector": map_option(config, node_selector),
        "tolerations": _tolerations(config, tolerations),
        "env": config.prefixed(env_prefix),
        "cpu_limit_factor": _limit_factor(config, cpu_limit_factor),
        "memory_limit_factor": _limit_factor(config, memory_limit_factor),
        "pod_template_file": config.get(pod_template_file),
        "secrets": user_secrets(config),
    }


def owner_references(config: Configuration) -> list[dict[str, Any]]:
    """``kubernetes.jobmanager.owner.reference`` as Kubernetes OwnerReference dicts.

    Raises:
        IllegalConfigurationError: a reference lacks apiVersion, kind, name or
            uid, has an unknown field, or a boolean field is not true/false.
    """
    option = KUBERNETES_JOB_MANAGER_OWNER_REFERENCE
    references = []
    for item in map_list_option(config, option):
        missing = [name for name in _OWNER_REFERENCE_REQUIRED if not item.get(name)]
        if missing:
            raise IllegalConfigurationError(f"{option.key}: the owner reference '{_map_text(item)}' lacks {', '.join(missing)}.")
        reference: dict[str, Any] = {}
        for name, value in item.items():
            if name in _OWNER_REFERENCE_BOOLEANS:
                reference[name] = _boolean(option.key, name, value)
            elif name in _OWNER_REFERENCE_REQUIRED:
                reference[name] = value
            else:
                known = ", ".join(_OWNER_REFERENCE_REQUIRED + _OWNER_REFERENCE_BOOLEANS)
                raise IllegalConfigurationError(f"{option.key}: unknown owner reference field '{name}'; known fields: {known}.")
        references.append(reference)
    return references


def _tolerations(config: Configuration, option: ConfigOption[str | None]) -> list[dict[str, Any]]:
    tolerations = []
    for item in map_list_option(config, option):
        toleration: dict[str, Any] = {}
        for name, value in item.items():
            if name not in _TOLERATION_FIELDS:
                raise IllegalConfigurationError(
                    f"{option.key}: unknown toleration field '{name}'; known fields: {', '.join(_TOLERATION_FIELDS)}."
                )
            if name == "tolerationSeconds":
                try:
                    toleration[name] = int(value)
                except ValueError:
                    raise IllegalConfigurationError(f"{option.key}: tolerationSeconds '{value}' is not an integer.") from None
            else:
                toleration[name] = value
        tolerations.append(toleration)
    return tolerations


def _limit_factor(config: Configuration, option: ConfigOption[float]) -> float:
    factor = config.get(option)
    if factor < 1:
        raise IllegalConfigurationError(f"{option.key} should be greater or equal to 1.")  # Flink's message
    return factor


def _positive(config: Configuration, option: ConfigOption[float]) -> float:
    value = config.get(option)
    if not value > 0:
        raise IllegalConfigurationError(f"{option.key} must be greater than 0, got {value}.")
    return value


def _not_blank(config: Configuration, option: ConfigOption[str | None]) -> str:
    value = config.get(option)
    if value is None or not value.strip():
        raise IllegalConfigurationError(f"{option.key} must not be blank.")
    return value.strip()


def _boolean(key: str, name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise IllegalConfigurationError(f"{key}: {name} '{value}' is not 'true' or 'false'.")
    return lowered == "true"


def _map_text(item: dict[str, str]) -> str:
    return ",".join(f"{name}:{value}" for name, value in item.items())
