"""``python tests/infra/k8s/node_agent`` or ``python -m tests.infra.k8s.node_agent``: run the node agent.

Why the path fix: cluster.py runs this directory as a script (its own working
directory is the cluster's, not the repository), which puts this directory
first on sys.path and leaves the package unimportable. Putting the repository
root there instead imports the modules as ``tests.infra.k8s.node_agent.*``,
the same as ``-m`` from the root. Only this process's sys.path changes, not
PYTHONPATH, so pods inherit nothing from it.
"""

import sys
from pathlib import Path

if not __package__:
    sys.path[0] = str(Path(__file__).resolve().parents[4])

from tests.infra.k8s.node_agent.cli import main

sys.exit(main())
