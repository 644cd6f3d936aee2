"""What one replay answered: observed answers, errors and silent steps rendered so that they
compare across runs. No cluster."""

from __future__ import annotations

from conformance.bookie_comparison.answers import (
    answers_of,
    normalise_error,
    render_observed,
    request_kind,
)
from tests.conformance.bookie_comparison.replays import record


def test_answers_of_renders_observed_errors_and_silent_steps() -> None:
    records = [
        record(
            1, "ClientCreatesLedger", observed={"kind": "metadata", "status": "OK", "success": True}
        ),
        record(2, "ClientSendsAdd"),
        record(
            3,
            "BookieSendsAddConfirmed",
            request="add e1 (lac=0)",
            observed={"kind": "add", "status": "EOK", "success": True},
        ),
        record(
            4,
            "BookieSendsReadResponse",
            request="recovery read e2, fence",
            error="bookie 127.0.0.1:40123: timed out\nmore",
        ),
    ]
    answers = answers_of(records)
    assert [a.answer for a in answers] == [
        "metadata OK success=True",
        None,
        "add EOK success=True",
        "error: bookie HOST:PORT: timed out",
    ]
    assert [a.request for a in answers] == ["metadata", "-", "add", "recovery read, fence"]


def test_render_observed_is_stable_and_complete() -> None:
    observed = {"lac": 1, "code": "OK", "kind": "fence", "status": "EOK"}
    assert render_observed(observed) == "fence EOK code=OK lac=1"
    assert render_observed({"kind": "read", "status": "ENOLEDGER", "code": "NoSuchEntry"}) != (
        render_observed({"kind": "read", "status": "ENOENTRY", "code": "NoSuchEntry"})
    )


def test_request_kind_drops_entry_numbers() -> None:
    assert request_kind("X", "recovery add e3 (lac=2)") == "recovery add"
    assert request_kind("X", "fence (read LAC)") == "fence (read LAC)"
    assert request_kind("ClientClosesLedgerSuccess", None) == "metadata"
    assert request_kind("ClientSendsAdd", None) == "-"


def test_normalise_error_hides_endpoints_and_ledger_ids() -> None:
    a = normalise_error("cannot connect to bookie 127.0.0.1:3181 for ledger 17: refused")
    b = normalise_error("cannot connect to bookie 127.0.0.1:4242 for ledger 3: refused")
    assert a == b == "cannot connect to bookie HOST:PORT for ledger N: refused"
    assert normalise_error("") == "(empty)"
