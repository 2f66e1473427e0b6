"""The KubernetesResourceManagerDriver against the real test cluster: TaskManager pods created, watched, reported, removed.

A stand-in JobManager Deployment (the real builders, a sleeping command) owns
the pods; the stand-in TaskExecutor is a short Python script that waits
until the test tells it to exit with code 7.  The pods run the project's
image; the stand-ins come from a directory of this machine that a pod
template mounts.  The ResourceManager's side of the SPI is a recorder, so
what the driver reports is seen as it reports it.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import time
from decimal import Decimal
from pathlib import Path

import kubernetes
import pytest
from kubernetes.utils import parse_quantity

from jobcluster.backends.kubernetes.cluster_config import cluster_side_configuration
from jobcluster.backends.kubernetes.cluster_objects import create_job_manager_objects
from jobcluster.backends.kubernetes.config_options import KUBERNETES_JOB_MANAGER_OWNER_REFERENCE
from jobcluster.backends.kubernetes.driver import KubernetesResourceManagerDriver
from jobcluster.backends.kubernetes.job_result import read_job_result
from jobcluster.backends.kubernetes.parameters import job_manager_parameters, task_manager_parameters
from jobcluster.config.configuration import Configuration
from jobcluster.errors import ResourceManagerError
from jobcluster.jobgraph.job_status import ApplicationStatus
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from tests.integration.k8s.pods import image_options
from tests.integration.k8s.test_kubernetes_cluster_objects import (
    FILES,
    JOB_ID,
    SLEEPING,
    STAND_IN_HEADER,
    TEMPLATE_OPTION,
    objects_of,
    stand_in_template,
    template_of,
    write_entrypoints,
)
from tests.integration.k8s.waiting import wait_for
from tests.support.fakes import RecordingEventHandler, launch_context

pytestmark = pytest.mark.k8s

TIMEOUT = (5, 30)
CLUSTER_ID = "wordcount"
ROOT = Path(__file__).resolve().parents[3]
EXIT_CODE = 7


@pytest.fixture
def entrypoint_dir(tmp_path: Path) -> Path:
    """A sleeping JobManager; a TaskManager that exits with 7 once the file exit-<its pod name> appears (in this
    directory, which the pods mount)."""
    directory = tmp_path / "bin"
    taskmanager = STAND_IN_HEADER + (
        "import time\n"
        f"flag = {str(directory)!r} + '/exit-' + os.environ['JOBCLUSTER_POD_NAME']\n"
        "while not os.path.exists(flag):\n    time.sleep(0.2)\n"
        f"sys.exit({EXIT_CODE})\n"
    )
    return write_entrypoints(directory, {"jobmanager": SLEEPING, "taskmanager": taskmanager})


@pytest.fixture
def pod_template(tmp_path: Path, entrypoint_dir: Path) -> Path:
    """The pod template (JobManager and TaskManagers) that mounts the stand-in entry points."""
    return stand_in_template(tmp_path / "pod-template.yaml", entrypoint_dir)


def cluster_config(namespace: str, entrypoint_dir: Path, image: str, pod_template: Path) -> Configuration:
    """The configuration as the descriptor stages it (TaskManager CPU pinned from kubernetes.taskmanager.cpu.amount)."""
    config = Configuration(
        {
            "jobmanager.memory.process.size": "1g",
            "taskmanager.memory.process.size": "1g",
            "taskmanager.numberOfTaskSlots": "2",
            "kubernetes.cluster-id": CLUSTER_ID,
            "kubernetes.namespace": namespace,
            "kubernetes.jobmanager.cpu.amount": "0.1",
            # small requests: the test node has 2 cores, shared with other tests
            "kubernetes.taskmanager.cpu.amount": "0.1",
            "kubernetes.taskmanager.cpu.limit-factor": "2",
            "kubernetes.taskmanager.memory.limit-factor": "1.5",
            "jobcluster.kubernetes.entrypoint.dir": str(entrypoint_dir),
            TEMPLATE_OPTION: str(pod_template),
            **image_options(image),
        }
    )
    return cluster_side_configuration(config, job_manager_parameters(config, JOB_ID), task_manager_parameters(config, JOB_ID))


def read_pod(core: kubernetes.client.CoreV1Api, namespace: str, name: str) -> dict | None:
    try:
        response = core.read_namespaced_pod(name, namespace, _preload_content=False, _request_timeout=TIMEOUT)
    except kubernetes.client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return json.loads(response.data)


async def until(predicate, seconds: float = 90, what: str = "condition", describe=None):
    """``predicate()`` (run off the loop, so the driver keeps running) until truthy; ``describe()`` goes into the failure."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = await asyncio.to_thread(predicate)
        if value:
            return value
        await asyncio.sleep(0.25)
    detail = await asyncio.to_thread(describe) if describe else ""
    raise AssertionError(f"timed out after {seconds}s waiting for {what} {detail}")


def service_account_client(k8s_cluster, k8s_api, namespace: str) -> kubernetes.client.ApiClient:
    """A client with only what manifests/rbac.yaml grants (the JobManager pod's service account ``jobcluster``)."""
    k8s_cluster.kubectl("apply", "-n", namespace, "-f", str(ROOT / "manifests" / "rbac.yaml"))
    token = k8s_cluster.kubectl("create", "token", "jobcluster", "-n", namespace).stdout.strip()
    admin = k8s_api.configuration
    config = kubernetes.client.Configuration(host=admin.host, api_key={"authorization": f"Bearer {token}"})
    config.ssl_ca_cert, config.proxy = admin.ssl_ca_cert, None
    return kubernetes.client.ApiClient(config)


def quantities(resources: dict) -> dict:
    return {kind: {name: parse_quantity(value) for name, value in amounts.items()} for kind, amounts in resources.items()}


def stop_watches(*drivers: KubernetesResourceManagerDriver) -> None:
    """Whatever happened in the test, no watch thread outlives it."""
    for driver in drivers:
        if driver.watch is not None:
            driver.watch.stop()


def running(core, namespace: str, name: str) -> bool:
    pod = read_pod(core, namespace, name)
    return pod is not None and (pod.get("status") or {}).get("phase") == "Running"


def test_two_workers_one_exits_one_is_deleted_then_the_cluster_is_gone(
    k8s_cluster, k8s_api, k8s_namespace, k8s_image, entrypoint_dir, pod_template, tmp_path
):
    config = cluster_config(k8s_namespace, entrypoint_dir, k8s_image, pod_template)
    template = template_of(pod_template)
    deployment = create_job_manager_objects(k8s_api, job_manager_parameters(config, JOB_ID), FILES, "s3cr3t", template)
    spec = task_executor_process_spec_from_config(config)
    core = kubernetes.client.CoreV1Api(k8s_api)
    # the driver runs with the JobManager's least privilege
    account = service_account_client(k8s_cluster, k8s_api, k8s_namespace)
    driver = KubernetesResourceManagerDriver(
        account, task_manager_parameters(config, JOB_ID), "127.0.0.1", template=template, watch_timeout_seconds=3
    )
    recorder = RecordingEventHandler()

    async def scenario() -> None:
        await driver.initialize(recorder, launch_context(tmp_path, CLUSTER_ID))
        assert driver.attempt == 1
        assert recorder.recovered == []
        first, second = [await driver.request_resource(spec) for _ in range(2)]
        assert (first, second) == ("wordcount-taskmanager-1-1", "wordcount-taskmanager-1-2")
        for name in (first, second):
            await until(
                lambda name=name: running(core, k8s_namespace, name),
                what=f"{name} Running",
                describe=lambda name=name: read_pod(core, k8s_namespace, name),
            )

        # what the API server stores: the memory model's sizes, the limit factors, the owner, the selector labels
        stored = await asyncio.to_thread(read_pod, core, k8s_namespace, first)
        assert stored is not None
        container = stored["spec"]["containers"][0]
        mib = spec.total_process >> 20
        # the API server writes quantities in its canonical form (1024Mi as 1Gi): compared as numbers
        assert quantities(container["resources"]) == {
            "requests": {"cpu": Decimal("0.1"), "memory": mib << 20},
            "limits": {"cpu": Decimal("0.2"), "memory": int(mib * 1.5) << 20},
        }
        assert stored["spec"]["restartPolicy"] == "Never"
        (owner,) = stored["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Deployment",
            CLUSTER_ID,
            deployment["metadata"]["uid"],
            True,
        )
        assert stored["metadata"]["labels"] == {"type": "jobcluster-native-kubernetes", "app": CLUSTER_ID, "component": "taskmanager"}

        # the first worker's TaskExecutor exits with 7: reported once with its exit code, and its pod deleted
        (entrypoint_dir / f"exit-{first}").touch()
        await until(lambda: recorder.terminated, what="a terminated worker")
        assert recorder.terminated[0][0] == first
        assert f"exitCode={EXIT_CODE}" in recorder.terminated[0][1].diagnostics
        assert recorder.terminated[0][1].summary == f"Error, exit code {EXIT_CODE}: exited with an error of its own (see its log)"
        await until(lambda: read_pod(core, k8s_namespace, first) is None, what=f"{first} deleted by the driver")

        # the second worker's pod is deleted by someone else: reported once too
        await asyncio.to_thread(core.delete_namespaced_pod, second, k8s_namespace, _request_timeout=TIMEOUT)
        await until(lambda: len(recorder.terminated) == 2, what="the deleted worker reported")
        assert recorder.terminated[1][0] == second
        # the kubelet's SIGTERM (passed on by tini), seen before the DELETED event
        assert "exitCode=143" in recorder.terminated[1][1].diagnostics
        sigterm = "exit code 143: stopped by SIGTERM (asked to stop: by its platform, an operator or a shutdown)"
        assert recorder.terminated[1][1].summary.endswith(sigterm), recorder.terminated[1][1]

        # more watch rounds (each lasts 3 s) report nothing again
        await asyncio.sleep(7)
        assert [name for name, _ in recorder.terminated] == [first, second]
        assert driver.watch is not None and driver.watch.watches >= 3
        assert recorder.errors == []

        # a released worker is not reported at all
        third = await driver.request_resource(spec)
        assert third == "wordcount-taskmanager-1-3"
        await until(lambda: running(core, k8s_namespace, third), what=f"{third} Running")
        await driver.release_resource(third)
        await until(lambda: read_pod(core, k8s_namespace, third) is None, what=f"{third} deleted")
        await driver.release_resource(third)  # idempotent
        await asyncio.sleep(1)
        assert len(recorder.terminated) == 2

        await driver.release_all_workers()
        await driver.deregister_application(ApplicationStatus.SUCCEEDED, None)

    try:
        asyncio.run(scenario())
    finally:
        stop_watches(driver)
        account.close()
    deadline = time.monotonic() + 120
    while objects_of(k8s_api, k8s_namespace) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert objects_of(k8s_api, k8s_namespace) == []
    assert core.list_namespaced_pod(k8s_namespace, _request_timeout=TIMEOUT).items == []


def test_a_new_attempt_recovers_live_pods_and_deletes_ended_ones(k8s_api, k8s_namespace, k8s_image, entrypoint_dir, pod_template, tmp_path):
    config = cluster_config(k8s_namespace, entrypoint_dir, k8s_image, pod_template)
    template = template_of(pod_template)
    create_job_manager_objects(k8s_api, job_manager_parameters(config, JOB_ID), FILES, "s3cr3t", template)
    spec = task_executor_process_spec_from_config(config)
    core = kubernetes.client.CoreV1Api(k8s_api)
    params = task_manager_parameters(config, JOB_ID)
    earlier = KubernetesResourceManagerDriver(k8s_api, params, "127.0.0.1", template=template, watch_timeout_seconds=3)
    later = KubernetesResourceManagerDriver(k8s_api, params, "127.0.0.1", template=template, watch_timeout_seconds=3)
    third = KubernetesResourceManagerDriver(k8s_api, params, "127.0.0.1", template=template, watch_timeout_seconds=3)

    async def scenario() -> None:
        await earlier.initialize(RecordingEventHandler(), launch_context(tmp_path, CLUSTER_ID))
        kept, ended = [await earlier.request_resource(spec) for _ in range(2)]
        for name in (kept, ended):
            await until(
                lambda name=name: running(core, k8s_namespace, name),
                what=f"{name} Running",
                describe=lambda name=name: read_pod(core, k8s_namespace, name),
            )
        # the JobManager of the first attempt dies: its watch ends, its pods stay; one of them then exits
        assert earlier.watch is not None
        await asyncio.to_thread(earlier.watch.stop)
        (entrypoint_dir / f"exit-{ended}").touch()
        await until(
            lambda: ((read_pod(core, k8s_namespace, ended) or {}).get("status") or {}).get("phase") == "Failed",
            what=f"{ended} Failed",
        )

        recorder = RecordingEventHandler()
        await later.initialize(recorder, launch_context(tmp_path, CLUSTER_ID))
        assert later.attempt == 2
        assert recorder.recovered == [[kept]]
        await until(lambda: read_pod(core, k8s_namespace, ended) is None, what=f"{ended} deleted")
        assert await later.request_resource(spec) == "wordcount-taskmanager-2-1"

        # a recovered worker that ends is reported like any other
        (entrypoint_dir / f"exit-{kept}").touch()
        await until(lambda: recorder.terminated, what="the recovered worker reported")
        assert recorder.terminated[0][0] == kept and f"exitCode={EXIT_CODE}" in recorder.terminated[0][1].diagnostics

        await later.release_all_workers()
        await until(
            lambda: not core.list_namespaced_pod(k8s_namespace, label_selector="component=taskmanager", _request_timeout=TIMEOUT).items,
            what="no pods",
        )
        # a third attempt finds no pod to count from: the attempt recorded on the Deployment still counts on
        await third.initialize(RecordingEventHandler(), launch_context(tmp_path, CLUSTER_ID))
        assert third.attempt == 3
        await third.release_all_workers()
        # one start more than jobcluster.kubernetes.jobmanager.attempts (3) allows within its interval: the job fails
        # and the cluster is removed, as YARN ends an application out of attempts
        fourth = KubernetesResourceManagerDriver(k8s_api, params, "127.0.0.1", template=template, watch_timeout_seconds=3)
        refused = r"the JobManager started 4 times within \d+ s, more than jobcluster\.kubernetes\.jobmanager\.attempts=3"
        with pytest.raises(ResourceManagerError, match=refused):
            await fourth.initialize(RecordingEventHandler(), launch_context(tmp_path, CLUSTER_ID))

    try:
        asyncio.run(scenario())
    finally:
        stop_watches(earlier, later, third)
    deadline = time.monotonic() + 120
    while objects_of(k8s_api, k8s_namespace) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert objects_of(k8s_api, k8s_namespace) == []


def test_an_owned_cluster_leaves_its_job_result_for_its_owner(
    k8s_cluster, k8s_api, k8s_namespace, k8s_image, entrypoint_dir, pod_template, tmp_path
):
    """With an owner (as the FlinkJob operator sets one), deregistering leaves the job's result in a ConfigMap owned
    by that owner, written with the JobManager's least privilege: it outlives the cluster and goes with the owner."""
    core = kubernetes.client.CoreV1Api(k8s_api)
    owner = core.create_namespaced_config_map(
        k8s_namespace, {"metadata": {"name": "stand-in-for-a-flinkjob"}}, _request_timeout=TIMEOUT
    ).metadata
    config = cluster_config(k8s_namespace, entrypoint_dir, k8s_image, pod_template)
    config.set(KUBERNETES_JOB_MANAGER_OWNER_REFERENCE, f"apiVersion:v1,kind:ConfigMap,name:{owner.name},uid:{owner.uid}")
    template = template_of(pod_template)
    create_job_manager_objects(k8s_api, job_manager_parameters(config, JOB_ID), FILES, "s3cr3t", template)
    account = service_account_client(k8s_cluster, k8s_api, k8s_namespace)
    driver = KubernetesResourceManagerDriver(
        account, task_manager_parameters(config, JOB_ID), "127.0.0.1", template=template, watch_timeout_seconds=3
    )

    async def scenario() -> None:
        await driver.initialize(RecordingEventHandler(), launch_context(tmp_path, CLUSTER_ID))
        await driver.release_all_workers()
        await driver.deregister_application(ApplicationStatus.FAILED, f"job {JOB_ID} FAILED: ZeroDivisionError")

    try:
        asyncio.run(scenario())
    finally:
        stop_watches(driver)
        account.close()
    record = read_job_result(k8s_api, k8s_namespace, CLUSTER_ID)
    assert record is not None
    assert (record.cluster_id, record.job_id, record.state) == (CLUSTER_ID, JOB_ID, "FAILED")
    assert record.diagnostics.endswith("ZeroDivisionError")
    assert abs(datetime.datetime.fromisoformat(record.end_time) - datetime.datetime.now(datetime.UTC)) < datetime.timedelta(minutes=2)
    stored = core.read_namespaced_config_map(f"{CLUSTER_ID}-job-result", k8s_namespace, _request_timeout=TIMEOUT)
    assert [(ref.kind, ref.name, ref.uid, ref.controller) for ref in stored.metadata.owner_references] == [
        ("ConfigMap", owner.name, owner.uid, None)
    ]
    wait_for(lambda: objects_of(k8s_api, k8s_namespace) == [f"configmap/{CLUSTER_ID}-job-result"], timeout=120, what="only the result left")
    core.delete_namespaced_config_map(owner.name, k8s_namespace, _request_timeout=TIMEOUT)
    wait_for(lambda: read_job_result(k8s_api, k8s_namespace, CLUSTER_ID) is None, timeout=120, what="the result gone with its owner")
