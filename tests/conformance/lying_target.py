"""A target that lies on demand: the model target (the spec's bookies and a compare-and-set
metadata store, in process), except where told to answer wrongly. It lets the fast suite see
every verdict path (clean, violation, divergence, undecided) and every exit code without a
cluster: what it stores stays honest, so the engine's end-of-run comparison really runs.

Lies (``Lie(kind, at)``: the ``at``-th answer of that kind in each example, so that replays
of an example see the same lie; ``at=0``: every one):

- ``add-status``: an add answered EFENCED for EOK (or the reverse);
- ``lac``: a fencing LAC read answered with the LAC plus one;
- ``read-data``: a read answered with other data (or an entry it does not have);
- ``metadata``: a metadata write answered with the other outcome;
- ``metadata-status``: a metadata write failing for another reason (``NoSuchLedger``);
- ``metadata-outage``: a metadata write with no answer (a retriable ``TargetError``);
- ``error``: a bookie request with no answer (a retriable ``TargetError``);
- ``missing-entry`` / ``extra-entry``: the final state lacks an entry, or has one more;
- ``status-final``: the final metadata status is another;
- ``snapshot-error``: the final state cannot be read (a retriable ``TargetError``, as for an
  outage of ZooKeeper).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, deque
from dataclasses import dataclass

from conformance.observations import Observation
from conformance.operations import CreateLedger, Deliver, FreshLedger, Operation, WriteMetadata
from conformance.targets.base import TargetError, TargetSnapshot
from conformance.targets.model_target import ModelTarget
from model.bookkeeper.actions import Transition, init_state, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import State

ANSWER_LIES = ("add-status", "lac", "read-data", "error")
METADATA_LIES = ("metadata", "metadata-status", "metadata-outage")
FINAL_LIES = ("missing-entry", "extra-entry", "status-final", "snapshot-error")
LIES = ANSWER_LIES + METADATA_LIES + FINAL_LIES


@dataclass(frozen=True)
class Lie:
    kind: str
    at: int = 1  # the at-th answer of its kind in each example; 0: every one

    def __post_init__(self) -> None:
        if self.kind not in LIES:
            raise ValueError(f"unknown lie {self.kind!r}: one of {', '.join(LIES)}")


_ANSWER_KIND = {"add-status": "add", "lac": "fence", "read-data": "read"}


class LyingTarget(ModelTarget):
    """In process, like ``model``; ``lies`` say where it answers wrongly."""

    def __init__(self, *lies: Lie, name: str = "lying") -> None:
        super().__init__()
        self.name = name
        self.lies = lies
        self.told: list[str] = []  # every lie told, for the tests
        self.opened = self.closed = 0
        self._counts: Counter[str] = Counter()

    def _due(self, kind: str, counted: str) -> bool:
        """Counts an answer of kind ``counted``; whether a lie of ``kind`` is due on it."""
        n = self._counts[counted]
        return any(lie.kind == kind and lie.at in (0, n) for lie in self.lies)

    # Target ------------------------------------------------------------------------------------

    def open(self, cfg: ModelConfig) -> None:
        self.opened += 1
        self._counts = Counter()
        super().open(cfg)

    def invoke(self, op: Operation) -> Observation:
        if isinstance(op, FreshLedger):
            self._counts = Counter()
        if isinstance(op, Deliver):
            return self._answer(op)
        if isinstance(op, (CreateLedger, WriteMetadata)):
            return self._write(op)
        return super().invoke(op)

    def _answer(self, op: Deliver) -> Observation:
        honest = super().invoke(op)
        self._counts["request"] += 1
        if self._due("error", "request"):
            self.told.append("error")
            raise TargetError(
                f"lying target: bookie b{op.request.bookie + 1} did not answer", retriable=True
            )
        self._counts[honest.kind] += 1
        for lie, kind in _ANSWER_KIND.items():
            if kind == honest.kind and self._due(lie, kind):
                self.told.append(lie)
                return _wrong(honest)
        return honest

    def _write(self, op: CreateLedger | WriteMetadata) -> Observation:
        honest = super().invoke(op)
        self._counts["metadata"] += 1
        if self._due("metadata-outage", "metadata"):
            self.told.append("metadata-outage")
            raise TargetError(
                "a metadata write: ZooKeeper did not answer (lying target)", retriable=True
            )
        if self._due("metadata", "metadata"):
            self.told.append("metadata")
            wrong = not honest.success
            return Observation(
                "metadata", "OK" if wrong else "MetadataVersionMismatch", success=wrong
            )
        if self._due("metadata-status", "metadata") and not honest.success:
            self.told.append("metadata-status")
            return Observation("metadata", "NoSuchLedger", success=False)
        return honest

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot:
        if any(lie.kind == "snapshot-error" for lie in self.lies):
            self.told.append("snapshot-error")
            raise TargetError("lying target: the final state could not be read", retriable=True)
        snapshot = super().snapshot(cfg)
        entries = snapshot.entries
        kinds = {lie.kind for lie in self.lies}
        if "missing-entry" in kinds:
            for held in entries.values():
                if held:
                    held.discard(max(held))
                    self.told.append("missing-entry")
                    break
        if "extra-entry" in kinds:
            entries[0].add(cfg.send_limit + 1)
            self.told.append("extra-entry")
        if "status-final" in kinds:
            other = "OPEN" if snapshot.meta_status == "IN_RECOVERY" else "IN_RECOVERY"
            snapshot.meta_status = other
            self.told.append("status-final")
        return snapshot

    def describe(self) -> dict[str, str]:
        return {"target": self.name, "lies": ",".join(f"{x.kind}@{x.at}" for x in self.lies)}

    def close(self) -> None:
        self.closed += 1


def _wrong(honest: Observation) -> Observation:
    if honest.kind == "add":
        success = not honest.success
        return dataclasses.replace(honest, success=success, status="EOK" if success else "EFENCED")
    if honest.kind == "fence":
        return dataclasses.replace(honest, code="OK", lac=(honest.lac or 0) + 1)
    data = 1 if honest.data is None else None
    code = "OK" if data is not None else "NoSuchEntry"
    return dataclasses.replace(honest, status="EOK" if data else "ENOENTRY", code=code, data=data)


def path_to(cfg: ModelConfig, action: str, *, after: str | None = None) -> list[Transition]:
    """The shortest run of the model that ends with ``action`` (breadth-first), with ``after``
    somewhere before it when given."""
    start = init_state(cfg)
    queue: deque[tuple[State, bool, list[Transition]]] = deque([(start, after is None, [])])
    seen = {(start, after is None)}
    while queue:
        state, ready, path = queue.popleft()
        for transition in successors(cfg, state):
            if transition.label.action == action and ready:
                return [*path, transition]
            now_ready = ready or transition.label.action == after
            if (transition.state, now_ready) not in seen and len(path) < 24:
                seen.add((transition.state, now_ready))
                queue.append((transition.state, now_ready, [*path, transition]))
    raise AssertionError(f"{action} is not reachable")
