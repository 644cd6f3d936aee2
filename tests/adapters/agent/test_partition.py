"""Partition and Heal for real: the agent runs in its own network namespace, joined to this
one by a veth pair, and cuts peers with nft or iptables rules inside that namespace only.

Needs root (or CAP_NET_ADMIN), ``ip``, and nft / iptables: asked through
:func:`tests.capability.require` (installed as root when missing; a failure where they could
be installed fails the test, without root it skips with the fix).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from adapters.agent.client import ProcessState
from tests.adapters.agent.conftest import INSTANCE_ID, managed_command, running_agent
from tests.capability import require

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SERVICE_PORT = 7000  # the managed process's port inside the namespace (free: the namespace is new)


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"ip {' '.join(args)}: {result.stderr}")
    return result


@dataclass(frozen=True)
class Namespace:
    name: str
    outside: str  # our address, on the veth end in this namespace
    inside: str  # the agent's address, in its namespace


@pytest.fixture
def namespace() -> Iterator[Namespace]:
    require("network-namespaces")  # root and ip (iproute2, installed as root if missing)
    tag = f"{os.getpid() % 100000}{int(time.monotonic() * 1000) % 1000}"
    name, veth_out, veth_in = f"bkagent-{tag}", f"bka{tag}o", f"bka{tag}i"
    subnet = f"10.231.{os.getpid() % 250}"
    created_ns = created_link = False
    try:
        ip("netns", "add", name)
        created_ns = True
        ip("link", "add", veth_out, "type", "veth", "peer", "name", veth_in, "netns", name)
        created_link = True
        ip("addr", "add", f"{subnet}.1/30", "dev", veth_out)
        ip("link", "set", veth_out, "up")
        ip("-n", name, "addr", "add", f"{subnet}.2/30", "dev", veth_in)
        ip("-n", name, "link", "set", veth_in, "up")
        ip("-n", name, "link", "set", "lo", "up")
        yield Namespace(name, f"{subnet}.1", f"{subnet}.2")
    finally:
        if created_link:
            ip("link", "del", veth_out, check=False)
        if created_ns:
            ip("netns", "del", name, check=False)


def reachable(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_reachable(host: str, port: int, expected: bool, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while reachable(host, port, timeout=0.5) != expected:
        assert time.monotonic() < deadline, f"{host}:{port} reachable != {expected}"
        time.sleep(0.1)


def rules_in(namespace: Namespace, backend: str) -> str:
    argv = ["nft", "list", "ruleset"] if backend == "nft" else ["iptables-save"]
    result = subprocess.run(
        ["ip", "netns", "exec", namespace.name, *argv],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return result.stdout


# Serves SERVICE_PORT; every 0.2 s reports whether the peer given as argv[2] answers.
SERVICE = f"""
import socket, sys, threading, time
server = socket.create_server((sys.argv[3], {SERVICE_PORT}))
def accept():
    while True:
        conn, _ = server.accept()
        conn.close()
threading.Thread(target=accept, daemon=True).start()
host, port = sys.argv[2].rsplit(":", 1)
while True:
    try:
        socket.create_connection((host, int(port)), timeout=0.3).close()
        print("peer reachable", flush=True)
    except OSError:
        print("peer unreachable", flush=True)
    time.sleep(0.2)
"""


def wait_for_peer_report(agent: object, report: str, timeout: float = 10.0) -> None:
    # A poll: the service reports every 0.5 s at most (a 0.3 s connect, a 0.2 s sleep), so 10 s
    # is 20 reports or more.
    client = agent.client()  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = client.log_tail(3).lines
        if lines and lines[-1] == report:
            return
        time.sleep(0.2)
    raise AssertionError(f"the managed process never reported {report!r}: {lines}")


@pytest.mark.parametrize("backend", ["nft", "iptables"])
def test_partition_and_heal_inside_a_namespace(
    agent_dir: Path, namespace: Namespace, backend: str
) -> None:
    require("nftables" if backend == "nft" else "iptables")  # installed as root if missing
    peer_listener = socket.create_server((namespace.outside, 0))
    peer_port = peer_listener.getsockname()[1]
    accepting = True

    def accept_forever() -> None:
        while accepting:
            with contextlib.suppress(OSError):
                conn, _ = peer_listener.accept()
                conn.close()

    thread = threading.Thread(target=accept_forever, daemon=True)
    thread.start()
    command = [*managed_command(agent_dir, SERVICE)]
    command += [f"{namespace.outside}:{peer_port}", namespace.inside]
    args = [
        "--listen", f"{namespace.inside}:0", "--allow-insecure-remote",
        "--log-file", str(agent_dir / "managed.log"), "--firewall", backend,
        "--allow-destructive", "--instance-id", INSTANCE_ID,
    ]  # fmt: skip
    prefix = ["ip", "netns", "exec", namespace.name]
    try:
        with running_agent(agent_dir, *args, "--", *command, prefix=prefix) as agent:
            client = agent.client(instance_id=INSTANCE_ID, timeout=5)
            assert client.status().state is ProcessState.RUNNING
            wait_reachable(namespace.inside, SERVICE_PORT, True)
            wait_for_peer_report(agent, "peer reachable")

            # A bare host: all traffic with us is cut, except the agent's own gRPC port.
            cut = client.partition([namespace.outside])
            assert (cut.peers, cut.backend) == ((namespace.outside,), backend)
            assert not reachable(namespace.inside, SERVICE_PORT)
            wait_for_peer_report(agent, "peer unreachable")
            assert client.status().partitioned_peers == (namespace.outside,)
            assert str(agent.port) in rules_in(namespace, backend)

            healed = client.heal()
            assert healed.peers == ()
            wait_reachable(namespace.inside, SERVICE_PORT, True)
            wait_for_peer_report(agent, "peer reachable")
            assert "agent" not in rules_in(namespace, backend).lower()

            # host:port: only that port of the peer is cut; we still reach the service.
            client.partition([f"{namespace.outside}:{peer_port}"])
            wait_for_peer_report(agent, "peer unreachable")
            assert reachable(namespace.inside, SERVICE_PORT)
            # Left in place: the agent's shutdown must remove it.
            assert "agent" in rules_in(namespace, backend).lower()
        assert agent.process.returncode == 0
        assert "agent" not in rules_in(namespace, backend).lower()
    finally:
        accepting = False
        peer_listener.close()
        thread.join(5)
