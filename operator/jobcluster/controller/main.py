"""``python -m jobcluster.controller`` / ``jobcluster operator``: the FlinkJob operator process.

Runs kopf in this process (standalone: one replica, no peering), watching
FlinkJobs in every namespace, or only in those given with ``--namespace``.
"""

from __future__ import annotations

import functools
import logging
import tempfile
from pathlib import Path

import click

from jobcluster.config.configuration import Configuration
from jobcluster.config.loader import read_config_file
from jobcluster.errors import JobClusterError

DEFAULT_PORT = 8080
LOG_LEVELS = ("debug", "info", "warning", "error")


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
    "--allow-program-url",
    "program_url_prefixes",
    multiple=True,
    metavar="PREFIX",
    help="Fetch http(s) programs and pyFiles of FlinkJobs only from URLs under this prefix: same scheme, host and port, "
    "and a path at or below the prefix's (repeatable), e.g. https://artifacts.example.com/jobs/. Redirects must stay "
    "under an allowed prefix too. Default: none, and a FlinkJob naming an http(s) program fails (ProgramUrlNotAllowed).",
)
def operator(
    namespaces: tuple[str, ...],
    port: int,
    log_level: str,
    default_configuration: Path | None,
    job_cluster_role: str | None,
    program_url_prefixes: tuple[str, ...],
) -> None:
    """Run the FlinkJob operator: each FlinkJob becomes its own job cluster; its status says how the job goes.

    \b
    Install it with the Helm chart (charts/jobcluster-operator); run it here for development:
      jobcluster operator --namespace analytics --port 8080
    """
    # kopf and the Kubernetes client load only here: `jobcluster run` never pays for them
    import kopf

    from jobcluster.backends.kubernetes.kube_client import load_api_client
    from jobcluster.backends.kubernetes.operator_hook import KubernetesOperatorHook, read_config_map
    from jobcluster.backends.yarn.operator_hook import YarnOperatorHook
    from jobcluster.controller.clusters import DescriptorClusters, JobClusters
    from jobcluster.controller.handlers import OperatorContext, build_registry
    from jobcluster.controller.metrics import OperatorMetrics
    from jobcluster.controller.programs import allow_program_urls
    from jobcluster.controller.reconciler import Reconciler
    from jobcluster.controller.resource import TARGET_KUBERNETES, TARGET_YARN

    try:
        allow_program_urls(program_url_prefixes)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--allow-program-url") from None
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if log_level != "debug":  # the memory model explains each FlinkJob's sizes at every check; the status has what matters
        logging.getLogger("jobcluster.memory").setLevel(logging.WARNING)
    try:
        defaults = read_config_file(default_configuration) if default_configuration else {}
        api = load_api_client(Configuration(defaults))
    except JobClusterError as exc:
        raise click.ClickException(str(exc)) from None
    metrics = OperatorMetrics()
    work_dir = Path(tempfile.gettempdir()) / "jobcluster-operator"
    clusters = JobClusters(
        {
            TARGET_KUBERNETES: DescriptorClusters(KubernetesOperatorHook(api, job_cluster_role)),
            TARGET_YARN: DescriptorClusters(YarnOperatorHook(functools.partial(read_config_map, api), work_dir / "hadoop-conf")),
        }
    )
    reconciler = Reconciler(clusters, defaults, on_deployed=metrics.deploy_seconds.observe)
    registry = build_registry(OperatorContext(reconciler, api, metrics, port))
    kopf.run(registry=registry, standalone=True, clusterwide=not namespaces, namespaces=list(namespaces))
