"""Kubernetes options → parameters objects: Flink's keys, defaults and errors, without a cluster."""

from __future__ import annotations

from decimal import Decimal

import pytest

from jobcluster.backends.kubernetes.cluster_id import check_cluster_id, cluster_id_from_config, default_cluster_id
from jobcluster.backends.kubernetes.option_text import parse_map, parse_map_list
from jobcluster.backends.kubernetes.parameters import job_manager_parameters, task_manager_parameters
from jobcluster.backends.registry import validate_configuration
from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError

JOB_ID = "0123456789abcdef0123456789abcdef"
BASE = {"jobmanager.memory.process.size": "1600m", "taskmanager.memory.process.size": "1728m"}


def config(**values: str) -> Configuration:
    return Configuration({**BASE, **{key.replace("__", "."): value for key, value in values.items()}})


def with_keys(values: dict[str, str]) -> Configuration:
    return Configuration({**BASE, **values})


# -- cluster id ----------------------------------------------------------------


def test_default_cluster_id_is_derived_from_the_job_id_and_valid():
    assert default_cluster_id(JOB_ID) == "jobcluster-" + JOB_ID
    assert len(default_cluster_id(JOB_ID)) <= 45
    assert cluster_id_from_config(Configuration(), JOB_ID) == "jobcluster-" + JOB_ID


def test_configured_cluster_id_wins():
    assert cluster_id_from_config(with_keys({"kubernetes.cluster-id": "wordcount"}), JOB_ID) == "wordcount"


@pytest.mark.parametrize("cluster_id", ["a", "wordcount", "word-count-2", "a" * 45])
def test_valid_cluster_ids(cluster_id):
    assert check_cluster_id(cluster_id) == cluster_id


@pytest.mark.parametrize(
    ("cluster_id", "message"),
    [
        ("", "must not be blank"),
        ("a" * 46, "46 characters long; it must be no more than 45"),
        ("WordCount", "DNS-1035"),
        ("1wordcount", "DNS-1035"),
        ("wordcount-", "DNS-1035"),
        ("word_count", "DNS-1035"),
        ("word.count", "DNS-1035"),
    ],
)
def test_invalid_cluster_ids_name_the_key_and_the_rule(cluster_id, message):
    with pytest.raises(IllegalConfigurationError, match=message) as info:
        cluster_id_from_config(with_keys({"kubernetes.cluster-id": cluster_id}), JOB_ID)
    assert "kubernetes.cluster-id" in str(info.value)


# -- Flink's map forms ---------------------------------------------------------


def test_parse_map_keeps_colons_in_values():
    assert parse_map("k", "a:1, b:x:y ,") == {"a": "1", "b": "x:y"}
    assert parse_map("k", "") == {}


def test_parse_map_refuses_an_entry_without_key():
    with pytest.raises(IllegalConfigurationError, match=r"kubernetes.jobmanager.labels: 'a:1,b' is not a map"):
        parse_map("kubernetes.jobmanager.labels", "a:1,b")


def test_parse_map_list():
    assert parse_map_list("k", "a:1;b:2,c:3;") == [{"a": "1"}, {"b": "2", "c": "3"}]


# -- defaults ------------------------------------------------------------------


def test_job_manager_defaults_are_flinks():
    params = job_manager_parameters(config(), JOB_ID)
    assert params.cluster_id == "jobcluster-" + JOB_ID
    assert params.namespace == "default"
    assert params.service_account == "default"
    assert params.image_pull_policy == "IfNotPresent"
    assert params.cpu == 1.0
    assert (params.cpu_limit_factor, params.memory_limit_factor) == (1.0, 1.0)
    assert params.memory_mib == 1600
    assert params.rest_port == 8081
    assert params.rest_service_type == "ClusterIP"
    assert params.labels == params.annotations == params.node_selector == {}
    assert params.tolerations == params.owner_references == []
    assert params.pod_template_file is None
    assert params.entrypoint_dir == "/opt/jobcluster/bin"


def test_task_manager_cpu_defaults_to_the_slots():
    assert task_manager_parameters(config(taskmanager__numberOfTaskSlots="3"), JOB_ID).cpu_cores == Decimal(3)


def test_task_manager_cpu_amount_is_used_when_taskmanager_cpu_cores_is_unset():
    values = {"taskmanager.numberOfTaskSlots": "3", "kubernetes.taskmanager.cpu.amount": "1.5"}
    assert task_manager_parameters(with_keys(values), JOB_ID).cpu_cores == Decimal("1.5")
    values["taskmanager.cpu.cores"] = "4"
    assert task_manager_parameters(with_keys(values), JOB_ID).cpu_cores == Decimal(4)


def test_rest_port_zero_becomes_the_fixed_port():
    assert job_manager_parameters(with_keys({"rest.port": "0"}), JOB_ID).rest_port == 8081


# -- each side reads its own keys, with the shared fallbacks --------------------


def test_service_account_falls_back_to_the_shared_key():
    shared = with_keys({"kubernetes.service-account": "jobcluster"})
    assert job_manager_parameters(shared, JOB_ID).service_account == "jobcluster"
    assert task_manager_parameters(shared, JOB_ID).service_account == "jobcluster"
    own = with_keys({"kubernetes.service-account": "jobcluster", "kubernetes.taskmanager.service-account": "worker"})
    assert job_manager_parameters(own, JOB_ID).service_account == "jobcluster"
    assert task_manager_parameters(own, JOB_ID).service_account == "worker"


def test_pod_template_falls_back_to_the_default_key():
    values = {"kubernetes.pod-template-file.default": "/t/default.yaml", "kubernetes.pod-template-file.taskmanager": "/t/tm.yaml"}
    assert job_manager_parameters(with_keys(values), JOB_ID).pod_template_file == "/t/default.yaml"
    assert task_manager_parameters(with_keys(values), JOB_ID).pod_template_file == "/t/tm.yaml"


def test_side_specific_maps_tolerations_and_env():
    values = {
        "kubernetes.jobmanager.labels": "team:data,tier:jm",
        "kubernetes.taskmanager.labels": "team:data",
        "kubernetes.taskmanager.annotations": "note:a:b",
        "kubernetes.taskmanager.node-selector": "disk:ssd",
        "kubernetes.taskmanager.tolerations": (
            "key:spot,operator:Equal,value:true,effect:NoSchedule;key:gpu,operator:Exists,tolerationSeconds:30"
        ),
        "containerized.master.env.JOBCLUSTER_PYTHON": "/usr/bin/python3",
        "containerized.taskmanager.env.FOO": "bar",
        "kubernetes.container.image.ref": "registry.example.com/jobcluster:1",
        "kubernetes.container.image.pull-policy": "Always",
    }
    jm, tm = job_manager_parameters(with_keys(values), JOB_ID), task_manager_parameters(with_keys(values), JOB_ID)
    assert jm.labels == {"team": "data", "tier": "jm"}
    assert tm.labels == {"team": "data"}
    assert tm.annotations == {"note": "a:b"}
    assert tm.node_selector == {"disk": "ssd"}
    assert jm.node_selector == {}
    assert tm.tolerations == [
        {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "gpu", "operator": "Exists", "tolerationSeconds": 30},
    ]
    assert jm.env == {"JOBCLUSTER_PYTHON": "/usr/bin/python3"}
    assert tm.env == {"FOO": "bar"}
    assert (jm.image, tm.image_pull_policy) == ("registry.example.com/jobcluster:1", "Always")


def test_deprecated_image_key_is_read():
    assert job_manager_parameters(with_keys({"kubernetes.container.image": "old:1"}), JOB_ID).image == "old:1"


def test_owner_references():
    text = "apiVersion:jobcluster.io/v1,kind:FlinkJob,name:wc,uid:1234,controller:true,blockOwnerDeletion:false"
    params = job_manager_parameters(with_keys({"kubernetes.jobmanager.owner.reference": text}), JOB_ID)
    assert params.owner_references == [
        {"apiVersion": "jobcluster.io/v1", "kind": "FlinkJob", "name": "wc", "uid": "1234", "controller": True, "blockOwnerDeletion": False}
    ]


# -- errors name the key -------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"kubernetes.taskmanager.cpu.limit-factor": "0.5"}, r"kubernetes.taskmanager.cpu.limit-factor should be greater or equal to 1"),
        (
            {"kubernetes.taskmanager.memory.limit-factor": "0.9"},
            r"kubernetes.taskmanager.memory.limit-factor should be greater or equal to 1",
        ),
        (
            {"kubernetes.taskmanager.tolerations": "key:a,color:red"},
            r"kubernetes.taskmanager.tolerations: unknown toleration field 'color'",
        ),
        ({"kubernetes.taskmanager.tolerations": "key:a,tolerationSeconds:soon"}, r"tolerationSeconds 'soon' is not an integer"),
        ({"kubernetes.taskmanager.labels": "team"}, r"kubernetes.taskmanager.labels: 'team' is not a map"),
        ({"kubernetes.namespace": " "}, r"kubernetes.namespace must not be blank"),
    ],
)
def test_task_manager_errors(values, message):
    with pytest.raises(IllegalConfigurationError, match=message):
        task_manager_parameters(with_keys(values), JOB_ID)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"kubernetes.jobmanager.cpu.limit-factor": "0"}, r"kubernetes.jobmanager.cpu.limit-factor should be greater or equal to 1"),
        ({"kubernetes.jobmanager.cpu.amount": "0"}, r"kubernetes.jobmanager.cpu.amount must be greater than 0"),
        ({"kubernetes.jobmanager.owner.reference": "kind:FlinkJob,name:wc"}, r"owner.reference: .* lacks apiVersion, uid"),
        (
            {"kubernetes.jobmanager.owner.reference": "apiVersion:v1,kind:K,name:n,uid:u,color:red"},
            r"unknown owner reference field 'color'",
        ),
        ({"kubernetes.jobmanager.owner.reference": "apiVersion:v1,kind:K,name:n,uid:u,controller:yes"}, r"controller 'yes' is not"),
        ({"kubernetes.jobmanager.cpu.amount": "lots"}, r"kubernetes.jobmanager.cpu.amount"),
    ],
)
def test_job_manager_errors(values, message):
    with pytest.raises(IllegalConfigurationError, match=message):
        job_manager_parameters(with_keys(values), JOB_ID)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"jobcluster.kubernetes.ingress.tls": "[{hosts: [a]}]"},
            r"^jobcluster.kubernetes.ingress.tls: '\[\{hosts: \[a\]\}\]' is not JSON",
        ),
        (
            {"jobcluster.kubernetes.ingress.tls": '{"hosts": ["a"]}'},
            r"^jobcluster.kubernetes.ingress.tls: .* is not a JSON list of objects",
        ),
        ({"jobcluster.kubernetes.ingress.tls": '[{"host": ["a"]}]'}, r"^jobcluster.kubernetes.ingress.tls: unknown TLS field 'host'"),
        ({"jobcluster.kubernetes.ingress.tls": '[{"hosts": "a"}]'}, r"^jobcluster.kubernetes.ingress.tls: hosts must be a list"),
        (
            {"jobcluster.kubernetes.ingress.template": "Flink.Example.com/x"},
            r"^jobcluster.kubernetes.ingress.template: the host 'Flink.Example.com'",
        ),
        ({"jobcluster.kubernetes.ingress.template": "flink.example.com:8080/x"}, r"the host 'flink.example.com:8080' .* is not a DNS name"),
        ({"jobcluster.kubernetes.ingress.template": "https://"}, r"^jobcluster.kubernetes.ingress.template: 'https://' names neither"),
        (
            {"jobcluster.kubernetes.ingress.template": "/x", "jobcluster.kubernetes.ingress.labels": "team"},
            r"ingress.labels: 'team' is not a map",
        ),
    ],
)
def test_ingress_errors_name_the_key_before_anything_is_created(values, message):
    with pytest.raises(IllegalConfigurationError, match=message):
        job_manager_parameters(with_keys({"jobcluster.kubernetes.ingress.template": "/x", **values}), JOB_ID)


def test_ingress_tls_is_read_only_with_a_template_and_a_wildcard_host_is_a_host():
    # the other ingress options mean nothing without a template: no Ingress, nothing to refuse
    assert job_manager_parameters(with_keys({"jobcluster.kubernetes.ingress.tls": "not json"}), JOB_ID).ingress is None
    params = job_manager_parameters(with_keys({"jobcluster.kubernetes.ingress.template": "*.flink.example.com"}), JOB_ID)
    assert (params.ingress.host, params.ingress.path) == ("*.flink.example.com", None)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("kubernetes.rest-service.exposed.type", "Ingress", "expected one of: ClusterIP, NodePort, LoadBalancer, Headless_ClusterIP"),
        ("kubernetes.container.image.pull-policy", "Sometimes", "expected one of: IfNotPresent, Always, Never"),
        ("kubernetes.taskmanager.memory.limit-factor", "0.5", "too small; expected at least 1"),
    ],
)
def test_the_client_checks_kubernetes_options_before_deploying(key, value, message):
    with pytest.raises(IllegalConfigurationError, match=message):
        validate_configuration(Configuration({key: value}))
