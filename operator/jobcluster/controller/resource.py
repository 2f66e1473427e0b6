"""The FlinkJob custom resource: its API coordinates and its spec, parsed and checked.

The CRD (``manifests/crd/flinkjobs.jobcluster.io.yaml``) checks the shapes the
API server can check (types, enums, minimums, defaults); :func:`parse_spec`
checks the rest that needs no cluster (exactly one program, program URIs, a
Hadoop ConfigMap for YARN) and raises :class:`InvalidSpecError` with a reason a
person understands.  The memory model and cluster-id rules are checked when
the job's configuration is built (``job_config.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.config.targets import DeploymentTarget

GROUP = "jobcluster.io"
VERSION = "v1alpha1"
PLURAL = "flinkjobs"
KIND = "FlinkJob"
API_VERSION = f"{GROUP}/{VERSION}"

TARGET_KUBERNETES = DeploymentTarget.KUBERNETES_APPLICATION
TARGET_YARN = DeploymentTarget.YARN_PER_JOB


class _Spec(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class JobSpec(_Spec):
    program: str | None = None
    source: str | None = None
    args: tuple[str, ...] = ()
    py_files: tuple[str, ...] = Field(default=(), alias="pyFiles")
    parallelism: int = Field(default=1, ge=1)
    state: Literal["running", "suspended"] = "running"


class Resource(_Spec):
    memory: str | None = None
    cpu: float | None = Field(default=None, gt=0)


class PodSpec(_Spec):
    resource: Resource = Resource()
    pod_template: dict[str, Any] | None = Field(default=None, alias="podTemplate")


class FlinkJobSpec(_Spec):
    """``spec`` of a FlinkJob (field names as in the CRD)."""

    job: JobSpec
    image: str | None = None
    image_pull_policy: str | None = Field(default=None, alias="imagePullPolicy")
    service_account: str = Field(default="jobcluster", alias="serviceAccount")
    target: Literal["kubernetes-application", "yarn-per-job"] = "kubernetes-application"
    hadoop_config_map: str | None = Field(default=None, alias="hadoopConfigMap")
    restart_nonce: int | None = Field(default=None, alias="restartNonce")
    flink_configuration: dict[str, str] = Field(default_factory=dict, alias="flinkConfiguration")
    job_manager: PodSpec = Field(default=PodSpec(), alias="jobManager")
    task_manager: PodSpec = Field(default=PodSpec(), alias="taskManager")
    startup_deadline_seconds: int = Field(default=300, ge=1, alias="startupDeadlineSeconds")
    active_deadline_seconds: int | None = Field(default=None, ge=1, alias="activeDeadlineSeconds")
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0, alias="ttlSecondsAfterFinished")
    delete_after_ttl: bool = Field(default=False, alias="deleteAfterTtl")


#: Fields whose change does not need a new cluster (the lifecycle's own knobs).
_NOT_DEPLOYED = ("startupDeadlineSeconds", "activeDeadlineSeconds", "ttlSecondsAfterFinished", "deleteAfterTtl")


def parse_spec(spec: Mapping[str, Any]) -> FlinkJobSpec:
    """The FlinkJob's spec, checked beyond its schema.

    Raises:
        InvalidSpecError: a field of the wrong type or range (when the API server did not check it),
            no program or both program and source, a program URI that is neither ``local://`` nor
            ``http(s)://``, or the yarn-per-job target without ``hadoopConfigMap``.
    """
    try:
        parsed = FlinkJobSpec.model_validate(dict(spec))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidSpecError(f"spec.{where}: {first['msg']}") from None
    job = parsed.job
    if (job.program is None) == (job.source is None):
        raise InvalidSpecError("spec.job needs exactly one of program (local:// or http(s):// URI) and source (the program inline)")
    for field, uri in [("program", job.program), *(("pyFiles", f) for f in job.py_files)]:
        if uri is not None and not uri.startswith(("local:///", "http://", "https://")):
            raise InvalidSpecError(
                f"spec.job.{field} {uri!r} is neither local:///path/in/image nor an http(s):// URL "
                "(a program on your machine goes inline, as spec.job.source)"
            )
    if parsed.target == TARGET_YARN and not parsed.hadoop_config_map:
        raise InvalidSpecError(
            "spec.target yarn-per-job needs spec.hadoopConfigMap: the ConfigMap of this namespace holding the Hadoop "
            "client configuration (kubectl create configmap hadoop-conf --from-file=$HADOOP_CONF_DIR)",
            reason="HadoopConfigurationMissing",
        )
    return parsed


def deployed_spec_hash(spec: Mapping[str, Any]) -> str:
    """A digest of what a deployment is made of: the spec without ``job.state`` and the lifecycle's own knobs.

    Equal digests mean the running cluster is the one the spec asks for; a new
    digest (a changed program, configuration, resources, image or ``restartNonce``)
    means a new cluster (a stateless upgrade).
    """
    relevant = {key: value for key, value in spec.items() if key not in _NOT_DEPLOYED}
    job = dict(relevant.get("job") or {})
    job.pop("state", None)
    relevant["job"] = job
    return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()[:16]
