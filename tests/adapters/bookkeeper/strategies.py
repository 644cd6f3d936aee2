"""Hypothesis strategies for BookKeeper wire messages."""

from __future__ import annotations

from hypothesis import strategies as st

from adapters.bookkeeper import v2, v3
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from adapters.bookkeeper.status import StatusCode

int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1)
ids = st.one_of(st.integers(min_value=-1, max_value=2**40), int64s)
txn_ids = st.integers(min_value=0, max_value=2**64 - 1)
keys = st.binary(min_size=0, max_size=32)
bodies = st.binary(min_size=0, max_size=200)
statuses = st.sampled_from(list(StatusCode))
pb_statuses = st.sampled_from([getattr(pb, s.name) for s in StatusCode])
priorities = st.none() | st.integers(min_value=0, max_value=2**32 - 1)
versions = st.sampled_from([pb.VERSION_ONE, pb.VERSION_TWO, pb.VERSION_THREE])


@st.composite
def v3_requests(draw: st.DrawFn) -> v3.Request:
    txn = draw(txn_ids)
    kind = draw(st.sampled_from(["add", "read", "read_lac", "write_lac", "force", "info", "auth"]))
    if kind == "add":
        request = v3.add_request(
            txn, draw(ids), draw(ids), draw(keys), draw(bodies),
            recovery=draw(st.booleans()), priority=draw(priorities),
            write_flags=draw(st.none() | st.integers(0, 2**31 - 1)), version=draw(versions),
        )  # fmt: skip
    elif kind == "read":
        flag = draw(st.sampled_from(["none", "fence", "piggyback"]))
        request = v3.read_request(
            txn, draw(ids), draw(ids), fence=flag == "fence", piggyback=flag == "piggyback",
            master_key=draw(st.none() | keys), previous_lac=draw(st.none() | ids),
            timeout_ms=draw(st.none() | ids), priority=draw(priorities), version=draw(versions),
        )  # fmt: skip
    elif kind == "read_lac":
        request = v3.read_lac_request(txn, draw(ids))
    elif kind == "write_lac":
        request = v3.write_lac_request(txn, draw(ids), draw(ids), draw(keys), draw(bodies))
    elif kind == "force":
        request = v3.force_ledger_request(txn, draw(ids))
    elif kind == "info":
        request = v3.get_bookie_info_request(txn, draw(st.none() | st.integers(0, 3)))
    else:
        request = v3.auth_request(txn, draw(st.text(max_size=20)), draw(bodies))
    if draw(st.booleans()):
        pair = request.requestContext.add()
        pair.key, pair.value = draw(st.text(max_size=8)), draw(st.text(max_size=8))
    return request


@st.composite
def v3_responses(draw: st.DrawFn) -> v3.Response:
    operation = draw(st.sampled_from([pb.READ_ENTRY, pb.ADD_ENTRY, pb.READ_LAC, pb.WRITE_LAC]))
    status = draw(pb_statuses)
    response = pb.Response(header=v3.header(operation, draw(txn_ids)), status=status)
    if draw(st.booleans()):
        return response  # header and status only, like EBADREQ for unknown ops
    if operation == pb.READ_ENTRY:
        read = response.readResponse
        read.status, read.ledgerId, read.entryId = status, draw(ids), draw(ids)
        if draw(st.booleans()):
            read.body = draw(bodies)
        if draw(st.booleans()):
            read.maxLAC = draw(ids)
    elif operation == pb.ADD_ENTRY:
        add = response.addResponse
        add.status, add.ledgerId, add.entryId = status, draw(ids), draw(ids)
    elif operation == pb.READ_LAC:
        lac = response.readLacResponse
        lac.status, lac.ledgerId = status, draw(ids)
        if draw(st.booleans()):
            lac.lacBody = draw(bodies)
        if draw(st.booleans()):
            lac.lastEntryBody = draw(bodies)
    else:
        write = response.writeLacResponse
        write.status, write.ledgerId = status, draw(ids)
    return response


def entry_like_bodies() -> st.SearchStrategy[bytes]:
    return st.binary(min_size=16, max_size=120)


@st.composite
def v2_requests(draw: st.DrawFn) -> v2.V2AddRequest | v2.V2ReadRequest:
    flags = draw(st.integers(0, 0xFFFF))
    if draw(st.booleans()):
        return v2.V2AddRequest(
            draw(st.binary(min_size=20, max_size=20)), draw(entry_like_bodies()), flags
        )
    fencing = bool(flags & v2.Flag.DO_FENCING)
    key = draw(st.binary(min_size=20, max_size=20)) if fencing else None
    return v2.V2ReadRequest(draw(ids), draw(ids), flags, key)


@st.composite
def v2_responses(draw: st.DrawFn) -> v2.V2Response:
    opcode = draw(st.sampled_from([v2.OpCode.ADDENTRY, v2.OpCode.READENTRY]))
    payload = draw(bodies) if opcode == v2.OpCode.READENTRY else b""
    rc = int(draw(statuses).v2)
    return v2.V2Response(int(opcode), rc, draw(ids), draw(ids), payload)
