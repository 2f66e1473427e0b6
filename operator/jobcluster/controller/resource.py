"""The FlinkJob custom resource: its API coordinates and its spec, parsed and checked.

The CRD (``manifests/crd/flinkjobs.jobcluster.io.yaml``) has the API server
refuse at ``kubectl apply`` what it can check: types, enums, minimums, and, as
CEL rules (``x-kubernetes-validations``), the name as a cluster id, exactly one
program, program URIs and a Hadoop ConfigMap for YARN.  :func:`parse_spec` and
:func:`check_name` check the same again, in the same words (the ``*_RULE``
constants below, which the CRD's messages repeat), because a FlinkJob may have
been stored before the CRD had its rules; they raise :class:`InvalidSpecError`.
The memory model is checked when the job's configuration is built
(``job_config.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobcluster.backends.kubernetes.cluster_id import DNS_1035_LABEL, MAX_CLUSTER_ID_LENGTH
from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.config.targets import DeploymentTarget

GROUP = "jobcluster.io"
VERSION = "v1alpha1"
PLURAL = "flinkjobs"
KIND = "FlinkJob"
API_VERSION = f"{GROUP}/{VERSION}"

TARGET_KUBERNETES = DeploymentTarget.KUBERNETES_APPLICATION
TARGET_YARN = DeploymentTarget.YARN_APPLICATION


class _Spec(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class JobSpec(_Spec):
    program: str | None = None
    source: str | None = None
    args: tuple[str, ...] = ()
    py_files: tuple[str, ...] = Field(default=(), alias="pyFiles")
    jars: tuple[str, ...] = ()
    parallelism: int = Field(default=1, ge=1)
    state: Literal["running", "suspended"] = "running"
    upgrade_mode: Literal["stateless", "savepoint", "last-state"] = Field(default="stateless", alias="upgradeMode")
    savepoint_trigger_nonce: int | None = Field(default=None, alias="savepointTriggerNonce")
    savepoint_redeploy_nonce: int | None = Field(default=None, alias="savepointRedeployNonce")
    initial_savepoint_path: str | None = Field(default=None, alias="initialSavepointPath")
    allow_non_restored_state: bool = Field(default=False, alias="allowNonRestoredState")


class Resource(_Spec):
    memory: str | None = None
    cpu: float | None = Field(default=None, gt=0)


class PodSpec(_Spec):
    resource: Resource = Resource()
    pod_template: dict[str, Any] | None = Field(default=None, alias="podTemplate")


class IngressTls(_Spec):
    """An entry of ``spec.ingress.tls``: Kubernetes' IngressTLS."""

    hosts: tuple[str, ...] = ()
    secret_name: str | None = Field(default=None, alias="secretName")


class IngressSpec(_Spec):
    """``spec.ingress``: the Flink Kubernetes Operator's, an Ingress to the job cluster's REST API and web dashboard."""

    template: str = Field(min_length=1)
    class_name: str | None = Field(default=None, alias="className")
    annotations: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    tls: tuple[IngressTls, ...] = ()


class FlinkJobSpec(_Spec):
    """``spec`` of a FlinkJob (field names as in the CRD)."""

    job: JobSpec
    image: str | None = None
    image_pull_policy: str | None = Field(default=None, alias="imagePullPolicy")
    service_account: str = Field(default="jobcluster", alias="serviceAccount")
    target: Literal["kubernetes-application", "yarn-application", "yarn-per-job"] = "kubernetes-application"
    hadoop_config_map: str | None = Field(default=None, alias="hadoopConfigMap")
    restart_nonce: int | None = Field(default=None, alias="restartNonce")
    flink_configuration: dict[str, str] = Field(default_factory=dict, alias="flinkConfiguration")
    job_manager: PodSpec = Field(default=PodSpec(), alias="jobManager")
    task_manager: PodSpec = Field(default=PodSpec(), alias="taskManager")
    ingress: IngressSpec | None = None
    startup_deadline_seconds: int = Field(default=300, ge=1, alias="startupDeadlineSeconds")
    active_deadline_seconds: int | None = Field(default=None, ge=1, alias="activeDeadlineSeconds")
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0, alias="ttlSecondsAfterFinished")
    delete_after_ttl: bool | None = Field(default=None, alias="deleteAfterTtl")  # None: the operator's default

    @property
    def deployment_target(self) -> DeploymentTarget:
        """The target ``target`` names (``yarn-per-job`` is ``yarn-application``); ``target`` itself stays as written,
        so that a FlinkJob's spec digest does not change with the name it uses."""
        return DeploymentTarget(self.target)


# The words of the CRD's CEL rules (tests/unit/test_flinkjob_rules.py holds the CRD to them).
#: metadata.name longer than the cluster id may be (Flink's MAXIMUM_CHARACTERS_OF_CLUSTER_ID).
NAME_LENGTH_RULE = (
    f"a FlinkJob's name becomes its job cluster's id (kubernetes.cluster-id), which Flink limits to {MAX_CLUSTER_ID_LENGTH} "
    "characters so that the names of the cluster's Services and ConfigMaps fit: choose a shorter metadata.name"
)
#: metadata.name that is a Kubernetes name but not a DNS-1035 label (a leading digit, a dot).
NAME_FORMAT_RULE = (
    "a FlinkJob's name becomes its job cluster's id (kubernetes.cluster-id), a DNS-1035 label: lowercase letters, "
    "digits and hyphens, starting with a letter and ending with a letter or digit, no dots: choose another metadata.name"
)
#: spec.job with neither or both of program and source.
ONE_PROGRAM_RULE = (
    "spec.job needs exactly one of program (local:///path/in/image.py or an http(s):// URL) and source (the program's text, inline)"
)
#: spec.job.program or an entry of spec.job.pyFiles or spec.job.jars that is not a URI the operator can use.
PROGRAM_URI_RULE = (
    "must be local:///path/in/image (a file in the image) or an http(s):// URL; a program on your machine goes inline, as spec.job.source"
)
#: target yarn-application (or yarn-per-job) without spec.hadoopConfigMap.
HADOOP_CONFIG_MAP_RULE = (
    "spec.target yarn-application (or yarn-per-job) needs spec.hadoopConfigMap: the ConfigMap of this namespace holding the Hadoop "
    "client configuration (kubectl create configmap hadoop-conf --from-file=$HADOOP_CONF_DIR)"
)
_PROGRAM_SCHEMES = ("local:///", "http://", "https://")

#: Fields whose change does not need a new cluster (the lifecycle's own knobs).
_NOT_DEPLOYED = ("startupDeadlineSeconds", "activeDeadlineSeconds", "ttlSecondsAfterFinished", "deleteAfterTtl")
#: Fields of spec.job whose change does not need a new cluster: how state is carried, and what a first deployment
#: starts from (the Flink Kubernetes Operator ignores the same ones when it compares specs).
#: Keys of flinkConfiguration that are the operator's, not the cluster's: a change of them needs no new cluster.
OPERATOR_OPTIONS = ("kubernetes.operator.", "jobcluster.operator.")
_JOB_NOT_DEPLOYED = ("state", "upgradeMode", "savepointTriggerNonce", "initialSavepointPath", "allowNonRestoredState")


def parse_spec(spec: Mapping[str, Any]) -> FlinkJobSpec:
    """The FlinkJob's spec, checked beyond its schema.

    Raises:
        InvalidSpecError: a field of the wrong type or range (when the API server did not check it),
            no program or both program and source (:data:`ONE_PROGRAM_RULE`), a program URI that is
            neither ``local:///`` nor ``http(s)://`` (:data:`PROGRAM_URI_RULE`), or the yarn-application
            target without ``hadoopConfigMap`` (:data:`HADOOP_CONFIG_MAP_RULE`, reason
            ``HadoopConfigurationMissing``).
    """
    try:
        parsed = FlinkJobSpec.model_validate(dict(spec))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidSpecError(f"spec.{where}: {first['msg']}") from None
    job = parsed.job
    if (job.program is None) == (job.source is None):
        raise InvalidSpecError(ONE_PROGRAM_RULE)
    for field, uri in [("program", job.program), *(("pyFiles", f) for f in job.py_files), *(("jars", j) for j in job.jars)]:
        if uri is not None and not uri.startswith(_PROGRAM_SCHEMES):
            raise InvalidSpecError(f"spec.job.{field} {uri!r} {PROGRAM_URI_RULE}")
    if parsed.deployment_target == TARGET_YARN and not parsed.hadoop_config_map:
        raise InvalidSpecError(HADOOP_CONFIG_MAP_RULE, reason="HadoopConfigurationMissing")
    return parsed


def check_name(name: str) -> str:
    """``name`` itself when it can be the FlinkJob's cluster id (``kubernetes.cluster-id``).

    The rule is the cluster id's (``backends/kubernetes/cluster_id.py``: at most
    45 characters, a DNS-1035 label), said in terms of the FlinkJob; the CRD
    refuses such names already, this catches those stored before it did.

    Raises:
        InvalidSpecError: ``name`` is longer than 45 characters, or not a DNS-1035 label.
    """
    if len(name) > MAX_CLUSTER_ID_LENGTH:
        raise InvalidSpecError(f"metadata.name '{name}' is too long; {NAME_LENGTH_RULE}", reason="InvalidName")
    if not DNS_1035_LABEL.fullmatch(name):
        raise InvalidSpecError(f"metadata.name '{name}' is not a valid cluster id; {NAME_FORMAT_RULE}", reason="InvalidName")
    return name


def deployed_spec_hash(spec: Mapping[str, Any]) -> str:
    """A digest of what a deployment is made of: the spec without ``job.state``, the lifecycle's own knobs, the
    fields of how its state is carried (``upgradeMode``, the savepoint trigger nonce, the initial savepoint) and the
    operator's own options in ``flinkConfiguration`` (``kubernetes.operator.*``, which the Flink Kubernetes Operator
    does not upgrade a job for either, and ``jobcluster.operator.*``). ``savepointRedeployNonce`` is in it: its
    change redeploys the job (from ``initialSavepointPath``).

    Equal digests mean the running cluster is the one the spec asks for; a new
    digest (a changed program, configuration, resources, image, ``ingress`` or ``restartNonce``)
    means a new cluster (a stateless upgrade).
    """
    relevant = {key: value for key, value in spec.items() if key not in _NOT_DEPLOYED}
    if "flinkConfiguration" in relevant:  # only when given: the digests of existing FlinkJobs stay the same
        configuration = relevant["flinkConfiguration"] or {}
        relevant["flinkConfiguration"] = {k: v for k, v in configuration.items() if not str(k).startswith(OPERATOR_OPTIONS)}
    job = dict(relevant.get("job") or {})
    for key in _JOB_NOT_DEPLOYED:
        job.pop(key, None)
    relevant["job"] = job
    return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()[:16]
