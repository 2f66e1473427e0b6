"""The JobManager side's manifests: the Deployment ``<cluster-id>``, the REST Service ``<cluster-id>-rest`` and its Ingress.

Why a Deployment with one replica (Flink's native Kubernetes): when the
JobManager pod dies, its ReplicaSet starts a new attempt, and deleting the
Deployment removes the whole cluster, because every other object of the
cluster is owned by it.
"""

from __future__ import annotations

from typing import Any

from jobcluster.backends.kubernetes import object_names
from jobcluster.backends.kubernetes.containers import main_container, pod_env, pod_metadata, pod_spec, volumes
from jobcluster.backends.kubernetes.labels import LABEL_JOB_ID, job_manager_selector, owner_reference_to, with_user_labels
from jobcluster.backends.kubernetes.parameters import KubernetesJobManagerParameters
from jobcluster.backends.kubernetes.pod_template import merge_pod_template
from jobcluster.backends.kubernetes.resource_requirements import resource_requirements


def job_manager_labels(params: KubernetesJobManagerParameters) -> dict[str, str]:
    """The Deployment's and its pod's labels: the user's, then the selector labels and the JobID."""
    return with_user_labels(params.labels, {**job_manager_selector(params.cluster_id), LABEL_JOB_ID: params.job_id})


def build_job_manager_pod(
    params: KubernetesJobManagerParameters, staged_items: list[dict[str, str]], template: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The JobManager pod (``{"metadata", "spec"}``, the Deployment's pod template), merged over ``template``.

    Its container runs ``<entrypoint dir>/jobmanager``; it requests
    ``params.memory_mib`` MiB and ``params.cpu`` cores, limits x the factors;
    the staged ConfigMap's ``staged_items`` are mounted read-only.
    """
    container = main_container(
        params,
        object_names.JOB_MANAGER_ENTRYPOINT,
        [],
        pod_env(params, {}),
        resource_requirements(params.memory_mib, params.cpu, params.memory_limit_factor, params.cpu_limit_factor),
        [{"name": object_names.REST_PORT_NAME, "containerPort": params.rest_port, "protocol": "TCP"}],
    )
    pod = {
        "metadata": pod_metadata(job_manager_labels(params), params.annotations),
        "spec": pod_spec(params, container, volumes(params.cluster_id, staged_items)),
    }
    return merge_pod_template(template, pod)


def build_job_manager_deployment(
    params: KubernetesJobManagerParameters, staged_items: list[dict[str, str]], template: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The Deployment ``<cluster-id>``: one replica of :func:`build_job_manager_pod`.

    Its strategy is ``Recreate``: a new JobManager pod (a changed template, a
    rollout restart) starts only once the old one is gone, so that two drivers
    never write the job's checkpoint root at once (a rolling update overlaps them).
    Labelled like its pod; owned by ``kubernetes.jobmanager.owner.reference``'s
    owners, if any (the FlinkJob of the operator).
    """
    pod = build_job_manager_pod(params, staged_items, template)
    metadata: dict[str, Any] = {
        "name": object_names.deployment_name(params.cluster_id),
        "namespace": params.namespace,
        "labels": job_manager_labels(params),
    }
    if params.owner_references:
        metadata["ownerReferences"] = [dict(reference) for reference in params.owner_references]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": job_manager_selector(params.cluster_id)},
            "template": pod,
        },
    }


def build_rest_service(params: KubernetesJobManagerParameters, owner: dict[str, Any] | None) -> dict[str, Any]:
    """The Service ``<cluster-id>-rest`` (port ``rest``) of type ``kubernetes.rest-service.exposed.type``.

    ``Headless_ClusterIP`` is a ClusterIP Service with ``clusterIP: None``.
    ``owner``: the created Deployment.
    """
    spec: dict[str, Any] = {
        "type": "ClusterIP" if params.rest_service_type == "Headless_ClusterIP" else params.rest_service_type,
        "selector": job_manager_selector(params.cluster_id),
        "ports": [{"name": object_names.REST_PORT_NAME, "port": params.rest_port, "targetPort": params.rest_port, "protocol": "TCP"}],
    }
    if params.rest_service_type == "Headless_ClusterIP":
        spec["clusterIP"] = "None"
    metadata: dict[str, Any] = {
        "name": object_names.rest_service_name(params.cluster_id),
        "namespace": params.namespace,
        "labels": job_manager_selector(params.cluster_id),
    }
    if owner is not None:
        metadata["ownerReferences"] = [owner_reference_to(owner)]
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def build_ingress(params: KubernetesJobManagerParameters, owner: dict[str, Any] | None) -> dict[str, Any] | None:
    """The Ingress ``<cluster-id>`` (``networking.k8s.io/v1``) to the REST Service's port, or None when none is configured.

    One rule, the Flink Kubernetes Operator's (``ingress.py``): ``params.ingress``'s
    host, if any, and its path with ``pathType: ImplementationSpecific``, or
    ``/`` with ``Prefix`` when the template has none.  Labelled like the REST
    Service (the user's labels below them), so that ``-l app=<cluster-id>``
    finds it; ``owner``: the created Deployment, whose deletion removes it.
    """
    ingress = params.ingress
    if ingress is None:
        return None
    backend = {"service": {"name": object_names.rest_service_name(params.cluster_id), "port": {"number": params.rest_port}}}
    path = {"path": ingress.path, "pathType": "ImplementationSpecific"} if ingress.path else {"path": "/", "pathType": "Prefix"}
    rule: dict[str, Any] = {"http": {"paths": [{**path, "backend": backend}]}}
    if ingress.host:
        rule = {"host": ingress.host, **rule}
    spec: dict[str, Any] = {"rules": [rule]}
    if ingress.class_name:
        spec = {"ingressClassName": ingress.class_name, **spec}
    if ingress.tls:
        spec["tls"] = [dict(entry) for entry in ingress.tls]
    metadata: dict[str, Any] = {
        "name": object_names.ingress_name(params.cluster_id),
        "namespace": params.namespace,
        "labels": with_user_labels(ingress.labels, job_manager_selector(params.cluster_id)),
    }
    if ingress.annotations:
        metadata["annotations"] = dict(ingress.annotations)
    if owner is not None:
        metadata["ownerReferences"] = [owner_reference_to(owner)]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": metadata, "spec": spec}
