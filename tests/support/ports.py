"""Ports for the tests' servers."""

from __future__ import annotations

import socket


def free_port_block(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` consecutive ports free on ``host`` right now, from a block below the ephemeral range's usual start."""
    for start in range(20000, 32000, count):
        taken: list[socket.socket] = []
        try:
            for port in range(start, start + count):
                sock = socket.socket()
                taken.append(sock)
                sock.bind((host, port))
        except OSError:
            continue
        finally:
            for sock in taken:
                sock.close()
        return list(range(start, start + count))
    raise AssertionError(f"no {count} consecutive free ports on {host}")
