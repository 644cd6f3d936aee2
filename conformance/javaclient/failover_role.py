"""A broker fail-over (``--role both``): the real Java client writes a ledger and a second one,
of the same release, recovers it while the writer's adds are in flight.

The writer of :mod:`.writer_role` with one thing more: after its first ``recover_after`` adds
are sent, and ``recover_delay_ms`` later (their answers, holds and timeouts still to come), a
second ``BookKeeper`` client in the same JVM (its own bookie connections and ZooKeeper
session, routed through the same proxies) opens the ledger with recovery: it fences the
ledger's bookies, reads and writes back what it finds, and closes the ledger. The writer then
sends its remaining adds (which the fenced bookies must refuse: the writer's handle fails)
and closes (which must fail or agree with the recovery's end). This is what a broker that
takes over a topic does to the ledger of the broker it replaces (apache/bookkeeper#4812's
setting).

Every fault of the writer's extended set applies to both clients' frames (the proxies hold,
drop and forge the recovering client's fence reads, recovery reads and write-backs as they do
the writer's adds: plans name adds only, but crashes, pauses, stalls, restarts and resets hit
both). The judge (:func:`~.writer_story.judge`) tells one story of both clients on the spec's
two-client model: the writer's frames are the model's ``c1``, the recovering client's are
``c2`` (a frame is the recovering client's by its kind: fence and recovery reads, write-backs
with ``RECOVERY_ADD``; the writer sends plain adds only), and the spec's
``NoDivergenceBetweenClientAndMetaData`` is also checked on the real cluster: an entry
acknowledged to the writer beyond the end the recovery gave the ledger is lost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from conformance.javaclient.plans import FaultKind, PlannedFault
from conformance.javaclient.role import Example
from conformance.javaclient.session import SessionLayout
from conformance.javaclient.writer_plans import MAX_DELAY_MS, WriterRunPlan
from conformance.javaclient.writer_role import (
    FaultSet,
    WriterRole,
    smaller_writer_plans,
    writer_run_plans,
)
from conformance.javaclient.writer_story import WriterRecord
from model.bookkeeper.readings import FAILOVER

#: What happens to a bookie between the recovery and the writer's next add.
_REPLACEMENTS = (FaultKind.RESTART_EMPTY, FaultKind.RESTART, FaultKind.CRASH)
#: How long the recovering client waits for a read (a dropped read costs it that long).
RECOVERING_READ_TIMEOUT_S = 2
#: The recovery starts this long after the writer's adds at the latest: around the add
#: timeout (1 s, checked every second) it races the writer's ensemble changes.
MAX_RECOVER_DELAY_MS = min(MAX_DELAY_MS, 2500)


def with_takeover(plan: WriterRunPlan, recover_after: int, delay_ms: int) -> WriterRunPlan:
    """``plan`` as a fail-over: the recovery after ``recover_after`` adds (at most all of
    them), ``delay_ms`` later; the writer's delayed adds, if any, are sent after it."""
    return dataclasses.replace(
        plan,
        delayed=0,
        delay_ms=0,
        recover_after=max(1, min(recover_after, plan.entries)),
        recover_delay_ms=delay_ms,
    )


@st.composite
def failover_plans(draw: st.DrawFn, role: FailoverRole) -> WriterRunPlan:
    plan = draw(
        writer_run_plans(
            role.shape, role.max_faults, role.faults, add_timeout_s=role.add_entry_timeout_s
        )
    )
    recover_after = draw(st.integers(1, plan.entries))
    delay_ms = draw(st.one_of(st.just(0), st.integers(50, MAX_RECOVER_DELAY_MS)))
    after: tuple[PlannedFault, ...] = ()
    before: tuple[PlannedFault, ...] = ()
    if recover_after < plan.entries and role.faults is FaultSet.EXTENDED:
        bookies = st.sampled_from(role.shape.names)
        # A bookie the recovery finds down (it may come back after it).
        down = st.builds(PlannedFault, st.just(FaultKind.CRASH), st.none(), bookies)
        before = tuple(draw(st.lists(down, max_size=1)))
        # Bookies replaced while the writer is idle (#4812): restarted with or without their
        # data at their address, or gone.
        replaced = st.builds(PlannedFault, st.sampled_from(_REPLACEMENTS), st.none(), bookies)
        after = tuple(draw(st.lists(replaced, max_size=2, unique_by=lambda e: e.bookie)))
    return dataclasses.replace(
        with_takeover(plan, recover_after, delay_ms),
        after_recovery=after,
        before_recovery=before,
    )


def smaller_failover_plans(plan: WriterRunPlan) -> Iterator[WriterRunPlan]:
    """The writer's simplifications (each keeps the recovery), a fault before or after the
    recovery taken away, and the recovery moved to after every add (the writer sends nothing
    after it)."""
    yield from smaller_writer_plans(plan)
    for event in plan.after_recovery:
        kept = tuple(e for e in plan.after_recovery if e != event)
        yield dataclasses.replace(plan, after_recovery=kept)
    for event in plan.before_recovery:
        kept = tuple(e for e in plan.before_recovery if e != event)
        yield dataclasses.replace(plan, before_recovery=kept)
    if plan.recover_after is not None and plan.recover_after < plan.entries:
        yield dataclasses.replace(plan, recover_after=plan.entries, after_recovery=())


class FailoverRole(WriterRole):
    """The Java client as the spec's writer ``c1`` and, in a second client, its recovering
    ``c2`` (see the module docstring)."""

    name = "both"
    #: The fail-over's reading of the spec: its guidance (the writer's danger plans, explored
    #: under it) and its judge (``judge_reading`` of a run with a recovery) take this one.
    reading = FAILOVER

    def layout(self) -> SessionLayout:
        return dataclasses.replace(
            super().layout(), recovering_client_read_timeout_s=RECOVERING_READ_TIMEOUT_S
        )

    def describe(self) -> str:
        return f"{super().describe()}; a second client recovers the ledger while it writes"

    def plans(self) -> st.SearchStrategy[WriterRunPlan]:
        return failover_plans(self)

    def guided_plans(self, seed: int, budget_s: float) -> list[WriterRunPlan]:
        """The writer's danger plans (the model's writer alone: ensemble changes with pending
        adds), each with the recovery after the last add, at once and one add timeout later:
        the recovery then meets the writer's pending adds, its ensemble changes and its held
        answers."""
        timeout_ms = self.add_entry_timeout_s * 1000
        return [
            with_takeover(plan, plan.entries, delay)
            for plan in super().guided_plans(seed, budget_s)
            for delay in (0, timeout_ms)
        ]

    def smaller_plans(self, plan: WriterRunPlan) -> Iterator[WriterRunPlan]:
        return smaller_failover_plans(plan)

    def tallies(self, example: Example[WriterRunPlan, WriterRecord]) -> dict[str, Any]:
        takeover = example.record.takeover
        recovered = (
            "no recovery"
            if takeover is None
            else "OK"
            if takeover.error is None
            else takeover.error.split(":")[0]
        )
        return {**super().tallies(example), "recoveries": [recovered]}

    def example_facts(self, example: Example[WriterRunPlan, WriterRecord]) -> dict[str, Any]:
        takeover = example.record.takeover
        return {
            **super().example_facts(example),
            "recovery": None if takeover is None else takeover.describe(),
        }


__all__ = [
    "MAX_RECOVER_DELAY_MS",
    "RECOVERING_READ_TIMEOUT_S",
    "FailoverRole",
    "failover_plans",
    "smaller_failover_plans",
    "with_takeover",
]
