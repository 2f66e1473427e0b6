"""The descriptor's pure parts: the REST address choice, the JobManager pod's startup rules, the staged files, the registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from jobcluster.backends import registry
from jobcluster.backends.kubernetes import job_manager_pod
from jobcluster.backends.kubernetes.cluster_config import cluster_side_configuration
from jobcluster.backends.kubernetes.descriptor import KubernetesClusterDescriptor
from jobcluster.backends.kubernetes.parameters import job_manager_parameters, task_manager_parameters
from jobcluster.backends.kubernetes.rest_endpoint import pod_rest_url, service_rest_url
from jobcluster.backends.kubernetes.staging import TASK_MANAGER_TEMPLATE_FILE
from jobcluster.backends.kubernetes.staging import config_map_files as _staged_files
from jobcluster.backends.registry import validate_configuration
from jobcluster.client.descriptor import PackagedProgram
from jobcluster.client.program import build_job_graph
from jobcluster.config.configuration import Configuration
from jobcluster.errors import DeploymentError, IllegalConfigurationError
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config


def service(kind: str, **extra) -> dict:
    port = {"name": "rest", "port": 8081, "targetPort": 8081, **({"nodePort": 30081} if kind == "NodePort" else {})}
    return {"metadata": {"name": "wc-rest", "namespace": "ns"}, "spec": {"type": kind, "ports": [port]}, **extra}


def test_pod_ip_url_once_the_pod_has_an_ip():
    assert pod_rest_url({"status": {"podIP": "127.20.0.3"}}, 8081) == "http://127.20.0.3:8081"
    assert pod_rest_url({"status": {"podIP": "fd00::3"}}, 8081) == "http://[fd00::3]:8081"
    assert pod_rest_url({"status": {}}, 8081) is None


def test_service_url_by_type():
    assert service_rest_url(service("ClusterIP"), None) == "http://wc-rest.ns.svc:8081"
    assert service_rest_url(service("NodePort"), {"status": {"hostIP": "10.1.2.3"}}) == "http://10.1.2.3:30081"
    assert service_rest_url(service("NodePort"), None) is None
    assert service_rest_url(service("LoadBalancer"), None) is None  # no ingress yet
    balanced = service("LoadBalancer", status={"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}})
    assert service_rest_url(balanced, None) == "http://lb.example.com:8081"
    with pytest.raises(DeploymentError, match="no port named 'rest'"):
        service_rest_url({"metadata": {"name": "x"}, "spec": {"ports": []}}, None)


def test_startup_failure_of_a_crash_looping_or_unpullable_job_manager():
    crashed = {"status": {"phase": "Running", "containerStatuses": [{"lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}}
    assert job_manager_pod.startup_failure(crashed) == "its container exited with code 1 (Error)"
    pull = {"status": {"containerStatuses": [{"state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}}]}}
    assert job_manager_pod.startup_failure(pull) == "its container cannot start (ImagePullBackOff: not found)"
    # retried by the kubelet: the ConfigMap and Secret are created just after the Deployment
    config = {"status": {"containerStatuses": [{"state": {"waiting": {"reason": "CreateContainerConfigError", "message": "no cm"}}}]}}
    assert job_manager_pod.startup_failure(config) is None
    assert job_manager_pod.waiting_reason(config) == "CreateContainerConfigError: no cm"
    creating = {"status": {"containerStatuses": [{"state": {"waiting": {"reason": "ContainerCreating"}}}]}}
    assert job_manager_pod.startup_failure(creating) is None
    pending = {"status": {"conditions": [{"type": "PodScheduled", "status": "False", "message": "0/1 nodes: Insufficient cpu."}]}}
    assert job_manager_pod.unscheduled_reason(pending) == "0/1 nodes: Insufficient cpu."
    assert not job_manager_pod.is_running({"status": {"phase": "Running"}})
    assert job_manager_pod.is_running({"status": {"phase": "Running", "podIP": "127.1.0.2"}})


def test_creation_failure_is_the_deployments_replica_failure_condition():
    refused = {
        "status": {
            "conditions": [
                {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "reason": "FailedCreate",
                    "message": 'pods "wc-5d8f" is forbidden: error looking up service account ns/nobody: serviceaccount "nobody" not found',
                },
            ]
        }
    }
    assert job_manager_pod.creation_failure(refused) == (
        'FailedCreate: pods "wc-5d8f" is forbidden: error looking up service account ns/nobody: serviceaccount "nobody" not found'
    )
    recovered = {"status": {"conditions": [{**refused["status"]["conditions"][1], "status": "False"}]}}
    assert job_manager_pod.creation_failure(recovered) is None
    assert job_manager_pod.creation_failure({}) is None and job_manager_pod.creation_failure({"status": {}}) is None


def test_newest_pod_skips_pods_being_deleted():
    old = {"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z"}}
    new = {"metadata": {"name": "b", "creationTimestamp": "2026-01-01T00:00:05Z"}}
    leaving = {"metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:09Z", "deletionTimestamp": "x"}}
    assert job_manager_pod.newest_pod([old, new, leaving]) is new
    assert job_manager_pod.newest_pod([]) is None


def test_staged_files_hold_config_jobgraph_program_and_the_task_manager_template(tmp_path: Path):
    script = tmp_path / "wordcount.py"
    script.write_text("print('hi')\n")
    helper = tmp_path / "helper.py"
    helper.write_text("X = 1\n")
    template = tmp_path / "tm.yaml"
    template.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  labels:\n    from-template: 'yes'\n")
    config = Configuration(
        {
            "jobmanager.memory.process.size": "1600m",
            "taskmanager.memory.process.size": "2560m",
            "kubernetes.pod-template-file.default": str(template),
            "kubernetes.config.file": "/home/me/.kube/config",
        }
    )
    program = PackagedProgram(script=script, artifacts=(helper,))
    graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
    jm, tm = job_manager_parameters(config, graph.job_id), task_manager_parameters(config, graph.job_id)
    files = _staged_files(graph, program, cluster_side_configuration(config, jm, tm), tm, "s3cr3t")

    assert sorted(files) == [
        "artifacts/helper.py",
        "artifacts/wordcount.py",
        "jobcluster.yaml",
        "jobgraph.json",
        TASK_MANAGER_TEMPLATE_FILE,
    ]
    assert not [name for name, content in files.items() if b"s3cr3t" in content], "the secret goes into the Secret only"
    staged = yaml.safe_load(files["jobcluster.yaml"])
    assert staged["execution.target"] == "kubernetes-application"
    assert staged["kubernetes.cluster-id"] == jm.cluster_id
    assert staged["kubernetes.pod-template-file.taskmanager"] == TASK_MANAGER_TEMPLATE_FILE  # relative to the JobManager's cluster dir
    assert "kubernetes.pod-template-file.default" not in staged
    assert "kubernetes.config.file" not in staged
    assert json.loads(files["jobgraph.json"])["job_id"] == graph.job_id
    assert files[TASK_MANAGER_TEMPLATE_FILE] == template.read_bytes()


def test_a_bad_task_manager_template_is_refused_before_anything_is_created(tmp_path: Path):
    script = tmp_path / "p.py"
    script.write_text("")
    template = tmp_path / "tm.yaml"
    template.write_text("kind: Service\n")
    config = Configuration(
        {
            "taskmanager.memory.process.size": "2560m",
            "jobmanager.memory.process.size": "1600m",
            "kubernetes.pod-template-file.taskmanager": str(template),
        }
    )
    program = PackagedProgram(script=script)
    graph = build_job_graph(program, config, task_executor_process_spec_from_config(config))
    tm = task_manager_parameters(config, graph.job_id)
    with pytest.raises(IllegalConfigurationError, match=r"kubernetes\.pod-template-file\.taskmanager: the pod template .* must be a Pod"):
        _staged_files(graph, program, config, tm, "s3cr3t")


def test_kubernetes_application_is_a_target_and_its_descriptor_needs_no_api_server_to_be_made():
    assert "kubernetes-application" in registry.known_targets()
    config = Configuration({"kubernetes.namespace": "analytics", "kubernetes.config.file": "/does/not/exist"})
    descriptor = registry.cluster_descriptor("kubernetes-application", config)
    assert isinstance(descriptor, KubernetesClusterDescriptor)
    assert (descriptor.namespace, descriptor.rest_endpoint) == ("analytics", "pod-ip")
    with pytest.raises(IllegalConfigurationError, match="cannot use the Kubernetes configuration /does/not/exist"):
        descriptor.list_clusters()


def test_rest_endpoint_option_is_checked():
    with pytest.raises(IllegalConfigurationError, match=r"jobcluster\.kubernetes\.rest\.endpoint"):
        validate_configuration(Configuration({"jobcluster.kubernetes.rest.endpoint": "proxy"}))


class _Deployed(Exception):
    """Raised by the stand-in deployment: the client got that far."""


@pytest.mark.parametrize(("target", "checked_here"), [("local", True), ("kubernetes-application", False)])
def test_run_s_checks_a_savepoint_path_on_this_machine_only_where_the_driver_sees_this_machines_files(
    tmp_path, monkeypatch, target, checked_here
):
    """A savepoint path on Kubernetes is the pods' (a volume they mount), not this machine's: the client does not refuse it."""
    from click.testing import CliRunner

    from jobcluster.cli import run as run_module

    (tmp_path / "job.py").write_text("print(1)\n")

    def deploy(*args):
        raise _Deployed()

    monkeypatch.setattr(run_module.PipelineExecutor, "execute", deploy)
    monkeypatch.chdir(tmp_path)
    args = ["-t", target, "-D", "kubernetes.config.file=/does/not/exist", "-D", "execution.checkpointing.dir=/streaming/checkpoints"]
    result = CliRunner().invoke(run_module.run, [*args, "-s", "/streaming/savepoints/savepoint-abcdef-0123456789ab", "job.py"])
    if checked_here:
        assert result.exit_code == 1
        assert "savepoint /streaming/savepoints/savepoint-abcdef-0123456789ab does not exist" in result.stderr
    else:
        assert isinstance(result.exception, _Deployed), result.output


def test_a_blip_of_the_api_server_while_the_jobmanager_starts_is_waited_out_until_the_deadline(monkeypatch):
    """One look the API server does not answer (a 503, a dropped connection) does not tear a starting cluster down."""
    from jobcluster.backends.kubernetes import descriptor as descriptor_module
    from jobcluster.errors import PlatformUnavailableError

    answers = iter(
        [PlatformUnavailableError("the API server answered 503"), (None, "the JobManager pod to run"), ("http://10.0.0.9:8081", "")]
    )

    def look(core, jm, seen):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    descriptor = KubernetesClusterDescriptor(Configuration({}), api=object())  # type: ignore[arg-type]
    monkeypatch.setattr(descriptor, "_look_at_start", look)
    monkeypatch.setattr(descriptor_module, "POLL_SECONDS", 0.0)
    monkeypatch.setattr(descriptor_module.kubernetes.client, "CoreV1Api", lambda api: None)
    jm = type("JM", (), {"cluster_id": "wc", "namespace": "default"})()
    assert descriptor._wait_until_serving(jm, timeout=30) == "http://10.0.0.9:8081"

    monkeypatch.setattr(descriptor, "_look_at_start", lambda core, jm, seen: (_ for _ in ()).throw(PlatformUnavailableError("503")))
    with pytest.raises(
        DeploymentError, match=r"did not start within 0 s: still waiting for the Kubernetes API server, which did not answer \(503\)"
    ):
        descriptor._wait_until_serving(jm, timeout=0.2)


def test_a_jobmanager_deployment_deleted_while_it_starts_ends_the_wait_at_once(monkeypatch):
    """Its FlinkJob deleted mid-start: the deployment fails now, not at the startup deadline, and its thread is free."""
    from jobcluster.backends.kubernetes import descriptor as descriptor_module

    descriptor = KubernetesClusterDescriptor(Configuration({}), api=object())  # type: ignore[arg-type]
    monkeypatch.setattr(descriptor_module, "list_pods", lambda core, namespace, selector: ([], None))
    monkeypatch.setattr(descriptor, "_read_deployment", lambda cluster_id: {})
    jm = type("JM", (), {"cluster_id": "wc", "namespace": "default"})()
    with pytest.raises(DeploymentError, match="job cluster wc was deleted while it started"):
        descriptor._look_at_start(None, jm, set())
