"""The real Kubernetes test cluster, started once per session for tests marked ``k8s``.

Why here: the cluster (tests/infra/k8s) costs ~20 s to start, and its tools and
the project's image (tests/infra/image, from entrypoints/Dockerfile) a long
one-time build, so it is session-scoped, built before the first test runs
(outside any per-test timeout) and started only when a k8s test is selected.
The node imports the image (its ref: the ``k8s_image`` fixture), so the pods
run the code under test. Teardown always stops every daemon and container;
the work dir (logs, pods' logs) is kept, and its path printed, only when a k8s
test failed; it is not under pytest's base temp dir, whose older sessions pytest
removes, so that the logs of a failed CI run are still there to read afterwards.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[3]
if str(_ROOT) not in sys.path:  # `tests.infra` is imported as a namespace package from the repo root
    sys.path.insert(0, str(_ROOT))

from jobcluster.backends.kubernetes.config_options import KUBERNETES_CONTAINER_IMAGE  # noqa: E402
from tests.infra.k8s.cluster import KubernetesCluster, KubernetesClusterError, build_project_image, build_tools  # noqa: E402
from tests.infra.k8s.node import NODE_IP  # noqa: E402
from tests.infra.kafka.cluster import KafkaCluster  # noqa: E402
from tests.infra.s3.server import S3Server  # noqa: E402
from tests.support.kafka_session import kafka_session  # noqa: E402

# The image the product's defaults name (kubernetes.container.image.ref, the chart's image): the working
# tree's image goes by that name on the node too, so the documented commands run as written.
DEFAULT_IMAGE = str(KUBERNETES_CONTAINER_IMAGE.default)
#: The operator image the chart names by default (operatorImage, tag the appVersion as the job image's).
DEFAULT_OPERATOR_IMAGE = "jobcluster-operator:" + DEFAULT_IMAGE.rsplit(":", 1)[1]
_FAILED = pytest.StashKey[bool]()
_WORK_DIR = pytest.StashKey[Path]()
_IMAGE = pytest.StashKey[tuple[str, Path]]()
_OPERATOR_IMAGE = pytest.StashKey[tuple[str, Path]]()


def build_image(kind: str = "job") -> tuple[str, Path]:
    """The project's ``job`` or ``operator`` image from the working tree (cached by content): its ref and docker-archive."""
    try:
        return build_project_image(kind)
    except KubernetesClusterError as exc:
        pytest.exit(str(exc), returncode=3)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build (or find cached) the Kubernetes tools before any test starts its timeout clock."""
    if not any(item.get_closest_marker("k8s") for item in session.items):
        return
    capture = session.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        if not os.environ.get("JOBCLUSTER_K8S_CLUSTER_DIR"):
            build_tools()
        session.config.stash[_IMAGE] = build_image()
        session.config.stash[_OPERATOR_IMAGE] = build_image("operator")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if report.failed and item.get_closest_marker("k8s"):
        item.config.stash[_FAILED] = True


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if config.stash.get(_FAILED, False) and _WORK_DIR in config.stash:
        work = config.stash[_WORK_DIR]
        terminalreporter.write_sep("-", "Kubernetes test cluster kept for debugging")
        terminalreporter.write_line(f"daemon logs: {work / 'logs'}")
        terminalreporter.write_line(f"pods' logs:  {work / 'node' / 'pod-logs'}/<namespace>_<pod>_<uid>/<container>")


def project_images(request: pytest.FixtureRequest) -> list[tuple[str, Path]]:
    """The job image and the operator image of the working tree (built before the first test, else now)."""
    stash = request.config.stash
    return [stash.get(_IMAGE, None) or build_image(), stash.get(_OPERATOR_IMAGE, None) or build_image("operator")]


@pytest.fixture(scope="session")
def k8s_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> KubernetesCluster:
    """A running cluster: etcd, API server, controller manager, scheduler and one node with the project's image.

    With JOBCLUSTER_K8S_CLUSTER_DIR set: the cluster ``python -m tests.infra.k8s.cluster --work-dir DIR``
    runs there (to run tests again and again against one cluster while working on them).
    """
    attached = os.environ.get("JOBCLUSTER_K8S_CLUSTER_DIR")
    if attached:
        cluster = KubernetesCluster.attach(Path(attached))
        cluster.images = project_images(request)  # the working tree's, as it is now
        cluster.load_images(cluster.images)
        cluster.tag_image(cluster.images[0][0], DEFAULT_IMAGE)
        cluster.tag_image(cluster.images[1][0], DEFAULT_OPERATOR_IMAGE)
        yield cluster
        return
    work_dir = Path(tempfile.mkdtemp(prefix="jobcluster-k8s-"))
    request.config.stash[_WORK_DIR] = work_dir
    images = project_images(request)
    cluster = KubernetesCluster(work_dir=work_dir, images=images)
    try:
        cluster.start()  # stops what it started if it fails; the work dir stays
        cluster.tag_image(images[0][0], DEFAULT_IMAGE)
        cluster.tag_image(images[1][0], DEFAULT_OPERATOR_IMAGE)
    except BaseException:
        request.config.stash[_FAILED] = True
        raise
    try:
        yield cluster
    finally:
        cluster.stop(remove_work_dir=not request.config.stash.get(_FAILED, False))


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest, k8s_cluster: KubernetesCluster) -> Iterator[KafkaCluster]:
    """The Kafka test broker (tests/conftest.py's), with a second listener on the node's address for pods.

    Pods reach this machine through their bridge's gateway at NODE_IP (on ``lo``
    while the node runs, hence ``k8s_cluster`` first), never its 127.0.0.1; a
    program in a pod uses ``pod_bootstrap_servers``, the host's clients ``bootstrap_servers``.
    """
    yield from kafka_session(request, pod_address=NODE_IP)


@pytest.fixture(scope="session")
def s3_server(k8s_cluster: KubernetesCluster) -> Iterator[S3Server]:
    """The S3 test server (tests/conftest.py's) on the node's address, which pods and this machine both reach."""
    with S3Server(host=NODE_IP) as server:
        yield server


@pytest.fixture(scope="session")
def k8s_image(request: pytest.FixtureRequest, k8s_cluster: KubernetesCluster) -> str:
    """The ref of the project's image, built from the working tree and present on the node (never pulled)."""
    return k8s_cluster.images[0][0]


@pytest.fixture(scope="session")
def k8s_operator_image(k8s_cluster: KubernetesCluster) -> str:
    """The ref of the operator's own image (entrypoints/Dockerfile's target operator), on the node."""
    return k8s_cluster.images[1][0]


@pytest.fixture(scope="session")
def k8s_api(k8s_cluster: KubernetesCluster):
    """kubernetes.client.ApiClient with admin credentials."""
    api = k8s_cluster.api_client()
    yield api
    api.close()


@pytest.fixture
def k8s_namespace(k8s_api) -> str:
    """A fresh namespace per test, deleted afterwards (its pods with it)."""
    import kubernetes

    core = kubernetes.client.CoreV1Api(k8s_api)
    name = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}}, _request_timeout=(5, 30))
    yield name
    try:
        core.delete_namespace(name, _request_timeout=(5, 30))
    except kubernetes.client.ApiException:
        pass
