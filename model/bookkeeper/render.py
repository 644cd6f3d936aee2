"""Traces of the model, as a numbered list and as a sequencediagram.org diagram.

The diagram uses the participants of the seeds' diagrams: clients are ``w1, w2, ...`` (the
writer and the recovery clients), bookies ``b1, b2, ...`` and the metadata store ``zk``. A lost
message is drawn ``--x`` as in the seeds. Entry ids are the spec's (1-based).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

from model.bookkeeper.actions import Label
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import (
    ADD_ENTRY_REQUEST,
    ADD_ENTRY_RESPONSE,
    CODE_NAMES,
    FENCE_REQUEST,
    FENCE_RESPONSE,
    NEED_MORE_RESPONSES,
    READ_REQUEST,
    READ_RESPONSE,
    STATUS_NAMES,
    Message,
    State,
    bookie_name,
    client_name,
    format_bookies,
)
from model.search.bfs import Step
from model.search.numbered_trace import numbered_trace as numbered_steps


def writer_name(cid: int) -> str:
    return f"w{cid + 1}"


def describe_message(m: Message) -> str:
    """A message in a few words, from its sender's point of view."""
    if m.kind == ADD_ENTRY_REQUEST:
        kind = "recovery add" if m.recovery else "add"  # type: ignore[union-attr]
        return f"{kind} e{m.entry.id} (lac={m.lac})"  # type: ignore[union-attr]
    if m.kind == ADD_ENTRY_RESPONSE:
        verdict = "written" if m.success else "EFENCED"  # type: ignore[union-attr]
        return f"e{m.entry.id} {verdict}"  # type: ignore[union-attr]
    if m.kind == FENCE_REQUEST:
        return "fence (read LAC)"
    if m.kind == FENCE_RESPONSE:
        code = m.code  # type: ignore[union-attr]
        return f"lac = {m.lac}" if code == 1 else f"{CODE_NAMES[code]} (LAC)"  # type: ignore[union-attr]
    if m.kind == READ_REQUEST:
        fence = ", fence" if m.fence else ""  # type: ignore[union-attr]
        return f"recovery read e{m.entry_id}{fence}"  # type: ignore[union-attr]
    if m.kind == READ_RESPONSE:
        return f"{CODE_NAMES[m.code]} e{m.entry.id}"  # type: ignore[union-attr]
    raise ValueError(f"unknown message kind {m.kind}")


def _endpoints(m: Message) -> tuple[str, str]:
    """(sender, receiver) participant names of a message."""
    if m.kind in (ADD_ENTRY_REQUEST, FENCE_REQUEST, READ_REQUEST):
        return writer_name(m.cid), bookie_name(m.bookie)
    return bookie_name(m.bookie), writer_name(m.cid)


def describe_step(label: Label) -> str:
    """``Action(actor): what happened``, one line."""
    actor = (
        client_name(label.client)
        if label.client is not None
        else bookie_name(label.bookie)
        if label.bookie is not None
        else ""
    )
    parts: list[str] = []
    if label.received is not None:
        sender, _ = _endpoints(label.received)
        parts.append(f"receives {describe_message(label.received)} from {sender}")
    for m, delivered in label.sent:
        _, receiver = _endpoints(m)
        parts.append(f"sends {describe_message(m)} to {receiver}{'' if delivered else ' (LOST)'}")
    for key, value in label.detail:
        if key in ("ensemble", "failed"):
            parts.append(f"{key} {format_bookies(value)}")
        elif key == "outcome":
            parts.append(f"outcome {CODE_NAMES[value]}")
        else:
            parts.append(f"{key} {value}")
    return f"{label.action}({actor})" + (": " + "; ".join(parts) if parts else "")


def describe_state(cfg: ModelConfig, s: State) -> list[str]:
    """The state, a few lines: metadata, bookies, clients."""
    lines = [
        f"metadata: status={STATUS_NAMES[s.meta_status]} version={s.meta_version} "
        f"last_entry={s.meta_last_entry} fragments="
        + ", ".join(f"{f.first_entry_id}:{format_bookies(f.ensemble)}" for f in s.meta_fragments)
    ]
    for b in range(cfg.bookies):
        entries = ",".join(f"e{e.id}" for e in sorted(s.b_entries[b]))
        flags = [name for name, on in (("fenced", s.b_fenced[b]), ("limbo", s.b_limbo[b])) if on]
        lines.append(
            f"{bookie_name(b)}: entries={{{entries}}} lac={s.b_lac[b]}"
            + (f" {' '.join(flags)}" if flags else "")
        )
    for c in s.clients:
        if c.status is None:
            continue
        lines.append(
            f"{client_name(c.id)}: status={STATUS_NAMES[c.status]} lac={c.lac} lap={c.lap}"
            + (
                f" last_recoverable={c.last_recoverable_entry}"
                if c.last_recoverable_entry is not None
                else ""
            )
        )
    return lines


def numbered_trace(cfg: ModelConfig, trace: Sequence[Step[State, Label]]) -> str:
    """The trace as numbered steps, with the final state spelled out."""
    return numbered_steps(
        cfg.describe(), trace, describe_step, lambda state: describe_state(cfg, state)
    )


class Arrow(NamedTuple):
    """One line of a sequence diagram: ``source`` to ``target`` (the same for a self-note)."""

    source: str
    target: str
    text: str
    lost: bool = False


def participants(cfg: ModelConfig) -> list[str]:
    return [
        *(writer_name(c) for c in range(cfg.clients)),
        *(bookie_name(b) for b in range(cfg.bookies)),
        "zk",
    ]


def diagram_arrows(trace: Sequence[Step[State, Label]]) -> list[Arrow]:
    """The trace's events as arrows, shared by the text and the SVG renderings."""
    arrows: list[Arrow] = []
    for before, step in itertools.pairwise(trace):
        assert step.label is not None
        arrows.extend(_step_arrows(step.label, before.state, step.state))
    return arrows


def sequence_diagram(
    cfg: ModelConfig,
    trace: Sequence[Step[State, Label]],
    *,
    title: str | None = None,
    final_note: str | None = None,
) -> str:
    """The trace in sequencediagram.org syntax (paste into https://sequencediagram.org/)."""
    lines: list[str] = []
    if title:
        lines.append(f"title {title}")
    lines.extend(f"participant {name}" for name in participants(cfg))
    for arrow in diagram_arrows(trace):
        lines.append(f"{arrow.source}{'--x' if arrow.lost else '->'}{arrow.target}: {arrow.text}")
    if final_note:
        lines.append(f"note over {writer_name(0)},zk: {final_note}")
    return "\n".join(lines) + "\n"


def _arrow(m: Message, delivered: bool) -> Arrow:
    sender, receiver = _endpoints(m)
    return Arrow(sender, receiver, describe_message(m), lost=not delivered)


def _step_arrows(label: Label, before: State, after: State) -> list[Arrow]:
    action = label.action
    detail = dict(label.detail)
    arrows = [_arrow(m, delivered) for m, delivered in label.sent]
    if label.client is not None:
        w = writer_name(label.client)
        if action == "ClientCreatesLedger":
            ensemble = format_bookies(detail["ensemble"])
            arrows.append(Arrow(w, "zk", f"create ledger, ensemble {ensemble}"))
        elif action == "ClientStartsRecovery":
            arrows.insert(0, Arrow(w, "zk", "mark as in recovery"))
        elif action in ("ClientChangesEnsemble", "RecoveryClientChangesEnsemble"):
            target = "zk" if action == "ClientChangesEnsemble" else w
            ensemble = format_bookies(detail["ensemble"])
            arrows.append(
                Arrow(w, target, f"ensemble change {detail['first_entry_id']}:{ensemble}")
            )
        elif action in ("ClientClosesLedgerSuccess", "RecoveryClientClosesLedger"):
            last = detail["last_entry"]
            arrows.append(
                Arrow(
                    w, "zk", f"close ledger, last entry e{last}" if last else "close ledger empty"
                )
            )
        elif action == "ClientClosesLedgerFail":
            arrows.append(Arrow(w, "zk", "close fails (not OPEN), withdraw"))
        elif action == "ClientReceivesAddFencedResponse":
            arrows.append(Arrow(w, w, "fenced, withdraw"))
        elif action in (
            "ClientReceivesAddConfirmedResponse",
            "RecoveryClientReceivesAddConfirmedResponse",
        ):
            old_lac = before.clients[label.client].lac
            new_lac = after.clients[label.client].lac
            if new_lac > old_lac:
                acked = ",".join(f"e{i}" for i in range(old_lac + 1, new_lac + 1))
                arrows.append(Arrow(w, w, f"acknowledge {acked} to caller (lac={new_lac})"))
        elif action == "ClientReceivesRecoveryReadResponse":
            outcome = detail["outcome"]
            if outcome != NEED_MORE_RESPONSES:
                assert label.received is not None
                entry_id = label.received.entry.id  # type: ignore[union-attr]
                arrows.append(Arrow(w, w, f"read of e{entry_id} decided {CODE_NAMES[outcome]}"))
    elif action == "BookieRestartsEmpty" and label.bookie is not None:
        b = bookie_name(label.bookie)
        arrows.append(Arrow(b, b, "crash, restarts without the ledger's data", lost=True))
    return arrows
