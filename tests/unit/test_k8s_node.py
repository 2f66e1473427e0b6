"""The test cluster's node configuration (tests/infra/k8s/node.py): pure builders, checked as data."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tomllib
from pathlib import Path

from tests.infra.k8s.node import (
    BRIDGE,
    NODE_IP,
    PAUSE_IMAGE,
    POD_CIDR,
    build_cni_config,
    build_containerd_config,
    build_corefile,
    build_kubelet_config,
    build_pause_archive,
    upstream_nameservers,
)


def test_the_pause_archive_is_a_docker_archive_whose_layer_matches_its_config():
    with tarfile.open(fileobj=io.BytesIO(build_pause_archive(b"\x7fELF-binary"))) as archive:
        (manifest,) = json.load(archive.extractfile("manifest.json"))  # type: ignore[arg-type]
        layer = archive.extractfile(manifest["Layers"][0]).read()  # type: ignore[union-attr]
        config = json.load(archive.extractfile(manifest["Config"]))  # type: ignore[arg-type]
    assert manifest["RepoTags"] == [PAUSE_IMAGE]
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer).hexdigest()]
    assert config["config"]["Entrypoint"] == ["/pause"]
    with tarfile.open(fileobj=io.BytesIO(layer)) as layer_tar:
        pause = layer_tar.getmember("pause")
    assert pause.mode == 0o755 and pause.size == len(b"\x7fELF-binary")


def test_containerd_runs_runc_with_cgroupfs_the_jobcluster_network_and_the_imported_pause_image(tmp_path: Path):
    text = build_containerd_config(tmp_path / "root", tmp_path / "state", tmp_path / "c.sock", tmp_path / "net.d")
    config = tomllib.loads(text)
    assert config["version"] == 3 and config["grpc"]["address"] == str(tmp_path / "c.sock")
    runtime = config["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is False
    assert runtime["cni"]["conf_dir"] == str(tmp_path / "net.d")
    assert config["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == PAUSE_IMAGE


def test_the_pod_network_is_one_bridge_with_its_gateway_and_host_local_addresses(tmp_path: Path):
    bridge, portmap = build_cni_config(tmp_path)["plugins"]
    assert bridge["bridge"] == BRIDGE and bridge["isGateway"] and bridge["ipMasq"]
    assert bridge["ipam"]["ranges"] == [[{"subnet": POD_CIDR, "gateway": "10.244.0.1"}]]
    assert bridge["ipam"]["dataDir"] == str(tmp_path)
    assert portmap["capabilities"] == {"portMappings": True}


def test_the_kubelet_accepts_cgroup_v1_and_points_pods_at_the_cluster_dns(tmp_path: Path):
    config = build_kubelet_config(
        runtime_socket=tmp_path / "c.sock",
        client_ca=tmp_path / "ca.crt",
        tls_cert=tmp_path / "k.crt",
        tls_key=tmp_path / "k.key",
        healthz_port=10248,
        resolv_conf=tmp_path / "resolv.conf",
        pod_logs_dir=tmp_path / "logs",
    )
    assert config["failCgroupV1"] is False and config["cgroupDriver"] == "cgroupfs"
    assert config["clusterDNS"] == [NODE_IP] and config["address"] == NODE_IP
    assert config["containerRuntimeEndpoint"] == f"unix://{tmp_path / 'c.sock'}"
    assert config["authentication"]["anonymous"] == {"enabled": False}


def test_cluster_dns_binds_the_node_address_and_forwards_only_to_reachable_upstreams(tmp_path: Path):
    upstream = upstream_nameservers("search example.org\nnameserver 127.0.0.53\nnameserver 10.255.255.53\n# nameserver 1.1.1.1\n")
    assert upstream == ["10.255.255.53"]
    corefile = build_corefile(tmp_path / "kc", 8181, 8182, upstream)
    assert f"bind {NODE_IP}" in corefile and "forward . 10.255.255.53" in corefile
    assert f"kubeconfig {tmp_path / 'kc'}" in corefile
    assert "forward" not in build_corefile(tmp_path / "kc", 8181, 8182, [])
