"""The packet codec on bytes built from ``zookeeper.jute`` by hand (no server)."""

from __future__ import annotations

import pytest

from adapters.zkproxy import ConnectRequest, ConnectResponse, Direction, Op, SubOp
from adapters.zkproxy.codes import ErrorCode, error_name
from adapters.zkproxy.conversation import Conversation
from adapters.zkproxy.errors import MalformedPacket
from adapters.zkproxy.framing import PacketSplitter, frame
from adapters.zkproxy.jute import JuteReader
from adapters.zkproxy.packets import (
    describe_connect_request,
    describe_connect_response,
    describe_reply,
    describe_request,
    encode_reply,
    encode_request,
)
from tests.adapters.zkproxy.jute_bytes import (
    acl_open,
    boolean,
    buffer,
    framed,
    i32,
    i64,
    multi_header,
    reply_header,
    request_header,
    stat,
    ustring,
)

#: Ledger 7's znode (hierarchical layout, ``adapters.zookeeper.paths.ledger_path``).
LEDGER = "/ledgers/00/0000/L0007"
PASSWD = bytes(range(16))


def connect_request_bytes(session_id: int, read_only: bool | None) -> bytes:
    body = i32(0) + i64(0x1F) + i32(30000) + i64(session_id) + buffer(PASSWD)
    return body if read_only is None else body + boolean(read_only)


@pytest.mark.parametrize("read_only", [False, True, None])
def test_connect_request_with_and_without_the_read_only_byte(read_only: bool | None) -> None:
    raw = connect_request_bytes(0x1234, read_only)
    info = describe_connect_request(raw)
    assert info.op is Op.CONNECT and info.direction is Direction.REQUEST
    assert info.connect == ConnectRequest(0, 0x1F, 30000, 0x1234, PASSWD, read_only)
    assert info.connect.encode() == raw


def test_connect_response_granted_and_expired() -> None:
    granted = describe_connect_response(i32(0) + i32(4000) + i64(0x77) + buffer(PASSWD) + b"\0")
    assert granted.connect == ConnectResponse(0, 4000, 0x77, PASSWD, False)
    assert not granted.connect.expired
    assert "session=0x77 timeout=4000ms" in granted.describe()
    # What ZooKeeperServer.finishSessionInit answers for a session it no longer has.
    refused = describe_connect_response(i32(0) + i32(0) + i64(0) + buffer(bytes(16)) + b"\0")
    assert isinstance(refused.connect, ConnectResponse) and refused.connect.expired
    assert "-> expired" in refused.describe()


def test_a_truncated_handshake_is_undecodable_not_an_exception() -> None:
    info = describe_connect_request(i32(0) + i64(0))
    assert info.op is Op.UNDECODABLE and not info.decoded
    assert "ConnectRequest" in (info.error or "") and "timeOut" in (info.error or "")


def test_set_data_request() -> None:
    raw = request_header(12, 5) + ustring(LEDGER) + buffer(b"metadata!") + i32(3)
    info = describe_request(raw)
    assert (info.op, info.xid, info.path, info.data_size, info.version) == (
        Op.SET_DATA, 12, LEDGER, 9, 3,
    )  # fmt: skip
    assert info.describe() == f"setData {LEDGER} v3 xid=12"


@pytest.mark.parametrize(
    ("code", "op", "body", "fields"),
    [
        (1, Op.CREATE, ustring("/a") + buffer(b"xy") + acl_open() + i32(2), {"data_size": 2}),
        (15, Op.CREATE2, ustring("/a") + buffer(None) + acl_open() + i32(0), {"data_size": 0}),
        (2, Op.DELETE, ustring("/a") + i32(-1), {"version": -1}),
        (3, Op.EXISTS, ustring("/a") + boolean(True), {"watch": True}),
        (4, Op.GET_DATA, ustring("/a") + boolean(False), {"watch": False}),
        (8, Op.GET_CHILDREN, ustring("/a") + boolean(True), {"watch": True}),
        (12, Op.GET_CHILDREN2, ustring("/a") + boolean(False), {"watch": False}),
        (13, Op.CHECK, ustring("/a") + i32(4), {"version": 4}),
        (7, Op.SET_ACL, ustring("/a") + acl_open() + i32(2), {"version": 2}),
        (9, Op.SYNC, ustring("/a"), {}),
        (106, Op.ADD_WATCH, ustring("/a") + i32(1), {}),
    ],
)
def test_requests_with_a_path(code: int, op: Op, body: bytes, fields: dict[str, object]) -> None:
    info = describe_request(request_header(3, code) + body)
    assert info.op is op and info.op.code == code
    assert info.path == "/a" and info.error is None
    for name, value in fields.items():
        assert getattr(info, name) == value, name


@pytest.mark.parametrize(
    ("xid", "code", "op"),
    [(-2, 11, Op.PING), (9, -11, Op.CLOSE_SESSION), (-4, 100, Op.AUTH), (5, 999, Op.UNKNOWN)],
)
def test_requests_without_a_path(xid: int, code: int, op: Op) -> None:
    info = describe_request(request_header(xid, code))
    assert (info.op, info.xid, info.path, info.op_code) == (op, xid, None, code)


def test_an_unknown_op_is_described_by_its_code() -> None:
    assert describe_request(request_header(5, 999)).describe() == "op 999 xid=5"


def test_multi_lists_its_operations() -> None:
    body = (
        multi_header(13, False) + ustring("/ledgers/LAYOUT") + i32(0)
        + multi_header(5, False) + ustring(LEDGER) + buffer(b"md") + i32(7)
        + multi_header(1, False) + ustring("/x") + buffer(b"") + acl_open() + i32(0)
        + multi_header(2, False) + ustring("/y") + i32(-1)
        + multi_header(-1, True)
    )  # fmt: skip
    info = describe_request(request_header(20, 14) + body)
    assert info.op is Op.MULTI and info.error is None
    assert info.sub_ops == (
        SubOp(Op.CHECK, "/ledgers/LAYOUT", 0),
        SubOp(Op.SET_DATA, LEDGER, 7),
        SubOp(Op.CREATE, "/x"),
        SubOp(Op.DELETE, "/y", -1),
    )
    assert info.paths == ("/ledgers/LAYOUT", LEDGER, "/x", "/y")


def test_a_body_that_does_not_decode_keeps_the_header() -> None:
    info = describe_request(request_header(4, 5) + ustring(LEDGER)[:6])
    assert info.decoded and info.op is Op.SET_DATA and info.xid == 4 and info.path is None
    assert info.error is not None and "path" in info.error
    assert describe_request(b"\0\0\0").op is Op.UNDECODABLE


def test_replies_take_their_request_and_read_the_stat_version() -> None:
    request = describe_request(request_header(12, 5) + ustring(LEDGER) + buffer(b"x") + i32(3))
    reply = describe_reply(reply_header(12, 0x1F, 0) + stat(version=4), request)
    assert (reply.op, reply.path, reply.xid, reply.zxid, reply.err) == (
        Op.SET_DATA, LEDGER, 12, 0x1F, 0,
    )  # fmt: skip
    assert reply.version == 4 and reply.err_name == "OK"
    assert reply.describe() == f"setData {LEDGER} -> OK zxid=0x1f v4 xid=12"

    get = describe_request(request_header(13, 4) + ustring(LEDGER) + boolean(False))
    got = describe_reply(reply_header(13, 0x20, 0) + buffer(b"abc") + stat(version=9), get)
    assert got.version == 9


def test_an_error_reply_has_no_body_to_read() -> None:
    request = describe_request(request_header(12, 5) + ustring(LEDGER) + buffer(b"x") + i32(3))
    reply = describe_reply(reply_header(12, 0x20, -103), request)
    assert reply.err == ErrorCode.BADVERSION and reply.err_name == "BADVERSION"
    assert reply.version is None and reply.error is None
    assert error_name(-112) == "SESSIONEXPIRED" and error_name(-999) == "err -999"


def test_a_sequential_create_reply_names_the_created_znode() -> None:
    prefix = "/ledgers/idgen/ID-"
    request = describe_request(
        request_header(2, 1) + ustring(prefix) + buffer(b"") + acl_open() + i32(3)
    )
    reply = describe_reply(reply_header(2, 9, 0) + ustring(prefix + "0000000007"), request)
    assert reply.path == prefix and reply.created_path == prefix + "0000000007"


def test_watcher_events_and_special_xids() -> None:
    event = describe_reply(reply_header(-1, -1, 0) + i32(3) + i32(3) + ustring(LEDGER))
    assert event.op is Op.NOTIFICATION and event.path == LEDGER
    assert event.event is not None and event.event.type_name == "NodeDataChanged"
    assert describe_reply(reply_header(-2, 5, 0)).op is Op.PING
    assert describe_reply(reply_header(-8, 5, 0)).op is Op.SET_WATCHES
    assert describe_reply(reply_header(77, 5, 0)).op is Op.UNKNOWN


def test_encoders_write_the_headers_of_the_definitions() -> None:
    assert encode_request(-2, Op.PING) == request_header(-2, 11)
    assert encode_request(1, Op.CLOSE_SESSION) == request_header(1, -11)
    assert encode_reply(3, 9, -101, b"x") == reply_header(3, 9, -101) + b"x"
    with pytest.raises(ValueError, match="connect has no op code"):
        encode_request(1, Op.CONNECT)


def test_the_splitter_handles_any_chunking_and_refuses_bad_lengths() -> None:
    packets = [b"", b"a", bytes(300), b"xyz"]
    stream = b"".join(framed(p) for p in packets)
    assert b"".join(frame(p) for p in packets) == stream
    for size in (1, 2, 3, 7, len(stream)):
        splitter = PacketSplitter()
        got: list[bytes] = []
        for start in range(0, len(stream), size):
            got.extend(splitter.feed(stream[start : start + size]))
        assert got == packets and splitter.pending == 0
    with pytest.raises(MalformedPacket, match="outside"):
        PacketSplitter().feed(i32(-5))
    # A four-letter word sent where a length belongs.
    with pytest.raises(MalformedPacket, match="outside"):
        PacketSplitter().feed(b"ruok")


def test_the_reader_refuses_short_and_negative_fields() -> None:
    with pytest.raises(MalformedPacket, match="needs 8 bytes"):
        JuteReader(b"\0\0\0\0").read_long("zxid")
    with pytest.raises(MalformedPacket, match="negative length"):
        JuteReader(i32(-2)).read_buffer()
    with pytest.raises(MalformedPacket, match="UTF-8"):
        JuteReader(buffer(b"\xff\xfe")).read_ustring()
    assert JuteReader(i32(-1)).read_ustring() is None


def test_a_conversation_pairs_replies_by_xid_around_pings_and_events() -> None:
    conversation = Conversation()
    assert conversation.request(connect_request_bytes(0, False)).op is Op.CONNECT
    # The Java client sends setWatches right behind its ConnectRequest, unanswered yet.
    set_data = conversation.request(request_header(1, 5) + ustring("/a") + buffer(b"") + i32(0))
    ping = conversation.request(request_header(-2, 11))
    get = conversation.request(request_header(2, 4) + ustring("/b") + boolean(True))
    for record_id, info in ((10, set_data), (11, ping), (12, get)):
        conversation.awaiting_reply(info, record_id)

    handshake, answered = conversation.reply(i32(0) + i32(4000) + i64(5) + buffer(PASSWD))
    assert handshake.op is Op.CONNECT and answered is None
    assert conversation.connect_response is not None
    assert conversation.connect_response.session_id == 5
    # The ping, overtaking the held setData, is answered first.
    assert conversation.reply(reply_header(-2, 3, 0)) == (describe_reply(reply_header(-2, 3, 0),
                                                          ping), 11)  # fmt: skip
    event, none = conversation.reply(reply_header(-1, -1, 0) + i32(2) + i32(3) + ustring("/c"))
    assert event.op is Op.NOTIFICATION and none is None
    first, first_id = conversation.reply(reply_header(1, 4, 0) + stat(1))
    second, second_id = conversation.reply(reply_header(2, 4, -101))
    assert (first.op, first.path, first_id) == (Op.SET_DATA, "/a", 10)
    assert (second.op, second.path, second_id, second.err_name) == (
        Op.GET_DATA, "/b", 12, "NONODE",
    )  # fmt: skip
    assert conversation.awaiting == 0
