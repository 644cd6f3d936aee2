"""Frame descriptions from the wire codec's own encodings (no network)."""

from __future__ import annotations

import pytest

from adapters.bookkeeper import v2, v3
from adapters.bookkeeper.entry import DigestType, master_key, package_entry
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import (
    Direction,
    FrameFlag,
    FrameMatch,
    InvalidPolicy,
    Operation,
    Protocol,
    Reorder,
    Rule,
)
from adapters.netproxy.frames import FrameDescriber
from adapters.netproxy.policy import Delay, Drop, Hold

KEY = master_key(b"pw")
BODY = (7).to_bytes(8, "big") + (0).to_bytes(8, "big") + b"payload"


def v3_read_response(txn_id: int, status: StatusCode, ledger_id: int, entry_id: int) -> bytes:
    read = pb.ReadResponse(status=int(status), ledgerId=ledger_id, entryId=entry_id)  # type: ignore[arg-type]
    response = pb.Response(
        header=v3.header(pb.READ_ENTRY, txn_id), status=pb.EOK, readResponse=read
    )
    return v3.encode_message(response)


def test_v3_fence_read_and_its_answer_carry_the_fence_flag() -> None:
    describer = FrameDescriber()
    fence = v3.read_request(11, 7, -1, fence=True, master_key=KEY, priority=100)
    plain = v3.read_request(12, 7, 0)
    request = describer.request(v3.encode_message(fence))
    describer.request(v3.encode_message(plain))
    assert request == request.__class__(
        Direction.REQUEST, Operation.READ_ENTRY, Protocol.V3, 7, -1,
        frozenset({FrameFlag.FENCE_LEDGER, FrameFlag.HIGH_PRIORITY}), 11,
    )  # fmt: skip
    # Answers come back out of order; each is described with its own request's flags.
    plain_answer = describer.response(v3_read_response(12, StatusCode.ENOENTRY, 7, 0))
    fence_answer = describer.response(v3_read_response(11, StatusCode.EFENCED, 7, -1))
    assert (plain_answer.flags, plain_answer.status, plain_answer.entry_id) == (
        frozenset(), StatusCode.ENOENTRY, 0,
    )  # fmt: skip
    assert fence_answer.flags == {FrameFlag.FENCE_LEDGER, FrameFlag.HIGH_PRIORITY}
    assert fence_answer.status is StatusCode.EFENCED
    assert fence_answer.describe() == "READ_ENTRY 7/-1 [FENCE_LEDGER,HIGH_PRIORITY] -> EFENCED"


def test_v3_recovery_add_and_read_lac() -> None:
    describer = FrameDescriber()
    add = describer.request(v3.encode_message(v3.add_request(1, 7, 3, KEY, b"x", recovery=True)))
    assert (add.operation, add.ledger_id, add.entry_id, add.flags) == (
        Operation.ADD_ENTRY, 7, 3, frozenset({FrameFlag.RECOVERY_ADD}),
    )  # fmt: skip
    lac = describer.request(v3.encode_message(v3.read_lac_request(2, 9)))
    assert (lac.operation, lac.ledger_id, lac.entry_id) == (Operation.READ_LAC, 9, None)


def test_v2_requests_and_responses() -> None:
    describer = FrameDescriber()
    read = v2.V2ReadRequest(7, 0, int(v2.Flag.DO_FENCING), KEY)
    add = v2.V2AddRequest(KEY, BODY, int(v2.Flag.RECOVERY_ADD | v2.Flag.HIGH_PRIORITY))
    read_info = describer.request(v2.encode_request(read))
    add_info = describer.request(v2.encode_request(add))
    assert read_info.protocol is Protocol.V2
    assert read_info.flags == {FrameFlag.FENCE_LEDGER}
    assert (add_info.operation, add_info.ledger_id, add_info.entry_id) == (
        Operation.ADD_ENTRY, 7, 0,
    )  # fmt: skip
    assert add_info.flags == {FrameFlag.RECOVERY_ADD, FrameFlag.HIGH_PRIORITY}
    answer = describer.response(
        v2.encode_response(v2.v2_response_for(read, StatusCode.EOK, b"entry"))
    )
    assert (answer.protocol, answer.status) == (Protocol.V2, StatusCode.EOK)
    assert answer.flags == {FrameFlag.FENCE_LEDGER}


def test_undecodable_frames_are_described_not_raised() -> None:
    describer = FrameDescriber()
    info = describer.request(b"\xff\x00garbage")
    assert info.operation is Operation.UNDECODABLE and not info.decoded
    assert info.error and "neither v3" in info.error
    assert FrameMatch(decoded=False).matches(info)
    assert not FrameMatch.request(Operation.READ_ENTRY).matches(info)
    # The next well-formed v3 request is still understood (the proxy may have dropped it).
    ok = describer.request(v3.encode_message(v3.read_request(1, 7, 0)))
    assert ok.operation is Operation.READ_ENTRY


def test_matches_use_meaning_not_txn_id() -> None:
    describer = FrameDescriber()
    first = describer.request(v3.encode_message(v3.read_request(5, 7, -1, fence=True)))
    second = describer.request(v3.encode_message(v3.read_request(99, 7, -1, fence=True)))
    match = FrameMatch.request(Operation.READ_ENTRY, entry_id=-1, flags={FrameFlag.FENCE_LEDGER})
    assert match.matches(first) and match.matches(second)
    assert not FrameMatch(without_flags=frozenset({FrameFlag.FENCE_LEDGER})).matches(first)
    assert not FrameMatch.response().matches(first)


@pytest.mark.parametrize(
    "build",
    [
        lambda: Delay(-1),
        lambda: Hold(release_after=-0.5),
        lambda: Reorder(2, [0, 0]),
        lambda: Reorder(0, []),
        lambda: Rule(FrameMatch(), Drop(), times=0),
        lambda: Rule(FrameMatch(), Reorder(2, [1, 0]), times=2),
        lambda: Rule(FrameMatch(), "drop"),  # type: ignore[arg-type]
        lambda: FrameMatch(flags={FrameFlag.FENCE_LEDGER}, without_flags={FrameFlag.FENCE_LEDGER}),
        lambda: FrameMatch(flags={"FENCE_LEDGER"}),  # type: ignore[arg-type]
    ],
)
def test_meaningless_policies_are_refused(build: object) -> None:
    with pytest.raises(InvalidPolicy):
        build()  # type: ignore[operator]


def test_the_lac_an_entry_carries_is_decoded_from_adds_and_read_answers() -> None:
    describer = FrameDescriber()
    entry = package_entry(DigestType.CRC32, b"pw", 7, 3, 1, 10, b"x")
    add = describer.request(v3.encode_message(v3.add_request(1, 7, 3, KEY, entry)))
    assert add.lac == 1
    describer.request(v3.encode_message(v3.read_request(2, 7, -1, fence=True, master_key=KEY)))
    read = pb.ReadResponse(status=pb.EOK, ledgerId=7, entryId=3, body=entry)
    answer = describer.response(
        v3.encode_message(
            pb.Response(header=v3.header(pb.READ_ENTRY, 2), status=pb.EOK, readResponse=read)
        )
    )
    assert answer.lac == 1
    # A frame that carries no entry carries no LAC; nor does a body too short to hold one.
    assert describer.request(v3.encode_message(v3.read_request(3, 7, 0))).lac is None
    short = describer.request(v3.encode_message(v3.add_request(4, 7, 3, KEY, b"x" * 31)))
    assert short.lac is None
    v2_add = v2.V2AddRequest(KEY, entry)
    assert describer.request(v2.encode_request(v2_add)).lac == 1
