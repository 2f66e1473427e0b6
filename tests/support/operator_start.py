"""The FlinkJob operator started with a defaultConfiguration, as the chart starts it, for the tests of what it
refuses at its start (the process exits before it reaches any API server)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def start_operator(directory: Path, defaults: str, *more: str) -> subprocess.CompletedProcess[str]:
    """``jobcluster operator --default-configuration F [more...]`` where F (in ``directory``) holds the YAML
    ``defaults``; its exit code and output once it has ended (within 60 s)."""
    path = directory / "defaults.yaml"
    path.write_text(defaults)
    argv = [sys.executable, "-m", "jobcluster", "operator", "--default-configuration", str(path), *more]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)
