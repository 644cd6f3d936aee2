"""Every action of the spec's ``Next``, as functions from a state to its labelled successors.

Each action keeps the spec's name, guards and effects. ``successors(config, state)`` returns
every successor of a state, each with a ``Label`` naming the action, the client or bookie that
took it, the message it processed and the messages it sent (each delivered or lost), so that a
test engine can choose among them and a trace can be printed.

Where the spec conjoins two assignments to ``messages'`` (a recovery read decision conjoins
``IgnoreFurtherReadResponses`` with ``MessageProcessed``), TLC evaluates the second as an
equality test, so the step is only enabled when both agree. We keep that semantics: the model
must explore exactly the states TLC explores.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from model.bookkeeper.bookie import (
    accepts_add,
    add_answer,
    fence_answer,
    read_answer,
    restarted_empty,
    stored_lac,
)
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.messaging import (
    Delivery,
    clear_write_timeout,
    ignore_further_read_responses,
    late_add_processed,
    lose_requests_to,
    message_processed,
    processed_one_and_send_another,
    read_timeout_count,
    send_messages_to_ensemble,
    write_timeout_for_bookie,
)
from model.bookkeeper.records import (
    ADD_ENTRY_REQUEST,
    ADD_ENTRY_RESPONSE,
    CLIENT_CLOSING,
    CLIENT_WITHDRAWN,
    DELIVERED,
    FENCE_REQUEST,
    FENCE_RESPONSE,
    FENCING_PHASE,
    LATE,
    NEED_MORE_RESPONSES,
    NO_SUCH_ENTRY,
    OK,
    READ_REQUEST,
    READ_RESPONSE,
    READ_WRITE_PHASE,
    RECOVERY_ABORTED,
    REQUEST_KINDS,
    STATUS_CLOSED,
    STATUS_IN_RECOVERY,
    STATUS_OPEN,
    UNKNOWN,
    AddEntryRequest,
    AddEntryResponse,
    ClientState,
    Entry,
    FenceRequest,
    FenceResponse,
    Fragment,
    Message,
    PendingAddOp,
    ReadRequest,
    ReadResponse,
    State,
    bookies_of,
    init_client,
)
from model.replacer import replacer


class Label(NamedTuple):
    """What a step did: the spec's action name and its arguments."""

    action: str
    client: int | None = None
    bookie: int | None = None
    received: Message | None = None
    sent: Delivery = ()
    detail: tuple[tuple[str, int], ...] = ()

    @property
    def lost(self) -> int:
        """How many of the messages sent in this step were lost."""
        return sum(1 for _, delivered in self.sent if not delivered)


class Transition(NamedTuple):
    label: Label
    state: State


# The actions' names, who takes them and what they write: model.bookkeeper.action_table.

# The successors the search makes most often, built without ``_replace`` (model.replacer says
# why; called with keywords, as ``_replace`` is); the rarer ones keep ``_replace``.
_with_messages = replacer(State, "messages")
_with_clients = replacer(State, "clients", "messages")
_with_fenced = replacer(State, "b_fenced", "messages")
_with_stored = replacer(State, "b_entries", "b_lac", "messages")
_with_read_responses = replacer(ClientState, "read_responses")
_with_confirmations = replacer(ClientState, "confirmed", "lac", "pending_add_ops")
_with_fenced_lac = replacer(ClientState, "fenced", "lac", "lap")
_with_read_started = replacer(ClientState, "recovery_phase", "curr_read_entry", "fenced")
_with_entry_recovered = replacer(
    ClientState, "curr_read_entry", "read_responses", "lap", "pending_add_ops"
)


def init_state(cfg: ModelConfig) -> State:
    """``Init``."""
    return State(
        meta_status=None,
        meta_fragments=(),
        meta_last_entry=0,
        meta_version=0,
        b_entries=(frozenset(),) * cfg.bookies,
        b_fenced=(False,) * cfg.bookies,
        b_lac=(0,) * cfg.bookies,
        b_limbo=(False,) * cfg.bookies,
        crashes=0,
        clients=tuple(init_client(cid, cfg.send_limit) for cid in range(cfg.clients)),
        messages=frozenset(),
    )


# --------------------------------------------------------------------------------------------
# Ensembles, quorums and fragments
# --------------------------------------------------------------------------------------------


@cache
def _writeset(members: tuple[int, ...], entry_id: int, write_quorum: int) -> int:
    size = len(members)
    start = (entry_id - 1) % size
    mask = 0
    for i in range(write_quorum):
        mask |= 1 << members[(start + i) % size]
    return mask


def ensemble_order(cfg: ModelConfig, ensemble: int) -> tuple[int, ...]:
    """The positions of a newly chosen ensemble: ascending bookies when striped, else ``()``
    (without striping the order means nothing; see :class:`~.records.Fragment`)."""
    return tuple(bookies_of(ensemble)) if cfg.striped else ()


def writeset(cfg: ModelConfig, ensemble: int, entry_id: int, order: tuple[int, ...] = ()) -> int:
    """The bookies of an ensemble that store ``entry_id`` (the whole ensemble when E = WQ).

    Striped, the write quorum starts at position ``(entry_id - 1) mod E`` of ``order`` (the
    ensemble's positions; ascending bookies when not given)."""
    if not cfg.striped:
        return ensemble
    return _writeset(order or tuple(bookies_of(ensemble)), entry_id, cfg.write_quorum)


def replaced_in_place(order: tuple[int, ...], failed: int, new_ensemble: int) -> tuple[int, ...]:
    """``order`` with each failed bookie's position taken by a new bookie (ascending new
    bookies into ascending failed positions), as BookKeeper's ensemble change does; ``()``
    stays ``()`` (not striped)."""
    if not order:
        return ()
    kept = {b for b in order if not failed >> b & 1}
    newcomers = iter(b for b in bookies_of(new_ensemble) if b not in kept)
    return tuple(next(newcomers) if failed >> b & 1 else b for b in order)


def has_quorum_coverage(cfg: ModelConfig, responded: int, cohort_size: int) -> bool:
    """``HasQuorumCoverage``: no ack quorum of the cohort is left without a response."""
    return responded.bit_count() >= cohort_size - cfg.ack_quorum + 1


def fencing_coverage(
    cfg: ModelConfig, fenced: int, ensemble: int, order: tuple[int, ...] = ()
) -> bool:
    """Enough of the ensemble is fenced that no ack quorum of any write set remains unfenced."""
    if not cfg.striped:
        return has_quorum_coverage(cfg, fenced, ensemble.bit_count())
    members = order or tuple(bookies_of(ensemble))
    return all(
        has_quorum_coverage(
            cfg, fenced & _writeset(members, start + 1, cfg.write_quorum), cfg.write_quorum
        )
        for start in range(len(members))
    )


def fragment_of_entry_id(entry_id: int, fragments: tuple[Fragment, ...]) -> Fragment:
    """``FragmentOfEntryId``: the fragment whose range holds ``entry_id``."""
    if len(fragments) == 1:
        return fragments[0]
    last = fragments[-1]
    if last.first_entry_id <= entry_id:
        return last
    # CHOOSE f1 such that its successor fragment starts after entry_id; the first such in order.
    by_id = {f.id: f for f in fragments}
    for f1 in fragments:
        f2 = by_id.get(f1.id + 1)
        if f2 is not None and f1.first_entry_id <= entry_id < f2.first_entry_id:
            return f1
    raise ValueError(f"no fragment holds entry {entry_id} in {fragments}")  # CHOOSE of nothing


def valid_ensemble(
    cfg: ModelConfig, state: State, ensemble: int, include: int, exclude: int
) -> bool:
    """``ValidEnsemble``."""
    return (
        ensemble.bit_count() == cfg.effective_ensemble_size
        and ensemble & exclude == 0
        and include & ensemble == include
        and (cfg.ensembles_may_repeat or all(ensemble != f.ensemble for f in state.meta_fragments))
    )


def select_ensemble(cfg: ModelConfig, state: State, include: int, exclude: int) -> int | None:
    """``SelectEnsemble``: TLC's CHOOSE picks one fixed value; we pick the smallest bitmask.

    Returns None where ``EnsembleAvailable`` is false.
    """
    for ensemble in range(1 << cfg.bookies):
        if valid_ensemble(cfg, state, ensemble, include, exclude):
            return ensemble
    return None


def max_contiguous_confirmed_entry(
    cfg: ModelConfig, confirmed: tuple[int, ...], floor: int = 0
) -> int:
    """``MaxContiguousConfirmedEntry``; with ``floor`` (``lac_counts_as_confirmed``), entries
    up to ``floor`` count as confirmed (the spec's is ``floor`` 0)."""
    best = floor
    for index in range(floor, len(confirmed)):
        if confirmed[index].bit_count() < cfg.ack_quorum:
            break
        best = index + 1
    return best


# --------------------------------------------------------------------------------------------
# One state's precomputed facts (shared by every action's guard)
# --------------------------------------------------------------------------------------------


class _Ctx:
    __slots__ = ("cfg", "counts", "earliest", "late", "receivable", "s")

    def __init__(self, cfg: ModelConfig, s: State) -> None:
        self.cfg = cfg
        self.s = s
        self.counts: dict[Message, int] = dict(s.messages)
        # Sorted so that successors come in one fixed order on every run (set order is not).
        self.receivable: list[Message] = sorted(m for m, c in s.messages if c >= DELIVERED)
        # IsEarliestMsg only compares add requests/responses; keep the lowest receivable id per
        # (kind, recovery, client, bookie).
        earliest: dict[tuple[int, bool, int, int], int] = {}
        for m in self.receivable:
            if m.kind == ADD_ENTRY_REQUEST or m.kind == ADD_ENTRY_RESPONSE:
                key = (m.kind, m.recovery, m.cid, m.bookie)  # type: ignore[union-attr]
                entry_id = m.entry.id  # type: ignore[union-attr]
                if key not in earliest or entry_id < earliest[key]:
                    earliest[key] = entry_id
        self.earliest = earliest
        # LateAddsAfterTimeout: timed-out adds still on their way, outside the FIFO order.
        self.late: list[AddEntryRequest] = (
            sorted(m for m, c in s.messages if c == LATE and isinstance(m, AddEntryRequest))
            if cfg.late_adds_after_timeout
            else []
        )

    def is_earliest(self, m: AddEntryRequest | AddEntryResponse) -> bool:
        """``IsEarliestMsg``: no receivable message of the same stream has a lower entry id.
        With ``adds_in_arrival_order`` a bookie takes a client's adds in any order."""
        if self.cfg.adds_in_arrival_order and m.kind == ADD_ENTRY_REQUEST:
            return True
        return self.earliest[(m.kind, m.recovery, m.cid, m.bookie)] >= m.entry.id


def _bookkeepers(cfg: ModelConfig, c: ClientState) -> bool:
    """Whether ``c`` is the bookies' own client (``bookie_recovers_limbo``): BookKeeper's
    client, which behaves as the switches for BookKeeper's client say whatever they are set
    to for the others (``late_read_answers_ignored``, ``late_read_requests_processed``,
    ``lac_counts_as_confirmed``, ``read_timeouts_per_entry``, and ``fenced_writer_closes``'s
    recovery close): without them the spec's recovery can stall, which BookKeeper's does not."""
    return c.id == cfg.internal_client


def _set_client(s: State, client: ClientState) -> tuple[ClientState, ...]:
    clients = list(s.clients)
    clients[client.id] = client
    return tuple(clients)


# --------------------------------------------------------------------------------------------
# Bookie actions
# --------------------------------------------------------------------------------------------


def _bookie_actions(ctx: _Ctx, out: list[Transition]) -> None:
    s = ctx.s
    for msg in ctx.receivable:
        if msg.kind == ADD_ENTRY_REQUEST:
            assert isinstance(msg, AddEntryRequest)
            if not ctx.is_earliest(msg):
                continue
            if accepts_add(s.b_fenced[msg.bookie], msg):
                _bookie_sends_add_confirmed_response(ctx, msg, out)
            else:
                _bookie_sends_add_fenced_response(ctx, msg, out)
        elif msg.kind == FENCE_REQUEST:
            assert isinstance(msg, FenceRequest)
            _bookie_sends_fencing_read_lac_response(ctx, msg, out)
        elif msg.kind == READ_REQUEST:
            assert isinstance(msg, ReadRequest)
            _bookie_sends_read_response(ctx, msg, out)
    for late in ctx.late:
        # A timed-out add still on its way (LateAddsAfterTimeout): no IsEarliestMsg, as it
        # is outside the order of the adds in flight; it neither waits for them nor holds
        # them up.
        if accepts_add(s.b_fenced[late.bookie], late):
            _bookie_sends_add_confirmed_response(ctx, late, out)
        else:
            _bookie_sends_add_fenced_response(ctx, late, out)


def _bookie_sends_add_confirmed_response(
    ctx: _Ctx, msg: AddEntryRequest, out: list[Transition]
) -> None:
    """``BookieSendsAddConfirmedResponse``: not fenced (or a recovery add): store, confirm.

    A ``LATE`` add (``late_adds_after_timeout``) is stored the same way, except that the
    bookie keeps the higher LAC (it may have taken later adds first, as BookKeeper's bookie
    keeps the highest), and its answer is dropped by the client (:func:`_late_answers`)."""
    s = ctx.s
    b = msg.bookie
    reply = add_answer(msg, True)
    b_entries = (*s.b_entries[:b], s.b_entries[b] | {msg.entry}, *s.b_entries[b + 1 :])
    highest = ctx.cfg.lac_of_highest_entry
    if ctx.counts[msg] == LATE:
        lac = (
            stored_lac(
                s.b_entries[b],
                s.b_lac[b],
                msg,
                of_highest_entry=True,
                first_copy_kept=ctx.cfg.first_copy_kept,
            )
            if highest
            else max(s.b_lac[b], msg.lac)
        )
        b_lac = (*s.b_lac[:b], lac, *s.b_lac[b + 1 :])
        successor = _with_stored(
            s, b_entries=b_entries, b_lac=b_lac, messages=late_add_processed(s.messages, msg)
        )
        _late_answers("BookieSendsAddConfirmedResponse", msg, reply, successor, out)
        return
    # Taken out of entry order (adds_in_arrival_order), an add must not lower the LAC of the
    # higher entries the bookie holds: its LAC is its highest entry's, as BookKeeper's.
    highest = highest or ctx.cfg.adds_in_arrival_order
    lac = stored_lac(
        s.b_entries[b],
        s.b_lac[b],
        msg,
        of_highest_entry=highest,
        first_copy_kept=ctx.cfg.first_copy_kept,
    )
    b_lac = (*s.b_lac[:b], lac, *s.b_lac[b + 1 :])
    again = ctx.cfg.ensembles_may_repeat
    for messages, delivered in processed_one_and_send_another(
        s.messages, ctx.counts, msg, reply, again=again
    ):
        label = Label(
            "BookieSendsAddConfirmedResponse", bookie=b, received=msg, sent=((reply, delivered),)
        )
        out.append(
            Transition(label, _with_stored(s, b_entries=b_entries, b_lac=b_lac, messages=messages))
        )


def _bookie_sends_add_fenced_response(
    ctx: _Ctx, msg: AddEntryRequest, out: list[Transition]
) -> None:
    """``BookieSendsAddFencedResponse``: a normal add to a fenced ledger is rejected (a
    ``LATE`` one too, its answer dropped by the client: :func:`_late_answers`)."""
    s = ctx.s
    reply = add_answer(msg, False)
    if ctx.counts[msg] == LATE:
        successor = _with_messages(s, messages=late_add_processed(s.messages, msg))
        _late_answers("BookieSendsAddFencedResponse", msg, reply, successor, out)
        return
    again = ctx.cfg.ensembles_may_repeat
    for messages, delivered in processed_one_and_send_another(
        s.messages, ctx.counts, msg, reply, again=again
    ):
        label = Label(
            "BookieSendsAddFencedResponse",
            bookie=msg.bookie,
            received=msg,
            sent=((reply, delivered),),
        )
        out.append(Transition(label, _with_messages(s, messages=messages)))


def _late_answers(
    action: str,
    msg: AddEntryRequest,
    reply: AddEntryResponse,
    successor: State,
    out: list[Transition],
) -> None:
    """A bookie answers a ``LATE`` add (``late_adds_after_timeout``). The add had timed out,
    so its client dropped it (BookKeeper's connection forgets a timed-out request, and
    ``PendingAddOp`` ignores a bookie no longer at that place of its ensemble): the answer,
    delivered or lost (both are labelled, so a judge names either), never joins the
    messages. Same successor both ways; the label's ``detail`` says ``ignored_by_client``."""
    for delivered in (True, False):
        label = Label(
            action,
            bookie=msg.bookie,
            received=msg,
            sent=((reply, delivered),),
            detail=(("ignored_by_client", 1),),
        )
        out.append(Transition(label, successor))


def _bookie_sends_fencing_read_lac_response(
    ctx: _Ctx, msg: FenceRequest, out: list[Transition]
) -> None:
    """``BookieSendsFencingReadLacResponse``: fence (even an unknown ledger) and answer the LAC.

    Limbo extension: a bookie with the ledger in limbo fences but answers Unknown.
    """
    s = ctx.s
    b = msg.bookie
    reply = fence_answer(msg, s.b_lac[b], s.b_limbo[b])
    b_fenced = (*s.b_fenced[:b], True, *s.b_fenced[b + 1 :])
    for messages, delivered in processed_one_and_send_another(s.messages, ctx.counts, msg, reply):
        label = Label(
            "BookieSendsFencingReadLacResponse", bookie=b, received=msg, sent=((reply, delivered),)
        )
        out.append(Transition(label, _with_fenced(s, b_fenced=b_fenced, messages=messages)))


def _bookie_sends_read_response(ctx: _Ctx, msg: ReadRequest, out: list[Transition]) -> None:
    """``BookieSendsReadResponse``: the entry if held, else NoSuchEntry (Unknown in limbo)."""
    s = ctx.s
    b = msg.bookie
    reply = read_answer(msg, s.b_entries[b], s.b_limbo[b])
    b_fenced = s.b_fenced
    if msg.fence:
        b_fenced = (*b_fenced[:b], True, *b_fenced[b + 1 :])
    late_processed = ctx.cfg.late_read_requests_processed or msg.cid == ctx.cfg.internal_client
    if late_processed and s.clients[msg.cid].curr_read_entry != msg.entry_id:
        # A read of an entry its client already decided (LateReadRequestsProcessed): the
        # bookie still processes it (and is fenced by it) and answers; the client, which no
        # longer reads that entry, ignores the answer (it never joins the messages).
        messages = message_processed(s.messages, msg, ctx.counts[msg])
        label = Label(
            "BookieSendsReadResponse",
            bookie=b,
            received=msg,
            sent=((reply, True),),
            detail=(("ignored_by_client", 1),),
        )
        out.append(Transition(label, _with_fenced(s, b_fenced=b_fenced, messages=messages)))
        return
    for messages, delivered in processed_one_and_send_another(s.messages, ctx.counts, msg, reply):
        label = Label("BookieSendsReadResponse", bookie=b, received=msg, sent=((reply, delivered),))
        out.append(Transition(label, _with_fenced(s, b_fenced=b_fenced, messages=messages)))


# --------------------------------------------------------------------------------------------
# Client actions: the original writer
# --------------------------------------------------------------------------------------------


def _client_creates_ledger(ctx: _Ctx, c: ClientState, out: list[Transition]) -> None:
    """``ClientCreatesLedger``: a metadata-only operation; the ensemble is chosen by CHOOSE."""
    s = ctx.s
    if s.meta_status is not None or c.meta_version is not None:
        return
    ensemble = select_ensemble(ctx.cfg, s, 0, 0)
    if ensemble is None:
        return  # CHOOSE over an empty set: TLC reports an error; no ensemble, no ledger.
    fragment = Fragment(1, ensemble, 1, ensemble_order(ctx.cfg, ensemble))
    fragments = (*s.meta_fragments, fragment)
    client = c._replace(
        status=STATUS_OPEN, meta_version=1, fragments=fragments, curr_fragment=fragment
    )
    label = Label("ClientCreatesLedger", client=c.id, detail=(("ensemble", ensemble),))
    out.append(
        Transition(
            label,
            s._replace(
                clients=_set_client(s, client),
                meta_status=STATUS_OPEN,
                meta_version=1,
                meta_fragments=fragments,
            ),
        )
    )


def _add_requests(
    c: ClientState, entry: Entry, bookies: int, recovery: bool, lac: int | None = None
) -> list[AddEntryRequest]:
    """``GetAddEntryRequests``: one add per bookie, each carrying the client's LAC (``lac``, if
    given: a resend's, with ``resends_carry_first_lac``)."""
    carried = c.lac if lac is None else lac
    return [
        AddEntryRequest(ADD_ENTRY_REQUEST, b, c.id, entry, carried, recovery)
        for b in bookies_of(bookies)
    ]


def _client_sends_add_entry_requests(ctx: _Ctx, c: ClientState, out: list[Transition]) -> None:
    """``ClientSendsAddEntryRequests``: the next entry goes to the current write set."""
    cfg, s = ctx.cfg, ctx.s
    if c.lap - c.lac > cfg.inflight_limit - 1:
        return
    entry_data = c.lap + 1
    if entry_data > cfg.send_limit:
        return
    assert c.curr_fragment is not None
    entry = Entry(entry_data, entry_data)
    curr = c.curr_fragment
    msgs = _add_requests(c, entry, writeset(cfg, curr.ensemble, entry.id, curr.order), False)
    # BookKeeper packages an add once (PendingAddOp.initiate) and resends that buffer.
    first_lac = c.lac if cfg.resends_carry_first_lac else None
    client = c._replace(
        lap=entry.id,
        pending_add_ops=c.pending_add_ops
        | {PendingAddOp(entry, curr.id, curr.ensemble, curr.order, first_lac)},
    )
    clients = _set_client(s, client)
    for messages, delivery in send_messages_to_ensemble(
        s.messages, ctx.counts, msgs, again=cfg.ensembles_may_repeat
    ):
        label = Label("ClientSendsAddEntryRequests", client=c.id, sent=delivery)
        out.append(Transition(label, _with_clients(s, clients=clients, messages=messages)))


def _receive_add_confirmed_response(
    ctx: _Ctx, c: ClientState, is_recovery: bool, action: str, out: list[Transition]
) -> None:
    """``ReceiveAddConfirmedResponse``: count the confirm; maybe advance the LAC.

    With ``late_adds_after_timeout`` only a bookie of the entry's write set counts; another
    one's answer is stale and consumed without effect (:func:`_stale_answer_ignored`)."""
    cfg, s = ctx.cfg, ctx.s
    assert c.curr_fragment is not None
    ensemble = c.curr_fragment.ensemble
    by_writeset = cfg.late_adds_after_timeout
    for msg in ctx.receivable:
        if msg.kind != ADD_ENTRY_RESPONSE or msg.cid != c.id:
            continue
        assert isinstance(msg, AddEntryResponse)
        if msg.recovery != is_recovery or not msg.success or not ctx.is_earliest(msg):
            continue
        if not (_in_writeset(ctx, c, msg) if by_writeset else ensemble >> msg.bookie & 1):
            _stale_answer_ignored(ctx, c, msg, action, out)
            continue
        index = msg.entry.id - 1
        confirmed = c.confirmed
        if 0 <= index < len(confirmed):  # EXCEPT on an id outside EntryIds changes nothing
            confirmed = (
                *confirmed[:index],
                confirmed[index] | 1 << msg.bookie,
                *confirmed[index + 1 :],
            )
        floor = c.lac if cfg.lac_counts_as_confirmed or _bookkeepers(cfg, c) else 0
        lac = max_contiguous_confirmed_entry(cfg, confirmed, floor)
        pending = frozenset(
            op
            for op in c.pending_add_ops
            if _confirmations(confirmed, op.entry.id) < cfg.ack_quorum or op.entry.id > lac
        )
        client = _with_confirmations(
            c, confirmed=confirmed, lac=lac if lac > c.lac else c.lac, pending_add_ops=pending
        )
        label = Label(action, client=c.id, received=msg)
        out.append(
            Transition(
                label,
                _with_clients(
                    s,
                    clients=_set_client(s, client),
                    messages=message_processed(s.messages, msg, ctx.counts[msg]),
                ),
            )
        )


def _in_writeset(ctx: _Ctx, c: ClientState, msg: AddEntryResponse) -> bool:
    """With ``late_adds_after_timeout``, the guard ``msg.bookie \\in c.curr_fragment.ensemble``
    of the spec's add answers becomes: the bookie is in the entry's write set in that
    ensemble, as ``PendingAddOp.writeComplete`` takes an answer only from the bookie now at
    the ensemble position the request went to (the same set without striping)."""
    curr = c.curr_fragment
    assert curr is not None
    return bool(writeset(ctx.cfg, curr.ensemble, msg.entry.id, curr.order) >> msg.bookie & 1)


def _stale_answer_ignored(
    ctx: _Ctx, c: ClientState, msg: AddEntryResponse, action: str, out: list[Transition]
) -> None:
    """A stale add answer (``late_adds_after_timeout``): its bookie is no longer in the entry's
    write set (the request went out before an ensemble change replaced it). The client
    consumes it and changes nothing, as ``PendingAddOp`` returns on such an answer; the label's
    ``detail`` says ``ignored``. Without the switch the spec leaves such an answer in flight
    for ever (no step)."""
    if not ctx.cfg.late_adds_after_timeout:
        return
    _answer_consumed(ctx, c, msg, action, "ignored", out)


def _answer_consumed(
    ctx: _Ctx, c: ClientState, msg: AddEntryResponse, action: str, why: str, out: list[Transition]
) -> None:
    """``msg`` consumed and nothing else changed; the label's ``detail`` says ``why``."""
    s = ctx.s
    label = Label(action, client=c.id, received=msg, detail=((why, 1),))
    out.append(
        Transition(
            label, _with_messages(s, messages=message_processed(s.messages, msg, ctx.counts[msg]))
        )
    )


def _confirmations(confirmed: tuple[int, ...], entry_id: int) -> int:
    return confirmed[entry_id - 1].bit_count() if 0 < entry_id <= len(confirmed) else 0


def _client_receives_add_fenced_response(ctx: _Ctx, c: ClientState, out: list[Transition]) -> None:
    """``ClientReceivesAddFencedResponse``: the writer learns of fencing and withdraws.

    With ``late_adds_after_timeout`` a stale answer (a bookie outside the entry's write set)
    is consumed without effect (:func:`_stale_answer_ignored`), as ``PendingAddOp`` ignores
    it before looking at its code. With ``completed_adds_ignore_fence`` so is the EFENCED
    answer to an add that already has its ack quorum (the label's ``detail`` says
    ``completed``): the writer goes on."""
    s = ctx.s
    assert c.curr_fragment is not None
    ensemble = c.curr_fragment.ensemble
    by_writeset = ctx.cfg.late_adds_after_timeout
    for msg in ctx.receivable:
        if msg.kind != ADD_ENTRY_RESPONSE or msg.cid != c.id:
            continue
        assert isinstance(msg, AddEntryResponse)
        if msg.recovery or msg.success or not ctx.is_earliest(msg):
            continue
        if not (_in_writeset(ctx, c, msg) if by_writeset else ensemble >> msg.bookie & 1):
            _stale_answer_ignored(ctx, c, msg, "ClientReceivesAddFencedResponse", out)
            continue
        if (
            ctx.cfg.completed_adds_ignore_fence
            and _confirmations(c.confirmed, msg.entry.id) >= ctx.cfg.ack_quorum
        ):
            # The add had its ack quorum: BookKeeper's PendingAddOp is completed and returns
            # on any later answer (completed_adds_ignore_fence).
            _answer_consumed(ctx, c, msg, "ClientReceivesAddFencedResponse", "completed", out)
            continue
        # BookKeeper's writer closes the ledger instead (``fenced_writer_closes``).
        fenced_out = CLIENT_CLOSING if ctx.cfg.fenced_writer_closes else CLIENT_WITHDRAWN
        client = c._replace(status=fenced_out)
        label = Label("ClientReceivesAddFencedResponse", client=c.id, received=msg)
        out.append(
            Transition(
                label,
                _with_clients(
                    s,
                    clients=_set_client(s, client),
                    messages=message_processed(s.messages, msg, ctx.counts[msg]),
                ),
            )
        )


def _no_pending_resends(c: ClientState) -> bool:
    """``NoPendingResends``."""
    f = c.curr_fragment
    assert f is not None
    return not any(
        op.fragment_id != f.id or op.ensemble != f.ensemble or op.order != f.order
        for op in c.pending_add_ops
    )


def _updated_fragments(
    c: ClientState, first_entry_id: int, new_ensemble: int, new_order: tuple[int, ...]
) -> tuple[Fragment, ...]:
    """``UpdatedFragments``: replace the last fragment if it starts here, else append one."""
    assert c.curr_fragment is not None
    if first_entry_id == c.curr_fragment.first_entry_id:
        last = c.fragments[-1]
        return tuple(
            f._replace(ensemble=new_ensemble, order=new_order) if f == last else f
            for f in c.fragments
        )
    return (*c.fragments, Fragment(len(c.fragments) + 1, new_ensemble, first_entry_id, new_order))


def _change_ensemble(
    ctx: _Ctx, c: ClientState, recovery: bool, action: str, out: list[Transition]
) -> None:
    """``ChangeEnsemble``: replace the bookies whose writes timed out.

    The spec's ``\\E failed_bookies`` requires every failed bookie to have a write timeout and
    every remaining one to have none, so the failed set is exactly the timed-out bookies.
    With ``partial_ensemble_changes`` any non-empty subset of them is replaced (the others
    stay, still timed out, for a later change), as BookKeeper handles failures a change at a
    time.
    """
    cfg, s = ctx.cfg, ctx.s
    if not _no_pending_resends(c):
        return
    if not recovery and c.meta_version != s.meta_version:
        return
    assert c.curr_fragment is not None
    ensemble = c.curr_fragment.ensemble
    timed_out = 0
    for b in bookies_of(ensemble):
        if write_timeout_for_bookie(ctx.counts, c.id, b, recovery):
            timed_out |= 1 << b
    if timed_out == 0:
        return
    if not cfg.partial_ensemble_changes:
        _replace_failed(ctx, c, recovery, action, timed_out, out)
        return
    subset = timed_out
    while subset:  # every non-empty subset of the timed-out bookies
        _replace_failed(ctx, c, recovery, action, subset, out)
        subset = (subset - 1) & timed_out


def _replace_failed(
    ctx: _Ctx, c: ClientState, recovery: bool, action: str, failed: int, out: list[Transition]
) -> None:
    """The new ensemble without ``failed`` (its bookies' positions taken by new ones)."""
    cfg, s = ctx.cfg, ctx.s
    assert c.curr_fragment is not None
    ensemble = c.curr_fragment.ensemble
    good = ensemble & ~failed
    new_ensemble = select_ensemble(cfg, s, good, failed)
    if new_ensemble is None:
        return  # EnsembleAvailable is false
    first_entry_id = c.lac + 1
    new_order = replaced_in_place(c.curr_fragment.order, failed, new_ensemble)
    fragments = _updated_fragments(c, first_entry_id, new_ensemble, new_order)
    confirmed = tuple(
        bookies & ~failed if index + 1 >= first_entry_id else bookies
        for index, bookies in enumerate(c.confirmed)
    )
    client = c._replace(
        meta_version=c.meta_version if recovery else s.meta_version + 1,
        confirmed=confirmed,
        fragments=fragments,
        curr_fragment=fragments[-1],
    )
    messages = clear_write_timeout(
        s.messages, c.id, failed, recovery, late=cfg.late_adds_after_timeout
    )
    label = Label(
        action,
        client=c.id,
        detail=(("failed", failed), ("ensemble", new_ensemble), ("first_entry_id", first_entry_id)),
    )
    if recovery:
        successor = _with_clients(s, clients=_set_client(s, client), messages=messages)
    else:
        successor = s._replace(
            clients=_set_client(s, client),
            messages=messages,
            meta_fragments=fragments,
            meta_version=s.meta_version + 1,
        )
    out.append(Transition(label, successor))


def _resend_pending_add_op(
    ctx: _Ctx, c: ClientState, is_recovery: bool, action: str, out: list[Transition]
) -> None:
    """``ResendPendingAddOp``: send a pending add to the bookies new to its write set."""
    cfg, s = ctx.cfg, ctx.s
    curr = c.curr_fragment
    assert curr is not None
    for op in sorted(c.pending_add_ops):
        if op.fragment_id == curr.id and op.ensemble == curr.ensemble and op.order == curr.order:
            continue  # NeedsResend is false
        if any(
            op2.fragment_id == op.fragment_id
            and op2.ensemble == op.ensemble
            and op2.order == op.order
            and op2.entry.id < op.entry.id
            for op2 in c.pending_add_ops
        ):
            continue
        new_bookies = writeset(cfg, curr.ensemble, op.entry.id, curr.order) & ~writeset(
            cfg, op.ensemble, op.entry.id, op.order
        )
        msgs = _add_requests(c, op.entry, new_bookies, is_recovery, op.lac)
        moved = op._replace(fragment_id=curr.id, ensemble=curr.ensemble, order=curr.order)
        pending = frozenset(moved if o == op else o for o in c.pending_add_ops)
        clients = _set_client(s, c._replace(pending_add_ops=pending))
        for messages, delivery in send_messages_to_ensemble(
            s.messages, ctx.counts, msgs, again=cfg.ensembles_may_repeat
        ):
            label = Label(action, client=c.id, sent=delivery, detail=(("entry", op.entry.id),))
            out.append(Transition(label, _with_clients(s, clients=clients, messages=messages)))


def _client_closes_ledger_success(ctx: _Ctx, c: ClientState, out: list[Transition]) -> None:
    """``ClientClosesLedgerSuccess``: a CAS on an OPEN ledger with the client's version.

    With ``fenced_writer_closes``, BookKeeper's close: it re-reads the metadata after a
    version conflict and closes any ledger not CLOSED yet, IN_RECOVERY included."""
    s = ctx.s
    if ctx.cfg.fenced_writer_closes:
        if s.meta_status not in (STATUS_OPEN, STATUS_IN_RECOVERY):
            return
    elif c.meta_version != s.meta_version or s.meta_status != STATUS_OPEN:
        return
    assert c.meta_version is not None
    client = c._replace(meta_version=s.meta_version + 1, status=STATUS_CLOSED)
    label = Label("ClientClosesLedgerSuccess", client=c.id, detail=(("last_entry", c.lac),))
    out.append(
        Transition(
            label,
            s._replace(
                clients=_set_client(s, client),
                meta_status=STATUS_CLOSED,
                meta_last_entry=c.lac,
                meta_version=s.meta_version + 1,
            ),
        )
    )


def _client_closes_ledger_fail(ctx: _Ctx, c: ClientState, out: list[Transition]) -> None:
    """``ClientClosesLedgerFail``: the ledger is no longer OPEN; the writer withdraws (with
    ``fenced_writer_closes``: it is CLOSED, as BookKeeper's close overwrites IN_RECOVERY)."""
    s = ctx.s
    if s.meta_status == STATUS_OPEN or (
        ctx.cfg.fenced_writer_closes and s.meta_status != STATUS_CLOSED
    ):
        return
    client = c._replace(status=CLIENT_WITHDRAWN, meta_version=None)
    label = Label("ClientClosesLedgerFail", client=c.id)
    out.append(Transition(label, s._replace(clients=_set_client(s, client))))


# --------------------------------------------------------------------------------------------
# Client actions: ledger recovery
# --------------------------------------------------------------------------------------------


def _client_starts_recovery(ctx: _Ctx, c: ClientState, out: list[Transition]) -> None:
    """``ClientStartsRecovery``: mark IN_RECOVERY, fence the last ensemble with LAC reads."""
    s = ctx.s
    if s.meta_status != STATUS_OPEN and s.meta_status != STATUS_IN_RECOVERY:
        return
    last = s.meta_fragments[-1]
    # The bookies' own client (bookie_recovers_limbo) is BookKeeper's: its recovery writes
    # IN_RECOVERY only over an OPEN ledger (ReadOnlyLedgerHandle.recover's predicate), and
    # over one already IN_RECOVERY writes nothing.
    written = 0 if c.id == ctx.cfg.internal_client and s.meta_status == STATUS_IN_RECOVERY else 1
    client = c._replace(
        status=STATUS_IN_RECOVERY,
        meta_version=s.meta_version + written,
        recovery_phase=FENCING_PHASE,
        fragments=s.meta_fragments,
        curr_fragment=last,
        recovery_ensemble=last.ensemble,
        recovery_order=last.order,
    )
    clients = _set_client(s, client)
    msgs = [FenceRequest(FENCE_REQUEST, b, c.id) for b in bookies_of(last.ensemble)]
    for messages, delivery in send_messages_to_ensemble(s.messages, ctx.counts, msgs):
        label = Label("ClientStartsRecovery", client=c.id, sent=delivery)
        out.append(
            Transition(
                label,
                s._replace(
                    clients=clients,
                    messages=messages,
                    meta_status=STATUS_IN_RECOVERY,
                    meta_version=s.meta_version + written,
                ),
            )
        )


def _client_receives_fencing_read_lac_response(
    ctx: _Ctx, c: ClientState, out: list[Transition]
) -> None:
    """``ClientReceivesFencingReadLacResponse``: note the fenced bookie and the highest LAC.

    With ``recovery_starts_at_fragment`` the LAC floor is the current fragment's first entry
    minus one (the fix of Defect 2). Limbo extension: an Unknown answer counts neither as
    fenced nor as a LAC; it is consumed and ignored.
    """
    cfg, s = ctx.cfg, ctx.s
    assert c.curr_fragment is not None
    floor = c.curr_fragment.first_entry_id - 1 if cfg.recovery_starts_at_fragment else 0
    for msg in ctx.receivable:
        if msg.kind != FENCE_RESPONSE or msg.cid != c.id:
            continue
        assert isinstance(msg, FenceResponse)
        if msg.code == OK:
            lac = msg.lac if msg.lac > floor else floor
            client = _with_fenced_lac(
                c,
                fenced=c.fenced | 1 << msg.bookie,
                lac=lac if lac > c.lac else c.lac,
                lap=lac if lac > c.lap else c.lap,
            )
        else:
            client = c
        label = Label("ClientReceivesFencingReadLacResponse", client=c.id, received=msg)
        out.append(
            Transition(
                label,
                _with_clients(
                    s,
                    clients=_set_client(s, client),
                    messages=message_processed(s.messages, msg, ctx.counts[msg]),
                ),
            )
        )


def _client_sends_recovery_read_requests(ctx: _Ctx, c: ClientState, out: list[Transition]) -> None:
    """``ClientSendsRecoveryReadRequests``: read the next entry from the recovery ensemble.

    Recovery reads carry the fence flag unless ``recovery_reads_fence`` is off (Defect 1).
    """
    cfg, s = ctx.cfg, ctx.s
    if c.recovery_phase == READ_WRITE_PHASE:
        if c.last_recoverable_entry is not None or c.curr_read_entry is not None:
            return
    elif c.recovery_phase == FENCING_PHASE:
        if not fencing_coverage(cfg, c.fenced, c.recovery_ensemble, c.recovery_order):
            return
    else:
        return
    next_entry_id = c.lap + 1
    client = _with_read_started(
        c, recovery_phase=READ_WRITE_PHASE, curr_read_entry=next_entry_id, fenced=0
    )
    clients = _set_client(s, client)
    msgs = [
        ReadRequest(READ_REQUEST, b, c.id, next_entry_id, cfg.recovery_reads_fence)
        for b in bookies_of(writeset(cfg, c.recovery_ensemble, next_entry_id, c.recovery_order))
    ]
    for messages, delivery in send_messages_to_ensemble(s.messages, ctx.counts, msgs):
        label = Label(
            "ClientSendsRecoveryReadRequests",
            client=c.id,
            sent=delivery,
            detail=(("entry", next_entry_id),),
        )
        out.append(Transition(label, _with_clients(s, clients=clients, messages=messages)))


def _read_status(ctx: _Ctx, c: ClientState, responses: frozenset[ReadResponse]) -> int:
    """``ReadStatus``: generous on positive answers, strict on negative ones."""
    cfg = ctx.cfg
    if any(r.code == OK for r in responses):
        return OK
    negative = 0
    for r in responses:
        if r.code == NO_SUCH_ENTRY:
            negative |= 1 << r.bookie
    if has_quorum_coverage(cfg, negative, cfg.write_quorum):
        return NO_SUCH_ENTRY
    assert c.curr_read_entry is not None
    cohort = writeset(cfg, c.recovery_ensemble, c.curr_read_entry, c.recovery_order)
    per_entry = c.curr_read_entry if cfg.read_timeouts_per_entry or _bookkeepers(cfg, c) else None
    timeouts = read_timeout_count(ctx.counts, c.id, cohort, per_entry)
    if len(responses) + timeouts == cfg.write_quorum:
        return UNKNOWN
    return NEED_MORE_RESPONSES


def _client_receives_recovery_read_response(
    ctx: _Ctx, c: ClientState, out: list[Transition]
) -> None:
    """``ClientReceivesRecoveryReadResponse``: decide positive, negative, unknown, or wait."""
    s = ctx.s
    if c.recovery_phase != READ_WRITE_PHASE:
        return
    for msg in ctx.receivable:
        if msg.kind != READ_RESPONSE or msg.cid != c.id:
            continue
        assert isinstance(msg, ReadResponse)
        if msg.entry.id != c.curr_read_entry:
            continue
        responses = c.read_responses | {msg}
        status = _read_status(ctx, c, responses)
        processed = message_processed(s.messages, msg, ctx.counts[msg])
        if status == NEED_MORE_RESPONSES:
            client = _with_read_responses(c, read_responses=responses)
            messages = processed
        else:
            # ReadPositive/ReadNegative/ReadUnknown assign messages' through
            # IgnoreFurtherReadResponses, and the action also conjoins MessageProcessed(msg):
            # TLC treats the second assignment as an equality test.
            ignored = ignore_further_read_responses(
                s.messages,
                msg,
                c.recovery_ensemble,
                requests_too=not (ctx.cfg.late_read_requests_processed or _bookkeepers(ctx.cfg, c)),
            )
            if ctx.cfg.late_read_answers_ignored or _bookkeepers(ctx.cfg, c):
                messages = ignored
            elif ignored != processed:
                continue
            else:
                messages = processed
            assert c.curr_fragment is not None
            if status == OK:
                curr = c.curr_fragment
                op = PendingAddOp(
                    Entry(c.lap + 1, msg.entry.data), curr.id, curr.ensemble, curr.order
                )
                client = _with_entry_recovered(
                    c,
                    curr_read_entry=None,
                    read_responses=frozenset(),
                    lap=c.lap + 1,
                    pending_add_ops=c.pending_add_ops | {op},
                )
            elif status == NO_SUCH_ENTRY:
                client = c._replace(
                    curr_read_entry=None,
                    read_responses=frozenset(),
                    recovery_ensemble=0,
                    recovery_order=(),
                    last_recoverable_entry=msg.entry.id - 1,
                )
            else:
                client = c._replace(
                    status=RECOVERY_ABORTED,
                    curr_read_entry=None,
                    read_responses=frozenset(),
                    recovery_ensemble=0,
                    recovery_order=(),
                )
        label = Label(
            "ClientReceivesRecoveryReadResponse",
            client=c.id,
            received=msg,
            detail=(("outcome", status),),
        )
        out.append(
            Transition(label, _with_clients(s, clients=_set_client(s, client), messages=messages))
        )


def _not_sent_write(ctx: _Ctx, c: ClientState, op: PendingAddOp) -> bool:
    """``NotSentWrite``: no recovery add of this entry has been sent by this client."""
    for msg in ctx.counts:
        if (
            msg.kind == ADD_ENTRY_REQUEST
            and msg.cid == c.id
            and msg.recovery  # type: ignore[union-attr]
            and msg.entry == op.entry  # type: ignore[union-attr]
        ):
            return False
    return True


def _client_writes_back_entry(ctx: _Ctx, c: ClientState, out: list[Transition]) -> None:
    """``ClientWritesBackEntry``: recovery-add the lowest recovered entry not yet written."""
    cfg, s = ctx.cfg, ctx.s
    if c.recovery_phase != READ_WRITE_PHASE:
        return
    unsent = [op for op in c.pending_add_ops if _not_sent_write(ctx, c, op)]
    assert c.curr_fragment is not None
    for op in sorted(unsent):
        if any(op2.entry.id < op.entry.id for op2 in unsent):
            continue
        curr = c.curr_fragment
        msgs = _add_requests(
            c, op.entry, writeset(cfg, curr.ensemble, op.entry.id, curr.order), True
        )
        clients = s.clients
        if cfg.resends_carry_first_lac:
            # The write-back is packaged now, with the LAC its resends will carry.
            written = op._replace(lac=c.lac)
            pending = frozenset(written if o == op else o for o in c.pending_add_ops)
            clients = _set_client(s, c._replace(pending_add_ops=pending))
        for messages, delivery in send_messages_to_ensemble(s.messages, ctx.counts, msgs):
            label = Label(
                "ClientWritesBackEntry",
                client=c.id,
                sent=delivery,
                detail=(("entry", op.entry.id),),
            )
            out.append(Transition(label, _with_clients(s, clients=clients, messages=messages)))


def _recovery_client_closes_ledger(ctx: _Ctx, c: ClientState, out: list[Transition]) -> None:
    """``RecoveryClientClosesLedger``: CAS the ledger to CLOSED at the last recoverable entry.

    With ``fenced_writer_closes``, on a ledger another client closed meanwhile, BookKeeper's
    ``closeRecovered`` writes nothing and ends with the metadata it finds: the client's LAC
    is the ledger's last entry. The bookies' own client (``bookie_recovers_limbo``) also closes
    a ledger another recovery marked IN_RECOVERY again since its own mark, as
    ``closeRecovered`` does."""
    s = ctx.s
    if (
        c.recovery_phase != READ_WRITE_PHASE
        or c.last_recoverable_entry is None
        or c.pending_add_ops
    ):
        return
    # The bookies' own client (bookie_recovers_limbo) is BookKeeper's: its closeRecovered too.
    bookkeepers = ctx.cfg.fenced_writer_closes or _bookkeepers(ctx.cfg, c)
    if bookkeepers and s.meta_status == STATUS_CLOSED:
        found = c._replace(status=STATUS_CLOSED, meta_version=s.meta_version, lac=s.meta_last_entry)
        label = Label(
            "RecoveryClientClosesLedger",
            client=c.id,
            detail=(("last_entry", s.meta_last_entry), ("closed_by_another", 1)),
        )
        out.append(Transition(label, s._replace(clients=_set_client(s, found))))
        return
    if s.meta_status != STATUS_IN_RECOVERY:
        return
    # The spec closes only at the version the client wrote. The bookies' own client is
    # BookKeeper's: closeRecovered's MetadataUpdateLoop re-reads the znode after a version
    # conflict and closes it whenever it is still IN_RECOVERY, so another recovery that marked
    # the ledger IN_RECOVERY again meanwhile does not stop it (the fragments are those it
    # recovered: while the ledger is IN_RECOVERY only a close changes them).
    if s.meta_version != c.meta_version and not _bookkeepers(ctx.cfg, c):
        return
    client = c._replace(status=STATUS_CLOSED, meta_version=s.meta_version + 1)
    label = Label(
        "RecoveryClientClosesLedger",
        client=c.id,
        detail=(("last_entry", c.last_recoverable_entry),),
    )
    out.append(
        Transition(
            label,
            s._replace(
                clients=_set_client(s, client),
                meta_version=s.meta_version + 1,
                meta_fragments=c.fragments,
                meta_status=STATUS_CLOSED,
                meta_last_entry=c.last_recoverable_entry,
            ),
        )
    )


def _client_actions(ctx: _Ctx, c: ClientState, out: list[Transition]) -> None:
    status = c.status
    if c.id == ctx.cfg.internal_client and status is None:
        # The bookies' own recovery client (bookie_recovers_limbo) never creates the ledger,
        # and recovers it only while a bookie of its last ensemble has it in limbo.
        if _limbo_in_last_ensemble(ctx.s):
            _client_starts_recovery(ctx, c, out)
    elif status is None:
        _client_creates_ledger(ctx, c, out)
        _client_starts_recovery(ctx, c, out)
    elif status == STATUS_OPEN:
        _client_sends_add_entry_requests(ctx, c, out)
        _receive_add_confirmed_response(ctx, c, False, "ClientReceivesAddConfirmedResponse", out)
        _client_receives_add_fenced_response(ctx, c, out)
        if ctx.s.meta_status == STATUS_OPEN:
            _change_ensemble(ctx, c, False, "ClientChangesEnsemble", out)
        _resend_pending_add_op(ctx, c, False, "ClientResendsPendingAddOp", out)
        _client_closes_ledger_success(ctx, c, out)
        _client_closes_ledger_fail(ctx, c, out)
    elif status == CLIENT_CLOSING:
        if ctx.cfg.closing_writer_takes_answers:
            # Answers queued before the close's task still complete their adds.
            _receive_add_confirmed_response(
                ctx, c, False, "ClientReceivesAddConfirmedResponse", out
            )
        _client_closes_ledger_success(ctx, c, out)
        _client_closes_ledger_fail(ctx, c, out)
    elif status == STATUS_IN_RECOVERY:
        _client_sends_recovery_read_requests(ctx, c, out)
        _client_receives_recovery_read_response(ctx, c, out)
        _client_writes_back_entry(ctx, c, out)
        _receive_add_confirmed_response(
            ctx, c, True, "RecoveryClientReceivesAddConfirmedResponse", out
        )
        if ctx.s.meta_status == STATUS_IN_RECOVERY:
            _change_ensemble(ctx, c, True, "RecoveryClientChangesEnsemble", out)
        _resend_pending_add_op(ctx, c, True, "RecoveryClientSendsPendingAddOp", out)
        _recovery_client_closes_ledger(ctx, c, out)
    # The spec guards this action by the recovery phase only, not by the client status.
    if c.recovery_phase == FENCING_PHASE:
        _client_receives_fencing_read_lac_response(ctx, c, out)


# --------------------------------------------------------------------------------------------
# Faults (extension, seed 001)
# --------------------------------------------------------------------------------------------


def _crash_allowed(cfg: ModelConfig, s: State) -> bool:
    if s.crashes >= cfg.max_crashes:
        return False
    if s.meta_status == STATUS_OPEN:
        return cfg.crash_when_open
    if s.meta_status == STATUS_IN_RECOVERY:
        return cfg.crash_in_recovery
    if s.meta_status == STATUS_CLOSED:
        return cfg.crash_when_closed
    return False  # before the ledger exists a bookie has nothing to lose


def _bookie_restarts_empty(ctx: _Ctx, out: list[Transition]) -> None:
    """``BookieRestartsEmpty``: a bookie crashes and restarts without this ledger's data.

    Entries and LAC are gone; requests delivered but not yet processed are lost. A bookie of
    the last ensemble of a ledger that is not CLOSED comes back in limbo and/or fenced when the
    switches say so, as BookKeeper's data integrity check does on an unclean shutdown.
    """
    cfg, s = ctx.cfg, ctx.s
    if not _crash_allowed(cfg, s):
        return
    open_ledger = s.meta_status in (STATUS_OPEN, STATUS_IN_RECOVERY)
    last_ensemble = s.meta_fragments[-1].ensemble if s.meta_fragments else 0
    for b in range(cfg.bookies):
        protected = open_ledger and bool(last_ensemble >> b & 1)
        messages = lose_requests_to(
            s.messages, b, REQUEST_KINDS, late_too=cfg.late_adds_after_timeout
        )
        label = Label("BookieRestartsEmpty", bookie=b)
        fresh = restarted_empty(
            protected, cfg.fence_on_unclean_shutdown, cfg.limbo_on_unclean_shutdown
        )
        out.append(
            Transition(
                label,
                s._replace(
                    b_entries=(*s.b_entries[:b], fresh.entries, *s.b_entries[b + 1 :]),
                    b_lac=(*s.b_lac[:b], fresh.lac, *s.b_lac[b + 1 :]),
                    b_fenced=(*s.b_fenced[:b], fresh.fenced, *s.b_fenced[b + 1 :]),
                    b_limbo=(*s.b_limbo[:b], fresh.limbo, *s.b_limbo[b + 1 :]),
                    crashes=s.crashes + 1,
                    messages=messages,
                ),
            )
        )


# --------------------------------------------------------------------------------------------
# The bookies' own recovery (extension, bookie_recovers_limbo: BP-46's data-integrity service)
# --------------------------------------------------------------------------------------------


def _limbo_in_last_ensemble(s: State) -> bool:
    if not s.meta_fragments:
        return False
    last = s.meta_fragments[-1].ensemble
    return any(limbo and last >> b & 1 for b, limbo in enumerate(s.b_limbo))


def limbo_copies(cfg: ModelConfig, s: State, b: int) -> frozenset[Entry]:
    """The entries bookie ``b`` copies back once it leaves limbo on the CLOSED ledger
    (BookKeeper's ``checkAndRecoverLedgerEntries``): every entry up to the last one whose
    write set (in the fragment that holds it) names ``b``, that ``b`` lacks and that another
    bookie holds (the lowest copy, the spec's CHOOSE). An entry no other bookie holds is not
    copied: BookKeeper's copy of it fails (and is tried again, to no more effect)."""
    copies = set()
    held_ids = {e.id for e in s.b_entries[b]}
    for entry_id in range(1, s.meta_last_entry + 1):
        if entry_id in held_ids:
            continue
        fragment = fragment_of_entry_id(entry_id, s.meta_fragments)
        if not writeset(cfg, fragment.ensemble, entry_id, fragment.order) >> b & 1:
            continue
        found = [
            e
            for other in range(cfg.bookies)
            if other != b
            for e in s.b_entries[other]
            if e.id == entry_id
        ]
        if found:
            copies.add(min(found))
    return frozenset(copies)


def _bookie_leaves_limbo(ctx: _Ctx, out: list[Transition]) -> None:
    """``BookieLeavesLimbo`` (extension): a bookie with the ledger in limbo finds it CLOSED
    (its own client's recovery closed it, or another client's), clears limbo and copies back
    the entries it lacks (:func:`limbo_copies`), as BookKeeper's data-integrity service does
    (``clearLimboState``, then the copy; one step here)."""
    cfg, s = ctx.cfg, ctx.s
    if not cfg.bookie_recovers_limbo or s.meta_status != STATUS_CLOSED:
        return
    for b in range(cfg.bookies):
        if not s.b_limbo[b]:
            continue
        copies = limbo_copies(cfg, s, b)
        out.append(
            Transition(
                Label("BookieLeavesLimbo", bookie=b),
                s._replace(
                    b_entries=(*s.b_entries[:b], s.b_entries[b] | copies, *s.b_entries[b + 1 :]),
                    b_limbo=(*s.b_limbo[:b], False, *s.b_limbo[b + 1 :]),
                ),
            )
        )


def bookie_internal(cfg: ModelConfig, label: Label) -> bool:
    """Whether a step is the bookies' own (``bookie_recovers_limbo``): their internal client's,
    a bookie's answer to it, or a bookie leaving limbo. No test harness drives these steps;
    a conformance run observes what they did."""
    internal = cfg.internal_client
    if internal is None:
        return False
    if label.action == "BookieLeavesLimbo" or label.client == internal:
        return True
    return label.received is not None and label.received.cid == internal


# --------------------------------------------------------------------------------------------
# Next
# --------------------------------------------------------------------------------------------


def successors(cfg: ModelConfig, state: State) -> list[Transition]:
    """``Next``: every enabled step from ``state``, in a fixed order."""
    ctx = _Ctx(cfg, state)
    out: list[Transition] = []
    _bookie_actions(ctx, out)
    for c in state.clients:
        _client_actions(ctx, c, out)
    _bookie_restarts_empty(ctx, out)
    _bookie_leaves_limbo(ctx, out)
    return out


def driven_successors(cfg: ModelConfig, state: State) -> list[Transition]:
    """The successors a test harness may cause: all but the bookies' own
    (:func:`bookie_internal`), in ``successors``' order."""
    steps = successors(cfg, state)
    if cfg.internal_client is None:
        return steps
    return [t for t in steps if not bookie_internal(cfg, t.label)]
