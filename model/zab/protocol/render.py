"""Traces of the Zab model: a numbered list of steps, and a sequencediagram.org diagram in the
style of seed 003's pictures (servers as participants, one arrow per message processed,
labelled as there: ``NEWLEADER(1, <[1,1,v1]>)``, ``PROPOSE([1,2,v2])``, ``COMMIT([1,2])``).

Servers are ``s1, s2, ...``; seed 003 calls them A, B, C. Request values are shown 1-based
(``v1`` is the spec's value 0). An arrow is drawn when its receiver processes the message, so
the diagram shows the order in which each server sees things; messages still in flight at the
end are drawn last, dashed.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from model.search.bfs import Step
from model.search.numbered_trace import numbered_trace as numbered_steps
from model.zab.protocol.actions import Label
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.records import (
    ACKEPOCH,
    CEPOCH,
    MTYPE_NAMES,
    NEWEPOCH,
    NEWLEADER,
    NULL,
    PROPOSE,
    STATE_NAMES,
    VIOLATION_NAMES,
    ZAB_STATE_NAMES,
    Message,
    State,
    format_history,
    format_servers,
    format_txn,
    format_value,
    format_zxid,
    server_name,
)


def describe_message(m: Message) -> str:
    """``NEWLEADER(1, <[1,1,v1]>)``, ``PROPOSE([1,2,v2])``, ``COMMIT([1,2])``..."""
    name = MTYPE_NAMES[m.mtype]
    if m.mtype in (CEPOCH, NEWEPOCH):
        return f"{name}({m.mepoch})"
    if m.mtype in (ACKEPOCH, NEWLEADER):
        return f"{name}({m.mepoch}, {format_history(m.mhistory)})"
    if m.mtype == PROPOSE:
        return f"{name}([{m.mzxid[0]},{m.mzxid[1]},{format_value(m.mdata)}])"
    return f"{name}({format_zxid(m.mzxid)})"


def _call(label: Label) -> str:
    args = server_name(label.i) + ("" if label.j is None else f", {server_name(label.j)}")
    return f"{label.action}({args})"


def describe_step(label: Label) -> str:
    """``LeaderProcessCEPOCH(s2, s3): receives CEPOCH(0) from s3; sends NEWEPOCH(1) to s3``."""
    parts: list[str] = []
    if label.received is not None and label.j is not None:
        parts.append(f"receives {describe_message(label.received)} from {server_name(label.j)}")
    by_message: dict[tuple[int, Message], list[int]] = {}
    for src, dst, m in label.sent:
        by_message.setdefault((src, m), []).append(dst)
    for (_src, m), targets in by_message.items():
        parts.append(f"sends {describe_message(m)} to {', '.join(map(server_name, targets))}")
    parts.extend(label.notes)
    return _call(label) + (": " + "; ".join(parts) if parts else "")


def describe_state(s: State) -> list[str]:
    """The state in a few lines: each server, the oracle, the flags, the channels in use."""
    n = len(s.state)
    lines = []
    for i in range(n):
        committed = s.last_committed[i]
        line = (
            f"{server_name(i)}: {STATE_NAMES[s.state[i]]}/{ZAB_STATE_NAMES[s.zab_state[i]]} "
            f"f.p={s.accepted_epoch[i]} f.a={s.current_epoch[i]} "
            f"history={format_history(s.history[i])} "
            f"lastCommitted={committed.index}:{format_zxid(committed.zxid)}"
        )
        if s.connect_info[i] != NULL:
            line += f" leader={server_name(s.connect_info[i])}"
        if s.learners[i]:
            line += f" learners={format_servers(s.learners[i])}"
        lines.append(line)
    oracle = "none" if s.leader_oracle == NULL else server_name(s.leader_oracle)
    flags = [name for bit, name in VIOLATION_NAMES.items() if s.violated & bit]
    r = s.recorder
    lines.append(
        f"leaderOracle={oracle} violatedInvariants={{{','.join(flags)}}} "
        f"recorder: nTimeout={r.n_timeout} nRestart={r.n_restart} "
        f"nTransaction={r.n_transaction} maxEpoch={r.max_epoch}"
    )
    for a in range(n):
        for b in range(n):
            channel = s.channel(a, b)
            if channel:
                queued = ", ".join(describe_message(m) for m in channel)
                lines.append(f"msgs[{server_name(a)}][{server_name(b)}] = <{queued}>")
    return lines


def numbered_trace(cfg: ZabConfig, trace: Sequence[Step[State, Label]]) -> str:
    """The trace as numbered steps, with the final state spelled out."""
    return numbered_steps(cfg.describe(), trace, describe_step, describe_state)


def _notes(label: Label, before: State, after: State) -> list[tuple[str, str]]:
    """(participant, text) notes for what a step does inside one server."""
    i = server_name(label.i)
    notes: list[tuple[str, str]] = []
    action = label.action
    if action == "UpdateLeader":
        notes.append((i, "oracle := me; LEADING"))
    elif action == "FollowLeader":
        notes.append((i, f"{STATE_NAMES[after.state[label.i]]} (oracle)"))
    elif action == "Timeout" and label.j is not None:
        notes.append((f"{i},{server_name(label.j)}", "Timeout"))
    elif action == "Restart":
        notes.append((i, "Restart"))
    elif action == "LeaderProcessRequest":
        notes.append((i, f"client request: {format_txn(after.history[label.i][-1])}"))
    n = len(after.state)
    for k in range(n):
        old, new = before.last_committed[k], after.last_committed[k]
        if new != old and new.index > old.index:
            notes.append((server_name(k), f"committed up to {format_zxid(new.zxid)}"))
        changed = before.zab_state[k] != after.zab_state[k] or before.state[k] != after.state[k]
        if changed and action not in ("UpdateLeader", "FollowLeader"):
            role = f"{STATE_NAMES[after.state[k]]}/{ZAB_STATE_NAMES[after.zab_state[k]]}"
            notes.append((server_name(k), role))
    notes.extend((i, text) for text in label.notes)
    return notes


def sequence_diagram(
    cfg: ZabConfig,
    trace: Sequence[Step[State, Label]],
    *,
    title: str | None = None,
    final_note: str | None = None,
) -> str:
    """The trace in sequencediagram.org syntax (paste into https://sequencediagram.org/)."""
    n = cfg.servers
    lines: list[str] = []
    if title:
        lines.append(f"title {title}")
    lines.extend(f"participant {server_name(k)}" for k in range(n))
    for before, step in itertools.pairwise(trace):
        label = step.label
        assert label is not None
        if label.received is not None and label.j is not None:
            arrow = "-x" if label.action == "FilterNonexistentMessage" else "->"
            lines.append(
                f"{server_name(label.j)}{arrow}{server_name(label.i)}: "
                f"{describe_message(label.received)}"
            )
        for where, text in _notes(label, before.state, step.state):
            lines.append(f"note over {where}: {text}")
    last = trace[-1].state
    for a in range(n):
        for b in range(n):
            for m in last.channel(a, b):
                lines.append(
                    f"{server_name(a)}-->{server_name(b)}: {describe_message(m)} (in flight)"
                )
    if final_note:
        lines.append(f"note over {server_name(0)},{server_name(n - 1)}: {final_note}")
    return "\n".join(lines) + "\n"
