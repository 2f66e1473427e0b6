"""The configuration a Kubernetes job cluster is staged with."""

from __future__ import annotations

from decimal import Decimal

from jobcluster.backends.kubernetes.cluster_config import cluster_side_configuration
from jobcluster.backends.kubernetes.parameters import job_manager_parameters, task_manager_parameters
from jobcluster.config.configuration import Configuration
from jobcluster.config.options import DRIVER_OUTPUT_CONSOLE
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config

JOB_ID = "0123456789abcdef0123456789abcdef"


def staged(values: dict[str, str]) -> Configuration:
    config = Configuration(
        {
            "jobmanager.memory.process.size": "1600m",
            "taskmanager.memory.process.size": "1728m",
            "taskmanager.numberOfTaskSlots": "2",
            **values,
        }
    )
    return cluster_side_configuration(config, job_manager_parameters(config, JOB_ID), task_manager_parameters(config, JOB_ID))


def test_the_deployment_facts_are_pinned_and_client_only_keys_dropped():
    config = staged(
        {
            "rest.port": "0",
            "rest.address": "127.0.0.1",
            "kubernetes.config.file": "/home/me/.kube/config",
            "kubernetes.context": "prod",
            "execution.target": "local",
        }
    )
    assert config["execution.target"] == "kubernetes-application"
    assert config["kubernetes.cluster-id"] == "jobcluster-" + JOB_ID
    assert config["kubernetes.namespace"] == "default"
    assert config["rest.port"] == "8081"
    assert "rest.address" not in config
    assert "kubernetes.config.file" not in config
    assert "kubernetes.context" not in config
    assert config["taskmanager.numberOfTaskSlots"] == "2"  # everything else is the client's


def test_taskmanager_cpu_amount_reaches_the_runtimes_process_spec():
    config = staged({"kubernetes.taskmanager.cpu.amount": "1.5"})
    assert config["taskmanager.cpu.cores"] == "1.5"
    assert task_executor_process_spec_from_config(config).cpu_cores == Decimal("1.5")


def test_explicit_taskmanager_cpu_cores_win():
    assert staged({"taskmanager.cpu.cores": "3", "kubernetes.taskmanager.cpu.amount": "1.5"})["taskmanager.cpu.cores"] == "3"
    assert task_executor_process_spec_from_config(staged({})).cpu_cores == Decimal(2)


def test_the_programs_output_goes_to_the_job_managers_container_log_unless_the_job_says_otherwise():
    assert staged({}).get(DRIVER_OUTPUT_CONSOLE) is True
    assert staged({"jobcluster.driver.output.console": "false"}).get(DRIVER_OUTPUT_CONSOLE) is False
