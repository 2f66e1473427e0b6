"""The node agent's pure parts, without a cluster: pod IPs, $(VAR) expansion, mounts,
the downward API, a container's environment, restart rules and pod status.

Why: the integration tests (tests/integration/k8s) prove the agent end to end,
but they take a control plane and half a minute; the rules here are cheap to
pin down one by one, and a regression in them shows up as a confusing pod
failure there.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from tests.infra.k8s.node_agent.addresses import HOST_IP, PodAddresses
from tests.infra.k8s.node_agent.container_run import ContainerRun
from tests.infra.k8s.node_agent.downward_api import field_value, resource_value
from tests.infra.k8s.node_agent.environment import VOLUME_ROOT_ENV, container_environment, expand_vars
from tests.infra.k8s.node_agent.errors import PodConfigError
from tests.infra.k8s.node_agent.mounts import build_root, rewrite
from tests.infra.k8s.node_agent.pod_status import Conditions, pod_phase, pod_status
from tests.infra.k8s.node_agent.processes import POD_UID_ENV
from tests.infra.k8s.node_agent.restarts import (
    BACKOFF_MAX_SECONDS,
    BACKOFF_RESET_SECONDS,
    backoff_delay,
    failures_after_exit,
    should_restart,
)
from tests.infra.k8s.node_agent.volumes import write_files

POD = {
    "metadata": {
        "name": "web-0",
        "namespace": "ns",
        "uid": "uid-1",
        "labels": {"b": "2", "a": "1"},
        "annotations": {"note": "x"},
    },
    "spec": {"nodeName": "node", "serviceAccountName": "sa", "containers": [{"name": "main"}]},
}


# -- pod IPs


def test_each_pod_gets_its_own_ip_and_keeps_it():
    pool = PodAddresses("127.5.0.0/16")
    first, second = pool.allocate("a"), pool.allocate("b")
    assert first == "127.5.0.1" and second == "127.5.0.2"
    assert pool.allocate("a") == first


def test_a_released_ip_is_handed_out_again():
    pool = PodAddresses("127.5.0.0/16")
    pool.allocate("a")
    pool.allocate("b")
    pool.release("a")
    pool.release("never-allocated")
    assert pool.allocate("c") == "127.5.0.1"


def test_ips_ending_in_0_or_255_are_skipped():
    pool = PodAddresses("127.5.0.0/23")
    ips = [pool.allocate(str(i)) for i in range(300)]
    assert not [ip for ip in ips if ip.endswith((".0", ".255"))]
    assert "127.5.1.1" in ips and len(set(ips)) == 300


def test_an_exhausted_range_is_an_error():
    pool = PodAddresses("127.5.0.0/30")  # hosts .1 and .2
    pool.allocate("a")
    pool.allocate("b")
    with pytest.raises(RuntimeError, match="exhausted"):
        pool.allocate("c")


@pytest.mark.parametrize("cidr", ["10.0.0.0/24", "127.0.0.0/16", "127.0.0.0/8"])
def test_the_pod_cidr_must_be_loopback_without_the_host_ip(cidr):
    with pytest.raises(ValueError, match=r"127\.0\.0\.0/8"):
        PodAddresses(cidr)


# -- $(VAR) expansion


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)-$(B)", "1-two"),
        ("$(MISSING)/$(A)", "$(MISSING)/1"),
        ("$$(A) costs $$5", "$(A) costs $5"),
        ("$(A", "$(A"),
        ("plain", "plain"),
    ],
)
def test_expand_vars_follows_kubernetes_rules(text, expected):
    assert expand_vars(text, {"A": "1", "B": "two"}) == expected


# -- mounts


def test_mount_paths_are_rewritten_at_word_starts_only():
    mounts = [("/etc/app/conf", "/h/conf"), ("/etc/app", "/h/app")]
    assert rewrite("/etc/app/conf/x.yaml", mounts) == "/h/conf/x.yaml"
    assert rewrite("--config=/etc/app,/etc/app/conf:/etc/app", mounts) == "--config=/h/app,/h/conf:/h/app"
    assert rewrite("cat /etc/app/a /etc/app", mounts) == "cat /h/app/a /h/app"
    assert rewrite("/x/etc/app /etc/apple", mounts) == "/x/etc/app /etc/apple"


def test_build_root_links_mounts_longest_first(tmp_path: Path):
    conf, data = tmp_path / "vol-conf", tmp_path / "vol-data"
    conf.mkdir()
    data.mkdir()
    container = {
        "name": "main",
        "volumeMounts": [
            {"name": "data", "mountPath": "/var/data/"},
            {"name": "conf", "mountPath": "/var/data/conf"},
            {"name": "data", "mountPath": "/srv/sub", "subPath": "a/b"},
        ],
    }
    root = tmp_path / "rootfs" / "main"
    root.mkdir(parents=True)
    (root / "stale").write_text("from a previous attempt")
    mounts = build_root(root, container, {"conf": conf, "data": data})
    assert [pair for pair in mounts if not pair[0].startswith("/opt/jobcluster")] == [
        ("/var/data/conf", str(root / "var/data/conf")),
        ("/var/data", str(root / "var/data")),
        ("/srv/sub", str(root / "srv/sub")),
    ]
    assert (root / "var/data").resolve() == data.resolve()
    assert (root / "srv/sub").resolve() == (data / "a" / "b").resolve() and (data / "a" / "b").is_dir()
    assert not (root / "stale").exists()


@pytest.mark.parametrize(
    ("mount", "message"),
    [({"name": "nope", "mountPath": "/x"}, "volume 'nope' not found"), ({"name": "v", "mountPath": "/"}, "mountPath /")],
)
def test_build_root_refuses_bad_mounts(tmp_path: Path, mount, message):
    with pytest.raises(PodConfigError, match=message):
        build_root(tmp_path / "root", {"name": "main", "volumeMounts": [mount]}, {"v": tmp_path})


# -- downward API


def test_field_values_come_from_the_pod():
    assert field_value(POD, "metadata.name", "127.5.0.1") == "web-0"
    assert field_value(POD, "metadata.labels", "127.5.0.1") == 'a="1"\nb="2"'
    assert field_value(POD, "metadata.labels['b']", "127.5.0.1") == "2"
    assert field_value(POD, "metadata.annotations['missing']", "127.5.0.1") == ""
    assert field_value(POD, "status.podIP", "127.5.0.1") == "127.5.0.1"
    assert field_value(POD, "status.hostIP", "127.5.0.1") == HOST_IP
    with pytest.raises(PodConfigError, match="unsupported fieldRef"):
        field_value(POD, "status.phase", "127.5.0.1")


def test_resource_values_round_up_and_fall_back_to_the_node():
    container = {"resources": {"requests": {"memory": "100Mi", "cpu": "250m"}}}
    assert resource_value(container, {"resource": "requests.memory", "divisor": "1Mi"}, {}) == "100"
    assert resource_value(container, {"resource": "requests.cpu"}, {}) == "1"
    assert resource_value(container, {"resource": "limits.cpu"}, {"cpu": "4"}) == "4"
    assert resource_value(container, {"resource": "requests.ephemeral-storage"}, {"ephemeral-storage": "9"}) == "0"


# -- a container's environment


def test_container_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KUBECONFIG", "/secret/kubeconfig")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("PYTEST_SOMETHING", "x")
    monkeypatch.setenv("FROM_AGENT", "kept")
    objects = {
        ("configmap", "ns", "cm"): {"data": {"MODE": "fast", "CONF": "/etc/app/app.conf"}},
        ("secret", "ns", "sec"): {"data": {"PASSWORD": base64.b64encode(b"hunter2").decode()}},
    }
    container = {
        "name": "main",
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}, {"secretRef": {"name": "gone", "optional": True}}],
        "env": [
            {"name": "GREETING", "value": "hello $(CM_MODE) $(UNDEFINED)"},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "PASSWORD"}}},
            {"name": "OPTIONAL", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "nope", "optional": True}}},
        ],
    }
    env = container_environment(
        container,
        tmp_path,
        pod=POD,
        pod_ip="127.5.0.1",
        api_host_port=("127.0.0.1", 6443),
        read_object=lambda kind, ns, name: objects.get((kind, ns, name)),
        node_allocatable={},
        rewrite=lambda text: rewrite(text, [("/etc/app", "/h/app")]),
    )
    assert "KUBECONFIG" not in env and "PYTEST_SOMETHING" not in env
    assert env["FROM_AGENT"] == "kept"
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1" and env["KUBERNETES_PORT"] == "tcp://127.0.0.1:6443"
    assert env["HOSTNAME"] == "web-0" and env[POD_UID_ENV] == "uid-1" and env[VOLUME_ROOT_ENV] == str(tmp_path)
    assert env["GREETING"] == "hello fast $(UNDEFINED)"
    assert env["CM_CONF"] == "/h/app/app.conf"
    assert env["POD_IP"] == "127.5.0.1"
    assert env["PASSWORD"] == "hunter2"
    assert "OPTIONAL" not in env
    assert os.environ["KUBECONFIG"] == "/secret/kubeconfig"  # the agent's own environment is untouched


def test_a_missing_config_map_key_is_a_config_error(tmp_path: Path):
    container = {"name": "main", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}]}
    with pytest.raises(PodConfigError, match="configmap ns/cm key 'k' not found"):
        container_environment(
            container,
            tmp_path,
            pod=POD,
            pod_ip="127.5.0.1",
            api_host_port=("127.0.0.1", 6443),
            read_object=lambda *_: None,
            node_allocatable={},
            rewrite=lambda text: text,
        )


# -- restarts


def terminated(kind: str, code: int) -> ContainerRun:
    run = ContainerRun({"name": "c"}, kind)
    run.state = {"terminated": {"exitCode": code}}
    return run


@pytest.mark.parametrize(
    ("kind", "code", "policy", "restart"),
    [
        ("sidecar", 0, "Never", True),
        ("init", 0, "Always", False),
        ("init", 1, "OnFailure", True),
        ("init", 1, "Never", False),
        ("main", 0, "Always", True),
        ("main", 0, "OnFailure", False),
        ("main", 2, "OnFailure", True),
        ("main", 2, "Never", False),
    ],
)
def test_restart_policy(kind, code, policy, restart):
    assert should_restart(terminated(kind, code), policy) is restart


def test_backoff_doubles_to_its_cap_and_resets_after_a_long_run():
    assert [backoff_delay(n) for n in (0, 1, 2, 3, 4)] == [1.0, 1.0, 2.0, 4.0, 8.0]
    assert backoff_delay(30) == BACKOFF_MAX_SECONDS
    assert failures_after_exit(3, 1.0) == 4
    assert failures_after_exit(3, BACKOFF_RESET_SECONDS + 1) == 0


# -- pod status


def test_pod_phase():
    ran, waiting = ContainerRun({"name": "a"}, "main"), ContainerRun({"name": "b"}, "main")
    ran.ever_ran = True
    assert pod_phase("Failed", True, True, [ran]) == "Failed"
    assert pod_phase(None, False, True, [ran]) == "Pending"
    assert pod_phase(None, True, False, [ran]) == "Pending"
    assert pod_phase(None, True, True, [ran, waiting]) == "Pending"
    assert pod_phase(None, True, True, [ran]) == "Running"


def status_of(runs_main, conditions, **overrides):
    args = {
        "pod": {"status": {"conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "Unknown"}]}},
        "phase": "Pending",
        "terminal_phase": None,
        "failed": False,
        "initialized": False,
        "prepared": False,
        "runs_init": [],
        "runs_main": runs_main,
        "config_error": None,
        "pod_ip": "127.5.0.1",
        "start_time": "t0",
        "conditions": conditions,
    }
    args.update(overrides)
    return pod_status(**args)


def test_a_config_error_shows_as_create_container_config_error():
    run = ContainerRun({"name": "main", "image": "img"}, "main")
    status = status_of([run], Conditions(), config_error="configmap ns/cm not found")
    assert status["phase"] == "Pending" and status["message"] == "configmap ns/cm not found"
    [container] = status["containerStatuses"]
    assert container["state"] == {"waiting": {"reason": "CreateContainerConfigError", "message": "configmap ns/cm not found"}}
    assert run.state == {"waiting": {"reason": "ContainerCreating"}}  # the record itself is unchanged
    assert status["podIP"] == "127.5.0.1" and status["hostIP"] == HOST_IP


def test_conditions_keep_others_and_their_transition_times(monkeypatch: pytest.MonkeyPatch):
    import tests.infra.k8s.node_agent.pod_status as pod_status_module

    clock = ["t1"]
    monkeypatch.setattr(pod_status_module, "now_rfc3339", lambda: clock[0])
    run = ContainerRun({"name": "main"}, "main")
    conditions = Conditions()
    first = status_of([run], conditions)
    by_type = {c["type"]: c for c in first["conditions"]}
    assert by_type["PodScheduled"] == {"type": "PodScheduled", "status": "True"}
    assert by_type["Ready"]["status"] == "False" and by_type["Ready"]["reason"] == "ContainersNotReady"
    assert by_type["Initialized"]["status"] == "True"  # no init containers
    assert {c["lastTransitionTime"] for t, c in by_type.items() if t != "PodScheduled"} == {"t1"}

    class Running:  # stands in for a Popen
        pid = 42

    clock[0] = "t2"
    run.proc, run.ready, run.startup_ok, run.ever_ran = Running(), True, True, True
    second = status_of([run], conditions, phase="Running", initialized=True, prepared=True)
    by_type = {c["type"]: c for c in second["conditions"]}
    assert by_type["Ready"] == {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": "t2"}
    assert by_type["Initialized"]["lastTransitionTime"] == "t1"  # unchanged status keeps its time
    assert second["containerStatuses"][0]["containerID"] == "process://42"
    assert second["message"] is None


# -- volumes


def test_write_files_replaces_the_volume(tmp_path: Path):
    vol = tmp_path / "volumes" / "cm"
    vol.mkdir(parents=True)
    (vol / "old").write_text("old")
    write_files(vol, {"a.conf": (b"A", None), "dir/b": (b"B", 0o600)})
    assert sorted(p.relative_to(vol).as_posix() for p in vol.rglob("*")) == ["a.conf", "dir", "dir/b"]
    assert (vol / "dir" / "b").stat().st_mode & 0o777 == 0o600
    assert not vol.with_name("cm.tmp").exists()


def test_the_images_entry_points_are_this_repositorys(tmp_path):
    from tests.infra.k8s.node_agent.image import REPO
    from tests.infra.k8s.node_agent.mounts import build_root, rewrite

    mounts = build_root(tmp_path / "root", {"name": "main"}, {})
    assert rewrite("/opt/jobcluster/bin/jobmanager", mounts) == f"{REPO}/entrypoints/jobmanager"
    assert (REPO / "entrypoints" / "jobmanager").is_file()
    assert rewrite("/opt/jobcluster/binary", mounts) == "/opt/jobcluster/binary"  # a word boundary, as for volumes


def test_a_host_path_put_in_is_not_rewritten_again():
    from tests.infra.k8s.node_agent.mounts import rewrite

    mounts = [("/etc/jobcluster", "/tmp/pods/p/rootfs/etc/jobcluster"), ("/tmp", "/tmp/pods/p/rootfs/tmp")]
    assert rewrite("--conf=/etc/jobcluster/a.yaml", mounts) == "--conf=/tmp/pods/p/rootfs/etc/jobcluster/a.yaml"
    assert rewrite("/tmp/x /etc/jobcluster", mounts) == "/tmp/pods/p/rootfs/tmp/x /tmp/pods/p/rootfs/etc/jobcluster"
