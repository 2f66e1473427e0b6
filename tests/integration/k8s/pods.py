"""What the Kubernetes tests give the job clusters' pods: the image, and directories of this machine.

Why: the pods run in real containers of the project's image, so a path of the
test (a corpus, an output directory, a stand-in entry point) exists in a pod
only if it is mounted there. ``host_path_template`` writes a pod template that
mounts directories of this machine (the test cluster's one node) at the same
paths in the main container, as a user would mount a shared volume; the
containers run as the image's user (uid 9999), so the directories are opened
to it (read, or also write).
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

MAIN_CONTAINER = "jobcluster-main-container"


def open_to_containers(directory: Path, writable: bool = False) -> Path:
    """Let the containers' user read (and write) ``directory`` and what is below it; the path is returned."""
    mode_dirs, mode_files = (0o777, 0o666) if writable else (0o755, 0o644)
    directory.chmod(mode_dirs)
    for root, dirs, files in os.walk(directory):
        for name in dirs:
            Path(root, name).chmod(mode_dirs)
        for name in files:
            path = Path(root, name)
            path.chmod(mode_files | (path.stat().st_mode & 0o111))
    return directory


def host_path_template(path: Path, directories: list[Path], writable: list[Path] = ()) -> Path:  # type: ignore[assignment]
    """A pod template (YAML at ``path``) mounting each directory at its own path in the main container.

    ``writable``: those of ``directories`` the containers write to (an output directory).
    """
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", **host_path_pod(directories, writable)}, sort_keys=False))
    return path


def host_path_pod(directories: list[Path], writable: list[Path] = ()) -> dict:  # type: ignore[assignment]
    """The pod template of :func:`host_path_template` as a FlinkJob's ``podTemplate`` field holds it."""
    volumes, mounts = [], []
    for n, directory in enumerate(directories):
        open_to_containers(directory, writable=directory in writable)
        volumes.append({"name": f"host-{n}", "hostPath": {"path": str(directory), "type": "Directory"}})
        mounts.append({"name": f"host-{n}", "mountPath": str(directory)})
    return {"spec": {"containers": [{"name": MAIN_CONTAINER, "volumeMounts": mounts}], "volumes": volumes}}


#: The labels of a namespace that enforces Pod Security "restricted" (a pod that does not comply is refused).
RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}

# The test node has this machine's 2 cores, shared by the pods of several job clusters: small CPU requests so
# that they all fit, limits of a whole core (Flink's limit factors) so that no JVM starts at a quarter's pace.
TEST_NODE_CPU = {
    "kubernetes.jobmanager.cpu.amount": "0.25",
    "kubernetes.jobmanager.cpu.limit-factor": "4",
    "kubernetes.taskmanager.cpu.amount": "0.5",
    "kubernetes.taskmanager.cpu.limit-factor": "2",
}


def image_options(image: str) -> dict[str, str]:
    """The options that run a job cluster on the project's image, present on the node (never pulled)."""
    return {"kubernetes.container.image.ref": image, "kubernetes.container.image.pull-policy": "Never"}
