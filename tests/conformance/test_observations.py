"""The diff that turns a target's answers into divergences: ``differences`` field by field,
``state_differences`` for the final state, and the Spark-side ``is_divergent`` agreeing with
``differences`` on the same rows."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.distributed.diff import is_divergent
from conformance.engine import state_differences
from conformance.observations import Observation, differences, predicted
from conformance.targets.base import TargetSnapshot
from model.bookkeeper.actions import init_state
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import (
    ADD_ENTRY_RESPONSE,
    FENCE_RESPONSE,
    NIL_DATA,
    NO_SUCH_ENTRY,
    OK,
    READ_REQUEST,
    READ_RESPONSE,
    STATUS_CLOSED,
    STATUS_OPEN,
    UNKNOWN,
    AddEntryResponse,
    Entry,
    FenceResponse,
    Fragment,
    Message,
    ReadRequest,
    ReadResponse,
)

OK_ADD = Observation("add", "EOK", success=True)
CLOSE_FAILS = Observation("metadata", "MetadataVersionMismatch", success=False)
WRITE_OK = Observation("metadata", "OK", success=True)


def test_equal_answers_do_not_differ() -> None:
    assert differences(OK_ADD, OK_ADD) == []
    assert differences(CLOSE_FAILS, CLOSE_FAILS) == []
    fence = Observation("fence", "EOK", code="OK", lac=1)
    assert differences(fence, Observation("fence", "ENOENTRY", code="OK", lac=1)) == []


@pytest.mark.parametrize(
    ("observed", "said"),
    [
        (Observation("add", "EFENCED", success=False), "success: predicted True, observed False"),
        (Observation("read", "EOK", code="OK", data=1), "kind: predicted 'add', observed 'read'"),
        (Observation("add", "EOK", success=None), "success: predicted True, observed None"),
    ],
)
def test_a_wrong_add_differs(observed: Observation, said: str) -> None:
    assert said in differences(OK_ADD, observed)[0]


def test_every_decided_field_is_compared() -> None:
    read = Observation("read", "EOK", code="OK", data=1)
    assert differences(read, Observation("read", "EOK", code="OK", data=2)) == [
        "data: predicted 1, observed 2 (EOK)"
    ]
    assert differences(read, Observation("read", "ENOENTRY", code="NoSuchEntry")) == [
        "code: predicted 'OK', observed 'NoSuchEntry' (ENOENTRY)",
        "data: predicted 1, observed None (ENOENTRY)",
    ]
    fence = Observation("fence", "EOK", code="OK", lac=1)
    assert differences(fence, Observation("fence", "EOK", code="OK", lac=0)) == [
        "lac: predicted 1, observed 0 (EOK)"
    ]
    # The wire's own word is not the model's for bookie answers: ENOENTRY = ENOLEDGER.
    absent = Observation("read", "ENOENTRY", code="NoSuchEntry")
    assert differences(absent, Observation("read", "ENOLEDGER", code="NoSuchEntry")) == []


@pytest.mark.parametrize("status", ["ZooKeeperTimeout", "ZooKeeperError", "NoSuchLedger"])
def test_an_expected_metadata_failure_matches_only_a_lost_compare_and_set(status: str) -> None:
    # The audit's case: a ZooKeeper outage matched ClientClosesLedgerFail's prediction.
    observed = Observation("metadata", status, success=False)
    assert differences(CLOSE_FAILS, observed) == [
        f"status: predicted 'MetadataVersionMismatch', observed {status!r} ({status})"
    ]
    assert is_divergent(json.dumps(CLOSE_FAILS.as_dict()), json.dumps(observed.as_dict()))


def test_a_metadata_write_that_fails_when_it_should_succeed_differs() -> None:
    assert differences(WRITE_OK, CLOSE_FAILS)[0].startswith("success: predicted True")


observations = st.builds(
    Observation,
    kind=st.sampled_from(["add", "fence", "read", "metadata"]),
    status=st.sampled_from(["EOK", "EFENCED", "ENOENTRY", "OK", "MetadataVersionMismatch"]),
    success=st.none() | st.booleans(),
    code=st.none() | st.sampled_from(["OK", "NoSuchEntry", "Unknown"]),
    lac=st.none() | st.integers(0, 3),
    data=st.none() | st.integers(1, 3),
)


@given(observations, observations)
def test_the_spark_diff_agrees_with_the_engine(want: Observation, got: Observation) -> None:
    row = (json.dumps(want.as_dict()), json.dumps(got.as_dict()))
    assert is_divergent(*row) == bool(differences(want, got))
    assert not is_divergent(row[0], row[0])


def test_a_step_without_both_sides_is_not_compared() -> None:
    assert not is_divergent(None, json.dumps(OK_ADD.as_dict()))
    assert not is_divergent(json.dumps(OK_ADD.as_dict()), None)


CFG = ModelConfig(bookies=2, clients=1, write_quorum=2, ack_quorum=1)
FRAGMENT = Fragment(id=1, ensemble=0b11, first_entry_id=1)


def _closed():  # type: ignore[no-untyped-def]
    return init_state(CFG)._replace(
        meta_status=STATUS_CLOSED,
        meta_fragments=(FRAGMENT,),
        meta_last_entry=1,
        b_entries=(frozenset({Entry(1, 1)}), frozenset()),
    )


def _snapshot(**changes: object) -> TargetSnapshot:
    fields: dict[str, object] = {
        "entries": {0: {1}, 1: set()},
        "meta_status": "CLOSED",
        "meta_last_entry": 1,
        "meta_fragments": [(1, [0, 1])],
    }
    fields.update(changes)
    return TargetSnapshot(**fields)  # type: ignore[arg-type]


def test_a_final_state_that_agrees_has_no_differences() -> None:
    assert state_differences(CFG, _closed(), _snapshot()) == []
    assert state_differences(CFG, init_state(CFG), TargetSnapshot()) == []


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"entries": {0: set(), 1: set()}}, "bookie b1 holds [], model [1]"),
        ({"entries": {0: {1}, 1: {1}}}, "bookie b2 holds [1], model []"),
        ({"entries": {1: set()}}, "bookie b1 holds [], model [1]"),  # a bookie not reported
        ({"meta_status": "OPEN"}, "metadata status OPEN, model CLOSED"),
        ({"meta_status": None}, "metadata status None, model CLOSED"),
        ({"meta_last_entry": 0}, "metadata last entry 0, model 1"),
        ({"meta_fragments": [(1, [0])]}, "metadata fragments [(1, [0])], model [(1, [0, 1])]"),
    ],
)
def test_each_final_difference_is_reported(changes: dict[str, object], said: str) -> None:
    (found,) = state_differences(CFG, _closed(), _snapshot(**changes))
    assert found == f"final state: {said}"


def test_metadata_the_model_never_wrote_is_a_difference() -> None:
    (found,) = state_differences(CFG, init_state(CFG), TargetSnapshot(meta_status="OPEN"))
    assert found == "final state: ledger metadata exists (OPEN), model has none"
    open_state = _closed()._replace(meta_status=STATUS_OPEN)
    # The last entry is compared only once the ledger is closed.
    snapshot = _snapshot(meta_status="OPEN", meta_last_entry=0)
    assert state_differences(CFG, open_state, snapshot) == []


# The model's predictions, reply by reply: what every diff starts from.
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            AddEntryResponse(ADD_ENTRY_RESPONSE, 0, 0, Entry(1, 7), False, True),
            Observation("add", "EOK", success=True),
        ),
        (
            AddEntryResponse(ADD_ENTRY_RESPONSE, 0, 0, Entry(1, 7), True, False),
            Observation("add", "EFENCED", success=False),
        ),
        (
            FenceResponse(FENCE_RESPONSE, 1, 1, 3, OK),
            Observation("fence", "OK", code="OK", lac=3),
        ),
        (
            FenceResponse(FENCE_RESPONSE, 1, 1, 3, UNKNOWN),
            Observation("fence", "Unknown", code="Unknown", lac=None),
        ),
        (
            ReadResponse(READ_RESPONSE, 0, 1, Entry(2, 9), True, OK),
            Observation("read", "OK", code="OK", data=9),
        ),
        (
            ReadResponse(READ_RESPONSE, 0, 1, Entry(2, NIL_DATA), True, NO_SUCH_ENTRY),
            Observation("read", "NoSuchEntry", code="NoSuchEntry", data=None),
        ),
        (
            ReadResponse(READ_RESPONSE, 0, 1, Entry(2, NIL_DATA), True, UNKNOWN),
            Observation("read", "Unknown", code="Unknown", data=None),
        ),
    ],
)
def test_the_prediction_for_each_reply(reply: Message, expected: Observation) -> None:
    got = predicted(reply)
    assert got == expected
    assert got.as_dict() == expected.as_dict()


def test_a_request_has_no_prediction() -> None:
    with pytest.raises(ValueError, match="not a bookie reply"):
        predicted(ReadRequest(READ_REQUEST, 0, 1, 2, True))


def test_status_is_compared_when_either_side_is_a_metadata_answer() -> None:
    # A metadata prediction met by a bookie's answer (or the reverse) differs in kind and in
    # status: both are reported, whichever side is the metadata one.
    meta = Observation("metadata", "OK", success=True)
    add = Observation("add", "EOK", success=True)
    assert differences(meta, add) == [
        "kind: predicted 'metadata', observed 'add' (EOK)",
        "status: predicted 'OK', observed 'EOK' (EOK)",
    ]
    assert differences(add, meta) == [
        "kind: predicted 'add', observed 'metadata' (OK)",
        "status: predicted 'EOK', observed 'OK' (OK)",
    ]


def test_an_observation_as_a_record_leaves_out_what_was_not_seen() -> None:
    seen = Observation("read", "ENOENTRY", code="NoSuchEntry", lac=0, unobserved=("data",))
    assert seen.as_dict() == {
        "kind": "read",
        "status": "ENOENTRY",
        "code": "NoSuchEntry",
        "lac": 0,
        "unobserved": ["data"],
    }
    assert list(seen.as_dict()) == ["kind", "status", "code", "lac", "unobserved"]
    assert Observation("add", "EOK", success=False).as_dict() == {
        "kind": "add",
        "status": "EOK",
        "success": False,
    }
