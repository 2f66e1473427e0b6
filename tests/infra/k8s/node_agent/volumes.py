"""A pod's volumes, materialised as directories under the pod's directory.

Why: with no container runtime, a volume is just a directory the container's
mountPath is mapped to (see mounts.py). emptyDir is an empty directory,
hostPath the host's own; configMap, secret, downwardAPI and projected volumes
(service-account tokens included) are written out as files, into a temporary
directory that then replaces the old one, so a retry never sees half a volume.
Any other volume type (PVCs, CSI) is a PodConfigError: the pod stays Pending.
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import Any

from tests.infra.k8s.node_agent.apiserver import ApiServer
from tests.infra.k8s.node_agent.downward_api import field_value, resource_value
from tests.infra.k8s.node_agent.errors import PodConfigError

# Relative path -> (content, file mode or None for the default).
Files = dict[str, tuple[bytes, int | None]]


class PodVolumes:
    """Writes the volumes of one pod (as the pod object is now) under pod_dir/volumes."""

    def __init__(self, api: ApiServer, pod: dict, pod_ip: str, pod_dir: Path, node_allocatable: dict[str, str]) -> None:
        self.api = api
        self.pod = pod
        self.pod_ip = pod_ip
        self.dir = pod_dir
        self.allocatable = node_allocatable
        self.namespace = pod["metadata"]["namespace"]

    def materialise_volume(self, vol: dict) -> Path:
        name = vol["name"]
        path = self.dir / "volumes" / name
        if "hostPath" in vol:
            host = Path(vol["hostPath"]["path"])
            if vol["hostPath"].get("type") in ("DirectoryOrCreate",) and not host.exists():
                host.mkdir(parents=True)
            return host
        if "emptyDir" in vol:
            path.mkdir(parents=True, exist_ok=True)
            return path
        files: Files = {}
        if "configMap" in vol:
            files = self.object_files("configmap", vol["configMap"])
        elif "secret" in vol:
            src = dict(vol["secret"])
            src["name"] = src.get("secretName")
            files = self.object_files("secret", src)
        elif "downwardAPI" in vol:
            files = self.downward_files(vol["downwardAPI"].get("items") or [])
        elif "projected" in vol:
            for source in vol["projected"].get("sources") or []:
                if "configMap" in source:
                    files.update(self.object_files("configmap", source["configMap"]))
                elif "secret" in source:
                    files.update(self.object_files("secret", source["secret"]))
                elif "downwardAPI" in source:
                    files.update(self.downward_files(source["downwardAPI"].get("items") or []))
                elif "serviceAccountToken" in source:
                    tok = source["serviceAccountToken"]
                    files[tok["path"]] = (self.service_account_token(tok).encode(), None)
                else:
                    raise PodConfigError(f"volume {name}: unsupported projected source {sorted(source)}")
        else:
            kinds = sorted(k for k in vol if k != "name")
            raise PodConfigError(f"volume {name}: unsupported volume type {kinds} (node agent)")
        write_files(path, files)
        return path

    def object_files(self, kind: str, src: dict) -> Files:
        obj = self.api.read_object(kind, self.namespace, src["name"])
        if obj is None:
            if src.get("optional"):
                return {}
            raise PodConfigError(f"{kind} {self.namespace}/{src['name']} not found")
        data: dict[str, bytes] = {}
        for k, v in (obj.get("data") or {}).items():
            data[k] = base64.b64decode(v) if kind == "secret" else v.encode()
        for k, v in (obj.get("binaryData") or {}).items():
            data[k] = base64.b64decode(v)
        mode = src.get("defaultMode")
        items = src.get("items")
        if not items:
            return {k: (v, mode) for k, v in data.items()}
        out = {}
        for item in items:
            if item["key"] not in data:
                if src.get("optional"):
                    continue
                raise PodConfigError(f"{kind} {self.namespace}/{src['name']} has no key {item['key']!r}")
            out[item["path"]] = (data[item["key"]], item.get("mode", mode))
        return out

    def downward_files(self, items: list[dict]) -> Files:
        out = {}
        for item in items:
            if "fieldRef" in item:
                value = field_value(self.pod, item["fieldRef"]["fieldPath"], self.pod_ip)
            else:
                ref = item["resourceFieldRef"]
                container = next(
                    (c for c in self.pod["spec"]["containers"] if c["name"] == ref.get("containerName")),
                    self.pod["spec"]["containers"][0],
                )
                value = resource_value(container, ref, self.allocatable)
            out[item["path"]] = (value.encode(), item.get("mode"))
        return out

    def service_account_token(self, source: dict) -> str:
        sa = self.pod["spec"].get("serviceAccountName") or "default"
        meta = self.pod["metadata"]
        spec: dict[str, Any] = {
            "expirationSeconds": source.get("expirationSeconds", 3600),
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]},
        }
        if source.get("audience"):
            spec["audiences"] = [source["audience"]]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        return self.api.create_token(self.namespace, sa, body)


def write_files(path: Path, files: Files) -> None:
    """Replace the directory path with one holding files (written next to it first)."""
    tmp = path.with_name(path.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    for rel, (data, mode) in files.items():
        dest = tmp / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        if mode is not None:
            dest.chmod(mode)
    if path.exists():
        shutil.rmtree(path)
    tmp.rename(path)
