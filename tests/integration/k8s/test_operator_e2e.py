"""The FlinkJob operator end to end on the real test cluster: `kubectl apply` a FlinkJob, `kubectl wait`, the result.

One operator process for the module (``python -m jobcluster.controller``, as the
chart's pod runs it, with the test cluster's kubeconfig), watching one namespace
with the job clusters' RBAC (manifests/rbac.yaml); the CRD is applied from
manifests/crd.  The job clusters run in real containers of the project's image
(the ``k8s_image`` fixture, on the node, never pulled), set in the operator's
default configuration as the chart's ConfigMap sets it; so does a default pod
template that mounts this repository's test programs (``local://`` programs) in
every pod.  A job's input and output are directories of this machine that its
FlinkJob mounts with a pod template of its own.

The operator itself is a process of this machine here (as ``jobcluster operator`` runs for development);
test_chart.py runs it as the chart's pod, and there also with FlinkJobs on YARN.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import re
import signal
import threading
import time
import uuid
from collections import Counter

import kubernetes
import pytest
import requests

from jobcluster.controller.handlers import OBSERVE_INTERVAL
from tests.infra.k8s.node import pod_pids
from tests.integration.k8s.flinkjobs import (
    REPO,
    TIMEOUT,
    WAITS,
    apply,
    cluster_objects,
    condition,
    events_of,
    flinkjob,
    get,
    job_status,
    kubectl_wait,
    operator_namespace,
    pods,
    running_operator,
    strip_finalizers,
)
from tests.integration.k8s.pods import host_path_pod
from tests.integration.k8s.waiting import wait_for

pytestmark = pytest.mark.k8s


@pytest.fixture(scope="module")
def namespace(k8s_cluster, k8s_api):
    with operator_namespace(k8s_cluster, k8s_api) as name:
        yield name


@pytest.fixture(scope="module")
def operator(k8s_cluster, k8s_image, namespace, tmp_path_factory):
    # "nobody": an account the policy allows but the namespace lacks (CANNOT_START)
    accounts = {"jobcluster.operator.service-accounts.allowed": "jobcluster, nobody"}
    with running_operator(k8s_cluster, k8s_image, namespace, tmp_path_factory.mktemp("operator"), **accounts) as process:
        yield process


def test_inline_wordcount_succeeds_with_exact_counts_and_a_true_status(k8s_cluster, k8s_api, namespace, operator, tmp_path):
    corpus, out = tmp_path / "corpus", tmp_path / "out"
    corpus.mkdir()
    out.mkdir()
    for n in range(4):
        (corpus / f"part{n}.txt").write_text(f"the quick brown fox {n}\nThe lazy dog and the fox\n" * (n + 1))
    source = (REPO / "examples" / "wordcount.py").read_text()
    # Spark replaces the output directory: a directory below the mount point, not the mount point itself
    job = {"source": source, "args": ["--input", str(corpus), "--output", str(out / "counts")], "parallelism": 2}
    mounts = host_path_pod([corpus, out], writable=[out])
    # the Flink Kubernetes Operator's spec.ingress; the test cluster has no ingress controller: the object is what is checked
    ingress = {
        "template": "/{{namespace}}/{{name}}(/|$)(.*)",
        "className": "nginx",
        "annotations": {"nginx.ingress.kubernetes.io/rewrite-target": "/$2"},
    }
    configuration = {"taskmanager.numberOfTaskSlots": "2"}
    apply(k8s_cluster, flinkjob("wordcount", namespace, job, flinkConfiguration=configuration, ingress=ingress, **pods(mounts)))
    # while the cluster runs: the Ingress to its REST Service, owned by the JobManager Deployment
    networking = kubernetes.client.NetworkingV1Api(k8s_api)
    named = {"field_selector": "metadata.name=wordcount", "_request_timeout": TIMEOUT}
    found = wait_for(
        lambda: next(iter(networking.list_namespaced_ingress(namespace, **named).items), None),
        timeout=120,
        interval=0.5,
        what="Ingress wordcount",
    )
    assert found.spec.ingress_class_name == "nginx" and found.metadata.annotations == ingress["annotations"]
    assert found.metadata.labels["app"] == "wordcount"
    (rule,) = found.spec.rules
    (path,) = rule.http.paths
    assert rule.host is None and (path.path, path.path_type) == (f"/{namespace}/wordcount(/|$)(.*)", "ImplementationSpecific")
    assert (path.backend.service.name, path.backend.service.port.number) == ("wordcount-rest", 8081)
    (owner,) = found.metadata.owner_references
    deployment = kubernetes.client.AppsV1Api(k8s_api).read_namespaced_deployment("wordcount", namespace, _request_timeout=TIMEOUT)
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Deployment", "wordcount", deployment.metadata.uid, True)
    kubectl_wait(k8s_cluster, namespace, "wordcount", "Succeeded")

    counts = Counter()
    for part in (out / "counts").glob("part-*"):
        for line in part.read_text().splitlines():
            word, count = line.rsplit("\t", 1)
            counts[word] = int(count)
    expected = Counter()
    for path in corpus.iterdir():
        expected.update(re.findall(r"[a-z0-9_]+", path.read_text().lower()))
    assert counts == expected

    document = get(k8s_api, namespace, "wordcount")
    status = document["status"]
    assert status["lifecycleState"] == "FINISHED"
    assert status["jobStatus"]["state"] == "FINISHED" and re.fullmatch(r"[0-9a-f]{32}", status["jobStatus"]["jobId"])
    assert status["jobStatus"]["startTime"] <= status["jobStatus"]["endTime"] and status["jobStatus"]["duration"].endswith("s")
    assert status["taskManagers"] == {"count": 1, "slotsPerTaskManager": 2, "processMemory": "2560Mi"}
    assert status["observedGeneration"] == document["metadata"]["generation"]
    assert condition(document, "Succeeded")["status"] == "True" and condition(document, "Failed")["status"] == "False"
    assert condition(document, "Ready")["status"] == "True" and condition(document, "Running")["status"] == "False"
    columns = k8s_cluster.kubectl("get", "flinkjobs", "-n", namespace, "wordcount").stdout.splitlines()
    assert columns[0].split() == ["NAME", "JOB", "STATUS", "LIFECYCLE", "PARALLELISM", "TARGET", "LAST", "SAVEPOINT", "AGE"]
    assert columns[1].split()[:5] == ["wordcount", "FINISHED", "FINISHED", "2", "kubernetes-application"]
    events = events_of(k8s_api, namespace, "wordcount")
    assert any(e.startswith("Normal Deployed: job cluster wordcount serves REST") for e in events), events
    assert any(e.startswith("Normal JobFinished") for e in events), events
    metrics = requests.get(f"http://127.0.0.1:{operator.port}/metrics", timeout=5).text
    assert re.search(r'^jobcluster_operator_reconciles_total\{outcome="ok"\} [1-9]', metrics, re.M), metrics
    assert re.search(r"^jobcluster_operator_deploy_duration_seconds_count [1-9]", metrics, re.M), metrics
    assert re.search(r'^jobcluster_operator_flinkjobs\{lifecycle_state="FINISHED"\} [1-9]', metrics, re.M), metrics

    # the cluster is gone, its Ingress with it; what is left is its result, owned by the FlinkJob: deleting the FlinkJob removes it
    wait_for(
        lambda: cluster_objects(k8s_api, namespace, "wordcount") == ["configmap/wordcount-job-result"], timeout=120, what="only the result"
    )
    k8s_cluster.kubectl("delete", "flinkjob", "-n", namespace, "wordcount", timeout=60)
    wait_for(lambda: cluster_objects(k8s_api, namespace, "wordcount") == [], timeout=60, what="nothing of wordcount")


def test_invalid_spec_fails_clearly_deploys_nothing_and_deploys_once_fixed(k8s_cluster, k8s_api, namespace, operator):
    job = {"program": f"local://{WAITS}", "args": ["1"]}
    too_small = {"taskmanager.memory.process.size": "300m", "taskmanager.numberOfTaskSlots": "1"}
    apply(k8s_cluster, flinkjob("tiny", namespace, job, flinkConfiguration=too_small))
    kubectl_wait(k8s_cluster, namespace, "tiny", "Failed", timeout=60)
    document = get(k8s_api, namespace, "tiny")
    failed = condition(document, "Failed")
    assert failed["reason"] == "InvalidSpec" and "exceed configured Total Process Memory" in failed["message"], failed
    assert document["status"]["lifecycleState"] == "FAILED"
    assert any(e.startswith("Warning InvalidSpec: TaskManager memory configuration failed") for e in events_of(k8s_api, namespace, "tiny"))
    assert cluster_objects(k8s_api, namespace, "tiny") == []

    # the API server refuses what the schema forbids, before the operator sees it
    refused = apply(k8s_cluster, flinkjob("zero", namespace, {**job, "parallelism": 0}), check=False)
    assert refused.returncode != 0 and "spec.job.parallelism" in refused.stderr

    # a pod template that asks for the node (its PID namespace, its root as a volume): refused, nothing created
    escape = {"spec": {"hostPID": True, "volumes": [{"name": "node", "hostPath": {"path": "/"}}]}}
    apply(k8s_cluster, flinkjob("escape", namespace, job, jobManager={"podTemplate": escape}))
    kubectl_wait(k8s_cluster, namespace, "escape", "Failed", timeout=60)
    failed = condition(get(k8s_api, namespace, "escape"), "Failed")
    assert failed["reason"] == "PodTemplateNotAllowed" and "spec.jobManager.podTemplate.spec.hostPID" in failed["message"], failed
    assert cluster_objects(k8s_api, namespace, "escape") == []
    k8s_cluster.kubectl("delete", "flinkjob", "-n", namespace, "escape", timeout=60)

    # a FlinkJob named as another workload's Deployment: refused, and deleting it leaves that Deployment alone
    apps = kubernetes.client.AppsV1Api(k8s_api)
    labels = {"app.kubernetes.io/name": "frontend"}
    pod = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "web", "image": "localhost/web:1"}]}}
    apps.create_namespaced_deployment(
        namespace,
        {"metadata": {"name": "frontend"}, "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": pod}},
        _request_timeout=TIMEOUT,
    )
    apply(k8s_cluster, flinkjob("frontend", namespace, job))
    kubectl_wait(k8s_cluster, namespace, "frontend", "Failed", timeout=60)
    failed = condition(get(k8s_api, namespace, "frontend"), "Failed")
    assert failed["reason"] == "ClusterExists" and "is another workload's, not a job cluster's" in failed["message"], failed
    k8s_cluster.kubectl("delete", "flinkjob", "-n", namespace, "frontend", timeout=60)
    assert apps.read_namespaced_deployment("frontend", namespace, _request_timeout=TIMEOUT).metadata.deletion_timestamp is None
    apps.delete_namespaced_deployment("frontend", namespace, _request_timeout=TIMEOUT)

    # pods that would run as the namespace's default ServiceAccount (which other workloads run as): refused
    apply(k8s_cluster, flinkjob("borrowed", namespace, job, serviceAccount="default"))
    kubectl_wait(k8s_cluster, namespace, "borrowed", "Failed", timeout=60)
    failed = condition(get(k8s_api, namespace, "borrowed"), "Failed")
    assert failed["reason"] == "ServiceAccountNotAllowed" and "ServiceAccount 'default'" in failed["message"], failed
    assert cluster_objects(k8s_api, namespace, "borrowed") == []
    k8s_cluster.kubectl("delete", "flinkjob", "-n", namespace, "borrowed", timeout=60)

    k8s_cluster.kubectl(
        "patch",
        "flinkjob",
        "-n",
        namespace,
        "tiny",
        "--type",
        "merge",
        "-p",
        json.dumps({"spec": {"flinkConfiguration": {"taskmanager.memory.process.size": "2560m"}}}),
    )
    kubectl_wait(k8s_cluster, namespace, "tiny", "Succeeded")
    assert condition(get(k8s_api, namespace, "tiny"), "Failed")["status"] == "False"
    k8s_cluster.kubectl("delete", "flinkjob", "-n", namespace, "tiny", timeout=60)


#: FlinkJobs that cannot start, and the words of Kubernetes their Failed condition must carry.
CANNOT_START = {
    "badimage": ({"image": "localhost/nope:1", "imagePullPolicy": "IfNotPresent"}, r"(ErrImagePull|ImagePullBackOff).*localhost/nope:1"),
    "toolarge": ({"jobManager": {"resource": {"memory": "64g"}}}, r"to be scheduled: .*Insufficient memory"),  # the node has ~23 GiB
    "noaccount": ({"serviceAccount": "nobody"}, r'FailedCreate: .*serviceaccount "nobody" not found'),
}


def test_a_program_url_not_allowed_fails_clearly_and_is_never_requested(k8s_cluster, k8s_api, namespace, operator):
    # this operator allows no URL prefix (the default): the server, reachable from it, must see no request
    requested: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requested.append(self.path)
            self.send_error(500)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/jobs/etl.py"
    try:
        apply(k8s_cluster, flinkjob("fetched", namespace, {"program": url}))
        kubectl_wait(k8s_cluster, namespace, "fetched", "Failed", timeout=60)
        failed = condition(get(k8s_api, namespace, "fetched"), "Failed")
        assert failed["reason"] == "ProgramUrlNotAllowed", failed
        assert failed["message"].startswith(f"the URL {url} is not under a URL prefix the operator may fetch programs from")
        assert "--allow-program-url PREFIX (Helm chart value allowedProgramUrls)" in failed["message"]
        assert requested == [] and cluster_objects(k8s_api, namespace, "fetched") == []
    finally:
        server.shutdown()
        server.server_close()
        k8s_cluster.kubectl("delete", "flinkjob", "-n", namespace, "fetched", "--ignore-not-found", timeout=60)


def test_flinkjobs_that_cannot_start_fail_with_kubernetes_reason_and_leave_nothing(k8s_cluster, k8s_api, namespace, operator):
    """An image that cannot be pulled, a JobManager too large for the node, a ServiceAccount that does not exist:
    applied together, each FlinkJob is Failed within its startupDeadlineSeconds, its condition naming Kubernetes'
    reason, and nothing of its cluster stays."""
    job = {"program": f"local://{WAITS}", "args": ["1"]}
    deadline = 30
    for name, (spec, _) in CANNOT_START.items():
        apply(k8s_cluster, flinkjob(name, namespace, job, startupDeadlineSeconds=deadline, **spec))
    for name, (_, reason) in CANNOT_START.items():
        kubectl_wait(k8s_cluster, namespace, name, "Failed", timeout=deadline + 60)
        document = get(k8s_api, namespace, name)
        failed = condition(document, "Failed")
        assert failed["reason"] == "DeploymentFailed" and re.search(reason, failed["message"]), failed
        assert document["status"]["lifecycleState"] == "FAILED"
        # kopf posts events from a queue of its own: the event may follow the status by a moment
        wait_for(
            lambda name=name: any(e.startswith("Warning DeploymentFailed") for e in events_of(k8s_api, namespace, name)),
            timeout=30,
            what=f"the DeploymentFailed event of {name}",
        )
        wait_for(lambda name=name: cluster_objects(k8s_api, namespace, name) == [], timeout=60, what=f"nothing of {name}")
        k8s_cluster.kubectl("delete", "flinkjob", "-n", namespace, name, timeout=60)


def test_a_deployment_waiting_for_its_jobmanager_holds_up_neither_a_deletion_nor_a_corrective_edit(
    k8s_cluster, k8s_api, namespace, operator
):
    """Two FlinkJobs whose JobManager is too large for the node: each deployment waits for a JobManager that never
    answers, up to the 600 s startupDeadlineSeconds. One is deleted: it and its cluster are gone within seconds.
    The other is corrected: its waiting cluster is removed and the corrected spec's job runs, long before that
    deadline (kopf handles one FlinkJob's events in order, so neither could act while a handler held the deployment)."""
    job = {"program": f"local://{WAITS}", "args": ["600"]}
    slots = {"taskmanager.numberOfTaskSlots": "1"}
    for name in ("dropped", "fixed"):
        too_large = flinkjob(name, namespace, job, startupDeadlineSeconds=600, flinkConfiguration=slots)
        too_large["spec"]["jobManager"] = {"resource": {"memory": "64g"}}
        apply(k8s_cluster, too_large)
    core = kubernetes.client.CoreV1Api(k8s_api)

    def unscheduled(name: str) -> bool:
        pods = core.list_namespaced_pod(namespace, label_selector=f"app={name},component=jobmanager", _request_timeout=TIMEOUT).items
        return bool(pods) and all(p.status.phase == "Pending" for p in pods)

    for name in ("dropped", "fixed"):
        wait_for(lambda name=name: unscheduled(name), timeout=60, what=f"the unschedulable JobManager pod of {name}")
    time.sleep(2 * OBSERVE_INTERVAL)  # the deployments wait for their JobManagers, and the timers look meanwhile
    assert get(k8s_api, namespace, "fixed")["status"]["lifecycleState"] == "CREATED"
    started = time.monotonic()
    k8s_cluster.kubectl("delete", "flinkjob", "-n", namespace, "dropped", "--wait=false")
    fix = {"spec": {"jobManager": None}}
    k8s_cluster.kubectl("patch", "flinkjob", "-n", namespace, "fixed", "--type", "merge", "-p", json.dumps(fix))
    gone = k8s_cluster.kubectl("wait", "-n", namespace, "--for=delete", "flinkjob/dropped", "--timeout=30s", timeout=40, check=False)
    assert gone.returncode == 0, f"the deleted FlinkJob was not gone within 30 s: {gone.stderr}"
    wait_for(lambda: cluster_objects(k8s_api, namespace, "dropped") == [], timeout=30, what="nothing of the deleted FlinkJob")
    print(f"FlinkJob deleted while its deployment waited: gone after {time.monotonic() - started:.1f} s")
    kubectl_wait(k8s_cluster, namespace, "fixed", "Running", timeout=180)
    print(f"FlinkJob corrected while its deployment waited: RUNNING after {time.monotonic() - started:.1f} s")
    status = get(k8s_api, namespace, "fixed")["status"]
    assert status["lifecycleState"] == "STABLE" and not status.get("failureReason"), status
    assert any(e.startswith("Normal DeploymentSuperseded") for e in events_of(k8s_api, namespace, "fixed"))
    k8s_cluster.kubectl("delete", "flinkjob", "-n", namespace, "fixed", timeout=60)


def test_suspend_resume_upgrade_faults_and_delete(k8s_cluster, k8s_api, k8s_image, namespace, operator):
    """One long job: suspended (its cluster goes) and resumed; a new restartNonce redeploys (new JobID);
    its JobManager pod deleted (the job runs again) while the operator is killed and restarted (it adopts
    the cluster and keeps the status true); deleted mid-run while the operator waits for its JobManager,
    everything of it goes within 30 s, the FlinkJob too."""
    name = "waits"
    apply(
        k8s_cluster,
        flinkjob(
            name, namespace, {"program": f"local://{WAITS}", "args": ["600"]}, flinkConfiguration={"taskmanager.numberOfTaskSlots": "1"}
        ),
    )
    kubectl_wait(k8s_cluster, namespace, name, "Running")
    first = get(k8s_api, namespace, name)["status"]["jobStatus"]["jobId"]

    def patch(spec: dict) -> None:
        k8s_cluster.kubectl("patch", "flinkjob", "-n", namespace, name, "--type", "merge", "-p", json.dumps({"spec": spec}))

    patch({"job": {"state": "suspended"}})
    wait_for(lambda: get(k8s_api, namespace, name)["status"]["lifecycleState"] == "SUSPENDED", timeout=60, what="SUSPENDED")
    wait_for(
        lambda: [o for o in cluster_objects(k8s_api, namespace, name) if not o.endswith("-job-result")] == [], timeout=60, what="no cluster"
    )
    patch({"job": {"state": "running"}})
    kubectl_wait(k8s_cluster, namespace, name, "Running")
    resumed = job_status(k8s_api, namespace, name)["jobId"]
    assert resumed != first
    patch({"restartNonce": 2})
    wait_for(
        lambda: get(k8s_api, namespace, name)["status"].get("lifecycleState") == "UPGRADING", timeout=60, interval=0.2, what="UPGRADING"
    )
    assert condition(get(k8s_api, namespace, name), "Running")["status"] == "False"  # no job runs while it upgrades
    kubectl_wait(k8s_cluster, namespace, name, "Running")
    upgraded = job_status(k8s_api, namespace, name)["jobId"]
    assert upgraded not in (first, resumed)
    events = events_of(k8s_api, namespace, name)
    assert any(e.startswith("Normal Suspended") for e in events) and any(e.startswith("Normal Upgrading") for e in events), events

    # faults: the operator killed, then the JobManager pod deleted while it is away
    operator.kill()
    core = kubernetes.client.CoreV1Api(k8s_api)
    (jm,) = core.list_namespaced_pod(namespace, label_selector=f"app={name},component=jobmanager", _request_timeout=TIMEOUT).items
    assert jm.spec.containers[0].image == k8s_image  # a real container of the project's image
    core.delete_namespaced_pod(jm.metadata.name, namespace, _request_timeout=TIMEOUT)
    operator.start()

    def new_job_manager_ip() -> str | None:
        pods = core.list_namespaced_pod(namespace, label_selector=f"app={name},component=jobmanager", _request_timeout=TIMEOUT).items
        fresh = [p for p in pods if p.metadata.name != jm.metadata.name and p.status.phase == "Running" and p.status.pod_ip]
        return fresh[0].status.pod_ip if fresh else None

    ip = wait_for(new_job_manager_ip, timeout=120, what="the new JobManager pod")

    def running_there() -> bool:
        status = get(k8s_api, namespace, name).get("status", {})
        return job_status(k8s_api, namespace, name).get("state") == "RUNNING" and f"//{ip}:" in status.get("restUrl", "")

    wait_for(running_there, timeout=180, interval=1, what="the job RUNNING again on the new JobManager pod, in the status")
    status = get(k8s_api, namespace, name)["status"]
    assert status["jobStatus"]["jobId"] == upgraded and status["lifecycleState"] == "STABLE"

    # deleted while the operator looks at it: its JobManager stopped (SIGSTOP) answers no REST call, so the
    # operator's timer is in the middle of a look (seconds of timeouts) when the deletion comes
    (jm,) = core.list_namespaced_pod(namespace, label_selector=f"app={name},component=jobmanager", _request_timeout=TIMEOUT).items
    frozen = signal_all(pod_pids(jm.metadata.uid), signal.SIGSTOP)
    assert frozen, f"no process of pod {jm.metadata.name} found"
    time.sleep(2 * OBSERVE_INTERVAL)
    started = time.monotonic()
    k8s_cluster.kubectl("delete", "flinkjob", "-n", namespace, name, "--wait=false")
    time.sleep(1)
    signal_all(frozen, signal.SIGCONT)  # so that it can take the SIGTERM of its removal
    wait_for(lambda: cluster_objects(k8s_api, namespace, name) == [], timeout=30, interval=0.5, what="every object of the cluster gone")
    print(f"FlinkJob deleted mid-run: its cluster was gone after {time.monotonic() - started:.1f} s")
    gone = k8s_cluster.kubectl("wait", "-n", namespace, "--for=delete", f"flinkjob/{name}", "--timeout=30s", timeout=40, check=False)
    assert gone.returncode == 0, f"the finalizer was not released within 30 s: {gone.stderr}"
    print(f"FlinkJob deleted mid-run: gone after {time.monotonic() - started:.1f} s")


def signal_all(pids: set[int], signum: int) -> set[int]:
    """Send ``signum`` to each of ``pids``; those that were there."""
    sent = set()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
            sent.add(pid)
    return sent


def test_namespace_not_watched_is_ignored(k8s_cluster, k8s_api, namespace, operator):
    other = f"other-{uuid.uuid4().hex[:6]}"
    core = kubernetes.client.CoreV1Api(k8s_api)
    core.create_namespace({"metadata": {"name": other}}, _request_timeout=TIMEOUT)
    try:
        apply(k8s_cluster, flinkjob("ignored", other, {"program": f"local://{WAITS}"}))
        time.sleep(8)  # more than two observation intervals of the operator
        assert "status" not in get(k8s_api, other, "ignored")
        assert cluster_objects(k8s_api, other, "ignored") == []
    finally:
        strip_finalizers(kubernetes.client.CustomObjectsApi(k8s_api), other, "ignored")
        core.delete_namespace(other, _request_timeout=TIMEOUT)
