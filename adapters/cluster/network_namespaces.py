"""Network namespaces that partition local ZooKeeper servers (``ZooKeeperEnsemble(...,
partitions=True)``, :mod:`adapters.cluster.zookeeper`).

A hub namespace holds a bridge; each server gets a namespace of its own, linked to the bridge
by a veth pair (``h<sid>`` in the hub, ``eth0`` in the server's), and a private address
(``10.213.0.<10 + sid>``) that exists only in namespaces created here. Cutting a server's link
isolates it from the other servers and from clients, which reach the servers from the hub
namespace. Needs root (CAP_NET_ADMIN) and ``ip``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from adapters.cluster.errors import FaultNotSupported


class NamespacedServer(Protocol):
    """What the namespaces need of a server, and set on it: it is given an address and a
    namespace, and a way for clients to enter the network it is reached in."""

    sid: int
    name: str
    host: str
    namespace: str | None
    enter_network: Callable[[], contextlib.AbstractContextManager[None]]


PARTITION_SUBNET = "10.213.0"
_CLONE_NEWNET = 0x40000000


def _ip(*args: str) -> None:
    try:
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=10)
    except FileNotFoundError as exc:
        raise FaultNotSupported("network partitions need the `ip` command (iproute2)") from exc
    except subprocess.CalledProcessError as exc:
        raise FaultNotSupported(
            f"`ip {' '.join(args)}` failed: {exc.stderr.strip()} (network partitions need "
            "root or CAP_NET_ADMIN)"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise FaultNotSupported(f"`ip {' '.join(args)}` did not finish in 10 s") from exc


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        raise FaultNotSupported(f"setns failed: {os.strerror(ctypes.get_errno())}")


class NetworkNamespaces:
    """A hub namespace with a bridge, and one namespace per server linked to it by a veth
    pair (``h<sid>`` in the hub, ``eth0`` in the server's). Only namespaces created here are
    touched; :meth:`destroy` deletes them all."""

    def __init__(self, servers: Iterable[NamespacedServer]) -> None:
        self.prefix = f"bkc{os.getpid()}-{id(self) % 100000}"
        self.hub = f"{self.prefix}-hub"
        self.servers = {s.name: s for s in servers}
        self.created: list[str] = []

    def address(self, server: NamespacedServer) -> str:
        return f"{PARTITION_SUBNET}.{10 + server.sid}"

    def create(self) -> None:
        for name in [self.hub, *(f"{self.prefix}-{n}" for n in self.servers)]:
            _ip("netns", "add", name)
            self.created.append(name)
            _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "addr", "add", f"{PARTITION_SUBNET}.1/24", "dev", "br0")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        for name, server in self.servers.items():
            namespace = f"{self.prefix}-{name}"
            veth = f"h{server.sid}"
            _ip(
                "-n",
                self.hub,
                "link",
                "add",
                veth,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                namespace,
            )
            _ip("-n", self.hub, "link", "set", veth, "master", "br0", "up")
            _ip("-n", namespace, "addr", "add", f"{self.address(server)}/24", "dev", "eth0")
            _ip("-n", namespace, "link", "set", "eth0", "up")
            server.host = self.address(server)
            server.namespace = namespace
            server.enter_network = self.entered

    def destroy(self) -> None:
        for name in reversed(self.created):
            with contextlib.suppress(FaultNotSupported):
                _ip("netns", "del", name)
        self.created.clear()

    def cut(self, server: NamespacedServer) -> None:
        _ip("-n", self.hub, "link", "set", f"h{server.sid}", "down")

    def heal(self, server: NamespacedServer) -> None:
        _ip("-n", self.hub, "link", "set", f"h{server.sid}", "up")

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """Run the block (this thread only) in the hub namespace, where clients live.
        Threads started inside inherit it; sockets opened inside keep it."""
        with (
            open("/proc/thread-self/ns/net", "rb") as own,
            open(f"/run/netns/{self.hub}", "rb") as hub,
        ):
            _setns(hub.fileno())
            try:
                yield
            finally:
                _setns(own.fileno())


def partitions_supported() -> str | None:
    """None when this process can create network namespaces, else the reason it cannot."""
    probe = f"bkc{os.getpid()}-probe"
    try:
        _ip("netns", "add", probe)
        _ip("netns", "del", probe)
    except FaultNotSupported as exc:
        return str(exc)
    return None


__all__ = ["PARTITION_SUBNET", "NamespacedServer", "NetworkNamespaces", "partitions_supported"]
