"""The node's address and the pod IPs handed out in 127.0.0.0/8.

Why: with no network namespaces, giving each pod a loopback address of its own
is what lets two pods bind the same port. Linux routes all of 127.0.0.0/8 to
the loopback device, so any address in the pod CIDR can be bound without
setup. The node itself (``status.hostIP``, host-network pods) is 127.0.0.1,
which the pod CIDR must therefore not contain.
"""

from __future__ import annotations

import ipaddress
import threading

# Pod IPs are taken from this range (one per pod) unless --pod-cidr says otherwise;
# the test cluster picks a random 127.N.0.0/16 so that concurrent clusters do not collide.
DEFAULT_POD_CIDR = "127.1.0.0/16"
HOST_IP = "127.0.0.1"


class PodAddresses:
    """One IP per pod UID from the pod CIDR; an IP is free again once its pod is released."""

    def __init__(self, pod_cidr: str = DEFAULT_POD_CIDR) -> None:
        self.pod_cidr = ipaddress.ip_network(pod_cidr)
        if (
            not isinstance(self.pod_cidr, ipaddress.IPv4Network)  # subnet_of raises TypeError across IP versions
            or not self.pod_cidr.subnet_of(ipaddress.IPv4Network("127.0.0.0/8"))
            or ipaddress.ip_address(HOST_IP) in self.pod_cidr
        ):
            raise ValueError(f"pod CIDR {pod_cidr} must be inside 127.0.0.0/8 and not contain {HOST_IP}")
        self.ips: dict[str, str] = {}
        self.lock = threading.Lock()

    def allocate(self, uid: str) -> str:
        """The pod's IP: the one it already has, else the lowest free one (never .0 or .255)."""
        with self.lock:
            if uid in self.ips:
                return self.ips[uid]
            used = set(self.ips.values())
            for addr in self.pod_cidr.hosts():
                ip = str(addr)
                if ip.endswith((".0", ".255")) or ip in used:
                    continue
                self.ips[uid] = ip
                return ip
        raise RuntimeError("pod IP range exhausted")

    def release(self, uid: str) -> None:
        with self.lock:
            self.ips.pop(uid, None)
