"""The image, as this machine stands in for it (jobcluster's image: entrypoints/Dockerfile).

Why: the agent pulls no image, yet manifests name what the image holds, and a
chart installed with its CI values must run unchanged.  So a container sees:

- the image's ``/opt/jobcluster/bin`` (the entry points) as this repository's
  ``entrypoints/``, rewritten like a volume's mountPath;
- the image's Python first on ``PATH``: the Python running this agent (the test
  virtualenv, where jobcluster is installed).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]

#: (path in the image, path on this machine)
IMAGE_PATHS = (("/opt/jobcluster/bin", str(REPO / "entrypoints")),)


def image_python_dir() -> str:
    """The directory of the image's ``python``/``python3``: this agent's interpreter's."""
    return str(Path(sys.executable).parent)
