"""A FlinkJob's effective configuration: the operator's defaults, then ``flinkConfiguration``, then the spec's fields.

Precedence, lowest first (as the Flink Kubernetes Operator layers them):

1. the shipped defaults (``conf/jobcluster.yaml``);
2. the operator's default configuration (the chart's ``defaultConfiguration``);
3. the FlinkJob's ``flinkConfiguration``;
4. its typed fields (``image``, ``jobManager.resource``, ``job.parallelism``, ...;
   on YARN a ``cpu`` becomes whole vcores: ``yarn.appmaster.vcores``, ``yarn.containers.vcores``);
   ``ingress`` becomes the ``jobcluster.kubernetes.ingress.*`` options, and replaces
   whatever of them the layers below set (the chart's default Ingress): a FlinkJob's
   Ingress is its own, never mixed with a default one's class, annotations or TLS;
5. what the operator owns: the target, namespace, cluster id (= the FlinkJob's
   name), the owner reference to the FlinkJob, attached execution (the
   JobManager waits for the operator to fetch the result), the startup
   deadline, and what a streaming job restores (``job_state.Restore``): a
   savepoint (``execution.state-recovery.path``) or, in last-state mode, the
   JobID whose checkpoints it resumes (``$internal.pipeline.job-id``).

Pod templates are written as files into a scratch directory, because the
descriptor reads ``kubernetes.pod-template-file.*`` from files.  What depends
on the platform (YARN's Hadoop configuration directory and the FlinkJob's
application tag) is added by the target's hooks (``backends/yarn/operator_hook.py``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import yaml

from jobcluster.backends.kubernetes.config_options import (
    KUBERNETES_CLUSTER_ID,
    KUBERNETES_CONTAINER_IMAGE,
    KUBERNETES_CONTAINER_IMAGE_PULL_POLICY,
    KUBERNETES_INGRESS_ANNOTATIONS,
    KUBERNETES_INGRESS_CLASS_NAME,
    KUBERNETES_INGRESS_LABELS,
    KUBERNETES_INGRESS_TEMPLATE,
    KUBERNETES_INGRESS_TLS,
    KUBERNETES_JOB_MANAGER_CPU,
    KUBERNETES_JOB_MANAGER_OWNER_REFERENCE,
    KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE,
    KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT,
    KUBERNETES_JOB_MANAGER_STARTUP_TIMEOUT,
    KUBERNETES_NAMESPACE,
    KUBERNETES_SERVICE_ACCOUNT,
    KUBERNETES_TASK_MANAGER_CPU,
    KUBERNETES_TASK_MANAGER_POD_TEMPLATE_FILE,
)
from jobcluster.backends.registry import validate_configuration
from jobcluster.backends.yarn.config_options import YARN_APPMASTER_VCORES, YARN_CONTAINERS_VCORES
from jobcluster.client.executor import cluster_specification
from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.config.loader import load_configuration
from jobcluster.config.values import map_text
from jobcluster.controller.job_state import Restore
from jobcluster.controller.resource import API_VERSION, KIND, TARGET_YARN, FlinkJobSpec, IngressSpec, check_name

JM_TEMPLATE_FILE = "jobmanager-pod-template.yaml"
TM_TEMPLATE_FILE = "taskmanager-pod-template.yaml"
_INGRESS_KEYS = tuple(
    option.key
    for option in (
        KUBERNETES_INGRESS_TEMPLATE,
        KUBERNETES_INGRESS_CLASS_NAME,
        KUBERNETES_INGRESS_ANNOTATIONS,
        KUBERNETES_INGRESS_LABELS,
        KUBERNETES_INGRESS_TLS,
    )
)


def owner_reference(name: str, uid: str) -> str:
    """``kubernetes.jobmanager.owner.reference`` naming the FlinkJob: deleting it deletes the whole cluster.

    Not the controller (the Deployment's controller is Kubernetes'), and it
    blocks the owner's foreground deletion until the cluster is gone (Flink's operator does the same).
    """
    return f"apiVersion:{API_VERSION},kind:{KIND},name:{name},uid:{uid},controller:false,blockOwnerDeletion:true"


def job_configuration(
    spec: FlinkJobSpec,
    name: str,
    namespace: str,
    uid: str,
    defaults: Mapping[str, str],
    scratch: Path,
    restore: Restore | None = None,
) -> Configuration:
    """The configuration to deploy ``spec`` with (see the module docstring); pod templates go to ``scratch``;
    ``restore``: where the job starts from (None: fresh).

    Raises:
        InvalidSpecError: the name cannot be the cluster id (``resource.check_name``), or an
            annotation or label of ``spec.ingress`` holds a ``,`` (see :func:`ingress_options`).
        IllegalConfigurationError: an option has a bad value,
            or Flink's memory model rejects the sizes.
        SparkError: a container misses Spark's minimums.
    """
    check_name(name)
    typed: dict[str, str] = {options.PARALLELISM_DEFAULT.key: str(spec.job.parallelism)}
    if spec.image:
        typed[KUBERNETES_CONTAINER_IMAGE.key] = spec.image
    if spec.image_pull_policy:
        typed[KUBERNETES_CONTAINER_IMAGE_PULL_POLICY.key] = spec.image_pull_policy
    # the TaskManagers too (as in the Flink Kubernetes Operator), unless kubernetes.taskmanager.service-account says
    # otherwise: never the namespace's `default` by omission (their pods mount no token anyway)
    typed[KUBERNETES_SERVICE_ACCOUNT.key] = typed[KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT.key] = spec.service_account
    yarn = spec.deployment_target == TARGET_YARN
    resources = (
        (
            spec.job_manager,
            options.JOB_MANAGER_TOTAL_PROCESS_MEMORY,
            YARN_APPMASTER_VCORES if yarn else KUBERNETES_JOB_MANAGER_CPU,
        ),
        (
            spec.task_manager,
            options.TASK_MANAGER_TOTAL_PROCESS_MEMORY,
            YARN_CONTAINERS_VCORES if yarn else KUBERNETES_TASK_MANAGER_CPU,
        ),
    )
    for pod, memory, cpu in resources:
        if pod.resource.memory:
            typed[memory.key] = pod.resource.memory
        if pod.resource.cpu is not None:  # YARN counts whole vcores
            typed[cpu.key] = str(math.ceil(pod.resource.cpu)) if yarn else str(pod.resource.cpu)
    templates = (
        (spec.job_manager.pod_template, JM_TEMPLATE_FILE, KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE),
        (spec.task_manager.pod_template, TM_TEMPLATE_FILE, KUBERNETES_TASK_MANAGER_POD_TEMPLATE_FILE),
    )
    for template, file_name, option in templates:
        if template:
            path = scratch / file_name
            path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", **template}, sort_keys=True))
            typed[option.key] = str(path)
    owned = {
        options.EXECUTION_TARGET.key: spec.target,
        options.EXECUTION_ATTACHED.key: "true",
        KUBERNETES_NAMESPACE.key: namespace,
        KUBERNETES_CLUSTER_ID.key: name,
        KUBERNETES_JOB_MANAGER_OWNER_REFERENCE.key: owner_reference(name, uid),
        KUBERNETES_JOB_MANAGER_STARTUP_TIMEOUT.key: f"{spec.startup_deadline_seconds} s",
        **_restored(restore),
    }
    below = {**defaults, **spec.flink_configuration}
    if spec.ingress is not None:
        below = {key: value for key, value in below.items() if key not in _INGRESS_KEYS}
        typed.update(ingress_options(spec.ingress))
    merged = {**below, **typed, **owned}
    merged.setdefault(options.PIPELINE_NAME.key, name)
    config = load_configuration(None, merged)
    validate_configuration(config)
    cluster_specification(config)  # the memory model and Spark's minimums, before anything is deployed
    return config


def ingress_options(ingress: IngressSpec) -> dict[str, str]:
    """``spec.ingress`` as the ``jobcluster.kubernetes.ingress.*`` options (maps in Flink's ``k:v,k:v``, TLS as JSON).

    Raises:
        InvalidSpecError: a key or value of ``annotations`` or ``labels`` holds a ``,``, which the map
            form cannot carry (Kubernetes refuses one in a label anyway).
    """
    found = {KUBERNETES_INGRESS_TEMPLATE.key: ingress.template}
    if ingress.class_name:
        found[KUBERNETES_INGRESS_CLASS_NAME.key] = ingress.class_name
    for field, option, mapping in (
        ("annotations", KUBERNETES_INGRESS_ANNOTATIONS, ingress.annotations),
        ("labels", KUBERNETES_INGRESS_LABELS, ingress.labels),
    ):
        for key, value in mapping.items():
            if "," in key or "," in value:
                raise InvalidSpecError(
                    f"spec.ingress.{field}: '{key}: {value}' holds a ',', which {option.key} ('key1:value1,key2:value2') cannot carry"
                )
        if mapping:
            found[option.key] = map_text(mapping)
    if ingress.tls:
        found[KUBERNETES_INGRESS_TLS.key] = json.dumps([entry.model_dump(by_alias=True, exclude_none=True) for entry in ingress.tls])
    return found


def _restored(restore: Restore | None) -> dict[str, str]:
    """The options of where the job starts from; none for a fresh start."""
    if restore is None:
        return {}
    if restore.path:
        return {
            options.SAVEPOINT_PATH.key: restore.path,
            options.SAVEPOINT_IGNORE_UNCLAIMED_STATE.key: str(restore.allow_non_restored_state).lower(),
        }
    return {options.PIPELINE_FIXED_JOB_ID.key: restore.job_id} if restore.job_id else {}
