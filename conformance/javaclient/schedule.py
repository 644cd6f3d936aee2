"""Proxy schedules: which of the Java client's frames the proxies forward, drop or hold.

A schedule is data (so that a run can record it and a search can generate it): per proxy, a
frame match and an action for the next ``times`` matching frames. Matches name what a frame
means (operation, ledger, entry, flags), never a txnId: the client opens its connections
lazily and sends its fence reads in no fixed order (issue 8).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from adapters.netproxy import BookieProxy, Drop, FrameFlag, FrameMatch, Hold, Operation
from adapters.netproxy.policy import Action
from conformance.errors import ConformanceError

#: How much longer than the client's speculative read timeout a held answer is kept: long
#: enough that the client has asked the next bookie AND had its answer (the recipe needs b3's
#: answer first), short enough to arrive within the run's settle time (2 s) and the client's
#: read timeout. 50 ms was too short on a loaded 2-core machine: real 4.11.1 then sometimes got
#: b2's answer first, recovered e0 and showed no Defect 1.
HOLD_MARGIN_S = 0.5


class ScheduleError(ConformanceError, ValueError):
    """A schedule that names a bookie the run does not have."""


@dataclass(frozen=True)
class ScheduledRule:
    #: The model's name of the bookie whose proxy applies the rule (b1..).
    bookie: str
    match: FrameMatch
    action: Action
    times: int | None = 1

    def describe(self) -> str:
        fields = [self.match.direction.value if self.match.direction else "any"]
        if self.match.operation is not None:
            fields.append(self.match.operation.value)
        if self.match.entry_id is not None:
            fields.append(f"entry {self.match.entry_id}")
        if self.match.flags:
            fields.append("+" + ",".join(sorted(f.value for f in self.match.flags)))
        return f"{self.bookie}: {' '.join(fields)} -> {self.action}"


def fence_read(ledger_id: int) -> FrameMatch:
    """The recovery's fencing read-LAC request (entry -1, FENCE_LEDGER)."""
    return FrameMatch.request(
        Operation.READ_ENTRY, ledger_id=ledger_id, entry_id=-1, flags={FrameFlag.FENCE_LEDGER}
    )


def read_answer(ledger_id: int, entry_id: int) -> FrameMatch:
    """A bookie's answer to a read of ``entry_id`` (whatever flags the read carried)."""
    return FrameMatch.response(Operation.READ_ENTRY, ledger_id=ledger_id, entry_id=entry_id)


def defect1_schedule(ledger_id: int, speculative_read_timeout_ms: int) -> tuple[ScheduledRule, ...]:
    """Issue 8's recipe: w2's fence read to b3 is lost, and b2's answer to the recovery read of
    e0 is held past the speculative read timeout (the client asks b3 meanwhile)."""
    hold = speculative_read_timeout_ms / 1000 + HOLD_MARGIN_S
    return (
        ScheduledRule("b3", fence_read(ledger_id), Drop()),
        ScheduledRule("b2", read_answer(ledger_id, 0), Hold(release_after=hold)),
    )


def install(proxies: Mapping[str, BookieProxy], schedule: Sequence[ScheduledRule]) -> list[int]:
    """Add each rule to the proxy of its bookie (``proxies``: the model's bookie name -> the
    proxy standing in for it), in order; returns the rule ids."""
    missing = sorted({rule.bookie for rule in schedule} - set(proxies))
    if missing:
        raise ScheduleError(f"the schedule names bookies {missing}; the run has {sorted(proxies)}")
    return [
        proxies[rule.bookie].add_rule(rule.match, rule.action, times=rule.times)
        for rule in schedule
    ]


__all__ = [
    "HOLD_MARGIN_S",
    "ScheduleError",
    "ScheduledRule",
    "defect1_schedule",
    "fence_read",
    "install",
    "read_answer",
]
