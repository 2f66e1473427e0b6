"""pod_status reads what the cluster writes: a TaskManager-like pod that exits is terminated, with its exit code."""

from __future__ import annotations

import json
import time

import kubernetes
import pytest

from jobcluster.backends.kubernetes.pod_status import exit_code, is_scheduled, is_terminated, termination_diagnostics

pytestmark = pytest.mark.k8s

TIMEOUT = (5, 30)


def test_an_exited_container_is_a_terminated_pod(k8s_api, k8s_namespace, k8s_image):
    core = kubernetes.client.CoreV1Api(k8s_api)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "wc-taskmanager-1-1"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "jobcluster-main-container",
                    "image": k8s_image,  # the project's image, on the node (never pulled)
                    "imagePullPolicy": "Never",
                    "command": ["/bin/sh", "-c", "exit 3"],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        },
    }
    core.create_namespaced_pod(k8s_namespace, pod, _request_timeout=TIMEOUT)
    deadline = time.monotonic() + 90
    while True:
        stored = json.loads(
            core.read_namespaced_pod("wc-taskmanager-1-1", k8s_namespace, _preload_content=False, _request_timeout=TIMEOUT).data
        )
        if is_terminated(stored) or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert is_terminated(stored), stored.get("status")
    assert is_scheduled(stored)
    assert exit_code(stored) == 3
    assert termination_diagnostics(stored).startswith(
        "Pod terminated, container termination statuses: [jobcluster-main-container(exitCode=3"
    )
