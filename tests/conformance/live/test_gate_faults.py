"""Gates as a fault kind of the one fault injector (``conformance/live/gates.py``), against the
fake gate agent: armed when injected, every gate of a bookie disarmed by its one heal at the
run's end, and both recorded."""

from __future__ import annotations

from adapters.cluster.gates import At, GateClient, GatePoint
from conformance.live.faults import HEAL_STEP, FaultInjector
from conformance.live.gates import HEAL_VERB, VERB, GateFault, gate_handler
from tests.adapters.cluster.fake_gate_agent import FakeGateAgent


def test_a_gate_is_armed_when_injected_and_disarmed_at_the_end() -> None:
    with FakeGateAgent() as agent, GateClient.connect("127.0.0.1", agent.port) as gates:
        injector = FaultInjector([gate_handler(lambda server: gates)])
        detail = injector.inject(
            VERB, "bookie1", GateFault(GatePoint.SET_FENCED, At.ENTRY, ledger=9), step="step 1"
        )
        assert detail == "gate 1: 1 at the entry of LedgerDescriptorImpl.setFenced, ledger 9"
        injector.inject(VERB, "bookie1", GateFault(GatePoint.STORAGE_ADD, count=2), step="step 2")
        assert injector.in_effect(VERB, "bookie1")
        injector.heal()
        assert agent.commands == [
            "ARM LedgerDescriptorImpl.setFenced entry 9 1",
            "ARM LedgerDescriptorImpl.addEntry entry * 2",
            "DISARM 1",
            "DISARM 2",
        ]
        assert [(e.step, e.verb, e.server) for e in injector.events] == [
            ("step 1", VERB, "bookie1"),
            ("step 2", VERB, "bookie1"),
            (HEAL_STEP, HEAL_VERB, "bookie1"),
        ]
        assert injector.errors == []
