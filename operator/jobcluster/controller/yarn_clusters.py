"""FlinkJobs' job clusters on YARN: deploy, observe, remove (blocking calls; run them off the loop).

The Hadoop client configuration comes from the ConfigMap the FlinkJob names
(``spec.hadoopConfigMap``, in its namespace): its keys are the files
(``core-site.xml``, ``yarn-site.xml``, ``hdfs-site.xml``), written to a
directory of the operator's (``<work dir>/<namespace>/<ConfigMap>/``) that
becomes the job's ``env.hadoop.conf.dir``.  Deployment goes through the same
YarnClusterDescriptor as ``jobcluster run -t yarn-per-job``, in this process.

Every application carries the tag ``flinkjob-uid:<uid>``: the operator finds a
FlinkJob's application by it even when the status does not name it yet (the
operator restarted while deploying), and removes every one of them.

Observation costs no JVM: the application report comes from the
ResourceManager's REST API and the job's state from the cluster's own REST API;
once the application has ended, its final status and diagnostics are the
job's result (YARN keeps them, so nothing is written for the FlinkJob).
Removal kills through YARN's Java client (and removes the staging directory).
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path

import kubernetes

from jobcluster.backends.kubernetes.kube_client import api_call
from jobcluster.backends.yarn.config_options import ENV_HADOOP_CONF_DIR, YARN_TAGS
from jobcluster.backends.yarn.descriptor import YarnClusterDescriptor
from jobcluster.client.descriptor import PackagedProgram
from jobcluster.client.executor import PipelineExecutor
from jobcluster.client.program import build_job_graph
from jobcluster.config.configuration import Configuration
from jobcluster.controller.clusters import ClusterRef, Deployed, Observation, observe_job
from jobcluster.controller.resource import InvalidSpecError
from jobcluster.errors import NotFoundError
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config

log = logging.getLogger(__name__)

TAG_PREFIX = "flinkjob-uid:"


def flinkjob_tag(uid: str) -> str:
    """The YARN application tag of the FlinkJob with ``uid`` (lower case, as YARN stores tags)."""
    return f"{TAG_PREFIX}{uid}".lower()


class YarnClusters:
    """Job clusters of FlinkJobs on YARN clusters; ``api`` reads the Hadoop ConfigMaps, ``work_dir`` holds
    their files.  A :class:`~jobcluster.controller.clusters.TargetClusters`."""

    def __init__(self, api: kubernetes.client.ApiClient, work_dir: Path) -> None:
        self.api = api
        self.work_dir = work_dir
        self._written: dict[tuple[str, str], Path] = {}
        self._lock = threading.Lock()

    def hadoop_conf_dir(self, ref: ClusterRef, refresh: bool = False) -> Path:
        """The directory with the files of the FlinkJob's Hadoop ConfigMap, written now when ``refresh`` or
        not written yet by this operator.

        Raises:
            InvalidSpecError: the spec names no ConfigMap, or the ConfigMap does not exist or holds no file.
            DeploymentError: the API server refuses or cannot be reached.
        """
        if not ref.hadoop_config_map:
            raise InvalidSpecError("spec.hadoopConfigMap is required for the yarn-per-job target", reason="HadoopConfigurationMissing")
        key = (ref.namespace, ref.hadoop_config_map)
        with self._lock:
            if key in self._written and not refresh:
                return self._written[key]
        files = self._read_config_map(ref.namespace, ref.hadoop_config_map)
        directory = self.work_dir / ref.namespace / ref.hadoop_config_map
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            # replaced whole, never seen half-written by a deployment of another FlinkJob reading it
            fd, partial = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
            with os.fdopen(fd, "w") as out:
                out.write(text)
            os.replace(partial, directory / name)
        with self._lock:
            self._written[key] = directory
        return directory

    def _read_config_map(self, namespace: str, name: str) -> dict[str, str]:
        core = kubernetes.client.CoreV1Api(self.api)
        try:
            config_map = api_call("get", "configmaps", namespace, core.read_namespaced_config_map, name, namespace)
        except NotFoundError:
            raise InvalidSpecError(
                f"spec.hadoopConfigMap {name!r} does not exist in namespace {namespace}: create it from the Hadoop "
                f"client configuration (kubectl create configmap {name} --from-file=$HADOOP_CONF_DIR)",
                reason="HadoopConfigurationMissing",
            ) from None
        files = {key: value for key, value in (config_map.data or {}).items() if key.endswith(".xml")}
        if not files:
            raise InvalidSpecError(
                f"ConfigMap {namespace}/{name} (spec.hadoopConfigMap) holds no Hadoop site file (core-site.xml, yarn-site.xml)",
                reason="HadoopConfigurationMissing",
            )
        return files

    def _descriptor(self, ref: ClusterRef, config: Configuration | None = None, refresh: bool = False) -> YarnClusterDescriptor:
        config = config.copy() if config is not None else Configuration()
        config.set(ENV_HADOOP_CONF_DIR, str(self.hadoop_conf_dir(ref, refresh)))
        return YarnClusterDescriptor(config)

    def deploy(self, ref: ClusterRef, config: Configuration, program: PackagedProgram) -> Deployed:
        """Submit the job of ``program`` under ``config`` as a YARN application tagged with the FlinkJob's
        uid; returns once its ApplicationMaster serves REST.

        Raises:
            JobClusterError: the Hadoop configuration, JobGraph, configuration or deployment is refused
                (nothing is left behind: the application is killed and its staging directory removed).
        """
        config = config.copy()
        user_tags = [t for t in str(config.get(YARN_TAGS)).split(",") if t.strip()]
        config.set(YARN_TAGS, ",".join([*user_tags, flinkjob_tag(ref.uid)]))
        graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
        job_client = PipelineExecutor(self._descriptor(ref, config, refresh=True)).execute(graph, program, config)
        try:
            client = job_client.cluster_client
            return Deployed(graph.job_id, client.rest_url, client.cluster_id)
        finally:
            job_client.cluster_client.close()

    def observe(self, ref: ClusterRef, job_id: str | None) -> Observation:
        """A look at the FlinkJob's application (the one of the status, else the one tagged with its uid).

        Raises:
            DeploymentError: the ResourceManager or the API server cannot be reached, or the ConfigMap is gone.
        """
        descriptor = self._descriptor(ref)
        application_id = ref.cluster_id or next(iter(descriptor.applications_tagged(flinkjob_tag(ref.uid))), "")
        if not application_id:
            return Observation(exists=False)
        handle = descriptor.retrieve(application_id)
        if handle is None:
            return Observation(exists=False, cluster_id=application_id, result=descriptor.job_result(application_id))
        return observe_job(Observation(exists=True, cluster_id=application_id, rest_url=handle.rest_url), handle, job_id)

    def remove(self, ref: ClusterRef) -> bool:
        """Kill every application of the FlinkJob that has not ended (and remove its staging directory).

        Raises:
            DeploymentError: YARN cannot be reached or refuses, or the ConfigMap is gone.
        """
        try:
            descriptor = self._descriptor(ref)
        except InvalidSpecError as exc:  # never deployed with this spec, or its ConfigMap went first
            log.warning("FlinkJob %s/%s: cannot look for its YARN applications: %s", ref.namespace, ref.name, exc)
            return False
        running = descriptor.applications_tagged(flinkjob_tag(ref.uid))
        for application_id in running:
            log.info("killing YARN application %s of FlinkJob %s/%s", application_id, ref.namespace, ref.name)
            descriptor.kill_cluster(application_id)
        return bool(running)

    def remove_result(self, ref: ClusterRef) -> None:
        """Nothing: YARN keeps an ended application's result itself."""
