"""Peers, the rules each backend writes, and the partitioner's bookkeeping (no rules applied:
``test_partition.py`` applies them for real inside a network namespace)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import pytest

from adapters.agent.errors import AgentPreconditionFailed, InvalidAgentRequest
from adapters.agent.firewall import (
    IptablesBackend,
    NftBackend,
    Partitioner,
    Peer,
    parse_peer,
    resolve_peer,
)


def test_parse_peer_forms() -> None:
    assert parse_peer("10.0.0.2") == ("10.0.0.2", None)
    assert parse_peer("zk1:2888") == ("zk1", 2888)
    assert parse_peer(" 10.0.0.2:3181 ") == ("10.0.0.2", 3181)
    assert parse_peer("[fd00::2]:3181") == ("fd00::2", 3181)
    assert parse_peer("[fd00::2]") == ("fd00::2", None)
    assert parse_peer("fd00::2") == ("fd00::2", None)


@pytest.mark.parametrize("bad", ["", "  ", "host:", "host:0", "host:70000", "host:x", "[::1"])
def test_parse_peer_refuses_malformed_peers(bad: str) -> None:
    with pytest.raises(InvalidAgentRequest):
        parse_peer(bad)


def test_resolve_peer() -> None:
    peer = resolve_peer("127.0.0.1:2181")
    assert peer == Peer("127.0.0.1:2181", (ipaddress.ip_address("127.0.0.1"),), 2181)
    assert ipaddress.ip_address("127.0.0.1") in resolve_peer("localhost").addresses
    with pytest.raises(InvalidAgentRequest, match="cannot resolve"):
        resolve_peer("no-such-host.invalid")


PEERS = [
    Peer("10.0.0.2", (ipaddress.ip_address("10.0.0.2"),), None),
    Peer("10.0.0.3:3181", (ipaddress.ip_address("10.0.0.3"),), 3181),
    Peer("[fd00::4]", (ipaddress.ip_address("fd00::4"),), None),
]


def test_nft_ruleset_recreates_the_agents_own_table() -> None:
    script = NftBackend("nft", owner_port=7771).ruleset(PEERS, exempt_port=7771)
    lines = [line.strip() for line in script.splitlines()]
    assert lines[:3] == [
        "table inet bkconform_agent_7771",
        "delete table inet bkconform_agent_7771",
        "table inet bkconform_agent_7771 {",
    ]
    # The exemption comes before every drop in both chains.
    assert lines.index("tcp dport 7771 accept") < lines.index("ip saddr 10.0.0.2 drop")
    assert lines.index("tcp sport 7771 accept") < lines.index("ip daddr 10.0.0.2 drop")
    for rule in (
        "ip saddr 10.0.0.3 tcp sport 3181 drop",
        "ip daddr 10.0.0.3 tcp dport 3181 drop",
        "ip6 saddr fd00::4 drop",
        "ip6 daddr fd00::4 drop",
    ):
        assert rule in lines


def test_iptables_rules_per_ip_version() -> None:
    backend = IptablesBackend("iptables", "ip6tables", owner_port=7771)
    assert backend.chain == "BKCONFORM-AGENT-7771"
    v4 = backend.rules(PEERS, 7771, 4)
    assert v4[:2] == [
        ["-p", "tcp", "--dport", "7771", "-j", "RETURN"],
        ["-p", "tcp", "--sport", "7771", "-j", "RETURN"],
    ]
    assert ["-s", "10.0.0.2", "-j", "DROP"] in v4
    assert ["-d", "10.0.0.3", "-p", "tcp", "--dport", "3181", "-j", "DROP"] in v4
    assert not any("fd00::4" in rule for rule in v4)
    v6 = backend.rules(PEERS, 7771, 6)
    assert ["-s", "fd00::4", "-j", "DROP"] in v6 and len(v6) == 4


def test_iptables_without_ip6tables_refuses_ipv6_peers() -> None:
    backend = IptablesBackend("iptables", None, owner_port=1)
    with pytest.raises(AgentPreconditionFailed, match="ip6tables"):
        backend.apply(PEERS, 1)


def test_no_tool_means_failed_precondition(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    partitioner = Partitioner("auto", exempt_port=7771)
    assert partitioner.backend_name == ""
    with pytest.raises(AgentPreconditionFailed, match="nft or iptables is not on the agent's PATH"):
        partitioner.partition(["10.0.0.2"])
    partitioner.heal()  # nothing to remove, no error
    assert partitioner.peers == []


def test_a_named_backend_is_not_replaced_by_the_other(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "shutil.which", lambda name: "/sbin/iptables" if name == "iptables" else None
    )
    assert Partitioner("nft", exempt_port=1).backend_name == ""
    assert Partitioner("auto", exempt_port=1).backend_name == "iptables"
    assert Partitioner("iptables", exempt_port=1).backend_name == "iptables"


class RecordingBackend:
    name = "recording"

    def __init__(self) -> None:
        self.applied: list[list[str]] = []
        self.removed = 0

    def apply(self, peers: Sequence[Peer], exempt_port: int) -> None:
        self.applied.append(sorted(p.text for p in peers))

    def remove(self) -> None:
        self.removed += 1


def test_partitions_accumulate_until_healed() -> None:
    partitioner = Partitioner("auto", exempt_port=7771)
    backend = RecordingBackend()
    partitioner._backend = backend
    assert partitioner.partition(["10.0.0.2"]) == ["10.0.0.2"]
    assert partitioner.partition(["10.0.0.3:3181", "10.0.0.2"]) == ["10.0.0.2", "10.0.0.3:3181"]
    assert backend.applied == [["10.0.0.2"], ["10.0.0.2", "10.0.0.3:3181"]]
    with pytest.raises(InvalidAgentRequest):
        partitioner.partition(["10.0.0.4", "bad:port"])
    with pytest.raises(InvalidAgentRequest, match="at least one peer"):
        partitioner.partition([])
    assert partitioner.peers == ["10.0.0.2", "10.0.0.3:3181"]  # a bad request changes nothing
    assert len(backend.applied) == 2
    partitioner.heal_if_applied()
    assert (partitioner.peers, backend.removed) == ([], 1)
    partitioner.heal_if_applied()  # nothing applied since: no second removal
    assert backend.removed == 1
