"""The harness's side of the gates (``adapters/cluster/gates.py``) against a fake agent (a
Python socket server): arming, held threads, releasing, the timeouts on the harness's side, the
agent's own expiry, and bad input or a bad peer as clear errors. Plus the agent's build and
how a bookie loads it (no JVM runs here; the real agent is ``test_gates_cluster.py``'s)."""

from __future__ import annotations

import re
import socket
import time
import zipfile
from pathlib import Path

import pytest

from adapters.cluster import gate_agent
from adapters.cluster.bookies import BookieConfig, BookieProcess, BookieSettings
from adapters.cluster.gates import (
    At,
    GateArgumentError,
    GateClient,
    GateConnectionLost,
    GateHoldExpired,
    GatePoint,
    GateProtocolError,
    GateRefused,
    GateTimeout,
    Hold,
    parse_hold,
)
from adapters.installations import bytebuddy
from tests.adapters.cluster.fake_gate_agent import FakeGateAgent


def connect(agent: FakeGateAgent, timeout: float = 2.0) -> GateClient:
    return GateClient.connect("127.0.0.1", agent.port, timeout=timeout)


def test_connecting_reads_the_greeting_and_the_hold_limit() -> None:
    with FakeGateAgent() as agent, connect(agent) as gates:
        assert gates.hold_limit_ms == 30000


def test_arm_sends_the_gate_and_returns_its_id() -> None:
    with FakeGateAgent() as agent, connect(agent) as gates:
        gate = gates.arm(GatePoint.STORAGE_ADD, At.ENTRY, ledger=42)
        any_ledger = gates.arm(GatePoint.SET_FENCED, At.EXIT, count=3)
        assert (gate.id, gate.ledger, gate.count) == (1, 42, 1)
        assert (any_ledger.id, any_ledger.ledger, any_ledger.at) == (2, None, At.EXIT)
        assert agent.commands == [
            "ARM LedgerDescriptorImpl.addEntry entry 42 1",
            "ARM LedgerDescriptorImpl.setFenced exit * 3",
        ]


def test_a_held_thread_is_reported_and_released() -> None:
    with FakeGateAgent() as agent, connect(agent) as gates:
        gate = gates.arm(GatePoint.STORAGE_ADD, ledger=7)
        hold_id = agent.hold(gate.id, ledger=7, entry=3, thread="pool thread 1")
        hold = gates.wait_held(gate, timeout=2.0)
        assert hold == Hold(
            hold_id, gate.id, GatePoint.STORAGE_ADD, At.ENTRY, 7, 3, "pool thread 1"
        )
        gates.release(hold)
        assert agent.commands[-1] == f"RELEASE {hold_id}"
        assert agent.holds == set()


def test_a_hold_reported_before_a_commands_answer_is_kept_for_wait_held() -> None:
    with FakeGateAgent() as agent, connect(agent) as gates:
        first = gates.arm(GatePoint.JOURNAL_ADD)
        agent.hold(first.id, point=GatePoint.JOURNAL_ADD, entry=None, ledger=None)
        second = gates.arm(GatePoint.LEDGER_HANDLE)  # its answer comes after the HELD
        agent.hold(second.id, point=GatePoint.LEDGER_HANDLE)
        # Waiting on the second gate leaves the first gate's hold queued.
        assert gates.wait_held(second, timeout=2.0).point is GatePoint.LEDGER_HANDLE
        held = gates.wait_held(first, timeout=2.0)
        assert (held.point, held.ledger, held.entry) == (GatePoint.JOURNAL_ADD, None, None)


def test_release_all_and_disarm_report_how_many_they_released() -> None:
    with FakeGateAgent() as agent, connect(agent) as gates:
        gate = gates.arm(GatePoint.STORAGE_ADD, count=2)
        agent.hold(gate.id)
        agent.hold(gate.id)
        assert gates.release_all() == 2
        assert gates.disarm(gate) == 0
        assert agent.commands[-2:] == ["RELEASE-ALL", "DISARM 1"]
        assert gates.points()[GatePoint.FENCE_LEDGER.value] == "installed"


def test_no_thread_held_in_time_is_a_gate_timeout_and_the_client_stays_usable() -> None:
    with FakeGateAgent() as agent, connect(agent) as gates:
        gate = gates.arm(GatePoint.STORAGE_ADD)
        started = time.monotonic()
        with pytest.raises(GateTimeout, match="a thread held at gate 1"):
            gates.wait_held(gate, timeout=0.2)
        assert time.monotonic() - started < 2.0
        agent.hold(gate.id)
        assert gates.wait_held(gate, timeout=2.0).gate == gate.id


def test_an_agent_that_does_not_answer_is_a_gate_timeout_and_the_connection_is_closed() -> None:
    with FakeGateAgent(silent=True) as agent, connect(agent) as gates:
        started = time.monotonic()
        with pytest.raises(GateTimeout, match="the answer to 'ARM"):
            gates.arm(GatePoint.STORAGE_ADD, timeout=0.2)
        assert time.monotonic() - started < 2.0
        # A late answer would be taken for the next command's: the client is closed.
        with pytest.raises(GateConnectionLost, match="closed"):
            gates.release_all()


def test_a_hold_the_agent_ended_by_itself_is_a_harness_error() -> None:
    with FakeGateAgent() as agent, connect(agent) as gates:
        gate = gates.arm(GatePoint.SET_FENCED)
        hold_id = agent.hold(gate.id)
        hold = gates.wait_held(gate, timeout=2.0)
        agent.expire(hold_id, gate.id, after_ms=30000)
        # The expiry is raised by the next wait, once, ...
        with pytest.raises(GateHoldExpired, match=f"hold {hold_id} .* after 30000 ms"):
            gates.wait_held(gate, timeout=2.0)
        assert gates.expired[hold_id].after_ms == 30000
        # ... and by releasing that hold (the agent says it holds no such thread).
        with pytest.raises(GateHoldExpired, match="did not release it in time"):
            gates.release(hold)


def test_releasing_a_hold_the_agent_does_not_know_is_refused() -> None:
    with FakeGateAgent() as agent, connect(agent) as gates:
        ghost = Hold(99, 1, GatePoint.STORAGE_ADD, At.ENTRY, 1, 0, "t")
        with pytest.raises(GateRefused, match="no thread is held as hold 99"):
            gates.release(ghost)
        assert gates.release_all() == 0  # a refusal leaves the connection usable


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"ledger": -1}, "non-negative"),
        ({"count": 0}, "1 to 1000"),
        ({"count": 1001}, "1 to 1000"),
        ({"count": True}, "1 to 1000"),
        ({"ledger": True}, "non-negative"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_sent(
    arguments: dict[str, int], message: str
) -> None:
    with FakeGateAgent() as agent, connect(agent) as gates:
        with pytest.raises(GateArgumentError, match=message):
            gates.arm(GatePoint.STORAGE_ADD, **arguments)  # type: ignore[arg-type]
        with pytest.raises(GateArgumentError, match="GatePoint"):
            gates.arm("LedgerDescriptorImpl.addEntry")  # type: ignore[arg-type]
        assert agent.commands == []


def test_a_point_the_agent_does_not_know_is_refused_with_the_agents_words() -> None:
    agent = FakeGateAgent(points=frozenset({GatePoint.SET_FENCED.value}))
    with agent, connect(agent) as gates:
        with pytest.raises(GateRefused, match=r"unknown point LedgerDescriptorImpl\.addEntry"):
            gates.arm(GatePoint.STORAGE_ADD)
        assert gates.arm(GatePoint.SET_FENCED).id == 1  # a refusal leaves the connection usable


def test_a_peer_that_is_no_gate_agent_is_a_protocol_error() -> None:
    agent = FakeGateAgent(greeting="SSH-2.0-OpenSSH")
    with agent, pytest.raises(GateProtocolError, match="no gate agent"):
        connect(agent)


def test_a_busy_agent_refuses_a_second_harness() -> None:
    agent = FakeGateAgent(greeting="ERR busy: another harness is connected")
    with agent, pytest.raises(GateRefused, match="busy"):
        connect(agent)


def test_a_silent_peer_times_out_on_the_greeting() -> None:
    agent = FakeGateAgent(greeting=None)
    with agent, pytest.raises(GateTimeout, match="greeting"):
        connect(agent, timeout=0.2)


def test_no_agent_listening_is_a_lost_connection_naming_the_remedy() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(GateConnectionLost, match="gates=True"):
        GateClient.connect("127.0.0.1", port, timeout=1.0)


def test_the_agent_going_away_while_waiting_is_a_lost_connection() -> None:
    with FakeGateAgent() as agent, connect(agent) as gates:
        gate = gates.arm(GatePoint.STORAGE_ADD)
        agent.disconnect()
        with pytest.raises(GateConnectionLost, match="closed the connection"):
            gates.wait_held(gate, timeout=2.0)
        assert GateConnectionLost.retriable and not GateTimeout.retriable


def test_a_line_that_is_no_event_is_a_protocol_error() -> None:
    with FakeGateAgent() as agent, connect(agent) as gates:
        agent.send("HELLO again")
        with pytest.raises(GateProtocolError, match="unexpected line"):
            gates.wait_held(timeout=2.0)
    with pytest.raises(GateProtocolError, match="malformed HELD"):
        parse_hold("HELD hold=1 gate=1 point=Nowhere.x at=entry ledger=1 entry=- thread=t")


# The agent's build and loading ---------------------------------------------------------------

JAVA_SOURCE = Path(gate_agent.__file__).parent / "java_sources" / "bkconform" / "GateAgent.java"


def test_the_points_are_the_agents_table() -> None:
    source = JAVA_SOURCE.read_text()
    table = re.findall(r'new Point\(BOOKIE \+ "(\w+)", "(\w+)"', source)
    assert {f"{cls}.{method}" for cls, method in table} == {p.value for p in GatePoint}


def test_the_cache_key_covers_the_bytebuddy_jar_and_the_compiler(tmp_path: Path) -> None:
    old = tmp_path / "byte-buddy-1.18.16.jar"
    new = tmp_path / "byte-buddy-1.18.17.jar"
    old.write_bytes(b"x" * 10)
    new.write_bytes(b"x" * 10)
    keys = {
        gate_agent.cache_key(old, "/usr/bin/javac"),
        gate_agent.cache_key(new, "/usr/bin/javac"),
        gate_agent.cache_key(new, str(tmp_path / "javac")),
    }
    assert len(keys) == 3


def test_the_java_option_names_the_jar_the_port_and_the_hold_limit(tmp_path: Path) -> None:
    jar = tmp_path / "gate-agent.jar"
    assert gate_agent.java_option(jar, 4242, hold_limit_ms=500) == (
        f"-javaagent:{jar}=port=4242,hold-limit-ms=500"
    )
    with pytest.raises(gate_agent.GateAgentUnavailable, match="white space"):
        gate_agent.java_option(tmp_path / "a b" / "gate-agent.jar", 4242)


def test_a_bookie_with_a_gate_port_loads_the_agent_and_one_without_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jar = tmp_path / "gate-agent.jar"
    monkeypatch.setattr(gate_agent, "agent_jar", lambda: jar)
    monkeypatch.setenv("BOOKIE_EXTRA_OPTS", "-Dsomething=1")
    home = tmp_path / "bookkeeper"

    def environment(gate_port: int | None) -> dict[str, str]:
        config = BookieConfig(
            name="bookie1",
            port=3181,
            directory=tmp_path / "bookie1",
            zookeeper_connect="127.0.0.1:2181",
            ledgers_root="/ledgers",
            metadata_service_uri="zk+null://127.0.0.1:2181/ledgers",
            settings=BookieSettings(gates=gate_port is not None),
            gate_port=gate_port,
        )
        return BookieProcess(config, home, tmp_path / "logs").process.env or {}

    assert environment(5151)["BOOKIE_EXTRA_OPTS"] == (
        f"-javaagent:{jar}=port=5151,hold-limit-ms=30000 -Dsomething=1"
    )
    assert environment(None)["BOOKIE_EXTRA_OPTS"] == "-Dsomething=1"


@pytest.mark.cluster  # Maven (ByteBuddy, on a fresh machine) and javac: real processes
def test_the_agent_builds_against_the_installed_bytebuddy_and_is_cached() -> None:
    # Installs ByteBuddy from Maven on a fresh machine (once), compiles once; then cached.
    jar = gate_agent.agent_jar()
    assert jar.is_file() and jar.parent.parent.name == "gate-agent"
    assert (jar.parent / bytebuddy.jar_name(bytebuddy.DEFAULT_VERSION)).is_file()
    assert gate_agent.agent_jar() == jar
    with zipfile.ZipFile(jar) as packaged:
        manifest = packaged.read("META-INF/MANIFEST.MF").decode()
        assert "Premain-Class: bkconform.GateAgent" in manifest
        assert f"Class-Path: byte-buddy-{bytebuddy.DEFAULT_VERSION}.jar" in manifest
        assert "bkconform/GateAgent$Gates.class" in packaged.namelist()
