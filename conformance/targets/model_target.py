"""The ``model`` target: the spec's own bookies and metadata store, in process. Fast, for
searching.

Its bookies answer with the spec's bookie (:mod:`model.bookkeeper.bookie`, the same definition
the model's bookie actions use), and its metadata store is a compare-and-set register with a
version, as ZooKeeper's znode is. So the engine's operations, translation of answers and final
comparison all run for real here; only the bookies and the store are the spec's, so it never
diverges from the model unless the engine itself is wrong.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from adapters.installations.system import MODEL_SYSTEM, SystemUnderTest
from conformance.observations import Observation, predicted
from conformance.operations import (
    Crash,
    CreateLedger,
    Deliver,
    FreshLedger,
    LedgerView,
    Operation,
    WriteMetadata,
)
from conformance.races import Timed
from conformance.targets.base import TargetSnapshot
from model.bookkeeper.bookie import BookieLedger, process, restarted_empty
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import STATUS_CLOSED, STATUS_NAMES, bookies_of


class ModelTarget:
    name = "model"

    def __init__(self, cfg: ModelConfig | None = None) -> None:
        """``cfg``: open at once for it (else ``open`` must be called before any step)."""
        self._cfg: ModelConfig | None = None
        self._bookies: list[BookieLedger] = []
        self._metadata: LedgerView | None = None
        self._version = 0  # the spec's meta_version: 1 after the create, +1 per write
        if cfg is not None:
            self.open(cfg)

    def open(self, cfg: ModelConfig) -> None:
        self._cfg = cfg
        self._fresh()

    def _fresh(self) -> None:
        if self._cfg is None:
            raise RuntimeError("open(cfg) the model target first: its bookies are the config's")
        self._bookies = [BookieLedger() for _ in range(self._cfg.bookies)]
        self._metadata = None
        self._version = 0

    def invoke(self, op: Operation) -> Observation:
        if isinstance(op, FreshLedger):
            self._fresh()
            return Observation("ledger", "OK", success=True)
        if isinstance(op, Deliver):
            assert self._cfg is not None, "open(cfg) first"
            reply, self._bookies[op.request.bookie] = process(
                self._bookies[op.request.bookie],
                op.request,
                lac_of_highest_entry=self._cfg.lac_of_highest_entry,
                first_copy_kept=self._cfg.first_copy_kept,
            )
            return predicted(reply)
        if isinstance(op, CreateLedger):
            if self._metadata is not None:
                return Observation("metadata", "LedgerExists", success=False)
            self._metadata, self._version = op.metadata, 1
            return Observation("metadata", "OK", success=True)
        if isinstance(op, WriteMetadata):
            if self._metadata is None:
                return Observation("metadata", "NoSuchLedger", success=False)
            if op.expected_version != self._version:
                return Observation("metadata", "MetadataVersionMismatch", success=False)
            self._metadata, self._version = op.metadata, self._version + 1
            return Observation("metadata", "OK", success=True)
        if isinstance(op, Crash):
            assert self._cfg is not None, "open(cfg) first"
            self._bookies[op.bookie] = restarted_empty(
                self._protects(op.bookie),
                self._cfg.fence_on_unclean_shutdown,
                self._cfg.limbo_on_unclean_shutdown,
            )
            return Observation("crash", "restarted")
        raise TypeError(f"not an operation: {op!r}")

    def invoke_concurrently(
        self, ops: Sequence[Deliver | Crash], offsets_s: Sequence[float]
    ) -> list[Timed]:
        """The spec's bookies serve one request at a time: a race is carried out in the order
        of its send offsets (ties in the given order), each answered before the next is sent;
        a request to a bookie restarted before it has no answer (its connection closed)."""
        answers: dict[int, Timed] = {}
        restarted: set[int] = set()
        for i in sorted(range(len(ops)), key=lambda i: (offsets_s[i], i)):
            op, invoked = ops[i], time.monotonic()
            if isinstance(op, Deliver) and op.request.bookie in restarted:
                answers[i] = Timed(None, invoked, time.monotonic())
                continue
            observed = self.invoke(op)
            if isinstance(op, Crash):
                restarted.add(op.bookie)
            answers[i] = Timed(observed, invoked, time.monotonic())
        return [answers[i] for i in range(len(ops))]

    def _protects(self, bookie: int) -> bool:
        """A bookie of the last ensemble of a ledger that is not closed comes back protected
        (fenced and/or in limbo, as the configuration says)."""
        meta = self._metadata
        if meta is None or meta.status == STATUS_CLOSED or not meta.fragments:
            return False
        return bookie in bookies_of(meta.fragments[-1].ensemble)

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot:
        snapshot = TargetSnapshot(
            entries={b: {e.id for e in held.entries} for b, held in enumerate(self._bookies)}
        )
        meta = self._metadata
        if meta is None:
            return snapshot
        snapshot.meta_status = STATUS_NAMES[meta.status]
        if meta.status == STATUS_CLOSED:
            snapshot.meta_last_entry = meta.last_entry
        snapshot.meta_fragments = [
            (f.first_entry_id, bookies_of(f.ensemble)) for f in meta.fragments
        ]
        return snapshot

    def describe(self) -> dict[str, str]:
        return {"target": "model"}

    def system_under_test(self) -> SystemUnderTest:
        return MODEL_SYSTEM

    def close(self) -> None:
        return None
