"""``python -m jobcluster.controller`` / ``jobcluster operator``: the FlinkJob operator process.

Runs kopf in this process, watching FlinkJobs in every namespace, or only in
those given with ``--namespace``. kopf runs standalone (no kopf peering: its
operators of equal priority freeze each other); with leader election
(leader.py) several replicas run and only the holder of the Lease runs kopf,
the others stand by, serving ``/healthz`` and ``/metrics`` all along.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import logging
import os
import signal
import socket
import tempfile
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from jobcluster.config.configuration import Configuration
from jobcluster.config.loader import read_config_file
from jobcluster.config.values import parse_duration
from jobcluster.controller.access_seal import AccessSeal
from jobcluster.errors import JobClusterError

if TYPE_CHECKING:
    import kubernetes

    from jobcluster.controller.clusters import JobClusters, TargetClusters
    from jobcluster.controller.leader import LeaseElector
    from jobcluster.controller.metrics import OperatorMetrics

DEFAULT_PORT = 8080
LOG_LEVELS = ("debug", "info", "warning", "error")
DEFAULT_LEASE_NAME = "jobcluster-operator"
LEADERSHIP_LOST_EXIT = 1  # the pod restarts and stands by (the Java operator SDK exits with 1 as well)
MIN_KEY_CHARACTERS = 32  # the cluster secrets derived from the key are as strong as it is

log = logging.getLogger(__name__)


class Duration(click.ParamType[float]):
    """A Flink duration (``15s``, ``500ms``, ``1 min``; a bare number is milliseconds, as in Flink), in seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


@click.command("operator")
@click.option(
    "-n",
    "--namespace",
    "namespaces",
    multiple=True,
    metavar="NS",
    help="Watch FlinkJobs in this namespace (repeatable). Default: all namespaces.",
)
@click.option(
    "--exclude-namespace",
    "excluded_namespaces",
    multiple=True,
    metavar="NS",
    help="Watching all namespaces, refuse the FlinkJobs of this one (NamespaceNotWatched; repeatable). The chart excludes "
    "its own namespace, where a FlinkJob could run as the operator's ServiceAccount, unless watchReleaseNamespace is set.",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True, help="Port of /healthz and /metrics (0: none)."
)
@click.option("--log-level", type=click.Choice(LOG_LEVELS), default="info", show_default=True)
@click.option(
    "--default-configuration",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="YAML file of Flink options applied to every FlinkJob under its own flinkConfiguration.",
)
@click.option(
    "--job-cluster-role",
    metavar="NAME",
    default=None,
    help="Before deploying a FlinkJob on Kubernetes, create in its namespace, if absent, the JobManager's ServiceAccount "
    "and its RoleBinding to this ClusterRole (the rules of manifests/rbac.yaml). The chart sets it when it watches all namespaces.",
)
@click.option(
    "--cluster-secret-key-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A file holding the operator's key (at least 32 characters): each FlinkJob's cluster secret is derived from "
    "it, so that the operator needs no right to read Secrets (the chart mounts one). Without it, the secrets are random "
    "and read back from the clusters' Secrets.",
)
@click.option(
    "--leader-election/--no-leader-election",
    default=None,
    help="Reconcile only while holding the Lease (--lease-namespace, --lease-name), standing by otherwise, so that several "
    "replicas run with one active. Default: on when the Lease's namespace is known (in a pod: POD_NAMESPACE), off otherwise.",
)
@click.option("--lease-name", default=DEFAULT_LEASE_NAME, show_default=True, metavar="NAME", help="The leader election's Lease.")
@click.option(
    "--lease-namespace",
    envvar="POD_NAMESPACE",
    default=None,
    metavar="NS",
    help="The namespace of the Lease (the operator's own). Default: $POD_NAMESPACE (the chart sets it from the pod).",
)
@click.option(
    "--lease-duration",
    type=Duration(),
    default="15s",
    show_default=True,
    help="How long a standby waits for an unchanged Lease before it takes over (whole seconds).",
)
@click.option(
    "--renew-deadline",
    type=Duration(),
    default="10s",
    show_default=True,
    help="How long the leader tries to renew the Lease before it stops leading and exits with status 1.",
)
@click.option(
    "--retry-period", type=Duration(), default="2s", show_default=True, help="The pause between two tries to acquire or renew the Lease."
)
@click.option(
    "--allow-program-url",
    "program_url_prefixes",
    multiple=True,
    metavar="PREFIX",
    help="Fetch http(s) programs and pyFiles of FlinkJobs only from URLs under this prefix: same scheme, host and port, "
    "and a path at or below the prefix's (repeatable), e.g. https://artifacts.example.com/jobs/. Redirects must stay "
    "under an allowed prefix too. Default: none, and a FlinkJob naming an http(s) program fails (ProgramUrlNotAllowed).",
)
@click.option(
    "--kerberos-principal",
    metavar="PRINCIPAL",
    default=None,
    help="Log in to Kerberos as PRINCIPAL from --kerberos-keytab (as Flink's security.kerberos.login.principal and .keytab "
    "do for a client): the operator's own identity on Kerberized YARN clusters, which acts as each namespace's Hadoop "
    "user (jobcluster.operator.yarn.hadoop-users) through Hadoop's proxy users. Its ticket is renewed from the keytab. "
    "The chart sets both from yarn.kerberos.",
)
@click.option(
    "--kerberos-keytab",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The keytab holding --kerberos-principal's keys.",
)
def operator(
    namespaces: tuple[str, ...],
    excluded_namespaces: tuple[str, ...],
    port: int,
    log_level: str,
    default_configuration: Path | None,
    job_cluster_role: str | None,
    cluster_secret_key_file: Path | None,
    leader_election: bool | None,
    lease_name: str,
    lease_namespace: str | None,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    program_url_prefixes: tuple[str, ...],
    kerberos_principal: str | None,
    kerberos_keytab: Path | None,
) -> None:
    """Run the FlinkJob operator: each FlinkJob becomes its own job cluster; its status says how the job goes.

    \b
    Install it with the Helm chart (charts/jobcluster-operator); run it here for development:
      jobcluster operator --namespace analytics --port 8080
    """
    # kopf and the Kubernetes client load only here: `jobcluster run` never pays for them
    from jobcluster.backends.kubernetes.kube_client import load_api_client
    from jobcluster.backends.kubernetes.operator_hook import KubernetesOperatorHook
    from jobcluster.client.operator_hook import InvalidSpecError
    from jobcluster.controller.clusters import DescriptorClusters, JobClusters, UnsupportedTarget
    from jobcluster.controller.job_state import check_defaults
    from jobcluster.controller.leader import LeaseElector, LeaseTimings
    from jobcluster.controller.pod_policy import allowed_accounts, allowed_kinds
    from jobcluster.controller.programs import allow_program_urls
    from jobcluster.controller.resource import TARGET_KUBERNETES, TARGET_YARN

    try:
        allow_program_urls(program_url_prefixes)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--allow-program-url") from None
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if log_level != "debug":  # the memory model explains each FlinkJob's sizes at every check; the status has what matters
        logging.getLogger("jobcluster.memory").setLevel(logging.WARNING)
    if leader_election is None:
        leader_election = bool(lease_namespace)
    cluster_secret_key = cluster_secret_key_file.read_text().strip() if cluster_secret_key_file else None
    if cluster_secret_key is not None and len(cluster_secret_key) < MIN_KEY_CHARACTERS:
        raise click.BadParameter(
            f"{cluster_secret_key_file} holds {len(cluster_secret_key)} characters; the key needs at least {MIN_KEY_CHARACTERS} "
            "(e.g. head -c 48 /dev/urandom | base64)",
            param_hint="--cluster-secret-key-file",
        )
    if namespaces and excluded_namespaces:
        raise click.UsageError("--exclude-namespace is for an operator watching all namespaces: give --namespace or --exclude-namespace")
    if leader_election and not lease_namespace:
        raise click.UsageError("leader election needs the Lease's namespace: --lease-namespace or POD_NAMESPACE")
    try:
        timings = LeaseTimings(lease_duration, renew_deadline, retry_period)
        defaults = read_config_file(default_configuration) if default_configuration else {}
        check_defaults(defaults)
        allowed_kinds(defaults)
        allowed_accounts(defaults)
        yarn = yarn_clusters(defaults) if yarn_supported() else None
        if kerberos_principal or kerberos_keytab:
            kerberos_login(kerberos_principal, kerberos_keytab)
        api = load_api_client(Configuration(defaults))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--lease-duration/--renew-deadline/--retry-period") from None
    except InvalidSpecError as exc:  # before any FlinkJob is refused for it (their jobs would run on, reporting it)
        raise click.BadParameter(f"{default_configuration}: {exc}", param_hint="--default-configuration") from None
    except JobClusterError as exc:
        raise click.ClickException(str(exc)) from None
    on_kubernetes = DescriptorClusters(KubernetesOperatorHook(api, job_cluster_role, cluster_secret_key))
    on_yarn = yarn(api) if yarn else UnsupportedTarget(TARGET_YARN, NO_YARN)
    clusters = JobClusters({TARGET_KUBERNETES: on_kubernetes, TARGET_YARN: on_yarn})
    elector = LeaseElector(api, lease_namespace, lease_name, candidate_identity(), timings) if leader_election and lease_namespace else None
    operate(api, defaults, clusters, namespaces, port, elector, excluded_namespaces, AccessSeal(cluster_secret_key))


#: Why an operator without Spark (the chart's operator image) refuses yarn-application FlinkJobs.
NO_YARN = (
    "this operator runs without Spark and Java (the operator image), which a yarn-application FlinkJob needs: its "
    "client ships the operator's Spark environment to YARN. Run the operator on the job image (the chart does once "
    "yarn.hadoopUsers maps a namespace)"
)


def yarn_supported() -> bool:
    """Whether this process can deploy to YARN: PySpark (and with it py4j, and the environment shipped to YARN) is
    installed; the operator image has neither."""
    return importlib.util.find_spec("pyspark") is not None


def kerberos_login(principal: str | None, keytab: Path | None) -> None:
    """Log this process in to Kerberos from ``keytab`` as ``principal`` (``backends/yarn/keytab.py``: the file and the
    KDC checked, a private credential cache the keytab refreshes, which the YARN client JVMs read too).

    Raises:
        click.UsageError: one option without the other, or an operator without YARN support (the operator image).
        click.ClickException: the keytab or the KDC refuses the login (the message says what to do).
    """
    if not principal or not keytab:
        raise click.UsageError("a Kerberos login needs both --kerberos-principal and --kerberos-keytab")
    if not yarn_supported():
        raise click.UsageError(f"--kerberos-principal is for FlinkJobs on YARN, and {NO_YARN}")
    from jobcluster.backends.yarn.config_options import KERBEROS_LOGIN_KEYTAB, KERBEROS_LOGIN_PRINCIPAL
    from jobcluster.backends.yarn.keytab import KeytabError, install, keytab_login_of

    options = {KERBEROS_LOGIN_KEYTAB.key: str(keytab.absolute()), KERBEROS_LOGIN_PRINCIPAL.key: principal}
    try:
        login = keytab_login_of(Configuration(options))
        assert login is not None
        log.info("logged in to Kerberos as %s from the keytab %s", install(login), keytab)
    except KeytabError as exc:  # its checks name the client's options, which are this command's flags here
        message = str(exc).replace(KERBEROS_LOGIN_KEYTAB.key, "--kerberos-keytab")
        message = message.replace(KERBEROS_LOGIN_PRINCIPAL.key, "--kerberos-principal")
        raise click.ClickException(message) from None


def yarn_clusters(defaults: dict[str, str]) -> Callable[[kubernetes.client.ApiClient], TargetClusters]:
    """The yarn-application adapter under the operator's ``defaults``, once given the Kubernetes client (which reads
    FlinkJobs' Hadoop ConfigMaps); the defaults are checked now, before any client is made.

    Raises:
        InvalidSpecError: ``jobcluster.operator.yarn.*`` in ``defaults`` is not valid.
    """
    from jobcluster.backends.kubernetes.operator_hook import read_config_map
    from jobcluster.backends.yarn.operator_hook import YarnOperatorHook, hadoop_users, yarn_client_jvms
    from jobcluster.controller.clusters import DescriptorClusters

    client_jvms, users = yarn_client_jvms(defaults), hadoop_users(defaults)
    work_dir = Path(tempfile.gettempdir()) / "jobcluster-operator" / "hadoop-conf"

    def adapter(api: kubernetes.client.ApiClient) -> TargetClusters:
        return DescriptorClusters(YarnOperatorHook(functools.partial(read_config_map, api), work_dir, client_jvms, users))

    return adapter


def operate(
    api: kubernetes.client.ApiClient,
    defaults: dict[str, str],
    clusters: JobClusters,
    namespaces: tuple[str, ...],
    port: int,
    elector: LeaseElector | None = None,
    excluded_namespaces: tuple[str, ...] = (),
    seal: AccessSeal | None = None,
) -> None:
    """Run kopf with the FlinkJob handlers until stopped: FlinkJobs of ``namespaces`` (all when empty, those of
    ``excluded_namespaces`` refused), their clusters through ``clusters`` (an adapter per target), under the operator's
    ``defaults``; ``/healthz`` and ``/metrics`` on ``port`` (0: none); with ``elector``, only while it holds the Lease;
    the cluster access kept in statuses signed and checked with ``seal`` (default: a key of this process's)."""
    import kopf

    from jobcluster.controller.handlers import OperatorContext, build_registry
    from jobcluster.controller.metrics import OperatorMetrics
    from jobcluster.controller.reconciler import Reconciler

    metrics = OperatorMetrics()
    reconciler = Reconciler(
        clusters, defaults, on_deployed=metrics.deploy_seconds.observe, excluded_namespaces=excluded_namespaces, seal=seal
    )
    registry = build_registry(OperatorContext(reconciler, api, metrics))
    run_kopf = functools.partial(kopf.operator, registry=registry, standalone=True, clusterwide=not namespaces, namespaces=list(namespaces))
    asyncio.run(_serve(run_kopf, metrics, port, elector))


def candidate_identity() -> str:
    """This process's name in the Lease: the pod's (POD_NAME) or the host's, and a random suffix (a restarted
    container is another candidate, and two processes on one host are two)."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


async def _serve(
    run_kopf: Callable[..., Coroutine[Any, Any, None]], metrics: OperatorMetrics, port: int, elector: LeaseElector | None
) -> None:
    """/healthz and /metrics from the start, and kopf: at once without an elector, else once it holds the Lease."""
    http = await metrics.serve(port) if port else None
    if http is not None:
        log.info("serving /healthz and /metrics on port %d", port)
    try:
        if elector is None:
            metrics.leader.set(1)
            await run_kopf()
        else:
            await _lead(run_kopf, metrics, elector)
    finally:
        if http is not None:
            await http.cleanup()


async def _lead(run_kopf: Callable[..., Coroutine[Any, Any, None]], metrics: OperatorMetrics, elector: LeaseElector) -> None:
    """Stand by until the Lease is ours, run kopf while it is renewed; on a clean stop, release it last."""
    from jobcluster.controller.leader import LeaseKeeper, wait_for_lease

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):  # kopf installs its own once it runs
        loop.add_signal_handler(signum, stopping.set)
    metrics.leader.set(0)
    log.info("leader election: %s is a candidate for lease %s/%s", elector.identity, elector.namespace, elector.name)
    acquired_at = await wait_for_lease(elector, stopping)
    if acquired_at is None:
        return
    metrics.leader.set(1)
    keeper = LeaseKeeper(elector, acquired_at, on_lost=_exit_at_once, clock=elector.now)
    keeper.start()
    try:
        await _until_stopped(run_kopf(), stopping)
    finally:
        # reconciliations still running in threads end before another replica may start its own
        await loop.shutdown_default_executor()
        keeper.stop()
        elector.release()  # blocking, briefly: the loop has nothing else to do any more
        metrics.leader.set(0)


async def _until_stopped(operator: Coroutine[Any, Any, None], stopping: asyncio.Event) -> None:
    """Run kopf until it ends, or cancel it when ``stopping`` is set (a signal before kopf's own handlers took over).

    Not kopf's ``stop_flag``: stopped by its own signal handler, kopf would wait for that flag's waiter, a task it
    cannot tell from a hung handler, for 5 s.
    """
    kopf_task = asyncio.create_task(operator, name="kopf")
    stop_task = asyncio.create_task(stopping.wait(), name="stop")  # made before kopf starts: kopf leaves it alone
    try:
        await asyncio.wait({kopf_task, stop_task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (stop_task, kopf_task):
            task.cancel()  # no-op for the one that ended
        _, outcome = await asyncio.gather(stop_task, kopf_task, return_exceptions=True)
    if isinstance(outcome, Exception):  # kopf failed; its cancellation here is a stop like any other
        raise outcome


def _exit_at_once() -> None:
    """The Lease is lost: another replica may lead within seconds, so this one stops reconciling now, mid-work or not."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(LEADERSHIP_LOST_EXIT)
