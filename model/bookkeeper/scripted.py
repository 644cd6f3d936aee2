"""Replaying an interleaving step by step, by naming each step instead of indexing successors.

A scripted step names the action and as much of its arguments as identifies one successor:
who acts (``client="c2"`` or ``bookie="b1"``), the other end of the message it processes
(``peer``), the entry involved, and which of the messages it sends are lost (``lost={"b3"}``:
the recipients, or senders for replies); for a bookie, whether the request is one its client
no longer waits for (``late``: a timed-out add, a decided read). Exactly one successor must
match; anything else is an error naming the candidates, so a replay that drifts from the model
fails loudly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from model.bookkeeper.actions import Label, Transition, init_state, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import FENCE_REQUEST, READ_REQUEST, State
from model.bookkeeper.render import describe_step
from model.search.bfs import Step
from model.search.scripted import ScriptError, names_any, replay_script, take_named


def _index(name: str, prefix: str) -> int:
    if not name.startswith(prefix) or not name[len(prefix) :].isdigit():
        raise ScriptError(f"expected a name like {prefix}1, got {name!r}")
    return int(name[len(prefix) :]) - 1


def bookie(name: str) -> int:
    """``"b1"`` -> 0."""
    return _index(name, "b")


def client(name: str) -> int:
    """``"c1"`` -> 0."""
    return _index(name, "c")


def _entry_of(label: Label) -> int | None:
    detail = dict(label.detail)
    if "entry" in detail:
        return detail["entry"]
    m = label.received
    if m is None:
        return None
    if m.kind == READ_REQUEST:
        return m.entry_id  # type: ignore[union-attr]
    if m.kind == FENCE_REQUEST or not hasattr(m, "entry"):
        return None
    return m.entry.id  # type: ignore[union-attr]


@dataclass(frozen=True)
class ScriptedStep:
    """One step of an interleaving, by name.

    ``action`` may be a tuple of names where the step is the same event with outcomes that
    depend on the switches (for example a bookie processing an add: confirmed, or fenced).
    """

    action: str | tuple[str, ...]
    client: str | None = None
    bookie: str | None = None
    peer: str | None = None  # the bookie a received message came from, for client steps
    entry: int | None = None
    lost: frozenset[str] = field(default_factory=frozenset)
    kind: int | None = None  # the kind of the received message, when an action takes several
    #: The client whose message a bookie step takes: two clients' adds of one entry may wait
    #: at one bookie at once (a writer's and a recovery's write-back).
    sender: str | None = None
    #: A bookie step on a request its client no longer waits for (True), or on one it does
    #: (False): the label's ``ignored_by_client``. With ``late_adds_after_timeout`` a bookie
    #: may hold a timed-out add and a resent copy of the same entry (another LAC) at once.
    late: bool | None = None

    def matches(self, label: Label) -> bool:
        actions = (self.action,) if isinstance(self.action, str) else self.action
        if label.action not in actions:
            return False
        if self.client is not None and label.client != client(self.client):
            return False
        if self.bookie is not None and label.bookie != bookie(self.bookie):
            return False
        if self.peer is not None and (
            label.received is None or label.received.bookie != bookie(self.peer)
        ):
            return False
        if self.kind is not None and (label.received is None or label.received.kind != self.kind):
            return False
        if self.sender is not None and (
            label.received is None or label.received.cid != client(self.sender)
        ):
            return False
        if self.entry is not None and _entry_of(label) != self.entry:
            return False
        if self.late is not None and (("ignored_by_client", 1) in label.detail) != self.late:
            return False
        # Every message has one bookie end (the recipient of a request, the sender of a reply).
        lost = {m.bookie for m, delivered in label.sent if not delivered}
        return lost == {bookie(b) for b in self.lost}


def step(
    action: str | tuple[str, ...],
    *,
    client: str | None = None,
    bookie: str | None = None,
    peer: str | None = None,
    entry: int | None = None,
    lost: Iterable[str] = (),
    kind: int | None = None,
    sender: str | None = None,
    late: bool | None = None,
) -> ScriptedStep:
    return ScriptedStep(action, client, bookie, peer, entry, frozenset(lost), kind, sender, late)


def take(cfg: ModelConfig, state: State, scripted: ScriptedStep) -> Transition:
    """The one successor of ``state`` that ``scripted`` names."""
    return take_named(successors(cfg, state), scripted, describe_step)


def enabled(cfg: ModelConfig, state: State, scripted: ScriptedStep) -> bool:
    """Whether ``scripted`` names at least one successor of ``state``."""
    return names_any(successors(cfg, state), scripted)


def run_script(
    cfg: ModelConfig, script: Sequence[ScriptedStep], start: State | None = None
) -> list[Step[State, Label]]:
    """Replay ``script`` from ``start`` (default: the initial state); returns the trace."""
    first = init_state(cfg) if start is None else start
    return replay_script(
        first,
        lambda state, scripted: take(cfg, state, scripted),  # type: ignore[arg-type]
        script,
    )
