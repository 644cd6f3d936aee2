"""Constants of the specification and the switches for known defects and extensions."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from model.errors import ModelError


class ConfigError(ModelError, ValueError):
    """A model configuration that the specification's ASSUMEs (or an extension) rule out."""


@dataclass(frozen=True)
class ModelConfig:
    """The spec's CONSTANTS, plus switches.

    Defaults are the spec as published (both defects fixed, no crashes). Which switches a
    run turns on is a named *reading* of the spec (``model/bookkeeper/readings.py``: the
    spec as TLC checks it, real bookies, the Java client in each role), applied with
    ``Reading.apply``: outside the tests no other code sets a reading switch. The defects
    (``recovery_reads_fence``, ``recovery_starts_at_fragment``) and the crash settings are
    the run's own (``readings.RUN_SETTINGS``).

    Switches and their sources:

    - ``recovery_reads_fence`` (default True). Recovery reads carry the fence flag. False is
      BookKeeper before 4.14.0, the spec's Defect 1 (seed 000, BookKeeper issue #2614).
    - ``recovery_starts_at_fragment`` (default True). A recovery client's LAC floor is the first
      entry of the current fragment minus one. False reproduces Defect 2, the invalid fragment
      (seed 000).
    - ``max_crashes`` (default 0) with ``crash_when_open`` / ``crash_in_recovery`` /
      ``crash_when_closed``: a bookie crashes and restarts with its data for this ledger lost
      (entries and LAC), the ``BookieRestartsEmpty`` actions of BookKeeperProtocolWithLimbo
      (seed 001), bounded in number and each switchable per ledger status.
    - ``limbo_on_unclean_shutdown`` / ``fence_on_unclean_shutdown`` (default False): after such a
      crash, a bookie in the ledger's last ensemble of a ledger that is not CLOSED restarts with
      the ledger in limbo / fenced, as BookKeeper's data integrity check does (BP-46). In limbo it
      answers Unknown, not NoSuchEntry, for entries it does not hold and for fencing LAC reads.
    - ``late_read_answers_ignored`` (default False). The spec conjoins
      ``IgnoreFurtherReadResponses`` with ``MessageProcessed`` in a recovery read decision; TLC
      evaluates the second assignment to ``messages'`` as an equality test, so a decision is
      only enabled when no other read answer of that client is still in flight (and with all
      answers delivered a recovery can stall). False keeps TLC's reading, which the TLC figures
      depend on; True is the evident intent: decide at once and ignore the late answers.
    - ``lac_counts_as_confirmed`` (default False). When an add confirmation recomputes a
      client's LAC, the entries up to its current LAC count as confirmed. The spec's
      ``MaxContiguousConfirmedEntry(confirmed)`` counts from entry 1 over the client's own
      ``confirmed``; a recovery client's is empty below the LAC its fencing reads returned, so
      with that LAC > 0 its write-backs never leave ``pending_add_ops`` and
      ``RecoveryClientClosesLedger`` is never enabled (a liveness gap: no invariant breaks).
      True is BookKeeper's client, whose adds complete in order from the recovered LAC on. It
      changes nothing for the writer (its LAC is its own contiguous confirmed entries).
    - ``late_read_requests_processed`` (default False; needs ``late_read_answers_ignored``).
      ``IgnoreFurtherReadResponses`` drops the decided read's undelivered messages, its
      *requests* too: a fenced recovery read still on its way to a bookie then never fences
      it. In BookKeeper the request is on the wire and the bookie processes it (and is fenced
      by it) whatever the client decided meanwhile. True keeps the requests: a bookie answers a
      read of an entry its client no longer reads, with every effect of the read, and the
      client ignores the answer. Found by the Java-client search on real 4.17.3 (a fenced read
      answered after the decision, then the writer's add refused EFENCED: no step of the
      spec's).
    - ``read_timeouts_per_entry`` (default False). ``ReadTimeoutCount`` counts every lost read
      message of the client: a read lost while recovering an earlier entry still counts as a
      timeout for each later entry (lost messages stay lost), so the spec's recovery can decide
      Unknown, and abort, where the client has heard nothing wrong about the entry it reads.
      BookKeeper's client counts the errors of each entry's read on their own. True counts only
      the reads of the entry being read. Found by the Java-client search on real 4.17.3.
    - ``ensembles_may_repeat`` (default False). The spec's ``ValidEnsemble`` refuses an ensemble
      that an earlier fragment of the ledger already has, so a writer whose replacement bookie
      fails cannot go back to the first ensemble. BookKeeper's placement policy only excludes
      the current ensemble and the failed bookies: with one spare bookie, b2 failing (b4 in)
      and then b4 failing brings b2 back. True drops that conjunct (the Java-client writer
      runs turn it on).
    - ``partial_ensemble_changes`` (default False). The spec's ``ChangeEnsemble`` replaces
      exactly the bookies whose writes timed out, all at once. BookKeeper handles bookie
      failures as they come: a failure reported while an ensemble change is in progress waits
      for the next change (``LedgerHandle``'s delayed failed bookies), so two timed-out bookies
      may be replaced one change at a time, and the second change may even pick the bookie
      the first one dropped. True lets a change replace any non-empty subset of the timed-out
      bookies. Found by the Java-client writer search on 4.17.3 (docs/findings/).
    - ``late_adds_after_timeout`` (default False). In the spec an add is delivered or lost,
      and ``ChangeEnsemble`` replaces a bookie whose add was lost (``ClearWriteTimeout`` then
      retires the lost message). BookKeeper's client times an add out and changes its
      ensemble while the request may still be on its way: the bookie stores the entry later
      and answers a client that has moved on, which drops the answer (the timed-out
      completion is gone, and ``PendingAddOp.writeComplete`` ignores an answer from a bookie
      no longer at that place of its ensemble). True: (1) an ensemble change leaves the lost
      add requests of the bookies it replaces LATE instead of processed; (2) a bookie may
      process a LATE add at any time (``BookieSendsAddConfirmedResponse``, or
      ``...FencedResponse`` if fenced): it stores the entry, keeps the higher of its LAC and
      the add's, and its answer, delivered or lost, is dropped by the client (it never joins
      the messages); (3) a client takes an add answer only from a bookie of the entry's write
      set in its current ensemble, and consumes any other (a stale answer) without effect
      (``ClientReceivesAddConfirmedResponse`` / ``...FencedResponse``), where the spec takes
      any bookie of the ensemble and leaves the others' answers in flight for ever. A bookie
      that crashes loses the LATE adds to it (no new timeout: the client acted on them).
    - ``fenced_writer_closes`` (default False). In the spec a writer that receives an
      EFENCED answer withdraws (``ClientReceivesAddFencedResponse``), and its close is a CAS
      with its own metadata version on an OPEN ledger. BookKeeper's writer closes the ledger
      at its LAC when an add is fenced (``LedgerHandle.handleUnrecoverableErrorDuringAdd``:
      its own copy of the metadata, which never saw the recovery's IN_RECOVERY, decides), and
      its close (``doAsyncCloseInternal``'s ``MetadataUpdateLoop``) re-reads the metadata on a
      version conflict and closes any ledger not yet CLOSED, IN_RECOVERY included; the
      recovering client's close (``ReadOnlyLedgerHandle.closeRecovered``) writes only if the
      ledger is still IN_RECOVERY, and otherwise ends with the metadata as it finds it. True:
      (1) the fenced writer becomes CLOSING instead of withdrawing; (2) an OPEN or CLOSING
      writer's ``ClientClosesLedgerSuccess`` closes the ledger at its LAC whenever it is OPEN
      or IN_RECOVERY, and its ``ClientClosesLedgerFail`` needs it CLOSED; (3) a recovering
      client that finished reading and writing back, on a ledger someone else closed, takes
      ``RecoveryClientClosesLedger`` without writing: its LAC becomes the ledger's last
      entry. Found by the Java-client fail-over runs (``--role both``) on 4.17.3.
    - ``closing_writer_takes_answers`` (default False; needs ``fenced_writer_closes``). A
      CLOSING writer still takes add confirmations (``ClientReceivesAddConfirmedResponse``)
      until its close, which is then at the LAC they raised: BookKeeper's close after a fenced
      add (``doAsyncCloseInternal``) runs on the ledger's ordered executor, after the add
      answers already queued there, which complete their adds and move the LAC. Found by the
      15-minute ``--role both`` search on 4.17.3 (seed 51): an add acknowledged on an answer
      that reached the client in the millisecond of another add's EFENCED.
    - ``completed_adds_ignore_fence`` (default False). In the spec a writer withdraws on any
      EFENCED add answer (``ClientReceivesAddFencedResponse``). BookKeeper's
      ``PendingAddOp.writeComplete`` returns early once its add is completed (it has its ack
      quorum): a later error answer, EFENCED included, only marks the bookie as a delayed
      write failure, for an ensemble change at the next add's ``initiate`` (which finds the
      ledger IN_RECOVERY or CLOSED after a real fence and fails the pending adds). True: an
      EFENCED answer to an add with ``AckQuorum`` confirmations is consumed without effect,
      and the writer goes on. Found by the ``--role both`` search on 4.17.3 (issue 46): b2's
      EFENCED answers to e0..e2 reached the writer after b1 and b3 had confirmed them, and
      the writer then sent e3.
    - ``resends_carry_first_lac`` (default False). In the spec a resent add
      (``ResendPendingAddOp``) carries the client's LAC at the resend (``GetAddEntryRequests``
      puts ``c.lac`` in every request). BookKeeper packages an add once, with the LAC of that
      moment (``PendingAddOp.initiate``: ``computeDigestAndPackageForSending(entryId,
      lh.lastAddConfirmed, ...)`` into ``toSend``), and every resend to a replacement bookie
      sends that same buffer (``sendWriteRequest``). True: a pending add keeps the LAC its
      first requests carried (a write-back: its ``ClientWritesBackEntry``), and its resends
      carry it. Read from BookKeeper's source (issue 46): it decides what a replacement bookie
      answers a recovery's fence read when the LAC moved between an add's first send and its
      resend. The Java-client judges turn it on.
    - ``adds_in_arrival_order`` (default False). In the spec a bookie takes a client's adds
      earliest entry first (``IsEarliestMsg`` in ``BookieSendsAddConfirmedResponse`` and
      ``BookieSendsAddFencedResponse``), whatever order they were sent in. A real bookie
      takes them as they arrive on the connection, and BookKeeper's client can send a later
      entry to a replacement bookie before the resends of earlier ones: an add made while
      an ensemble change completes takes the new ensemble (``LedgerHandle.asyncAddEntry``:
      ``PendingAddOp.create(..., getCurrentEnsemble(), ...)``, set as soon as the metadata
      write returns) before ``ensembleChangeLoop``'s completion, a later task on the ledger's
      executor, resends the pending adds (``unsetSuccessAndSendWriteRequest``). True: a bookie
      may take any of a client's adds first (a conformance judge supplies the order from the
      frames). The bookie's LAC is then the LAC its highest entry carries, as with
      ``lac_of_highest_entry`` (an add taken late must not lower it). Read from BookKeeper's
      source (issue 46); the Java-client judges turn it on.
    - ``lac_of_highest_entry`` (default False). In the spec a bookie's LAC (what its fence
      read answers) is the LAC of the last add it processed (``b_lac' = msg.lac``). A real
      bookie answers a fence read with its last entry, the highest it holds, and its LAC: an
      older entry written back later by a recovery leaves it as it was. True: the bookie's LAC
      is the LAC its highest entry carries. Found by the first 30-minute race search on real
      4.17.3 (``bkconform run --races``): b3 held e1 and e2 (LAC 1), the recovery wrote e1
      (LAC 0) back to it, and its fence read answered LAC 1 where the spec says 0. ``bkconform
      run`` turns it on (``--spec-bookie-lac``: off).
    - ``first_copy_kept`` (default False; with ``lac_of_highest_entry``). What a bookie keeps
      of an entry it is sent again (a recovery's write-back of an entry it holds): the spec's
      bookie takes the latest copy's LAC. SortedLedgerStorage keeps the first copy
      (``EntryMemTable.internalAdd``: ``kvmap.putIfAbsent``, release-4.14.7 to 4.18.0), and a
      fence read answers the highest entry's copy in the memtable: the first copy's LAC.
      DbLedgerStorage (``WriteCache.put`` overwrites) and the reference bookie keep the latest,
      as the spec does. True: a bookie that holds the entry keeps its LAC. Not a reading of
      the spec but the bookies' storage: set by the target from the ledger storage its bookies
      run (``TargetSpec.as_stored``). Both storages answer from their newest in-memory
      generation, so a checkpoint between the two copies and the fence read may answer
      otherwise (a limit: docs/model.md). Found by the race search on real 4.14.7, 4.16.6
      and 4.17.3 bookies on SortedLedgerStorage (issue 47's findings table): a write-back of
      e2 with LAC 0 after the writer's e2 with LAC 1, then a fence read answered LAC 1.
    - ``bookie_recovers_limbo`` (default False; needs ``limbo_on_unclean_shutdown`` and two
      clients or more). BP-46's data-integrity service: a bookie that restarted with the ledger
      in limbo recovers it by itself, through the bookie's internal client (BookKeeper's
      ``DataIntegrityCheckImpl`` opens each limbo ledger with recovery, every 3 s from the
      bookie's start), then leaves limbo, copying back the closed ledger's entries its write
      sets name it for (``EntryCopierImpl``). True: the **last** client is that internal
      client: it never creates or writes the ledger, and starts a recovery (the spec's own
      recovery actions, but for BookKeeper's start: over a ledger already IN_RECOVERY it writes
      nothing) only while a bookie of the ledger's last ensemble is in limbo; and
      ``BookieLeavesLimbo`` clears a bookie's limbo once the ledger is CLOSED, copying back the
      entries it lacks that another bookie holds. A harness never drives these steps: a
      conformance run observes them (:func:`model.bookkeeper.actions.bookie_internal`).
      Found by ``make run`` on 4.17.3 (docs/findings/limbo-ledger-recovered-by-the-bookie.md).
    - ``ensemble_size`` (default: the write quorum, as in the spec). Larger values enable
      striping: entry ``e`` is written to the write quorum of bookies that starts at position
      ``(e - 1) mod E`` of the ensemble (bookies in ascending order).
    """

    bookies: int = 3
    clients: int = 2
    write_quorum: int = 3
    ack_quorum: int = 2
    send_limit: int = 1
    inflight_limit: int = 1
    ensemble_size: int | None = None
    recovery_reads_fence: bool = True
    recovery_starts_at_fragment: bool = True
    max_crashes: int = 0
    crash_when_open: bool = True
    crash_in_recovery: bool = True
    crash_when_closed: bool = True
    limbo_on_unclean_shutdown: bool = False
    fence_on_unclean_shutdown: bool = False
    late_read_answers_ignored: bool = False
    lac_counts_as_confirmed: bool = False
    late_read_requests_processed: bool = False
    read_timeouts_per_entry: bool = False
    ensembles_may_repeat: bool = False
    partial_ensemble_changes: bool = False
    late_adds_after_timeout: bool = False
    fenced_writer_closes: bool = False
    closing_writer_takes_answers: bool = False
    completed_adds_ignore_fence: bool = False
    resends_carry_first_lac: bool = False
    adds_in_arrival_order: bool = False
    lac_of_highest_entry: bool = False
    bookie_recovers_limbo: bool = False
    first_copy_kept: bool = False
    # Derived in __post_init__; not a constant of the spec.
    effective_ensemble_size: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.bookies < 1 or self.bookies > 16:
            raise ConfigError(f"bookies must be between 1 and 16, got {self.bookies}")
        if self.clients < 1 or self.clients > 8:
            raise ConfigError(f"clients must be between 1 and 8, got {self.clients}")
        if self.send_limit < 1:
            raise ConfigError(
                f"send_limit must be > 0 (ASSUME SendLimit > 0), got {self.send_limit}"
            )
        if self.inflight_limit < 1:
            raise ConfigError(f"inflight_limit must be > 0, got {self.inflight_limit}")
        if self.write_quorum < 1 or self.ack_quorum < 1:
            raise ConfigError("write_quorum and ack_quorum must be > 0")
        if self.write_quorum < self.ack_quorum:
            raise ConfigError(
                f"ASSUME WriteQuorum >= AckQuorum: write_quorum={self.write_quorum} "
                f"< ack_quorum={self.ack_quorum}"
            )
        ensemble = self.write_quorum if self.ensemble_size is None else self.ensemble_size
        if ensemble < self.write_quorum:
            raise ConfigError(
                f"ensemble_size ({ensemble}) must be >= write_quorum ({self.write_quorum})"
            )
        if ensemble > self.bookies:
            raise ConfigError(
                f"ensemble_size ({ensemble}) exceeds the number of bookies ({self.bookies})"
            )
        if self.max_crashes < 0:
            raise ConfigError(f"max_crashes must be >= 0, got {self.max_crashes}")
        if self.late_read_requests_processed and not self.late_read_answers_ignored:
            raise ConfigError(
                "late_read_requests_processed needs late_read_answers_ignored (a decision "
                "with read answers still in flight)"
            )
        if self.closing_writer_takes_answers and not self.fenced_writer_closes:
            raise ConfigError(
                "closing_writer_takes_answers needs fenced_writer_closes (only a fenced writer "
                "is CLOSING)"
            )
        if self.bookie_recovers_limbo and not self.limbo_on_unclean_shutdown:
            raise ConfigError(
                "bookie_recovers_limbo needs limbo_on_unclean_shutdown (the bookie recovers the "
                "ledgers it has in limbo)"
            )
        if self.bookie_recovers_limbo and self.clients < 2:
            raise ConfigError(
                "bookie_recovers_limbo needs two clients or more (the last is the bookies' own)"
            )
        object.__setattr__(self, "effective_ensemble_size", ensemble)

    @property
    def internal_client(self) -> int | None:
        """The bookies' own recovery client (``bookie_recovers_limbo``: the last), or None."""
        return self.clients - 1 if self.bookie_recovers_limbo else None

    @property
    def striped(self) -> bool:
        return self.effective_ensemble_size > self.write_quorum

    def describe(self) -> str:
        """One line naming every constant and every switch that differs from the default.

        Generated from the dataclass's fields, so that no switch is left out: the constants
        first, then each other field that differs from its default in the fields' order
        (``RecoveryReadsFence=FALSE``, ``LacOfHighestEntry=TRUE``, ...), then, with crashes,
        the crash settings."""
        parts = [f"{label}={getattr(self, name)}" for name, label in _CONSTANTS]
        for f in fields(self):
            if f.name in _DESCRIBED_APART or not f.init:
                continue
            value = getattr(self, f.name)
            if value == f.default:
                continue
            shown = ("TRUE" if value else "FALSE") if isinstance(value, bool) else str(value)
            if f.name == "bookie_recovers_limbo":
                shown += f"(c{self.clients})"
            parts.append(f"{_camel(f.name)}={shown}")
        if self.max_crashes:
            phases = [
                name
                for name, on in (
                    ("open", self.crash_when_open),
                    ("recovery", self.crash_in_recovery),
                    ("closed", self.crash_when_closed),
                )
                if on
            ]
            parts.append(f"Crashes<={self.max_crashes}({','.join(phases)})")
            parts.append(f"Limbo={'on' if self.limbo_on_unclean_shutdown else 'off'}")
            parts.append(
                f"FenceOnUncleanShutdown={'on' if self.fence_on_unclean_shutdown else 'off'}"
            )
        return " ".join(parts)


#: The constants :meth:`ModelConfig.describe` names first, always, with their TLA+ names.
_CONSTANTS = (
    ("bookies", "Bookies"),
    ("clients", "Clients"),
    ("effective_ensemble_size", "E"),
    ("write_quorum", "WQ"),
    ("ack_quorum", "AQ"),
    ("send_limit", "SendLimit"),
    ("inflight_limit", "InflightLimit"),
)
#: Fields :meth:`ModelConfig.describe` shows otherwise: the constants (``ensemble_size`` as
#: ``E``), and the crash settings, shown together when there are crashes.
_DESCRIBED_APART = frozenset(
    {
        *(name for name, _label in _CONSTANTS),
        "ensemble_size",
        "max_crashes",
        "crash_when_open",
        "crash_in_recovery",
        "crash_when_closed",
        "limbo_on_unclean_shutdown",
        "fence_on_unclean_shutdown",
    }
)


def _camel(name: str) -> str:
    """``lac_of_highest_entry`` -> ``LacOfHighestEntry``."""
    return "".join(word.capitalize() for word in name.split("_"))
