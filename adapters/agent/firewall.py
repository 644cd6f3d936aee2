"""Network partitions: DROP rules against given peers, in a table (nft) or chain (iptables)
that the agent owns alone, so healing removes exactly what the agent added.

* nft: table ``inet bkconform_agent_<port>`` with an input and an output chain, rebuilt atomically
  (``nft -f -``) on every change, deleted on heal.
* iptables (and ip6tables for IPv6 peers): chain ``BKCONFORM-AGENT-<port>`` jumped to from INPUT and
  OUTPUT, flushed and refilled on every change, unhooked and deleted on heal.

A peer ``host`` loses all traffic with this host; ``host:port`` loses TCP traffic to and from
that port of it (what isolating one server of several on the same machine needs). The agent's
own gRPC port is always exempt, so a partition never cuts the caller that must later heal it.
Host names are resolved when the partition is applied. ``<port>`` is the agent's gRPC port, so
two agents on one host (a bookie's and a ZooKeeper server's) never touch each other's rules.
"""

from __future__ import annotations

import ipaddress
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from adapters.agent.errors import (
    AgentCallFailed,
    AgentPreconditionFailed,
    InvalidAgentRequest,
)

NFT_TABLE_PREFIX = "bkconform_agent_"
IPTABLES_CHAIN_PREFIX = "BKCONFORM-AGENT-"
COMMAND_TIMEOUT = 10.0

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Peer:
    """One ``host[:port]`` to cut off, with the addresses its host resolved to."""

    text: str
    addresses: tuple[IPAddress, ...]
    port: int | None


def parse_peer(text: str) -> tuple[str, int | None]:
    """``"10.0.0.2"``, ``"zk1:2888"``, ``"[fd00::2]:3181"``, ``"fd00::2"`` -> (host, port)."""
    text = text.strip()
    if not text:
        raise InvalidAgentRequest("empty peer: give host or host:port")
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise InvalidAgentRequest(f"peer {text!r}: expected [IPv6]:port")
        port_text = rest[1:] if rest else None
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:  # a bare host name, IPv4 or IPv6 address
        host, port_text = text, None
    if port_text is None:
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise InvalidAgentRequest(f"peer {text!r}: {port_text!r} is not a TCP port")
    return host, int(port_text)


def resolve_peer(text: str) -> Peer:
    host, port = parse_peer(text)
    try:
        addresses: tuple[IPAddress, ...] = (ipaddress.ip_address(host),)
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise InvalidAgentRequest(f"peer {text!r}: cannot resolve {host!r}: {exc}") from exc
        addresses = tuple(sorted({ipaddress.ip_address(info[4][0]) for info in infos}, key=str))
    return Peer(text.strip(), addresses, port)


class FirewallBackend(Protocol):
    name: str

    def apply(self, peers: Sequence[Peer], exempt_port: int) -> None:
        """Make the agent's rules cut exactly ``peers`` (replacing earlier rules)."""

    def remove(self) -> None:
        """Remove every rule, chain or table the agent added; no error if there is none."""


def _run(argv: Sequence[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AgentCallFailed(f"cannot run {argv[0]}: {exc}") from exc


def _check(result: subprocess.CompletedProcess[str], what: str) -> None:
    if result.returncode != 0:
        raise AgentCallFailed(
            f"{what} failed (exit {result.returncode}): {result.stderr.strip() or '?'}. "
            "The agent needs root or CAP_NET_ADMIN to change firewall rules"
        )


class NftBackend:
    name = "nft"

    def __init__(self, executable: str, owner_port: int) -> None:
        self.executable = executable
        self.table = f"{NFT_TABLE_PREFIX}{owner_port}"

    def ruleset(self, peers: Sequence[Peer], exempt_port: int) -> str:
        """The nft script that (re)creates the agent's table for ``peers``."""
        inbound = [f"tcp dport {exempt_port} accept"]
        outbound = [f"tcp sport {exempt_port} accept"]
        for peer in peers:
            for address in peer.addresses:
                family = "ip" if address.version == 4 else "ip6"
                if peer.port is None:
                    inbound.append(f"{family} saddr {address} drop")
                    outbound.append(f"{family} daddr {address} drop")
                else:
                    inbound.append(f"{family} saddr {address} tcp sport {peer.port} drop")
                    outbound.append(f"{family} daddr {address} tcp dport {peer.port} drop")

        def chain(name: str, hook: str, rules: list[str]) -> str:
            body = "".join(f"    {rule}\n" for rule in rules)
            return (
                f"  chain {name} {{\n    type filter hook {hook} priority -10; policy accept;\n"
                f"{body}  }}\n"
            )

        # Declaring then deleting the table makes the script work whether or not it exists;
        # nft applies the whole script as one transaction.
        return (
            f"table inet {self.table}\ndelete table inet {self.table}\n"
            f"table inet {self.table} {{\n"
            + chain("input", "input", inbound)
            + chain("output", "output", outbound)
            + "}\n"
        )

    def apply(self, peers: Sequence[Peer], exempt_port: int) -> None:
        script = self.ruleset(peers, exempt_port)
        _check(_run([self.executable, "-f", "-"], stdin=script), "nft -f (partition)")

    def remove(self) -> None:
        script = f"table inet {self.table}\ndelete table inet {self.table}\n"
        _check(_run([self.executable, "-f", "-"], stdin=script), "nft delete table (heal)")


class IptablesBackend:
    name = "iptables"

    def __init__(self, iptables: str, ip6tables: str | None, owner_port: int) -> None:
        self.iptables = iptables
        self.ip6tables = ip6tables
        self.chain = f"{IPTABLES_CHAIN_PREFIX}{owner_port}"

    def _tools(self) -> list[str]:
        return [self.iptables] + ([self.ip6tables] if self.ip6tables else [])

    def rules(self, peers: Sequence[Peer], exempt_port: int, version: int) -> list[list[str]]:
        """``-A`` argument lists for the agent's chain (addresses of IP ``version`` only)."""
        rules = [
            ["-p", "tcp", "--dport", str(exempt_port), "-j", "RETURN"],
            ["-p", "tcp", "--sport", str(exempt_port), "-j", "RETURN"],
        ]
        for peer in peers:
            for address in peer.addresses:
                if address.version != version:
                    continue
                if peer.port is None:
                    rules.append(["-s", str(address), "-j", "DROP"])
                    rules.append(["-d", str(address), "-j", "DROP"])
                else:
                    port = str(peer.port)
                    rules.append(["-s", str(address), "-p", "tcp", "--sport", port, "-j", "DROP"])
                    rules.append(["-d", str(address), "-p", "tcp", "--dport", port, "-j", "DROP"])
        return rules

    def apply(self, peers: Sequence[Peer], exempt_port: int) -> None:
        if self.ip6tables is None and any(a.version == 6 for p in peers for a in p.addresses):
            raise AgentPreconditionFailed("IPv6 peers need ip6tables, which is not on PATH")
        for version, tool in ((4, self.iptables), (6, self.ip6tables)):
            if tool is None:
                continue
            if _run([tool, "-w", "-n", "-L", self.chain]).returncode != 0:
                _check(_run([tool, "-w", "-N", self.chain]), f"{tool} -N")
            _check(_run([tool, "-w", "-F", self.chain]), f"{tool} -F")
            for rule in self.rules(peers, exempt_port, version):
                _check(_run([tool, "-w", "-A", self.chain, *rule]), f"{tool} -A")
            for hook in ("INPUT", "OUTPUT"):
                if _run([tool, "-w", "-C", hook, "-j", self.chain]).returncode != 0:
                    _check(_run([tool, "-w", "-I", hook, "1", "-j", self.chain]), f"{tool} -I")

    def remove(self) -> None:
        for tool in self._tools():
            if _run([tool, "-w", "-n", "-L", self.chain]).returncode != 0:
                continue
            for hook in ("INPUT", "OUTPUT"):
                while _run([tool, "-w", "-D", hook, "-j", self.chain]).returncode == 0:
                    pass
            _check(_run([tool, "-w", "-F", self.chain]), f"{tool} -F")
            _check(_run([tool, "-w", "-X", self.chain]), f"{tool} -X")


def find_backend(preference: str, owner_port: int) -> FirewallBackend | None:
    """The backend to use (``auto``: nft, else iptables), or None if its tool is missing."""
    if preference in ("auto", "nft"):
        nft = shutil.which("nft")
        if nft:
            return NftBackend(nft, owner_port)
        if preference == "nft":
            return None
    iptables = shutil.which("iptables")
    if iptables:
        return IptablesBackend(iptables, shutil.which("ip6tables"), owner_port)
    return None


class Partitioner:
    """The peers currently cut off, and the backend that cuts them."""

    def __init__(self, preference: str, exempt_port: int) -> None:
        self._preference = preference
        self.exempt_port = exempt_port
        self._lock = threading.Lock()
        self._peers: dict[str, Peer] = {}
        self._backend: FirewallBackend | None = find_backend(preference, exempt_port)
        self._applied = False

    @property
    def backend_name(self) -> str:
        return "" if self._backend is None else self._backend.name

    @property
    def peers(self) -> list[str]:
        with self._lock:
            return sorted(self._peers)

    def _require_backend(self) -> FirewallBackend:
        if self._backend is None:
            wanted = "nft or iptables" if self._preference == "auto" else self._preference
            raise AgentPreconditionFailed(
                f"cannot partition: {wanted} is not on the agent's PATH. Install nftables "
                "(or iptables) on the host or in the container, and run the agent as root or "
                "with CAP_NET_ADMIN"
            )
        return self._backend

    def partition(self, peers: Iterable[str]) -> list[str]:
        """Cut ``peers`` off too (on top of those already cut); returns every cut peer."""
        backend = self._require_backend()
        resolved = [resolve_peer(text) for text in peers]
        if not resolved:
            raise InvalidAgentRequest("Partition needs at least one peer")
        with self._lock:
            wanted = dict(self._peers)
            wanted.update((peer.text, peer) for peer in resolved)
            self._applied = True
            backend.apply(list(wanted.values()), self.exempt_port)
            self._peers = wanted
            return sorted(self._peers)

    def heal(self) -> None:
        """Remove every rule the agent added (also ones a killed predecessor left behind)."""
        with self._lock:
            if self._backend is not None:
                self._backend.remove()
            self._peers = {}
            self._applied = False

    def heal_if_applied(self) -> None:
        """The agent's shutdown: remove the rules if this agent ever added any."""
        if self._applied:
            self.heal()
