"""What becomes of a run's ledgers on a cluster that outlives it (the external target): the
ledger each example ran on, so that a finding's are kept there, and the target's record of
what it deleted and kept, for the run directory. Every command that runs examples on a target
uses it (``run``, ``replay``, ``scenario``, a ``qualify`` shard); on the other targets it does
nothing, since their clusters go with the run."""

from __future__ import annotations

import weakref
from typing import Any

from conformance.rundir import RunWriter
from conformance.search.program import ExampleRun
from conformance.targets.base import Target


class FindingLedgers:
    """The ledger each example ran on; :meth:`keep` keeps a finding's on the cluster
    (``ExternalTarget.keep_finding_ledgers``), where the run's end would delete it."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._keep = getattr(target, "keep_finding_ledgers", None)
        self._ledgers: weakref.WeakKeyDictionary[ExampleRun, int] = weakref.WeakKeyDictionary()

    def remember(self, phase: str, run: ExampleRun) -> None:
        """``run_search``'s ``on_example``: the example just ran on the target's ledger now."""
        if self._keep is not None:
            self._ledgers[run] = self.current()

    def current(self) -> int:
        return int(self.target.describe().get("ledger_id", -1))

    def keep(self, run: ExampleRun, *, just_ran: bool = False) -> None:
        """Keep ``run``'s ledger on the cluster (``just_ran``: the target's ledger now)."""
        if just_ran:
            self.keep_current()
        else:
            self._keep_ledger(self._ledgers.get(run))

    def keep_current(self) -> None:
        """Keep the ledger the target ran its last example on (a one-example run's finding)."""
        if self._keep is not None:  # the target's description is read only where it counts
            self._keep_ledger(self.current())

    def _keep_ledger(self, ledger: int | None) -> None:
        if self._keep is not None and ledger is not None and ledger >= 0:
            self._keep([ledger])


def ledger_record(target: Target) -> dict[str, Any] | None:
    """The closed target's record of the ledgers it created, deleted and kept (None: its
    cluster went with the run, or it never opened)."""
    record = getattr(target, "ledger_record", None)
    return dict(record) if record is not None else None


def record_ledgers(writer: RunWriter, target: Target) -> None:
    """``results.json``'s ``ledgers``: what became of the ledgers the run created on a
    cluster that outlives it (the external target's record, once it is closed)."""
    record = ledger_record(target)
    if record is not None:
        writer.record("ledgers", record)
