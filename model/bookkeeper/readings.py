"""Named readings of the spec: which of :class:`~.config.ModelConfig`'s switches are on, and why.

A *reading* is the spec as one system under test needs it read: TLC's reading of the published
spec (:data:`SPEC`), real bookies (:data:`BOOKIE_AS_IMPLEMENTED`), the Java client in each of
its roles (:data:`JAVA_RECOVERY`, :data:`JAVA_WRITER`, :data:`FAILOVER`). Each switch of a
reading carries its evidence: the BookKeeper source, or the finding, that showed the spec's
step is not what the implementation does (taken from ModelConfig's docstring and
docs/model.md; the details are there).

This module is the one place outside the tests that turns a reading switch on or off: every
configuration that departs from the spec gets there by :meth:`Reading.apply`, and a role's
guidance (the model proposing its plans) and its judge take the same :class:`Reading` object.
:func:`reading_of` says which reading a configuration is.

Not every field of ModelConfig is a reading switch. The spec's constants (bookies, clients,
quorums, limits), the known defects a run reproduces or protects against
(``recovery_reads_fence``, ``recovery_starts_at_fragment``: a scenario's protection, or what
the Java client's frames showed) and the faults a run injects (``max_crashes``,
``crash_when_*``, and the bookies' data-integrity settings ``limbo_on_unclean_shutdown`` /
``fence_on_unclean_shutdown``) are the run's own settings: :data:`RUN_SETTINGS` lists them, and
a reading leaves them as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace

from model.bookkeeper.config import ModelConfig


@dataclass(frozen=True)
class Switch:
    """One reading switch of ModelConfig, and the evidence for turning it on."""

    #: The ModelConfig field.
    name: str
    #: One line: the BookKeeper source and the finding or issue that showed it.
    evidence: str
    #: The run setting without which the switch stays off (None: it always applies).
    only_with: str | None = None
    #: The switch brings a client of its own, the model's last (one client more when on).
    own_client: bool = False


#: Every reading switch, in ModelConfig's order, with its evidence.
SWITCHES: Mapping[str, Switch] = {
    s.name: s
    for s in (
        Switch(
            "late_read_answers_ignored",
            "the spec's intent (IgnoreFurtherReadResponses): a recovery read decides at once "
            "and ignores late answers, as BookKeeper's client does; TLC's reading waits "
            "(docs/model.md, Fidelity)",
        ),
        Switch(
            "lac_counts_as_confirmed",
            "BookKeeper's client completes a recovery's write-backs in order from the LAC its "
            "fencing reads returned; the spec's never retire above a LAC > 0 (issue 15)",
        ),
        Switch(
            "late_read_requests_processed",
            "a fenced read still on the wire reaches its bookie after the client decided: the "
            "Java-client search on real 4.17.3, the writer's add then refused EFENCED (issue 15)",
        ),
        Switch(
            "read_timeouts_per_entry",
            "BookKeeper's client counts each entry's read errors on their own: the Java-client "
            "search on real 4.17.3 (issue 15; docs/findings/java-client-search-4.17.3.md)",
        ),
        Switch(
            "ensembles_may_repeat",
            "BookKeeper's placement policy excludes only the current ensemble and the failed "
            "bookies, so a failed bookie may come back (issue 15, writer runs)",
        ),
        Switch(
            "partial_ensemble_changes",
            "LedgerHandle's delayed failed bookies: failures replaced a change at a time, the "
            "Java-client writer search on 4.17.3 (issue 15; "
            "docs/findings/java-client-writer-4.17.3.md)",
        ),
        Switch(
            "late_adds_after_timeout",
            "BookKeeper's client times an add out while it may still reach its bookie, and "
            "PendingAddOp.writeComplete drops the late answer (issue 29)",
        ),
        Switch(
            "fenced_writer_closes",
            "LedgerHandle.handleUnrecoverableErrorDuringAdd closes at the writer's LAC, "
            "doAsyncCloseInternal's MetadataUpdateLoop over IN_RECOVERY: --role both on 4.17.3 "
            "(issue 29)",
        ),
        Switch(
            "closing_writer_takes_answers",
            "doAsyncCloseInternal runs on the ledger's executor after the add answers queued "
            "there: the 15-minute --role both search on 4.17.3, seed 51 (issue 29)",
        ),
        Switch(
            "completed_adds_ignore_fence",
            "PendingAddOp.writeComplete returns once its add is completed: EFENCED after the ack "
            "quorum changes nothing, the --role both search on 4.17.3 (issue 46)",
        ),
        Switch(
            "resends_carry_first_lac",
            "PendingAddOp.initiate packages an add once (toSend) and sendWriteRequest resends "
            "that buffer: read from BookKeeper's source (issue 46)",
        ),
        Switch(
            "adds_in_arrival_order",
            "a bookie takes adds as they arrive: LedgerHandle.asyncAddEntry uses the new ensemble "
            "before ensembleChangeLoop resends (read from BookKeeper's source, issue 46)",
        ),
        Switch(
            "lac_of_highest_entry",
            "a real bookie answers a fence read with its highest entry's LAC: the first "
            "30-minute race search on real 4.17.3 (issue 30)",
        ),
        Switch(
            "bookie_recovers_limbo",
            "BP-46's DataIntegrityCheckImpl recovers limbo ledgers through the bookie's own "
            "client: make run on 4.17.3 (issue 46; "
            "docs/findings/limbo-ledger-recovered-by-the-bookie.md)",
            only_with="limbo_on_unclean_shutdown",
            own_client=True,
        ),
    )
}

#: The names of the reading switches.
READING_SWITCHES: tuple[str, ...] = tuple(SWITCHES)

#: The fields of ModelConfig that are no reading switch: the run's own settings (see the
#: module docstring), each with what it is.
RUN_SETTINGS: Mapping[str, str] = {
    "bookies": "a constant of the spec",
    "clients": "a constant of the spec",
    "write_quorum": "a constant of the spec",
    "ack_quorum": "a constant of the spec",
    "send_limit": "a constant of the spec",
    "inflight_limit": "a constant of the spec",
    "ensemble_size": "a constant (the spec's extension: striping)",
    "recovery_reads_fence": "a known defect: Defect 1 (#2614), or what the client's frames show",
    "recovery_starts_at_fragment": "a known defect: Defect 2",
    "max_crashes": "a fault the run injects (BookieRestartsEmpty)",
    "crash_when_open": "a fault the run injects",
    "crash_in_recovery": "a fault the run injects",
    "crash_when_closed": "a fault the run injects",
    "limbo_on_unclean_shutdown": "the bookies' data-integrity setting for crashes (BP-46)",
    "fence_on_unclean_shutdown": "the bookies' data-integrity setting for crashes (BP-46)",
    "first_copy_kept": "the bookies' ledger storage (SortedLedgerStorage keeps an entry's first "
    "copy): set by the target from the storage its bookies run",
    "effective_ensemble_size": "derived from the constants",
}


@dataclass(frozen=True)
class Reading:
    """A named set of reading switches: applied to a configuration, exactly these are on."""

    name: str
    #: What the reading is, in a line.
    summary: str
    switches: tuple[Switch, ...] = ()

    def __post_init__(self) -> None:
        for switch in self.switches:
            if SWITCHES.get(switch.name) is not switch:
                raise ValueError(f"{switch.name} is no reading switch of ModelConfig")
        if len({s.name for s in self.switches}) != len(self.switches):
            raise ValueError(f"reading {self.name} names a switch twice")

    @property
    def on(self) -> frozenset[str]:
        """The switches this reading turns on."""
        return frozenset(s.name for s in self.switches)

    def applying(self, cfg: ModelConfig) -> frozenset[str]:
        """The switches on in ``cfg`` read this way (a switch ``only_with`` a run setting that
        ``cfg`` has off stays off)."""
        return frozenset(
            s.name for s in self.switches if s.only_with is None or getattr(cfg, s.only_with)
        )

    def apply(self, cfg: ModelConfig) -> ModelConfig:
        """``cfg`` read this way: each reading switch on exactly when this reading has it (and
        applies), the run's settings unchanged, except one client more (or less) for a
        switch with a client of its own. ``cfg`` itself when nothing changes."""
        wanted = self.applying(cfg)
        changes: dict[str, bool | int] = {}
        clients = cfg.clients
        for switch in SWITCHES.values():
            want = switch.name in wanted
            if getattr(cfg, switch.name) != want:
                changes[switch.name] = want
                if switch.own_client:
                    clients += 1 if want else -1
        if not changes:
            return cfg
        if clients != cfg.clients:
            changes["clients"] = clients
        return replace(cfg, **changes)  # type: ignore[arg-type]

    def plus(self, *names: str, name: str | None = None, summary: str | None = None) -> Reading:
        """This reading with the switches ``names`` on as well."""
        _check_names(names)
        added = [SWITCHES[n] for n in names if n not in self.on]
        return Reading(
            name or f"{self.name} + {', '.join(names)}",
            summary or self.summary,
            _in_order((*self.switches, *added)),
        )

    def without(self, *names: str, name: str | None = None, summary: str | None = None) -> Reading:
        """This reading with the switches ``names`` off."""
        _check_names(names)
        return Reading(
            name or f"{self.name} - {', '.join(names)}",
            summary or self.summary,
            tuple(s for s in self.switches if s.name not in names),
        )

    def describe(self) -> str:
        """``name: switch, switch, ...`` (``name: every switch off``)."""
        return f"{self.name}: {', '.join(s.name for s in self.switches) or 'every switch off'}"


def _check_names(names: Iterable[str]) -> None:
    unknown = [n for n in names if n not in SWITCHES]
    if unknown:
        raise ValueError(f"no reading switch: {', '.join(unknown)}")


def _in_order(switches: Iterable[Switch]) -> tuple[Switch, ...]:
    chosen = {s.name for s in switches}
    return tuple(s for s in SWITCHES.values() if s.name in chosen)


def _reading(name: str, summary: str, *names: str) -> Reading:
    return Reading(name, summary, _in_order(SWITCHES[n] for n in names))


#: The spec as TLC checks it: every switch at its default (the TLC figures are this reading's).
SPEC = _reading("spec", "the spec as TLC checks it: every switch at its default")

#: The spec as its author meant it: a recovery read decides at once (the scenario
#: ``limbo-crash``).
SPEC_AS_INTENDED = _reading(
    "spec-as-intended",
    "the spec with a recovery read decided at once, its late answers ignored",
    "late_read_answers_ignored",
)

#: What real bookies need (``bkconform run`` and ``qualify`` on any target, the race search):
#: their fence read answers their highest entry's LAC, and with limbo they recover the ledger by
#: themselves (one client more).
BOOKIE_AS_IMPLEMENTED = _reading(
    "bookie-as-implemented",
    "the spec's clients on real bookies",
    "lac_of_highest_entry",
    "bookie_recovers_limbo",
)

#: The recovering Java client (``--role recovery``): its judge and its model guidance.
JAVA_RECOVERY = _reading(
    "java-recovery",
    "the Java client recovering a ledger on real bookies",
    "late_read_answers_ignored",
    "late_read_requests_processed",
    "read_timeouts_per_entry",
    "lac_counts_as_confirmed",
    "lac_of_highest_entry",
    "resends_carry_first_lac",
    "adds_in_arrival_order",
)

#: The writing Java client (``--role writer``): its judge and its model guidance.
JAVA_WRITER = _reading(
    "java-writer",
    "the Java client writing a ledger on real bookies",
    "ensembles_may_repeat",
    "partial_ensemble_changes",
    "late_adds_after_timeout",
    "resends_carry_first_lac",
    "adds_in_arrival_order",
)

#: A broker fail-over (``--role both``): the Java writer and the Java recovering client on one
#: ledger, with what the writer does once fenced. Its judge and its guidance (which explores
#: the writer alone: the recovery's switches change nothing there).
FAILOVER = JAVA_WRITER.plus(
    *JAVA_RECOVERY.on,
    "fenced_writer_closes",
    "closing_writer_takes_answers",
    "completed_adds_ignore_fence",
    name="failover",
    summary="the Java client writing a ledger that a second Java client recovers",
)

#: Every named reading.
PRESETS: tuple[Reading, ...] = (
    SPEC,
    SPEC_AS_INTENDED,
    BOOKIE_AS_IMPLEMENTED,
    JAVA_RECOVERY,
    JAVA_WRITER,
    FAILOVER,
)


def bookie_reading(*, spec_bookie_lac: bool = False) -> Reading:
    """The reading of ``bkconform run``, ``model`` and the replay of a blob:
    :data:`BOOKIE_AS_IMPLEMENTED`, or with ``--spec-bookie-lac`` (``spec_bookie_lac``) the
    spec's bookie LAC (the last add's) instead of the highest entry's."""
    if not spec_bookie_lac:
        return BOOKIE_AS_IMPLEMENTED
    return BOOKIE_AS_IMPLEMENTED.without(
        "lac_of_highest_entry", name="bookie-as-implemented, --spec-bookie-lac"
    )


def switches_on(cfg: ModelConfig) -> frozenset[str]:
    """The reading switches ``cfg`` has on."""
    return frozenset(name for name in READING_SWITCHES if getattr(cfg, name))


def reading_of(cfg: ModelConfig) -> Reading:
    """The named reading ``cfg`` is (the first of :data:`PRESETS` whose switches, applied to
    ``cfg``, are the ones it has on), or an unnamed one of the switches it has on."""
    on = switches_on(cfg)
    for preset in PRESETS:
        if preset.applying(cfg) == on:
            return preset
    return Reading(
        f"custom ({', '.join(sorted(on))})",
        "no named reading",
        _in_order(SWITCHES[n] for n in on),
    )


def _check_classification() -> None:
    names = [f.name for f in fields(ModelConfig)]
    unclassified = [n for n in names if n not in SWITCHES and n not in RUN_SETTINGS]
    both = [n for n in names if n in SWITCHES and n in RUN_SETTINGS]
    stale = [n for n in (*SWITCHES, *RUN_SETTINGS) if n not in names]
    if unclassified or both or stale:
        raise AssertionError(
            "ModelConfig's fields must each be a reading switch or a run setting "
            f"(unclassified: {unclassified}; both: {both}; no such field: {stale})"
        )


_check_classification()

__all__ = [
    "BOOKIE_AS_IMPLEMENTED",
    "FAILOVER",
    "JAVA_RECOVERY",
    "JAVA_WRITER",
    "PRESETS",
    "READING_SWITCHES",
    "RUN_SETTINGS",
    "SPEC",
    "SPEC_AS_INTENDED",
    "SWITCHES",
    "Reading",
    "Switch",
    "bookie_reading",
    "reading_of",
    "switches_on",
]
