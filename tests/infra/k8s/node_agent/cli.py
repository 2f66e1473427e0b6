"""The node agent's command line: arguments, logging, signals, run until stopped.

Why: cluster.py starts the agent as a process of its own (so that its pods and
the test session do not share a process), and stops it with SIGTERM; SIGTERM
or SIGINT make the agent kill its pods and exit.
"""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from tests.infra.k8s.node_agent.addresses import DEFAULT_POD_CIDR
from tests.infra.k8s.node_agent.agent import NodeAgent

log = logging.getLogger("node-agent")


def main(argv: list[str] | None = None) -> int:
    package_doc = sys.modules[__package__].__doc__  # the package docstring's first line describes the agent
    parser = argparse.ArgumentParser(description=(package_doc or "").split("\n")[0])
    parser.add_argument("--kubeconfig", required=True, help="credentials of the node (system:node:<name>)")
    parser.add_argument("--node-name", default=socket.gethostname().lower())
    parser.add_argument("--work-dir", required=True, type=Path, help="pod directories, volumes and logs")
    parser.add_argument("--cpu", help="node CPU capacity (default: this machine's CPU count)")
    parser.add_argument("--memory", help="node memory capacity (default: this machine's RAM)")
    parser.add_argument("--max-pods", type=int, default=110)
    parser.add_argument("--pod-cidr", default=DEFAULT_POD_CIDR, help="pod IPs, inside 127.0.0.0/8")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(threadName)s %(message)s", stream=sys.stderr)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    agent = NodeAgent(args.kubeconfig, args.node_name, args.work_dir, args.cpu, args.memory, args.max_pods, args.pod_cidr)

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("signal %d: stopping", signum)
        agent.stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    agent.run()
    return 0
