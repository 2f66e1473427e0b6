"""A firewall around one client process tree: the TCP ports it may not connect to, or the only ones it may.

Why: a test cluster runs on this machine, so every port is open to a test's client; a user's machine
outside a real cluster reaches only what the site's firewall lets through. The processes in a cgroup
(v2, the ``unified`` hierarchy of this machine's hybrid cgroup layout) are refused the given ports by
iptables rules that match that cgroup (``-m cgroup --path``), and nothing else on the machine is: the
test cluster's daemons, the test itself and every other process keep their network. A refused connect
fails at once (a TCP reset), as a firewall that rejects does.

Root only, like the rest of the test ground (the Kubernetes node, mount namespaces).
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

CGROUP2_ROOT = Path("/sys/fs/cgroup/unified")


def _refusing(cgroup: str, *match: str) -> list[str]:
    return ["OUTPUT", "-p", "tcp", *match, "-m", "cgroup", "--path", cgroup, "-j", "REJECT", "--reject-with", "tcp-reset"]


@contextmanager
def refused_ports(ports: Iterable[int]) -> Iterator[Path]:
    """A new cgroup whose processes cannot connect to ``ports`` on 127.0.0.1; yields its ``cgroup.procs`` (write a pid
    into it, e.g. ``echo $$ > PROCS`` before ``exec``, and that process and its children are inside). The rules and
    the cgroup go on exit.

    Raises:
        AssertionError: this machine has no cgroup v2 hierarchy at :data:`CGROUP2_ROOT`.
        subprocess.CalledProcessError: iptables refused a rule.
    """
    with _firewalled(lambda name: [_refusing(name, "-d", "127.0.0.1", "--dport", str(port)) for port in sorted(set(ports))]) as procs:
        yield procs


@contextmanager
def only_ports(ports: Iterable[int]) -> Iterator[Path]:
    """A new cgroup whose processes can connect to ``ports`` (at most 15) and to no other TCP port of any address, as a
    client outside a site's firewall that opens only those; otherwise as :func:`refused_ports`."""
    allowed = ",".join(str(port) for port in sorted(set(ports)))
    with _firewalled(lambda name: [_refusing(name, "-m", "multiport", "!", "--dports", allowed)]) as procs:
        yield procs


@contextmanager
def _firewalled(rules_for: Callable[[str], list[list[str]]]) -> Iterator[Path]:
    """A new cgroup, the iptables rules ``rules_for(its name)`` while it is used, its ``cgroup.procs``."""
    assert CGROUP2_ROOT.is_dir(), f"no cgroup v2 hierarchy at {CGROUP2_ROOT}: the client's firewall needs one"
    name = f"jobcluster-client-{uuid.uuid4().hex[:8]}"
    directory = CGROUP2_ROOT / name
    directory.mkdir()
    added: list[list[str]] = []
    try:
        for rule in rules_for(name):
            subprocess.run(["iptables", "-A", *rule], check=True)
            added.append(rule)
        yield directory / "cgroup.procs"
    finally:
        for rule in added:
            subprocess.run(["iptables", "-D", *rule], check=False)
        _remove(directory)


def _remove(directory: Path) -> None:
    """The cgroup, once its processes are gone (a process that outlived the test is moved out first)."""
    procs = directory / "cgroup.procs"
    for pid in procs.read_text().split() if procs.exists() else []:
        (CGROUP2_ROOT / "cgroup.procs").write_text(pid)
    directory.rmdir()
