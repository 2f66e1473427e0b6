"""A container's volume mounts, without a mount namespace.

Why: a process here sees the host's filesystem, so ``/etc/config`` cannot be
the pod's ConfigMap. Instead each container gets a root directory
(``$POD_VOLUME_ROOT``) holding a symlink per mountPath to the volume's
directory, and mountPaths in its command, args, env values and workingDir are
rewritten to those host paths: at the start of a word, or after ``=``, ``:``
or ``,``, followed by ``/``, the end, whitespace, ``:`` or ``,``.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from tests.infra.k8s.node_agent.errors import PodConfigError
from tests.infra.k8s.node_agent.image import IMAGE_PATHS

# (mountPath, host path) pairs, longest mountPath first so that nested mounts win.
Mounts = list[tuple[str, str]]


def build_root(root: Path, container: dict, volumes: dict[str, Path]) -> Mounts:
    """Recreate the container's root dir with a symlink per volumeMount; return its mounts."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    pairs = []
    for m in container.get("volumeMounts") or []:
        if m["name"] not in volumes:
            raise PodConfigError(f"container {container['name']}: volume {m['name']!r} not found")
        target = volumes[m["name"]]
        if m.get("subPath"):
            target = target / m["subPath"]
            if not target.exists():
                target.mkdir(parents=True)
        mount_path = os.path.normpath(m["mountPath"])
        if mount_path == "/":
            raise PodConfigError(f"container {container['name']}: mountPath / is not supported")
        link = root / mount_path.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(target)
        pairs.append((mount_path, str(link)))
    mounted = {mount_path for mount_path, _ in pairs}
    pairs += [(path, host) for path, host in IMAGE_PATHS if path not in mounted]  # image.py: what the image would hold
    return sorted(pairs, key=lambda p: len(p[0]), reverse=True)


def rewrite(text: str, mounts: Mounts) -> str:
    """Map mountPaths at the start of a word (or after = : ,) to the container's host paths.

    One pass over ``text``: a host path put in is never rewritten again (a pod that
    mounts ``/tmp`` while its host paths live under ``/tmp`` keeps them intact).
    """
    if not mounts:
        return text
    hosts = dict(mounts)
    alternatives = "|".join(re.escape(mount_path) for mount_path, _ in mounts)  # longest first: nested mounts win
    pattern = r"(?:^|(?<=[\s=:,]))(" + alternatives + r")(?=/|$|[\s:,])"
    return re.sub(pattern, lambda match: hosts[match.group(1)], text)
