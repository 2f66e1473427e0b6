"""The pure ``build_*`` functions of the Kubernetes backend, compared as dicts (no cluster needed)."""

from __future__ import annotations

import base64
import copy
import re
from pathlib import Path

import pytest
import yaml

from jobcluster.backends.kubernetes.jobmanager import build_ingress, build_job_manager_deployment, build_rest_service
from jobcluster.backends.kubernetes.labels import LABEL_TYPE, TYPE_VALUE
from jobcluster.backends.kubernetes.object_names import REST_PORT_NAME
from jobcluster.backends.kubernetes.parameters import job_manager_parameters, task_manager_parameters
from jobcluster.backends.kubernetes.pod_template import load_pod_template, merge_pod_template
from jobcluster.backends.kubernetes.resource_requirements import cpu_quantity, resource_requirements
from jobcluster.backends.kubernetes.staging import CONFIG_MAP_MAX_BYTES, build_config_map, build_secret, staged_items
from jobcluster.backends.kubernetes.taskmanager import attempt_of_pod, build_task_manager_pod, task_manager_pod_name
from jobcluster.config.configuration import Configuration
from jobcluster.errors import DeploymentError, IllegalConfigurationError
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.runtime.taskexecutor.launch import TaskExecutorLaunchSettings
from jobcluster.spark.processes import SparkMasterAddress

REPO = Path(__file__).resolve().parents[2]
JOB_ID = "0123456789abcdef0123456789abcdef"
CID = "wordcount"
BASE = {
    "jobmanager.memory.process.size": "1600m",
    "taskmanager.memory.process.size": "1728m",
    "taskmanager.numberOfTaskSlots": "2",
    "kubernetes.cluster-id": CID,
    "kubernetes.namespace": "analytics",
}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": CID, "uid": "uid-1"}}
OWNED_BY_DEPLOYMENT = [
    {"apiVersion": "apps/v1", "kind": "Deployment", "name": CID, "uid": "uid-1", "controller": True, "blockOwnerDeletion": True}
]
JM_SELECTOR = {"type": "jobcluster-native-kubernetes", "app": CID, "component": "jobmanager"}
TM_SELECTOR = {"type": "jobcluster-native-kubernetes", "app": CID, "component": "taskmanager"}
STAGED = [{"key": "artifacts.wordcount.py", "path": "artifacts/wordcount.py"}, {"key": "jobcluster.yaml", "path": "jobcluster.yaml"}]


def conf(**extra: str) -> Configuration:
    return Configuration({**BASE, **extra})


def common_env(own: list[dict]) -> list[dict]:
    return [
        {"name": "JOBCLUSTER_CLUSTER_ID", "value": CID},
        {"name": "JOBCLUSTER_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
        {"name": "JOBCLUSTER_POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
        {"name": "JOBCLUSTER_POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
        {"name": "JOBCLUSTER_STAGED_DIR", "value": "/opt/jobcluster/staged"},
        {"name": "JOBCLUSTER_WORK_DIR", "value": "/opt/jobcluster/work"},
        {"name": "JOBCLUSTER_SECRET_DIR", "value": "/opt/jobcluster/secret"},
        *own,
    ]


MOUNTS = [
    {"name": "jobcluster-staged", "mountPath": "/opt/jobcluster/staged", "readOnly": True},
    {"name": "jobcluster-work", "mountPath": "/opt/jobcluster/work"},
    {"name": "jobcluster-secret", "mountPath": "/opt/jobcluster/secret", "readOnly": True},
]
#: Pod Security "restricted": the pod's and the main container's security contexts (spelled out, not imported)
RESTRICTED_POD = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
SECRET_VOLUME = {
    "name": "jobcluster-secret",
    "secret": {"secretName": f"{CID}-secret", "items": [{"key": "cluster-secret", "path": "cluster-secret"}], "defaultMode": 0o444},
}


def test_job_manager_deployment():
    params = job_manager_parameters(conf(**{"kubernetes.jobmanager.labels": "team:data,app:spoofed"}), JOB_ID)
    labels = {"team": "data", **JM_SELECTOR, "jobcluster.io/job-id": JOB_ID}
    assert build_job_manager_deployment(params, STAGED) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": CID, "namespace": "analytics", "labels": labels},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},  # never two JobManagers (two drivers on one checkpoint root)
            "selector": {"matchLabels": JM_SELECTOR},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "default",
                    "securityContext": RESTRICTED_POD,
                    "containers": [
                        {
                            "name": "jobcluster-main-container",
                            "image": "jobcluster:0.1.0",
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["/opt/jobcluster/bin/jobmanager"],
                            "env": common_env([]),
                            "resources": {"requests": {"cpu": "1", "memory": "1600Mi"}, "limits": {"cpu": "1", "memory": "1600Mi"}},
                            "securityContext": RESTRICTED_CONTAINER,
                            "volumeMounts": MOUNTS,
                            "ports": [{"name": "rest", "containerPort": 8081, "protocol": "TCP"}],
                        }
                    ],
                    "volumes": [
                        {"name": "jobcluster-staged", "configMap": {"name": f"jobcluster-config-{CID}", "items": STAGED}},
                        {"name": "jobcluster-work", "emptyDir": {}},
                        SECRET_VOLUME,
                    ],
                },
            },
        },
    }


def test_job_manager_sizing_placement_owner_and_env():
    params = job_manager_parameters(
        conf(
            **{
                "kubernetes.jobmanager.cpu.amount": "0.5",
                "kubernetes.jobmanager.cpu.limit-factor": "3",
                "kubernetes.jobmanager.memory.limit-factor": "1.5",
                "kubernetes.jobmanager.node-selector": "disk:ssd",
                "kubernetes.jobmanager.tolerations": "key:spot,operator:Exists",
                "kubernetes.jobmanager.annotations": "owner:me",
                "kubernetes.jobmanager.service-account": "jobcluster",
                "kubernetes.jobmanager.owner.reference": "apiVersion:jobcluster.io/v1,kind:FlinkJob,name:wc,uid:u-9,controller:true",
                "containerized.master.env.JOBCLUSTER_PYTHON": "/venv/bin/python",
                "containerized.master.env.JOBCLUSTER_CLUSTER_SECRET": "leaked",
            }
        ),
        JOB_ID,
    )
    deployment = build_job_manager_deployment(params, STAGED)
    pod = deployment["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "500m", "memory": "1600Mi"}, "limits": {"cpu": "1500m", "memory": "2400Mi"}}
    assert pod["spec"]["nodeSelector"] == {"disk": "ssd"}
    assert pod["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    assert pod["spec"]["serviceAccountName"] == "jobcluster"
    assert pod["metadata"]["annotations"] == {"owner": "me"}
    assert deployment["metadata"]["ownerReferences"] == [
        {"apiVersion": "jobcluster.io/v1", "kind": "FlinkJob", "name": "wc", "uid": "u-9", "controller": True}
    ]
    # the user's env comes first; a user entry may never replace jobcluster's
    assert container["env"] == [{"name": "JOBCLUSTER_PYTHON", "value": "/venv/bin/python"}, *common_env([])]


def test_the_cluster_secret_is_never_a_literal_in_a_pod():
    params = job_manager_parameters(conf(), JOB_ID)
    text = repr(build_job_manager_deployment(params, STAGED))
    # a file of the Secret's volume, never an environment variable (it would stay in /proc/<pid>/environ)
    assert "secretKeyRef" not in text and "JOBCLUSTER_CLUSTER_SECRET" not in text
    assert repr(SECRET_VOLUME) in text
    secret = build_secret(CID, "analytics", "s3cr3t-value", DEPLOYMENT)
    assert "s3cr3t-value" not in text
    assert secret == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"{CID}-secret",
            "namespace": "analytics",
            "labels": {"type": "jobcluster-native-kubernetes", "app": CID},
            "ownerReferences": OWNED_BY_DEPLOYMENT,
        },
        "type": "Opaque",
        "data": {"cluster-secret": base64.b64encode(b"s3cr3t-value").decode()},
    }


@pytest.mark.parametrize(
    ("exposed", "spec_extra"),
    [
        ("ClusterIP", {"type": "ClusterIP"}),
        ("NodePort", {"type": "NodePort"}),
        ("Headless_ClusterIP", {"type": "ClusterIP", "clusterIP": "None"}),
    ],
)
def test_rest_service(exposed, spec_extra):
    params = job_manager_parameters(conf(**{"kubernetes.rest-service.exposed.type": exposed, "rest.port": "0"}), JOB_ID)
    assert build_rest_service(params, DEPLOYMENT) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{CID}-rest", "namespace": "analytics", "labels": JM_SELECTOR, "ownerReferences": OWNED_BY_DEPLOYMENT},
        "spec": {
            **spec_extra,
            "selector": JM_SELECTOR,
            "ports": [{"name": "rest", "port": 8081, "targetPort": 8081, "protocol": "TCP"}],
        },
    }


def rest_backend(port: int = 8081) -> dict:
    return {"service": {"name": f"{CID}-rest", "port": {"number": port}}}


def test_ingress_of_a_host_and_path_template_with_every_field():
    params = job_manager_parameters(
        conf(
            **{
                "jobcluster.kubernetes.ingress.template": "flink.example.com/{{namespace}}/{{name}}(/|$)(.*)",
                "jobcluster.kubernetes.ingress.class-name": "nginx",
                "jobcluster.kubernetes.ingress.annotations": "nginx.ingress.kubernetes.io/rewrite-target:/$2,a.example.com/x:y",
                "jobcluster.kubernetes.ingress.labels": "team:data,app:spoofed",
                "jobcluster.kubernetes.ingress.tls": '[{"hosts": ["flink.example.com"], "secretName": "flink-tls"}]',
                "rest.port": "8082",
            }
        ),
        JOB_ID,
    )
    assert build_ingress(params, DEPLOYMENT) == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": CID,
            "namespace": "analytics",
            "labels": {"team": "data", **JM_SELECTOR},  # the cluster's labels win: `-l app=<cluster-id>` finds it
            "annotations": {"nginx.ingress.kubernetes.io/rewrite-target": "/$2", "a.example.com/x": "y"},
            "ownerReferences": OWNED_BY_DEPLOYMENT,  # deleting the Deployment deletes it
        },
        "spec": {
            "ingressClassName": "nginx",
            "rules": [
                {
                    "host": "flink.example.com",
                    "http": {
                        "paths": [
                            {"path": "/analytics/wordcount(/|$)(.*)", "pathType": "ImplementationSpecific", "backend": rest_backend(8082)}
                        ]
                    },
                }
            ],
            "tls": [{"hosts": ["flink.example.com"], "secretName": "flink-tls"}],
        },
    }


def test_ingress_of_a_host_only_template_routes_all_of_the_host():
    params = job_manager_parameters(conf(**{"jobcluster.kubernetes.ingress.template": "{{name}}.{{namespace}}.flink.example.com"}), JOB_ID)
    ingress = build_ingress(params, DEPLOYMENT)
    assert ingress["spec"] == {
        "rules": [
            {
                "host": "wordcount.analytics.flink.example.com",
                "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": rest_backend()}]},
            }
        ]
    }
    assert "annotations" not in ingress["metadata"] and ingress["metadata"]["labels"] == JM_SELECTOR


def test_ingress_of_a_path_only_template_has_no_host():
    params = job_manager_parameters(conf(**{"jobcluster.kubernetes.ingress.template": "/{{namespace}}/{{name}}(/|$)(.*)"}), JOB_ID)
    assert build_ingress(params, DEPLOYMENT)["spec"] == {
        "rules": [
            {
                "http": {
                    "paths": [{"path": "/analytics/wordcount(/|$)(.*)", "pathType": "ImplementationSpecific", "backend": rest_backend()}]
                }
            }
        ]
    }


def test_ingress_template_placeholders_in_any_case_and_a_scheme_in_front_as_the_flink_kubernetes_operator_reads_them():
    params = job_manager_parameters(
        conf(**{"jobcluster.kubernetes.ingress.template": "https://{{NAME}}.example.com/{{Namespace}}/"}), JOB_ID
    )
    (rule,) = build_ingress(params, DEPLOYMENT)["spec"]["rules"]
    assert rule["host"] == "wordcount.example.com" and rule["http"]["paths"][0]["path"] == "/analytics/"
    assert params.ingress.address == "wordcount.example.com/analytics/"


@pytest.mark.parametrize("template", [None, "", "  "])
def test_no_ingress_without_a_template(template):
    extra = {} if template is None else {"jobcluster.kubernetes.ingress.template": template}
    params = job_manager_parameters(conf(**extra, **{"jobcluster.kubernetes.ingress.class-name": "nginx"}), JOB_ID)
    assert params.ingress is None and build_ingress(params, DEPLOYMENT) is None


def test_config_map_text_binary_and_items():
    files = {
        "jobcluster.yaml": b"a: 1\n",
        "jobgraph.json": b"{}",
        "artifacts/wordcount.py": b"print(1)\n",
        "artifacts/deps.zip": b"PK\x03\x04\xff",
    }
    assert staged_items(list(files)) == [
        {"key": "artifacts.deps.zip", "path": "artifacts/deps.zip"},
        {"key": "artifacts.wordcount.py", "path": "artifacts/wordcount.py"},
        {"key": "jobcluster.yaml", "path": "jobcluster.yaml"},
        {"key": "jobgraph.json", "path": "jobgraph.json"},
    ]
    assert build_config_map(CID, "analytics", files, DEPLOYMENT) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"jobcluster-config-{CID}",
            "namespace": "analytics",
            "labels": {"type": "jobcluster-native-kubernetes", "app": CID},
            "ownerReferences": OWNED_BY_DEPLOYMENT,
        },
        "data": {"artifacts.wordcount.py": "print(1)\n", "jobcluster.yaml": "a: 1\n", "jobgraph.json": "{}"},
        "binaryData": {"artifacts.deps.zip": base64.b64encode(b"PK\x03\x04\xff").decode()},
    }


def test_config_map_size_limit_tells_to_use_a_local_uri():
    just_fits = {"jobcluster.yaml": b"x" * (CONFIG_MAP_MAX_BYTES - 10), "jobgraph.json": b"y" * 10}
    build_config_map(CID, "analytics", just_fits, None)
    too_big = {"jobcluster.yaml": b"a: 1\n", "artifacts/big.py": b"#" * (CONFIG_MAP_MAX_BYTES - 4)}
    with pytest.raises(DeploymentError, match=r"more than a ConfigMap can hold .*artifacts/big.py .*local:///"):
        build_config_map(CID, "analytics", too_big, None)


@pytest.mark.parametrize("path", ["artifacts/my file.py", "artifacts/ü.py", "/etc/passwd", "artifacts/../x"])
def test_file_names_a_config_map_cannot_hold(path):
    with pytest.raises(DeploymentError, match="cannot stage"):
        staged_items([path])


def test_task_manager_pod():
    params = task_manager_parameters(conf(**{"kubernetes.taskmanager.labels": "team:data"}), JOB_ID)
    spec = task_executor_process_spec_from_config(conf())
    name = task_manager_pod_name(CID, 2, 7)
    pod = build_task_manager_pod(
        params,
        spec,
        name,
        launch_env=TaskExecutorLaunchSettings(
            "wordcount", "127.5.0.3:41000", "rm-1", SparkMasterAddress("spark://127.5.0.3:7077", "http://127.5.0.3:8080")
        ).environment(name),
        job_manager_address="127.5.0.3",
        owner=DEPLOYMENT,
    )
    args = [arg for key, value in spec.dynamic_configs().items() for arg in ("-D", f"{key}={value}")]
    assert pod == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "labels": {"team": "data", **TM_SELECTOR},
            "name": "wordcount-taskmanager-2-7",
            "namespace": "analytics",
            "ownerReferences": OWNED_BY_DEPLOYMENT,
        },
        "spec": {
            "serviceAccountName": "default",
            "securityContext": RESTRICTED_POD,
            "automountServiceAccountToken": False,  # a TaskManager never talks to the API server
            "containers": [
                {
                    "name": "jobcluster-main-container",
                    "image": "jobcluster:0.1.0",
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["/opt/jobcluster/bin/taskmanager"],
                    "args": args,
                    "env": common_env(
                        [
                            {"name": "JOBCLUSTER_RESOURCE_ID", "value": "wordcount-taskmanager-2-7"},
                            {"name": "JOBCLUSTER_RESOURCE_MANAGER_ADDRESS", "value": "127.5.0.3:41000"},
                            {"name": "JOBCLUSTER_RESOURCE_MANAGER_ID", "value": "rm-1"},
                            {"name": "JOBCLUSTER_SPARK_MASTER_URL", "value": "spark://127.5.0.3:7077"},
                            {"name": "JOBCLUSTER_SPARK_MASTER_WEB_URL", "value": "http://127.5.0.3:8080"},
                            {"name": "JOBCLUSTER_JOBMANAGER_ADDRESS", "value": "127.5.0.3"},
                        ]
                    ),
                    "resources": {"requests": {"cpu": "2", "memory": "1728Mi"}, "limits": {"cpu": "2", "memory": "1728Mi"}},
                    "securityContext": RESTRICTED_CONTAINER,
                    "volumeMounts": MOUNTS,
                }
            ],
            "volumes": [
                {
                    "name": "jobcluster-staged",
                    "configMap": {"name": f"jobcluster-config-{CID}", "items": [{"key": "jobcluster.yaml", "path": "jobcluster.yaml"}]},
                },
                {"name": "jobcluster-work", "emptyDir": {}},
                SECRET_VOLUME,
            ],
            "restartPolicy": "Never",
        },
    }
    assert "-D" in args and "taskmanager.numberOfTaskSlots=2" in args


def test_task_manager_limits_are_requests_times_the_factors():
    params = task_manager_parameters(
        conf(**{"kubernetes.taskmanager.memory.limit-factor": "1.25", "kubernetes.taskmanager.cpu.limit-factor": "1.5"}), JOB_ID
    )
    spec = task_executor_process_spec_from_config(conf(**{"taskmanager.cpu.cores": "1.5"}))
    pod = build_task_manager_pod(params, spec, "p", launch_env={}, job_manager_address="j", owner=DEPLOYMENT)
    assert pod["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1500m", "memory": "1728Mi"},
        "limits": {"cpu": "2250m", "memory": "2160Mi"},
    }


def test_resource_requirements_refuse_factors_below_one():
    with pytest.raises(ValueError, match="at least 1"):
        resource_requirements(1024, 1, 0.5, 1)
    assert cpu_quantity(0.0001) == "1m"
    assert cpu_quantity(2) == "2"


def test_pod_names_carry_the_attempt():
    assert task_manager_pod_name("wc", 3, 12) == "wc-taskmanager-3-12"
    assert attempt_of_pod("wc-taskmanager-3-12") == 3
    assert attempt_of_pod("my-taskmanager-x-taskmanager-1-2") == 1
    assert attempt_of_pod("wc") is None


# -- pod templates -------------------------------------------------------------

TEMPLATE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "ignored", "labels": {"team": "tmpl", "app": "spoofed"}, "annotations": {"a": "1"}},
    "spec": {
        "restartPolicy": "Always",
        "serviceAccountName": "tmpl",
        "securityContext": {"runAsUser": 1000},
        "initContainers": [{"name": "init", "image": "busybox"}],
        "tolerations": [{"key": "tmpl", "operator": "Exists"}],
        "volumes": [{"name": "cache", "emptyDir": {}}, {"name": "jobcluster-work", "hostPath": {"path": "/x"}}],
        "containers": [
            {"name": "sidecar", "image": "fluentbit"},
            {
                "name": "jobcluster-main-container",
                "image": "tmpl-image",
                "workingDir": "/work",
                "env": [{"name": "FROM_TEMPLATE", "value": "1"}, {"name": "JOBCLUSTER_CLUSTER_ID", "value": "spoofed"}],
                "resources": {"requests": {"ephemeral-storage": "1Gi", "memory": "1Mi"}, "limits": {"nvidia.com/gpu": "1"}},
                "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
            },
        ],
    },
}


def test_pod_template_merge_follows_flinks_rules():
    params = task_manager_parameters(conf(**{"kubernetes.taskmanager.tolerations": "key:spot,operator:Exists"}), JOB_ID)
    spec = task_executor_process_spec_from_config(conf())
    template = copy.deepcopy(TEMPLATE)
    pod = build_task_manager_pod(
        params, spec, "wordcount-taskmanager-1-1", launch_env={}, job_manager_address="j",
        owner=DEPLOYMENT, template=template,
    )  # fmt: skip
    assert template == TEMPLATE  # not modified
    assert pod["metadata"]["name"] == "wordcount-taskmanager-1-1"
    assert pod["metadata"]["labels"] == {"team": "tmpl", **TM_SELECTOR}
    assert pod["metadata"]["annotations"] == {"a": "1"}
    spec_ = pod["spec"]
    assert spec_["restartPolicy"] == "Never"
    assert spec_["serviceAccountName"] == "default"
    assert spec_["securityContext"] == {**RESTRICTED_POD, "runAsUser": 1000}, "the template's fields win, the others stay"
    assert spec_["initContainers"] == [{"name": "init", "image": "busybox"}]
    assert spec_["tolerations"] == [{"key": "tmpl", "operator": "Exists"}, {"key": "spot", "operator": "Exists"}]
    config_only = [{"key": "jobcluster.yaml", "path": "jobcluster.yaml"}]
    assert spec_["volumes"] == [
        {"name": "cache", "emptyDir": {}},
        {"name": "jobcluster-staged", "configMap": {"name": f"jobcluster-config-{CID}", "items": config_only}},
        {"name": "jobcluster-work", "emptyDir": {}},
        SECRET_VOLUME,
    ]
    main, sidecar = spec_["containers"]
    assert sidecar == {"name": "sidecar", "image": "fluentbit"}
    assert main["name"] == "jobcluster-main-container"
    assert main["image"] == "jobcluster:0.1.0"
    assert main["workingDir"] == "/work"
    assert main["resources"] == {
        "requests": {"ephemeral-storage": "1Gi", "memory": "1728Mi", "cpu": "2"},
        "limits": {"nvidia.com/gpu": "1", "cpu": "2", "memory": "1728Mi"},
    }
    env = {entry["name"]: entry for entry in main["env"]}
    assert env["FROM_TEMPLATE"] == {"name": "FROM_TEMPLATE", "value": "1"}
    assert env["JOBCLUSTER_CLUSTER_ID"] == {"name": "JOBCLUSTER_CLUSTER_ID", "value": CID}
    assert [entry["name"] for entry in main["env"]].count("JOBCLUSTER_CLUSTER_ID") == 1
    assert main["volumeMounts"][0] == {"name": "cache", "mountPath": "/cache"}


def test_job_manager_template_adds_the_main_container_when_absent():
    params = job_manager_parameters(conf(), JOB_ID)
    template = {"spec": {"containers": [{"name": "sidecar", "image": "x"}], "priorityClassName": "high"}}
    pod = build_job_manager_deployment(params, STAGED, template)["spec"]["template"]
    assert [c["name"] for c in pod["spec"]["containers"]] == ["jobcluster-main-container", "sidecar"]
    assert pod["spec"]["priorityClassName"] == "high"
    assert merge_pod_template(None, {"metadata": {}, "spec": {"containers": []}}) == {"metadata": {}, "spec": {"containers": []}}


def test_load_pod_template_errors_name_the_key(tmp_path):
    key = "kubernetes.pod-template-file.taskmanager"
    with pytest.raises(IllegalConfigurationError, match=f"{key}: cannot read the pod template"):
        load_pod_template(str(tmp_path / "missing.yaml"), key)
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Deployment\n")
    with pytest.raises(IllegalConfigurationError, match="must be a Pod"):
        load_pod_template(str(bad), key)
    bad.write_text("a: [\n")
    with pytest.raises(IllegalConfigurationError, match="not valid YAML"):
        load_pod_template(str(bad), key)
    good = tmp_path / "pod.yaml"
    good.write_text("apiVersion: v1\nkind: Pod\nspec:\n  containers: []\n")
    assert load_pod_template(str(good), key)["spec"] == {"containers": []}


def test_image_pull_secrets_reach_the_job_manager_and_the_task_manager_pods():
    config = conf(**{"kubernetes.container.image.pull-secrets": "registry-a; registry-b;"})
    deployment = build_job_manager_deployment(job_manager_parameters(config, JOB_ID), STAGED)
    spec = task_executor_process_spec_from_config(config)
    tm = build_task_manager_pod(
        task_manager_parameters(config, JOB_ID),
        spec,
        "wordcount-taskmanager-1-1",
        launch_env=TaskExecutorLaunchSettings("wordcount", "http://10.244.0.5:6123", "rm-1").environment("wordcount-taskmanager-1-1"),
        job_manager_address="10.244.0.5",
        owner=DEPLOYMENT,
    )
    expected = [{"name": "registry-a"}, {"name": "registry-b"}]
    assert deployment["spec"]["template"]["spec"]["imagePullSecrets"] == expected
    assert tm["spec"]["imagePullSecrets"] == expected
    # none by default: the field is left out
    default = build_job_manager_deployment(job_manager_parameters(conf(), JOB_ID), STAGED)
    assert "imagePullSecrets" not in default["spec"]["template"]["spec"]


def test_the_users_secrets_reach_the_job_manager_and_the_task_manager_containers_as_files_and_variables():
    """Flink's kubernetes.secrets and kubernetes.env.secretKeyRef: the kubelet reads the Secrets, never a configuration
    value; a variable from a Secret wins over a plain one of the same name, jobcluster's own over both."""
    config = conf(
        **{
            "kubernetes.secrets": "s3-credentials:/opt/secrets/s3, db:/etc/db",
            "kubernetes.env.secretKeyRef": "env:AWS_SECRET_ACCESS_KEY,secret:s3-credentials,key:secret-key;"
            "env:DB_PASSWORD,secret:db,key:password;env:JOBCLUSTER_WORK_DIR,secret:db,key:x",
            "containerized.master.env.DB_PASSWORD": "in-the-configmap",
        }
    )
    deployment = build_job_manager_deployment(job_manager_parameters(config, JOB_ID), STAGED)
    tm = build_task_manager_pod(
        task_manager_parameters(config, JOB_ID),
        task_executor_process_spec_from_config(config),
        "wordcount-taskmanager-1-1",
        launch_env={},
        job_manager_address="10.244.0.5",
        owner=DEPLOYMENT,
    )
    for pod in (deployment["spec"]["template"]["spec"], tm["spec"]):
        (main,) = pod["containers"]
        assert {"name": "user-secret-0", "secret": {"secretName": "s3-credentials", "defaultMode": 0o444}} in pod["volumes"]
        assert {"name": "user-secret-1", "secret": {"secretName": "db", "defaultMode": 0o444}} in pod["volumes"]
        assert main["volumeMounts"][len(MOUNTS) :] == [
            {"name": "user-secret-0", "mountPath": "/opt/secrets/s3", "readOnly": True},
            {"name": "user-secret-1", "mountPath": "/etc/db", "readOnly": True},
        ]
        from_secrets = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in main["env"] if "secretKeyRef" in e.get("valueFrom", {})}
        assert from_secrets == {
            "AWS_SECRET_ACCESS_KEY": {"name": "s3-credentials", "key": "secret-key"},
            "DB_PASSWORD": {"name": "db", "key": "password"},
        }
        assert [e["name"] for e in main["env"]].count("DB_PASSWORD") == 1 and "in-the-configmap" not in str(main["env"])
        assert {"name": "JOBCLUSTER_WORK_DIR", "value": "/opt/jobcluster/work"} in main["env"]


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("kubernetes.secrets", "creds:relative/dir", "absolute path outside"),
        ("kubernetes.secrets", "creds:/opt/jobcluster/secret", "the cluster's own"),
        ("kubernetes.secrets", "Creds_1:/opt/creds", "is not a Secret's name"),
        ("kubernetes.env.secretKeyRef", "env:A,secret:creds", "must have exactly env, secret and key"),
        ("kubernetes.env.secretKeyRef", "env:A,secret:creds,key:k,optional:true", "must have exactly env, secret and key"),
        ("kubernetes.env.secretKeyRef", "env:1A,secret:creds,key:k", "is not an environment variable's name"),
        ("kubernetes.env.secretKeyRef", "env:A,secret:creds,key:k;env:A,secret:other,key:k", "A is set more than once"),
    ],
)
def test_a_bad_secret_option_is_refused_naming_it(key, value, said):
    with pytest.raises(IllegalConfigurationError, match=rf"{re.escape(key)}: .*{re.escape(said)}"):
        job_manager_parameters(conf(**{key: value}), JOB_ID)


def test_the_network_policy_of_manifests_selects_the_job_pods_and_opens_only_the_rest_port_to_others():
    """manifests/networkpolicy.yaml names the labels and the port the builders give (a rename would open or close
    the wrong pods on a network that enforces it)."""
    policy = yaml.safe_load((REPO / "manifests" / "networkpolicy.yaml").read_text())
    job_pods = {LABEL_TYPE: TYPE_VALUE}
    assert policy["spec"]["podSelector"]["matchLabels"] == job_pods and policy["spec"]["policyTypes"] == ["Ingress"]
    among_themselves, from_anywhere = policy["spec"]["ingress"]
    assert among_themselves == {"from": [{"podSelector": {"matchLabels": job_pods}}]}
    assert from_anywhere == {"ports": [{"port": REST_PORT_NAME, "protocol": "TCP"}]}
    pod = build_job_manager_deployment(job_manager_parameters(conf(), JOB_ID), STAGED)["spec"]["template"]
    assert job_pods.items() <= pod["metadata"]["labels"].items() and job_pods.items() <= TM_SELECTOR.items()
    assert [p["name"] for p in pod["spec"]["containers"][0]["ports"]] == [REST_PORT_NAME]
