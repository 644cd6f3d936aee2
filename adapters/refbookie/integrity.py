"""The pre-boot data integrity check (BP-46, reference §3), and explicit limbo clearing.

When it runs, every ledger whose metadata is not CLOSED and whose *last* ensemble contains this
bookie is put in limbo **and** fenced; an absent ledger is created with an empty master key.

Unlike a real bookie, the reference bookie never clears limbo by itself (a real one runs a
recovery through its own client every 3 s). Limbo persists until cleared explicitly: with
:func:`clear_limbo`, or by a ``CLEAR_LIMBO`` file in the first ledger directory's ``current/``
(read at start; one ledger id per line, empty = all ledgers; removed once applied).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from adapters.refbookie.storage import BookieStorage

log = logging.getLogger(__name__)

CLEAR_LIMBO_FILE = "CLEAR_LIMBO"


@dataclass(frozen=True)
class LedgerSummary:
    """The two facts the pre-boot check needs from a ledger's metadata."""

    ledger_id: int
    closed: bool
    last_ensemble: tuple[str, ...]


class MetadataSource(Protocol):
    """Read-only view of the ledger metadata store (ZooKeeper in production, a dict in tests)."""

    def ledgers(self) -> Iterable[LedgerSummary]: ...


@dataclass(frozen=True)
class StaticMetadata:
    """A fixed list of ledger summaries (in-process tests without ZooKeeper)."""

    summaries: tuple[LedgerSummary, ...]

    def ledgers(self) -> Iterable[LedgerSummary]:
        return self.summaries


def run_preboot_check(
    storage: BookieStorage, metadata: MetadataSource, bookie_id: str
) -> list[int]:
    """Put every not-CLOSED ledger whose last ensemble holds ``bookie_id`` in limbo and fence it.

    Returns the ledger ids marked. Call before the storage starts: the marks go to the ledger
    storage buffer and are made durable by the first checkpoint.
    """
    marked = []
    for summary in metadata.ledgers():
        if summary.closed or bookie_id not in summary.last_ensemble:
            continue
        if summary.ledger_id not in storage.ledgers:
            storage.create(summary.ledger_id, b"")
        storage.set_limbo(summary.ledger_id, True)
        storage.fence(summary.ledger_id)
        marked.append(summary.ledger_id)
    log.warning("pre-boot integrity check: ledgers in limbo and fenced: %s", marked or "none")
    return marked


def clear_limbo(storage: BookieStorage, ledger_ids: Iterable[int] | None = None) -> list[int]:
    """Clear limbo of ``ledger_ids`` (all ledgers if ``None``); they stay fenced."""
    targets = storage.ledgers if ledger_ids is None else list(ledger_ids)
    cleared = []
    for ledger_id in targets:
        ledger = storage.ledgers.get(ledger_id)
        if ledger is not None and ledger.limbo:
            storage.set_limbo(ledger_id, False)
            cleared.append(ledger_id)
    return cleared


def apply_clear_limbo_file(storage: BookieStorage, ledger_dir: Path) -> list[int] | None:
    """Apply and remove ``<ledgerDir>/current/CLEAR_LIMBO`` if present (``None`` if absent)."""
    marker = ledger_dir / "current" / CLEAR_LIMBO_FILE
    if not marker.exists():
        return None
    ids = [int(line) for line in marker.read_text().split() if line.strip()]
    cleared = clear_limbo(storage, ids or None)
    log.warning("cleared limbo of ledgers %s (%s)", cleared, marker)
    marker.unlink()
    return cleared
