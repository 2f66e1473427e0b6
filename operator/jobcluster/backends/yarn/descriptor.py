"""YarnClusterDescriptor: job clusters as YARN applications (Flink's per-job mode on YARN).

``deploy_job_cluster`` follows Flink's ``YarnClusterDescriptor``: read the
Hadoop configuration (``HADOOP_CONF_DIR``), reach the ResourceManager through
YARN's Java client with bounded retries (or its REST API on the web port,
``jobcluster.yarn.resourcemanager.api``), create the application, check the
ClusterSpecification against the cluster (validation.py), ship the Python
environment (pyenv.py, cached), stage the program, JobGraph, effective
configuration and the cluster secret under ``<staging base>/.jobcluster/<application id>/``
(mode 700), ship Flink's web dashboard to the ApplicationMaster (dashboard_files.py,
shared), submit the ApplicationMaster (entrypoint.py) with them as
LocalResources, and follow the ApplicationReport until RUNNING, when the
ApplicationMaster has registered its REST endpoint. Any failure on the way
kills the application and removes the staging directory (submission.py).
The client then talks to the JobManager at the address it registered, or
through YARN's web proxy (``jobcluster.yarn.jobmanager.rest-access``).

The cluster id is the YARN application id; the JobID travels as an
application tag (``jobcluster-job-id:<JobID>``), which is how ``list`` and
``cancel`` find a job. The REST token is kept next to the staged files, where
only the user who deployed the cluster can read it (HDFS permissions; without
Kerberos, HDFS trusts the user name a client claims).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from py4j.protocol import Py4JJavaError

from jobcluster.backends.cluster_files import cluster_files
from jobcluster.backends.yarn.client_jvms import ClientJvms
from jobcluster.backends.yarn.config_options import (
    ENV_HADOOP_CONF_DIR,
    KERBEROS_LOGIN_KEYTAB,
    KERBEROS_LOGIN_PRINCIPAL,
    YARN_JOBMANAGER_REST_ACCESS,
    YARN_RESOURCEMANAGER_API,
    YARN_SHARED_FILES_RETENTION,
    YARN_STAGING_DIRECTORY,
    YARN_WEBHDFS_URL,
)
from jobcluster.backends.yarn.container_env import (
    ENV_ARCHIVED_PYTHON,
    ENV_CONTAINER_PYTHON,
    ENV_LOCAL_RESOURCES,
    ENV_STAGING_BASE,
    application_master_command,
    encode_local_resources,
)
from jobcluster.backends.yarn.container_requests import ContainerResource
from jobcluster.backends.yarn.dashboard_files import client_dashboard, ship_dashboard
from jobcluster.backends.yarn.errors import StagingError, YarnClientError, YarnConfigurationError, YarnDeploymentError
from jobcluster.backends.yarn.gateway import JvmGateway
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration, hadoop_conf_dir
from jobcluster.backends.yarn.kerberos import (
    SpnegoWebHdfsClient,
    client_java_options,
    is_kerberized,
    spnego_auth,
    token_renewer,
)
from jobcluster.backends.yarn.keytab import (
    KEYTAB_PERMISSION,
    KEYTAB_RESOURCE,
    KeytabError,
    KeytabLogin,
    install,
    java_login,
    keytab_login_of,
)
from jobcluster.backends.yarn.local_resources import LocalResourceDescriptor
from jobcluster.backends.yarn.options import YarnOptions, application_id, job_id_of_tags, task_manager_cpu_cores, vcores_of, yarn_options
from jobcluster.backends.yarn.proxy_users import check_impersonation, proxy_user_to_act_as
from jobcluster.backends.yarn.pyenv import container_python
from jobcluster.backends.yarn.rm_rest import ResourceManagerRest
from jobcluster.backends.yarn.savepoint_files import webhdfs_file_system
from jobcluster.backends.yarn.shared_retention import oldest_start, prune_shared_files
from jobcluster.backends.yarn.staging import HdfsPaths, StagingDirectory, hdfs_errors, webhdfs_client
from jobcluster.backends.yarn.staging import hadoop_user as hadoop_user_of_process
from jobcluster.backends.yarn.statuses import explained_application_diagnostics, job_state_of_final_status
from jobcluster.backends.yarn.submission import ResourceManagerClient, submit_application_master
from jobcluster.backends.yarn.validation import check_cluster_specification
from jobcluster.backends.yarn.yarn_client import ApplicationMasterSpec, ApplicationReport, NewApplication, YarnClient, act_as
from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.client.descriptor import ClusterDescriptor, ClusterHandle, ClusterSpecification, JobResult, PackagedProgram
from jobcluster.client.savepoints import dispose_savepoint, read_savepoint
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.config.targets import DeploymentTarget
from jobcluster.jobgraph.model import JobGraph
from jobcluster.security import new_cluster_secret, rest_token
from jobcluster.spark.checkpoints import SavepointMetadata

log = logging.getLogger(__name__)

ENTRYPOINT_MODULE = "jobcluster.backends.yarn.entrypoint"
REST_TOKEN_FILE = "rest-token"
"""Next to the staged files on HDFS (not localized): the bearer token ``cancel`` needs, for this user only."""

DEPLOYMENT_TIMEOUT = 300.0
"""Seconds from submission until the ApplicationMaster must have registered (RUNNING); it may wait in a queue."""


@dataclass(frozen=True)
class _Job:
    """What one deployment stages and submits; ``secret``: the new cluster's secret."""

    spec: ClusterSpecification
    graph: JobGraph
    program: PackagedProgram
    config: Configuration
    yarn: YarnOptions
    secret: str


@dataclass
class _Connection:
    """What one deployment or lookup talks to: the ResourceManager (the JVM with the YarnClient, or the REST API:
    no ``gateway``), and HDFS."""

    gateway: JvmGateway | None
    yarn: ResourceManagerClient
    paths: HdfsPaths
    release: Callable[[], None]  # the JVM's slot (ClientJvms), once it has ended
    hadoop_conf: HadoopConfiguration | None = None

    def close(self) -> None:
        try:
            with contextlib.suppress(YarnClientError):
                self.yarn.close()
            if self.gateway is not None:
                self.gateway.close()
        finally:
            self.release()


class YarnClusterDescriptor(ClusterDescriptor):
    """Deploys, lists and kills job clusters on the YARN cluster of ``HADOOP_CONF_DIR`` (see the module docstring)."""

    target = DeploymentTarget.YARN_APPLICATION
    client_options = (
        ENV_HADOOP_CONF_DIR,
        YARN_RESOURCEMANAGER_API,
        YARN_WEBHDFS_URL,
        YARN_JOBMANAGER_REST_ACCESS,
        YARN_STAGING_DIRECTORY,  # where a kill removes the cluster's files from
        KERBEROS_LOGIN_KEYTAB,
        KERBEROS_LOGIN_PRINCIPAL,
    )

    def __init__(self, config: Configuration, client_jvms: ClientJvms | None = None, hadoop_user: str | None = None) -> None:
        """``client_jvms``: the bound on the YARN client JVMs of this process (the operator's); None: unbounded;
        ``hadoop_user``: the Hadoop user to act as (the operator's per namespace): without Kerberos the name the
        calls give, on a Kerberized cluster a proxy user of the process's own ticket (``proxy_users.py``); its
        applications and staged files are that user's, and other users' applications are neither listed nor killed.
        None: this process's (``HADOOP_USER_NAME``, else the login name; on a Kerberized cluster, the ticket's)."""
        self.config = config
        self.client_jvms = client_jvms
        self._acting_as = hadoop_user  # given: every call acts as it (named, or a proxy user of the ticket); else the process's own login
        self.hadoop_user = hadoop_user or hadoop_user_of_process()
        self._via_proxy = config.get(YARN_JOBMANAGER_REST_ACCESS) == "web-proxy"
        self._keytab: KeytabLogin | None = None  # the keytab login of a Kerberized cluster, once installed (_login)

    # -- connecting ---------------------------------------------------------------

    def _connect(self) -> _Connection:
        """Start the JVM with YARN's client (or the REST API's, ``jobcluster.yarn.resourcemanager.api: rest``) and a
        WebHDFS client.

        Raises:
            YarnConfigurationError: no usable Hadoop configuration (env.hadoop.conf.dir, HADOOP_CONF_DIR, YARN_CONF_DIR).
            YarnClientError, JvmGatewayError: the ResourceManager cannot be reached (within 30 s) or Java fails; no
                client JVM freed in time (``client_jvms``, YarnUnavailableError).
            ProxyUserRefusedError: acting as ``hadoop_user`` on a Kerberized cluster, the NameNode or the
                ResourceManager does not let the ticket's user impersonate it; nothing was staged or submitted.
        """
        conf_dir = hadoop_conf_dir(configured=self.config.get(ENV_HADOOP_CONF_DIR))
        hadoop_conf = self._login(HadoopConfiguration.load(conf_dir))
        proxy_user = self._proxy_user(hadoop_conf)
        paths = self._hdfs_paths(hadoop_conf)
        if proxy_user and isinstance(paths.client, SpnegoWebHdfsClient):
            # The NameNode first: a refusal then comes before a JVM is started, let alone anything staged.
            with hdfs_errors(f"cannot reach WebHDFS at {paths.client.url} as Hadoop user {proxy_user}"):
                check_impersonation(paths.client)
        if self.config.get(YARN_RESOURCEMANAGER_API) == "rest":
            rest = self._rest_client(hadoop_conf)
            if proxy_user:
                rest.check_access()
            return _Connection(None, rest, paths, lambda: None, hadoop_conf)
        address = hadoop_conf.resourcemanager_address()
        # Kerberos: the JVM logs in from the ticket cache the Python side checked, under the same krb5.conf.
        java_options = client_java_options() if is_kerberized(hadoop_conf) else []
        release = self.client_jvms.acquire(self.progress) if self.client_jvms else (lambda: None)
        try:
            gateway = JvmGateway(conf_dir, java_options=java_options).start()
        except BaseException:
            release()
            raise
        try:
            if self._keytab is not None:
                self._java_login(gateway)  # first: a proxy user is made on top of the login
            if proxy_user:
                act_as(gateway, proxy_user, proxy=True)
            elif self._acting_as and not is_kerberized(hadoop_conf):
                act_as(gateway, self._acting_as)
            yarn = YarnClient(gateway, address)
            if proxy_user:
                yarn.check_access()
            return _Connection(gateway, yarn, paths, release, hadoop_conf)
        except BaseException:
            gateway.close()
            release()
            raise

    def _proxy_user(self, hadoop_conf: HadoopConfiguration) -> str | None:
        """The Hadoop user this descriptor acts as through Hadoop's proxy users (``proxy_users.py``) on a Kerberized
        cluster, where the process's ticket is the real user: the given ``hadoop_user``, else ``HADOOP_PROXY_USER``
        (as Hadoop's own clients and Flink's YARN client take it); None elsewhere (without Kerberos the user is
        simply named), without either, or for the ticket's own user.

        Raises:
            KerberosLoginError: a Kerberized cluster and the process has no valid ticket (what to run).
        """
        if not is_kerberized(hadoop_conf):
            return None
        return proxy_user_to_act_as(self._acting_as)

    def _login(self, hadoop_conf: HadoopConfiguration) -> HadoopConfiguration:
        """``hadoop_conf``, with this process logged in from the keytab of ``security.kerberos.login.*`` first when the
        cluster is Kerberized and they are set (``keytab.py``; once per descriptor): checked before anything is reached.

        Raises:
            KeytabError: the options, the keytab or the KDC refuse the login, or they are given while acting as another
                Hadoop user (the operator's per namespace); the message says what to do.
        """
        if self._keytab is None and is_kerberized(hadoop_conf):
            keytab = keytab_login_of(self.config)
            if keytab is not None and self._acting_as is not None:
                # The login is the whole process's: a FlinkJob's keytab would replace the operator's own ticket,
                # the real user of every namespace's proxy user.
                raise KeytabError(
                    f"a keytab login (security.kerberos.login.keytab/.principal) cannot be used while acting as Hadoop user "
                    f"{self._acting_as} (the operator's user of a namespace): the operator deploys with its own Kerberos "
                    "login and Hadoop proxy users; remove both options from the FlinkJob"
                )
            if keytab is not None:
                principal = install(keytab)
                self.progress(f"Logged in to Kerberos as {principal} from the keytab {keytab.keytab}")
                self._keytab = keytab
        return hadoop_conf

    def _login_for_hdfs(self) -> None:
        """:meth:`_login` before HDFS is read without a connection (savepoints); nothing without a Hadoop configuration
        (the savepoint is then not on HDFS).

        Raises:
            KeytabError: as :meth:`_login`.
        """
        try:
            hadoop_conf = self._hadoop_conf()
        except YarnConfigurationError:
            return
        self._login(hadoop_conf)

    def _java_login(self, gateway: JvmGateway) -> None:
        assert self._keytab is not None
        try:
            java_login(gateway.jvm, self._keytab)
        except Py4JJavaError as error:
            raise KeytabError(f"the client's JVM cannot log in from the keytab {self._keytab.keytab}: {error.java_exception}") from error

    def _rest_client(self, hadoop_conf: HadoopConfiguration) -> ResourceManagerRest:
        """The ResourceManager's REST API (every ResourceManager of an HA cluster), as this client's Hadoop user (on a
        Kerberized cluster: as its ticket's, over SPNEGO, or as ``hadoop_user`` through ``doAs``)."""
        kerberized = is_kerberized(hadoop_conf)
        return ResourceManagerRest(
            hadoop_conf.resourcemanager_webapp_url(),
            user=None if kerberized else self.hadoop_user,
            peers=hadoop_conf.resourcemanager_webapp_urls(),
            minimum_allocation_mb=int(hadoop_conf.get("yarn.scheduler.minimum-allocation-mb") or 1024),
            auth=spnego_auth() if kerberized else None,
            do_as=self._proxy_user(hadoop_conf),
        )

    def _mine(self, report: ApplicationReport) -> bool:
        """Whether ``report``'s application is this descriptor's Hadoop user's, when it acts as one (the operator's
        per namespace): YARN shows and lets kill other users' applications unless the cluster enables its ACLs
        (``yarn.acl.enable``), and a namespace's FlinkJobs must reach only their own."""
        return self._acting_as is None or report.user == self._acting_as

    def _delegation_tokens(self, connection: _Connection) -> dict[str, str]:
        """On a Kerberized cluster, the HDFS delegation token of the staging file system for the application's
        containers, by alias (its service, as Hadoop's ``Credentials`` keys it), with the ResourceManager as renewer;
        nothing on other clusters. Obtained before anything is staged.

        Raises:
            KerberosLoginError: the NameNode refused the ticket or the renewer.
            StagingError: no NameNode answered.
        """
        client = connection.paths.client
        if connection.hadoop_conf is None or not isinstance(client, SpnegoWebHdfsClient):
            return {}
        renewer = token_renewer(connection.hadoop_conf)
        with hdfs_errors(f"cannot get an HDFS delegation token from {client.url}"):
            token = client.delegation_token(renewer)
        self.progress(f"Obtained an HDFS delegation token for {connection.paths.default_fs} (renewer {renewer})")
        return {token.service: token.url_string()}

    def _hdfs_paths(self, hadoop_conf: HadoopConfiguration) -> HdfsPaths:
        """HDFS through WebHDFS, as this client's Hadoop user (on a Kerberized cluster acting as ``hadoop_user`` through
        ``doas``): the NameNode's, or ``jobcluster.yarn.webhdfs.url``'s gateway."""
        client = webhdfs_client(
            hadoop_conf, user=self.hadoop_user, url=self.config.get(YARN_WEBHDFS_URL), proxy_user=self._proxy_user(hadoop_conf)
        )
        return HdfsPaths(client, hadoop_conf.default_fs)

    # -- deploying ----------------------------------------------------------------

    def deploy_job_cluster(
        self, spec: ClusterSpecification, graph: JobGraph, program: PackagedProgram, config: Configuration
    ) -> RestClusterClient:
        job = _Job(spec, graph, program, config, yarn_options(config, graph.job_name, graph.job_id), new_cluster_secret())
        tm_vcores = vcores_of(task_manager_cpu_cores(config))
        connection = self._connect()
        try:
            self.progress(f"Connected to the YARN ResourceManager at {connection.yarn.resourcemanager_address}")
            tokens = self._delegation_tokens(connection)

            def build(application: NewApplication, staging: StagingDirectory) -> ApplicationMasterSpec:
                self._check(job, tm_vcores, connection.yarn, application)
                return dataclasses.replace(self._stage(job, connection.paths, staging), tokens=tokens)

            submitted = submit_application_master(
                connection.yarn,
                connection.paths,
                job.yarn.staging_directory,
                build,
                on_change=self._report_state,
                timeout=DEPLOYMENT_TIMEOUT,
            )
            report = submitted.report
            if report.state != "RUNNING" and report.final_status != "SUCCEEDED":
                raise YarnDeploymentError(
                    f"The YARN application {report.application_id} ended {report.final_status} before it served: {report.diagnostics}"
                )
        except BaseException:
            connection.close()
            raise
        self._prune_shared_after_deployment(connection, job.yarn, submitted.staging.base)
        watch = _ApplicationWatch(connection, submitted.staging, self._rest_url)
        return RestClusterClient(
            self._rest_url(report) or rest_url_of(report),
            report.application_id,
            token=rest_token(job.secret),
            liveness=watch.alive,
            end_report=watch.end_report,
            on_close=connection.close,
            locate=watch.rest_url,
            log_location=f"`yarn logs -applicationId {report.application_id}`",
            via_proxy=self._via_proxy,
            proxy_auth=self._proxy_auth(connection.hadoop_conf),
        )

    def _check(self, job: _Job, tm_vcores: int, yarn: ResourceManagerClient, application: NewApplication) -> None:
        """Flink's ClusterSpecification check: fatal mismatches raise, the rest is shown or logged."""
        self.progress(f"Created YARN application {application.application_id}")
        check = check_cluster_specification(
            job.spec,
            am_vcores=job.yarn.am_vcores,
            task_manager_vcores=tm_vcores,
            queue=job.yarn.queue,
            cluster=yarn.cluster_resources(application.maximum),
        )
        for warning in check.warnings:
            self.progress(f"Warning: {warning}")
        for note in check.notes:
            log.info("%s", note)

    def _stage(self, job: _Job, paths: HdfsPaths, staging: StagingDirectory) -> ApplicationMasterSpec:
        """Ship the Python, stage the cluster's files, and describe the ApplicationMaster to submit."""
        opts = job.yarn
        python = container_python(opts.python, paths, staging.base, progress=self.progress, archives=opts.python_archives)
        self.progress(f"Staging the job's files in {staging.uri}")
        # the secret too: the staging directory is 0700, and it is localized into the container only
        files = [
            staging.upload(file.source, file.name) if file.source is not None else staging.write(file.name, file.read())
            for file in cluster_files(job.graph, job.program, job.config, job.secret)
        ]
        token = rest_token(job.secret).encode()
        with hdfs_errors(f"cannot write the REST token into {staging.uri}"):
            paths.client.write(staging.remote_path(REST_TOKEN_FILE), data=token, overwrite=True, permission="600")
        resources = (*files, *python.resources)
        return ApplicationMasterSpec(
            name=opts.application_name,
            application_type=opts.application_type,
            resource=ContainerResource(job.spec.master_memory_mib, opts.am_vcores),
            command=application_master_command([python.executable, "-m", ENTRYPOINT_MODULE], archived_python=python.archived),
            environment={
                **job.config.prefixed(options.CONTAINERIZED_MASTER_ENV),  # below jobcluster's own
                # what the TaskExecutor containers get too: not the dashboard, which only the JobManager serves
                ENV_LOCAL_RESOURCES: encode_local_resources(resources),
                ENV_STAGING_BASE: staging.base,
                ENV_CONTAINER_PYTHON: python.executable,
                **({ENV_ARCHIVED_PYTHON: python.archived} if python.archived else {}),
            },
            local_resources=(*resources, *self._dashboard(job.config, paths, staging.base), *self._ship_keytab(staging)),
            queue=opts.queue,
            priority=opts.priority,
            node_label=opts.node_label,
            tags=opts.tags,
            attempts=opts.attempts,
        )

    def _ship_keytab(self, staging: StagingDirectory) -> tuple[LocalResourceDescriptor, ...]:
        """The keytab of the login, for the ApplicationMaster alone (as Flink ships it, ``krb5.keytab``): private to
        the application, mode 600 in its 0700 staging directory, removed with it; none without a keytab login."""
        if self._keytab is None:
            return ()
        self.progress(f"Shipping the keytab {self._keytab.keytab} to the ApplicationMaster (private to the application)")
        return (staging.write(KEYTAB_RESOURCE, self._keytab.keytab.read_bytes(), permission=KEYTAB_PERMISSION),)

    def _dashboard(self, config: Configuration, paths: HdfsPaths, staging_base: str) -> tuple[LocalResourceDescriptor, ...]:
        """Flink's web dashboard for the ApplicationMaster, shared on HDFS; none when the client has none to ship or
        ``jobcluster.web.dashboard-dir`` names the nodes' own copy (dashboard_files.py)."""
        directory = client_dashboard(config, self.progress)
        if directory is None:
            return ()
        return (ship_dashboard(paths, staging_base, directory, self.progress).resource,)

    def _prune_shared_after_deployment(self, connection: _Connection, opts: YarnOptions, staging_base: str) -> None:
        """Remove the shared files no job used for the retention (``shared_retention.py``); a failure is logged, the
        job runs."""
        try:
            active = connection.yarn.applications([opts.application_type])
            removed = prune_shared_files(
                connection.paths,
                staging_base,
                self.config.get(YARN_SHARED_FILES_RETENTION),
                oldest_start(r.start_time_ms for r in active),
            )
        except (StagingError, YarnClientError) as error:
            log.warning("shared files on HDFS not pruned: %s", error)
            return
        for path in removed:
            log.info("Removed %s (unused for %s)", path, YARN_SHARED_FILES_RETENTION.key)

    def prune_shared_files(self, max_age: float | None = None) -> list[str]:
        """Remove the shared files under ``<staging base>/.jobcluster/`` unused for ``max_age`` seconds (default:
        ``jobcluster.yarn.shared-files.retention``) and by every active application of ``yarn.application.type``
        (``shared_retention.py``); returns their paths.

        Raises:
            YarnConfigurationError: no usable Hadoop configuration.
            YarnClientError: the ResourceManager cannot be reached or refuses.
            StagingError: HDFS refused or is unreachable.
        """
        opts = yarn_options(self.config, job_name="")
        rest, paths = self._web_services()
        try:
            active = rest.applications(application_types=(opts.application_type,))
        finally:
            rest.close()
        retention = self.config.get(YARN_SHARED_FILES_RETENTION) if max_age is None else max_age
        return prune_shared_files(
            paths, paths.staging_base(opts.staging_directory), retention, oldest_start(r.start_time_ms for r in active)
        )

    def _report_state(self, report: ApplicationReport) -> None:
        if report.state == "ACCEPTED":
            self.progress(f"YARN application {report.application_id} ACCEPTED in queue {report.queue}; waiting for its ApplicationMaster")
        elif report.state == "RUNNING":
            at = self._rest_url(report) or rest_url_of(report)
            self.progress(f"YARN application {report.application_id} RUNNING; its JobManager serves REST at {at}")
        else:
            self.progress(f"YARN application {report.application_id} {report.state}")

    # -- finding and killing ------------------------------------------------------

    def list_clusters(self) -> list[ClusterHandle]:
        """The job clusters of ``yarn.application.type`` that are not finished, with their REST token when readable."""
        opts = yarn_options(self.config, job_name="")
        connection = self._connect()
        try:
            reports = connection.yarn.applications([opts.application_type])
            wanted = application_id(self.config)
            base = connection.paths.staging_base(opts.staging_directory)
            return [
                ClusterHandle(
                    cluster_id=r.application_id,
                    target=self.target,
                    rest_url=self._rest_url(r),
                    job_id=job_id_of_tags(r.tags) or "?",
                    job_name=r.name,
                    log_dir=f"`yarn logs -applicationId {r.application_id}`",
                    rest_token=_read_token(StagingDirectory(connection.paths, base, r.application_id)),
                    via_proxy=self._via_proxy,
                    proxy_auth=self._proxy_auth(connection.hadoop_conf),
                )
                for r in reports
                if (wanted is None or r.application_id == wanted) and self._mine(r)
            ]
        finally:
            connection.close()

    def _web_services(self) -> tuple[ResourceManagerRest, HdfsPaths]:
        """The ResourceManager's REST API and HDFS, for looks that need no JVM.

        Raises:
            YarnConfigurationError: no usable Hadoop configuration.
        """
        conf_dir = hadoop_conf_dir(configured=self.config.get(ENV_HADOOP_CONF_DIR))
        hadoop_conf = self._login(HadoopConfiguration.load(conf_dir))
        return self._rest_client(hadoop_conf), self._hdfs_paths(hadoop_conf)

    def _application_report(self, cluster_id: str) -> tuple[ApplicationReport | None, HdfsPaths]:
        rest, paths = self._web_services()
        try:
            report = rest.application(cluster_id)
        finally:
            rest.close()
        return (report if report is not None and self._mine(report) else None), paths

    def retrieve(self, cluster_id: str) -> ClusterHandle | None:
        """The application ``cluster_id`` while it runs (its REST URL once its ApplicationMaster
        registered, its token when this user can read it); None once it ended or YARN does not know it.

        Through the ResourceManager's REST API and WebHDFS: no JVM, so cheap enough to call every few seconds.

        Raises:
            YarnConfigurationError: no usable Hadoop configuration.
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        report, paths = self._application_report(cluster_id)
        if report is None or report.is_terminal:
            return None
        rest_url = self._rest_url(report)
        base = paths.staging_base(yarn_options(self.config, job_name="").staging_directory)
        return ClusterHandle(
            cluster_id=cluster_id,
            target=self.target,
            rest_url=rest_url,
            job_id=job_id_of_tags(report.tags) or "?",
            job_name=report.name,
            log_dir=f"`yarn logs -applicationId {cluster_id}`",
            rest_token=_read_token(StagingDirectory(paths, base, cluster_id)) if rest_url else None,
            via_proxy=self._via_proxy,
            proxy_auth=self._proxy_auth(self._hadoop_conf()),
        )

    def job_result(self, cluster_id: str) -> JobResult | None:
        """How the job of the ended application ``cluster_id`` went, from its final status and diagnostics
        (``statuses.job_state_of_final_status``); None while it runs or when YARN does not know it.

        Raises:
            YarnConfigurationError: no usable Hadoop configuration.
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        report, _ = self._application_report(cluster_id)
        if report is None or not report.is_terminal:
            return None
        return JobResult(
            cluster_id=cluster_id,
            job_id=job_id_of_tags(report.tags) or "",
            state=job_state_of_final_status(report.final_status),
            end_time=report.finish_time,
            diagnostics=report.diagnostics if report.final_status != "SUCCEEDED" else "",
        )

    def applications_tagged(self, tag: str) -> list[str]:
        """The ids of the applications with ``tag`` that have not ended (YARN stores tags in lower case).

        Raises:
            YarnConfigurationError: no usable Hadoop configuration.
            YarnClientError: the ResourceManager cannot be reached or refuses.
        """
        rest, _ = self._web_services()
        try:
            return [report.application_id for report in rest.applications(tag=tag.lower()) if self._mine(report)]
        finally:
            rest.close()

    def kill_cluster(self, cluster_id: str) -> None:
        """Kill the application through YARN and remove its staging directory (what its ApplicationMaster could not).

        Raises:
            YarnClientError: the ResourceManager cannot be reached or refuses, or (acting as a Hadoop user) the
                application is another user's: it is left alone.
        """
        opts = yarn_options(self.config, job_name="")
        connection = self._connect()
        try:
            if self._acting_as is not None:
                try:
                    report: ApplicationReport | None = connection.yarn.report(cluster_id)
                except YarnClientError:
                    report = None  # one YARN forgot: nothing to kill, and the staging directory below is this user's
                if report is not None and not self._mine(report):
                    raise YarnClientError(
                        f"YARN application {cluster_id} runs as Hadoop user {report.user}, not {self._acting_as}: not killed"
                    )
            connection.yarn.kill(cluster_id)
            StagingDirectory(connection.paths, connection.paths.staging_base(opts.staging_directory), cluster_id).remove()
        finally:
            connection.close()

    # -- savepoints ------------------------------------------------------------------

    def read_savepoint(self, path: str) -> SavepointMetadata | None:
        """The savepoint ``path`` read through WebHDFS before anything is deployed, when it is on the default file
        system of the Hadoop configuration (``savepoint_files.py``); None otherwise (the driver reads it).

        Raises:
            SavepointError: it does not exist, is not a savepoint, or HDFS cannot be read.
            YarnConfigurationError: a Hadoop configuration directory is set but unusable.
        """
        self._login_for_hdfs()
        files = webhdfs_file_system(path, self.config, user=self._acting_as)
        return read_savepoint(path, files) if files is not None else None

    def dispose_savepoint(self, path: str) -> None:
        """Delete the savepoint ``path`` through WebHDFS (see :meth:`read_savepoint`).

        Raises:
            SavepointError: not a savepoint (nothing deleted), HDFS refuses, or ``path`` is not on the HDFS of the
                Hadoop configuration.
            YarnConfigurationError: a Hadoop configuration directory is set but unusable.
        """
        self._login_for_hdfs()
        files = webhdfs_file_system(path, self.config, user=self._acting_as)
        if files is None:
            super().dispose_savepoint(path)
            return
        dispose_savepoint(path, files)

    def _proxy_auth(self, hadoop_conf: HadoopConfiguration | None) -> Any:
        """SPNEGO for YARN's web proxy on a Kerberized cluster (its ResourceManager's web server authenticates every
        request, ``/proxy/`` included); None when the client goes to the ApplicationMaster directly, or without Kerberos."""
        return spnego_auth() if self._via_proxy and hadoop_conf is not None and is_kerberized(hadoop_conf) else None

    def _hadoop_conf(self) -> HadoopConfiguration:
        return HadoopConfiguration.load(hadoop_conf_dir(configured=self.config.get(ENV_HADOOP_CONF_DIR)))

    def _rest_url(self, report: ApplicationReport) -> str | None:
        """Where this client reaches the JobManager's REST endpoint (``jobcluster.yarn.jobmanager.rest-access``): the
        address it registered, or the application's tracking URL on YARN's web proxy; None until it serves."""
        if report.state != "RUNNING" or report.rpc_port <= 0:
            return None
        return web_proxy_url_of(report) if self._via_proxy else rest_url_of(report)


def rest_url_of(report: ApplicationReport) -> str:
    """The REST URL the ApplicationMaster registered as its host and RPC port."""
    return f"http://{report.host}:{report.rpc_port}"


def web_proxy_url_of(report: ApplicationReport) -> str:
    """The application's tracking URL: YARN's web proxy in front of the REST URL it registered
    (``http://<RM web address>/proxy/<application id>``)."""
    return report.tracking_url.rstrip("/")


def _read_token(staging: StagingDirectory) -> str | None:
    try:
        with hdfs_errors("cannot read the REST token"), staging.paths.client.read(staging.remote_path(REST_TOKEN_FILE)) as reader:
            token: bytes = reader.read()
        return token.decode().strip()
    except StagingError:
        return None


class _ApplicationWatch:
    """An attached client's view of its application through YARN: whether it still runs, how it ended.

    An application that ends without its ApplicationMaster unregistering (killed
    through YARN, or its last attempt lost) leaves its staging directory behind;
    the client that deployed it removes it once YARN reports the end.
    """

    def __init__(self, connection: _Connection, staging: StagingDirectory, rest_url: Callable[[ApplicationReport], str | None]) -> None:
        self.connection = connection
        self.staging = staging
        self._rest_url = rest_url

    def _report(self) -> ApplicationReport | None:
        try:
            report = self.connection.yarn.report(self.staging.application_id)
        except YarnClientError as error:
            log.warning("%s", error)
            return None
        if report.is_terminal:
            try:
                self.staging.remove()
            except StagingError as error:
                log.warning("%s", error)
        return report

    def alive(self) -> bool:
        """False once YARN reports the application ended; True while it runs or YARN cannot say."""
        report = self._report()
        return report is None or not report.is_terminal

    def rest_url(self) -> str | None:
        """The REST URL of the ApplicationMaster attempt that runs now; None when none serves."""
        report = self._report()
        return None if report is None else self._rest_url(report)

    def end_report(self, timeout: float) -> str | None:
        """YARN's final state, status and diagnostics, waiting up to ``timeout`` seconds; None while it runs."""
        deadline = time.monotonic() + timeout
        while True:
            report = self._report()
            if report is not None and report.is_terminal:
                diagnostics = explained_application_diagnostics(report.diagnostics.strip())
                return f"YARN application {report.application_id} {report.state} with final status {report.final_status}" + (
                    f": {diagnostics}" if diagnostics else ""
                )
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.5)
