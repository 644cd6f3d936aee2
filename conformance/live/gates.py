"""Gates as a fault kind of the one fault injector (:mod:`.faults`). The race search holds
threads by gate schedules of its own (:mod:`conformance.gated_races`); the Java client's
searches do not draw this kind yet.

``gate`` arms a gate in a bookie's JVM (:mod:`adapters.cluster.gates`): the threads that reach
its point (for its ledger, or any) are held there. It is healed at the run's end, once per
bookie however many gates were armed there: every gate the handler armed on that bookie is
disarmed, which releases what it still holds. A gate is never healed by a timer: the
:class:`~adapters.cluster.gates.GateClient` is driven by the run's one thread, and a heal timer
would be a second."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adapters.cluster.gates import At, Gate, GateClient, GatePoint
from conformance.live.faults import FaultHandler, Injected

VERB = "gate"
HEAL_VERB = "disarm gates"


@dataclass(frozen=True)
class GateFault:
    """A gate to arm: ``count`` threads held at the entry or exit of ``point``, for ``ledger``
    (None: any ledger)."""

    point: GatePoint
    at: At = At.ENTRY
    ledger: int | None = None
    count: int = 1

    def describe(self) -> str:
        ledger = "any ledger" if self.ledger is None else f"ledger {self.ledger}"
        return f"{self.count} at the {self.at.value} of {self.point.value}, {ledger}"


def gate_handler(gates_of: Callable[[str | None], GateClient]) -> FaultHandler[GateFault]:
    """The ``gate`` fault kind; ``gates_of(bookie)`` is that bookie's connected gate client."""
    armed: dict[str | None, list[tuple[GateClient, Gate]]] = {}

    def trigger(server: str | None, fault: GateFault) -> Injected:
        client = gates_of(server)
        gate = client.arm(fault.point, fault.at, ledger=fault.ledger, count=fault.count)
        armed.setdefault(server, []).append((client, gate))

        def disarm_all() -> None:
            for owner, each in armed.pop(server, []):
                owner.disarm(each)

        return Injected(f"gate {gate.id}: {fault.describe()}", heal=disarm_all)

    return FaultHandler(VERB, trigger, heal_verb=HEAL_VERB)


__all__ = ["HEAL_VERB", "VERB", "GateFault", "gate_handler"]
