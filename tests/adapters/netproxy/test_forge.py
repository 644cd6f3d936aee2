"""Forged answers without a network: their bytes against real bookies' answers (the golden
captures), a replaced status on the bookie's own answer, what cannot be forged, and Forge
rules."""

from __future__ import annotations

import pytest

from adapters.bookkeeper import v2, v3
from adapters.bookkeeper.entry import master_key
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import (
    Direction,
    Drop,
    FrameFlag,
    FrameMatch,
    InvalidPolicy,
    Operation,
    Protocol,
    Rule,
)
from adapters.netproxy.core import ProxyCore
from adapters.netproxy.forge import forged_payload, unforgeable
from adapters.netproxy.frames import FrameDescriber, FrameInfo
from adapters.netproxy.log import FrameLog
from adapters.netproxy.policy import Forge
from tests.adapters.bookkeeper.golden import exchanges, golden_files

KEY = master_key(b"pw")
BODY = (7).to_bytes(8, "big") + (3).to_bytes(8, "big") + b"payload"
#: The statuses the Java-client schedules forge (see conformance/javaclient/plans.py).
STATUSES = [
    StatusCode.EIO,
    StatusCode.ETOOMANYREQUESTS,
    StatusCode.EUA,
    StatusCode.EFENCED,
    StatusCode.ENOLEDGER,
]


def _golden_error_exchanges() -> list[tuple[str, bytes, bytes]]:
    """``(label, request payload, error answer payload)`` of every golden error exchange."""
    found = []
    for path in golden_files():
        if not path.name.startswith(("errors", "limbo")):
            continue  # the session files hold several requests per connection
        for request, response in exchanges(path):
            if response is None:
                continue
            describer = FrameDescriber()
            describer.request(request.frame[4:])
            status = describer.response(response.frame[4:]).status
            if status not in (None, StatusCode.EOK):
                found.append((request.label, request.frame[4:], response.frame[4:]))
    return found


GOLDEN_ERRORS = _golden_error_exchanges()


def test_the_golden_captures_hold_error_exchanges_of_both_protocols() -> None:
    labels = " ".join(label for label, _, _ in GOLDEN_ERRORS)
    assert len(GOLDEN_ERRORS) >= 30
    for scenario in ("add-fenced-ledger", "v2-add-fenced-ledger", "unknown-op-range-read"):
        assert f":{scenario}:" in labels


@pytest.mark.parametrize(
    ("request_payload", "answer"),
    [(request, answer) for _, request, answer in GOLDEN_ERRORS],
    ids=[label for label, _, _ in GOLDEN_ERRORS],
)
def test_a_forged_answer_to_a_request_is_the_bookies_error_answer_byte_for_byte(
    request_payload: bytes, answer: bytes
) -> None:
    describer = FrameDescriber()
    info = describer.request(request_payload)
    status = describer.response(answer).status
    assert status is not None
    assert forged_payload(info, request_payload, status) == answer


def _describe_response(payload: bytes, protocol: Protocol) -> FrameInfo:
    describer = FrameDescriber()
    if protocol is Protocol.V2:  # the describer reads responses in its requests' protocol
        describer.request(v2.encode_request(v2.V2ReadRequest(7, 3)))
    return describer.response(payload)


@pytest.mark.parametrize("status", STATUSES, ids=lambda s: s.name)
def test_a_forged_v3_read_answer_keeps_header_and_ids_and_loses_the_body(
    status: StatusCode,
) -> None:
    read = pb.ReadResponse(status=pb.EOK, ledgerId=7, entryId=3, body=BODY, maxLAC=2)
    header = v3.header(pb.READ_ENTRY, 41)
    original = v3.encode_message(pb.Response(header=header, status=pb.EOK, readResponse=read))
    info = _describe_response(original, Protocol.V3)
    forged = v3.decode_response(forged_payload(info, original, status))
    assert forged.header == header  # same txnId: the client takes it for the bookie's answer
    assert forged.status == status and forged.readResponse.status == status
    assert (forged.readResponse.ledgerId, forged.readResponse.entryId) == (7, 3)
    assert not forged.readResponse.HasField("body") and not forged.readResponse.HasField("maxLAC")


@pytest.mark.parametrize("status", STATUSES, ids=lambda s: s.name)
def test_a_forged_v2_answer_has_the_v2_return_code_and_no_payload(status: StatusCode) -> None:
    original = v2.encode_response(v2.V2Response(v2.OpCode.READENTRY, 0, 7, 3, BODY))
    info = _describe_response(original, Protocol.V2)
    forged = v2.decode_response(forged_payload(info, original, status))
    assert isinstance(forged, v2.V2Response)
    assert (forged.opcode, forged.rc, forged.ledger_id, forged.entry_id, forged.payload) == (
        v2.OpCode.READENTRY,
        int(status.v2),
        7,
        3,
        b"",
    )


@pytest.mark.parametrize(
    ("request_message", "body"),
    [
        (v3.write_lac_request(5, 7, 2, KEY, BODY), "writeLacResponse"),
        (v3.read_lac_request(5, 7), "readLacResponse"),
        (v3.force_ledger_request(5, 7), "forceLedgerResponse"),
    ],
    ids=["write-lac", "read-lac", "force-ledger"],
)
def test_v3_ledger_operations_are_answered_with_their_body(
    request_message: v3.Request, body: str
) -> None:
    payload = v3.encode_message(request_message)
    info = FrameDescriber().request(payload)
    forged = v3.decode_response(forged_payload(info, payload, StatusCode.EIO))
    assert forged.header.txnId == 5
    assert [field.name for field, _ in forged.ListFields()] == ["header", "status", body]
    sub = getattr(forged, body)
    assert (forged.status, sub.status, sub.ledgerId) == (StatusCode.EIO, StatusCode.EIO, 7)


def test_auth_and_bookie_info_answers() -> None:
    auth = v3.encode_message(v3.auth_request(9, "AuthDisabledPlugin", b""))
    forged = v3.decode_response(
        forged_payload(FrameDescriber().request(auth), auth, StatusCode.EUA)
    )
    assert forged.status == StatusCode.EUA and not forged.HasField("authResponse")
    info = v3.encode_message(v3.get_bookie_info_request(10, 3))
    described = FrameDescriber().request(info)
    forged = v3.decode_response(forged_payload(described, info, StatusCode.EIO))
    assert forged.getBookieInfoResponse.status == StatusCode.EIO
    assert not forged.getBookieInfoResponse.HasField("freeDiskSpace")


def test_undecodable_frames_and_v2_auth_cannot_be_forged() -> None:
    garbage = FrameInfo(Direction.REQUEST, Operation.UNDECODABLE, error="junk")
    v2_auth = FrameDescriber().request(v2.encode_request(v2.V2AuthRequest(b"")))
    for info in (garbage, v2_auth):
        assert unforgeable(info) is not None
        with pytest.raises(InvalidPolicy, match="cannot forge EIO"):
            forged_payload(info, b"\x02\x03\x00\x00", StatusCode.EIO)
    assert (
        unforgeable(FrameDescriber().request(v3.encode_message(v3.read_lac_request(1, 7)))) is None
    )


def test_forge_takes_an_error_status() -> None:
    assert Rule(FrameMatch.request(), Forge(StatusCode.EIO)).action == Forge(StatusCode.EIO)
    with pytest.raises(InvalidPolicy, match="EOK is not one"):
        Forge(StatusCode.EOK)
    with pytest.raises(InvalidPolicy, match="takes a StatusCode"):
        Forge(501)  # type: ignore[arg-type]


def test_a_forge_rule_passes_over_frames_it_cannot_forge() -> None:
    core = ProxyCore("b1", "127.0.0.1", 1, FrameLog())
    forge_id = core.add_rule(Rule(FrameMatch.request(), Forge(StatusCode.EIO), times=1))
    drop_id = core.add_rule(Rule(FrameMatch.request(), Drop()))
    garbage = FrameInfo(Direction.REQUEST, Operation.UNDECODABLE, error="junk")
    v2_auth = FrameDescriber().request(v2.encode_request(v2.V2AuthRequest(b"")))
    read = FrameDescriber().request(v3.encode_message(v3.read_request(1, 7, 0)))
    for info in (garbage, v2_auth):
        live = core._match(info)
        assert live is not None and live.rule_id == drop_id
    assert core.rules()[0] == (forge_id, Rule(FrameMatch.request(), Forge(StatusCode.EIO), 1), 1)
    live = core._match(read)
    assert live is not None and live.rule_id == forge_id
    assert [rule_id for rule_id, _, _ in core.rules()] == [drop_id]  # the forge rule is spent


def test_a_forged_fence_read_answer_carries_the_fence_flag() -> None:
    describer = FrameDescriber()
    fence = v3.encode_message(v3.read_request(11, 7, -1, fence=True, master_key=KEY))
    request = describer.request(fence)
    answer = describer.response(
        forged_payload(request, fence, StatusCode.EFENCED), protocol=request.protocol
    )
    assert answer.flags == {FrameFlag.FENCE_LEDGER}
    assert (answer.txn_id, answer.status, answer.entry_id) == (11, StatusCode.EFENCED, -1)
