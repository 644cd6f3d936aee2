"""The real gate agent in a small JVM, without a bookie: a stand-in
``org.apache.bookkeeper.bookie.LedgerDescriptorImpl`` (a ``ledgerId`` field and an ``addEntry``)
whose calls a driver makes on command. What needs no cluster is tested here: a gate holds only
its ledger, the agent's own hold limit (EXPIRED) and a harness that goes away releasing what it
held, one harness at a time, and the points a class does not have."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.cluster import gate_agent
from adapters.cluster.gates import (
    At,
    GateClient,
    GateHoldExpired,
    GatePoint,
    GateRefused,
    GateTimeout,
)
from adapters.cluster.network import LOOPBACK, free_ports
from adapters.installations.java import find_java, find_javac

STAND_IN = """\
package org.apache.bookkeeper.bookie;

public class LedgerDescriptorImpl {
    private final long ledgerId;

    public LedgerDescriptorImpl(long ledgerId) {
        this.ledgerId = ledgerId;
    }

    long addEntry(Object entry) {
        return 0;
    }
}
"""

DRIVER = """\
import java.io.BufferedReader;
import java.io.InputStreamReader;
import org.apache.bookkeeper.bookie.LedgerDescriptorImpl;

public class Driver {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            long ledger = Long.parseLong(line.trim());
            new Thread(() -> {
                try {
                    java.lang.reflect.Method add = LedgerDescriptorImpl.class
                        .getDeclaredMethod("addEntry", Object.class);
                    add.setAccessible(true);
                    add.invoke(new LedgerDescriptorImpl(ledger), "not a ByteBuf");
                } catch (Exception e) {
                    e.printStackTrace();
                }
                synchronized (System.out) {
                    System.out.println("added " + ledger);
                    System.out.flush();
                }
            }, "adder of " + ledger).start();
        }
    }
}
"""

#: A JVM per test (about 2 s): it starts a real process, so it runs with the cluster tests.
pytestmark = pytest.mark.cluster

HOLD_LIMIT_MS = 600


class Driven:
    """The JVM: ``add(ledger)`` makes a thread call ``addEntry`` of that ledger; ``added``
    collects the ledgers whose calls returned."""

    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.port = port
        self.added: list[int] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("added "):
                with self._changed:
                    self.added.append(int(line.split()[1]))
                    self._changed.notify_all()

    def add(self, ledger: int) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{ledger}\n")
        self.process.stdin.flush()

    def wait_added(self, ledger: int, timeout: float, *, times: int = 1) -> bool:
        """Whether ``times`` calls for ``ledger`` have returned within ``timeout``."""
        with self._changed:
            return self._changed.wait_for(lambda: self.added.count(ledger) >= times, timeout)

    def connect(self) -> GateClient:
        return GateClient.connect(LOOPBACK, self.port, timeout=5.0)


@pytest.fixture
def driven(tmp_path: Path) -> Iterator[Driven]:
    sources = tmp_path / "src"
    (sources / "org/apache/bookkeeper/bookie").mkdir(parents=True)
    (sources / "org/apache/bookkeeper/bookie/LedgerDescriptorImpl.java").write_text(STAND_IN)
    (sources / "Driver.java").write_text(DRIVER)
    classes = tmp_path / "classes"
    subprocess.run(
        [find_javac(), "-d", str(classes), *map(str, sources.rglob("*.java"))],
        check=True,
        timeout=120,
    )
    jar = gate_agent.agent_jar()
    (port,) = free_ports(1)
    option = gate_agent.java_option(jar, port, hold_limit_ms=HOLD_LIMIT_MS)
    process = subprocess.Popen(
        [find_java(), "-XX:TieredStopAtLevel=1", option, "-cp", str(classes), "Driver"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "jvm.log", "w"),  # noqa: SIM115 - the JVM's, closed with it
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        yield Driven(process, port)
    finally:
        process.kill()
        process.wait(timeout=10)
        print((tmp_path / "jvm.log").read_text())


def test_a_gate_holds_its_ledger_only_until_released(driven: Driven) -> None:
    with driven.connect() as gates:
        # Instrumented as its class loads: the stand-in at the first call, Journal never.
        assert gates.points()[GatePoint.STORAGE_ADD.value] == "pending"
        gate = gates.arm(GatePoint.STORAGE_ADD, At.ENTRY, ledger=5)
        driven.add(6)
        assert driven.wait_added(6, 5.0), "a call for another ledger was held"
        points = gates.points()
        assert points[GatePoint.STORAGE_ADD.value] == "installed"
        assert points[GatePoint.SET_FENCED.value] == "missing"  # the stand-in has none
        assert points[GatePoint.JOURNAL_ADD.value] == "pending"
        driven.add(5)
        hold = gates.wait_held(gate, timeout=5.0)
        assert (hold.ledger, hold.entry, hold.thread) == (5, None, "adder of 5")
        assert not driven.wait_added(5, 0.3), "the held call returned"
        gates.release(hold)
        assert driven.wait_added(5, 5.0)
        # The gate held its one thread: the next call goes through.
        driven.add(5)
        with pytest.raises(GateTimeout):
            gates.wait_held(gate, timeout=0.3)


def test_the_agent_ends_a_hold_by_itself_after_its_limit(driven: Driven) -> None:
    with driven.connect() as gates:
        assert gates.hold_limit_ms == HOLD_LIMIT_MS
        gate = gates.arm(GatePoint.STORAGE_ADD, At.EXIT, ledger=5)
        driven.add(5)
        hold = gates.wait_held(gate, timeout=5.0)
        started = time.monotonic()
        assert driven.wait_added(5, 5.0)
        assert time.monotonic() - started >= HOLD_LIMIT_MS / 1000 * 0.8
        with pytest.raises(GateHoldExpired, match=f"after {HOLD_LIMIT_MS} ms"):
            gates.wait_held(gate, timeout=5.0)
        with pytest.raises(GateHoldExpired):
            gates.release(hold)


def test_one_harness_at_a_time_and_its_going_away_releases_everything(driven: Driven) -> None:
    gates = driven.connect()
    try:
        with pytest.raises(GateRefused, match="busy"):
            driven.connect()
        gates.arm(GatePoint.STORAGE_ADD, ledger=5, count=2)
        driven.add(5)
        driven.add(5)
        gates.wait_held(timeout=5.0)
        gates.wait_held(timeout=5.0)
    finally:
        gates.close()
    assert driven.wait_added(5, 2.0, times=2), "closing the connection released nothing"
    # Its gates went with it: a new harness finds none armed, and may connect.
    with driven.connect() as again:
        driven.add(5)
        time.sleep(0.2)
        assert again.release_all() == 0
