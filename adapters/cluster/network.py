"""Loopback ports and probes: free ports, TCP reachability, port conflicts in process logs.

ZooKeeper's four-letter words are :mod:`adapters.zookeeper.four_letter_words`.
"""

from __future__ import annotations

import contextlib
import socket

LOOPBACK = "127.0.0.1"


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct ports that were free on ``host`` a moment ago.

    All sockets are held open until every port is chosen, so one call never returns the
    same port twice. Another process may still take a port before we bind it; starting
    processes soon after the call keeps that window small.
    """
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(sock.getsockname()[1])
        return ports


def port_accepts(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when a TCP connection to ``host:port`` succeeds within ``timeout`` seconds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


_PORT_CONFLICT_MARKERS = ("Address already in use", "BindException", "EADDRINUSE")


def mentions_port_conflict(log_text: str) -> bool:
    """True when a process log shows it lost a race for its port (bind failed)."""
    return any(marker in log_text for marker in _PORT_CONFLICT_MARKERS)
