"""``bkconform encodings`` without a cluster: the captures of 4.17.3 and 4.18.0 in
``captures/`` (taken by the command, README there), the golden 4.17.4 captures, and the
comparison's rules on made-up differences."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters import protobuf_wire
from adapters.bookkeeper import codec, framing
from adapters.bookkeeper.entry import DigestType, package_entry, parse_entry
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from adapters.zookeeper.metadata import LedgerState, parse_ledger_metadata
from conformance.cli import main
from conformance.encodings.captures import CapturedFrame, ReleaseCapture, load_capture
from conformance.encodings.compare import (
    TIMING_EXPLANATION,
    Difference,
    Outcome,
    codec_checks_of,
    compare_captures,
    explain,
)
from conformance.encodings.kinds import PROBE, SESSION, ZNODE
from conformance.encodings.metadata_reads import reader_checks, shell_checks
from conformance.encodings.probes import GOLDEN_PROBES, PASSWORD, PROBES
from conformance.encodings.report import EncodingsReport, render_markdown, summary_lines
from conformance.verdict import Verdict
from tests.adapters.bookkeeper.golden import golden_dir

CAPTURES = Path(__file__).resolve().parent / "captures"

#: The four request kinds whose fields 4.18.0 writes in another order (flag first).
FLAGGED_REQUESTS = {
    "recovery-open: READ_ENTRY request entry -1 FENCE_LEDGER": "readRequest",
    "recovery-open: READ_ENTRY request entry 4 FENCE_LEDGER priority 100": "readRequest",
    "recovery-open: ADD_ENTRY request entry 4 RECOVERY_ADD priority 100": "addRequest",
    "recovery-open: READ_ENTRY request entry 5 FENCE_LEDGER priority 100": "readRequest",
}
#: Our probes beyond the golden's: both field orders of the flagged requests.
OUR_PROBES = {probe.name for probe in PROBES} - set(GOLDEN_PROBES)


@pytest.fixture(scope="module")
def release_4_18() -> ReleaseCapture:
    return load_capture(CAPTURES, "4.18.0")


@pytest.fixture(scope="module")
def release_4_17() -> ReleaseCapture:
    return load_capture(CAPTURES, "4.17.3")


@pytest.fixture(scope="module")
def golden_4_17_4() -> ReleaseCapture:
    return load_capture(golden_dir(), "4.17.4")


def _differing(comparison: object) -> dict[str, tuple[Difference, ...]]:
    kinds = comparison.kinds  # type: ignore[attr-defined]
    return {k.kind: k.differences for k in kinds if k.outcome is Outcome.DIFFERS}


def _assert_flag_moved_first(differences: tuple[Difference, ...], message: str) -> None:
    (difference,) = differences
    assert (difference.path, difference.what) == (message, "field order")
    assert difference.baseline.split()[-1] == "flag"  # protobuf-java: field-number order
    assert difference.candidate.split()[0] == "flag"  # LightProto: declaration order
    assert sorted(difference.baseline.split()) == sorted(difference.candidate.split())
    assert difference.explanation is not None and "LightProto" in difference.explanation


# -- the 4.18.0 capture and the suite's codec ---------------------------------------------------


def test_the_capture_is_complete(release_4_18: ReleaseCapture) -> None:
    assert release_4_18.ledger_id == 150 and len(release_4_18.bookie_ids) == 3
    scenarios = [f.scenario for f in release_4_18.session]
    assert len(scenarios) == 64  # as the golden session: 40 + 18 + 6
    assert (scenarios.count("write"), scenarios.count("recovery-open")) == (40, 18)
    assert {f.scenario for f in release_4_18.probes} == {p.name for p in PROBES}
    assert sorted(z.stat_version for z in release_4_18.znodes if "/L0150" in z.path) == [0, 1, 2]


def test_every_4_18_0_frame_decodes_with_the_suites_codec(release_4_18: ReleaseCapture) -> None:
    undecodable = {"bad-version-undefined-enum", "v2-unknown-op"}  # no bookie decodes them
    for frame in release_4_18.frames():
        if frame.is_request and frame.scenario in undecodable:
            continue
        decode = codec.decode_request if frame.is_request else codec.decode_response
        decode(frame.payload)  # raises MalformedFrame otherwise
    checks = codec_checks_of(release_4_18)
    assert all(check.ok for check in checks)
    reordered = [c.label for c in checks if c.result == "field-number order"]
    # Our encoder writes field-number order: 4.17's bytes. It gives 4.18.0's frames back byte
    # for byte but for the flagged requests (9 in the session, our 2 flag-first probes).
    assert len(reordered) == 11
    assert all("recovery-open c2b" in label or "flag-first c2b" in label for label in reordered)
    assert sum(c.result == "undecodable (expected)" for c in checks) == 2


def test_both_field_orders_are_accepted_by_both_releases(
    release_4_17: ReleaseCapture, release_4_18: ReleaseCapture
) -> None:
    answers = compare_captures(release_4_17, release_4_18).field_order_probes
    assert answers == {name: {"4.17.3": "EOK", "4.18.0": "EOK"} for name in OUR_PROBES}


def test_the_probe_requests_are_the_goldens_and_so_are_4_18_0s_answers(
    golden_4_17_4: ReleaseCapture, release_4_18: ReleaseCapture
) -> None:
    golden = {(f.scenario, f.direction): f.frame for f in golden_4_17_4.probes}
    ours = {(f.scenario, f.direction): f.frame for f in release_4_18.probes}
    for probe in PROBES[: len(GOLDEN_PROBES)]:
        assert framing.encode_frame(probe.build(150)) == golden[(probe.name, "c2b")]
    assert {key: ours[key] for key in golden} == golden  # byte for byte, answers included


# -- the comparison ---------------------------------------------------------------------------


def test_4_17_3_against_4_18_0_differs_only_in_the_flagged_requests_field_order(
    release_4_17: ReleaseCapture, release_4_18: ReleaseCapture
) -> None:
    comparison = compare_captures(release_4_17, release_4_18)
    differing = _differing(comparison)
    assert set(differing) == set(FLAGGED_REQUESTS)
    for kind, message in FLAGGED_REQUESTS.items():
        _assert_flag_moved_first(differing[kind], message)
    assert not comparison.not_compared and not comparison.unreadable
    groups = {k.group for k in comparison.kinds if k.outcome is Outcome.EQUAL}
    assert groups == {SESSION, PROBE, ZNODE}
    assert len(comparison.compared) == 77
    report = EncodingsReport(("4.17.3", "4.18.0"), "test", [comparison])
    report.reader_checks = reader_checks(release_4_17) + reader_checks(release_4_18)
    report.shell_checks = shell_checks(release_4_17) + shell_checks(release_4_18)
    assert report.verdict is Verdict.CLEAN, report.reasons()


def test_the_golden_4_17_4_against_4_18_0_differs_in_the_same_kinds(
    golden_4_17_4: ReleaseCapture, release_4_18: ReleaseCapture
) -> None:
    """The same four kinds as against our 4.17.3 capture, and the cookie: the golden's bookies
    had ``indexDirectories`` configured, which ``Cookie.generateCookie`` writes as
    ``indexDirs`` (release-4.17.3 Cookie.java lines 338-340); ours have not."""
    comparison = compare_captures(golden_4_17_4, release_4_18)
    differing = _differing(comparison)
    assert set(differing) == {*FLAGGED_REQUESTS, "znode bookie cookie"}
    for kind, message in FLAGGED_REQUESTS.items():
        _assert_flag_moved_first(differing[kind], message)
    (cookie,) = differing["znode bookie cookie"]
    assert cookie.what == "present in one only" and cookie.explanation is None
    assert cookie.baseline.startswith("indexDirs: ") and cookie.candidate == "(none)"
    assert {k.kind for k in comparison.not_compared} == {
        f"probe {name}: {direction}" for name in OUR_PROBES for direction in ("request", "response")
    }
    assert {k.outcome for k in comparison.not_compared} == {Outcome.ONLY_CANDIDATE}
    assert sum(k.outcome is Outcome.EQUAL for k in comparison.kinds) == 64


def _renumbered(capture: ReleaseCapture, txn_offset: int, ledger_id: int) -> ReleaseCapture:
    """``capture`` as another run would have it: other txnIds, another ledger id (its entry
    bodies packaged again for it, digests included)."""

    def change(field: protobuf_wire.WireField) -> protobuf_wire.WireField:
        if field.name == "txnId":
            assert isinstance(field.value, int)
            return dataclasses.replace(field, value=field.value + txn_offset)
        if field.name == "ledgerId" and field.value == capture.ledger_id:
            return dataclasses.replace(field, value=ledger_id)
        if field.name in ("body", "lastEntryBody") and isinstance(field.value, bytes):
            entry = parse_entry(field.value, DigestType.CRC32)
            body = package_entry(
                DigestType.CRC32, PASSWORD, ledger_id, entry.entry_id,
                entry.last_add_confirmed, entry.length, entry.payload,
            )  # fmt: skip
            return dataclasses.replace(field, value=body)
        return field

    frames = []
    for frame in capture.session:
        descriptor = pb.Request.DESCRIPTOR if frame.is_request else pb.Response.DESCRIPTOR
        fields = protobuf_wire.map_fields(protobuf_wire.parse(frame.payload, descriptor), change)
        frames.append(
            dataclasses.replace(frame, frame=framing.encode_frame(protobuf_wire.emit(fields)))
        )
    return dataclasses.replace(
        capture, version="4.18.0-again", session=tuple(frames), probes=(), znodes=(),
        ledger_id=ledger_id,
    )  # fmt: skip


def test_what_varies_between_runs_is_normalised_and_nothing_else(
    release_4_18: ReleaseCapture,
) -> None:
    again = _renumbered(release_4_18, txn_offset=100, ledger_id=4242)
    assert again.session[0].frame != release_4_18.session[0].frame
    comparison = compare_captures(release_4_18, again, groups=[SESSION])
    assert {k.outcome for k in comparison.kinds} == {Outcome.EQUAL}
    # A body whose digest does not verify is not normalised: the difference shows.
    index, response = next(
        (i, f) for i, f in enumerate(again.session) if not f.is_request and len(f.frame) > 60
    )
    corrupted = response.frame[:-1] + bytes([response.frame[-1] ^ 1])
    broken = dataclasses.replace(
        again,
        session=(*again.session[:index], dataclasses.replace(response, frame=corrupted),
                 *again.session[index + 1 :]),
    )  # fmt: skip
    differing = _differing(compare_captures(release_4_18, broken, groups=[SESSION]))
    assert len(differing) == 1
    ((difference,),) = differing.values()
    assert difference.what == "value" and difference.explanation is None


def test_a_field_order_is_explained_only_as_lightproto_writes_it() -> None:
    written = Difference(
        "readRequest", "field order", "ledgerId entryId masterKey flag",
        "flag ledgerId entryId masterKey",
    )  # fmt: skip
    assert explain(written, pb.Request.DESCRIPTOR, "4.17.3", "4.18.0").explained
    assert explain(written, pb.Request.DESCRIPTOR, "4.18.0", "4.17.3").explained is False
    # Two protobuf-java releases, or an order that is not the declaration order: unexplained.
    assert not explain(written, pb.Request.DESCRIPTOR, "4.17.3", "4.17.4").explained
    other = dataclasses.replace(written, candidate="entryId ledgerId masterKey flag")
    assert not explain(other, pb.Request.DESCRIPTOR, "4.17.3", "4.18.0").explained
    value = Difference("readRequest", "value", "entryId=4", "entryId=5")
    assert not explain(value, pb.Request.DESCRIPTOR, "4.17.3", "4.18.0").explained


def test_a_kind_seen_in_one_release_only_is_undecided(release_4_18: ReleaseCapture) -> None:
    before_the_late_add = tuple(f for f in release_4_18.session if f.scenario != "add-after-fence")
    fewer = dataclasses.replace(
        release_4_18, version="4.17.3", session=before_the_late_add, probes=(), znodes=()
    )
    comparison = compare_captures(fewer, release_4_18, groups=[SESSION])
    assert {(k.kind, k.outcome) for k in comparison.not_compared} == {
        ("add-after-fence: ADD_ENTRY request entry 5", Outcome.ONLY_CANDIDATE),
        ("add-after-fence: response EFENCED to ADD_ENTRY entry 5", Outcome.ONLY_CANDIDATE),
    }
    report = EncodingsReport(("4.17.3", "4.18.0"), "test", [comparison])
    assert report.verdict is Verdict.UNDECIDED
    assert EncodingsReport(("4.18.0",), "test").verdict is Verdict.UNDECIDED  # nothing compared


# -- timing: a bookie still behind when the session reads back ----------------------------------


@pytest.fixture(scope="module")
def slow_bookie_4_18(release_4_18: ReleaseCapture) -> ReleaseCapture:
    """4.18.0 with the session of a run where one bookie was behind (captures/README.md)."""
    behind = load_capture(CAPTURES / "slow-bookie", "4.18.0")
    return dataclasses.replace(release_4_18, session=behind.session)


def _read_answer(capture: ReleaseCapture, entry: int, status: int = pb.EOK) -> int:
    """The index of the write step's first answer ``status`` to a read of ``entry``."""
    for index, frame in enumerate(capture.session):
        if frame.scenario != "write" or frame.is_request:
            continue
        response = codec.decode_response(frame.payload)
        read = response.readResponse
        if response.header.operation == pb.READ_ENTRY and (read.entryId, read.status) == (
            entry,
            status,
        ):
            return index
    raise AssertionError(f"no read answer {status} to e{entry}")


def _changed(
    capture: ReleaseCapture,
    index: int,
    change: Callable[[protobuf_wire.WireField], protobuf_wire.WireField],
) -> ReleaseCapture:
    """``capture`` with ``change`` applied to each field of its session frame ``index``."""
    frame = capture.session[index]
    fields = protobuf_wire.map_fields(
        protobuf_wire.parse(frame.payload, pb.Response.DESCRIPTOR), change
    )
    changed = dataclasses.replace(frame, frame=framing.encode_frame(protobuf_wire.emit(fields)))
    session = (*capture.session[:index], changed, *capture.session[index + 1 :])
    return dataclasses.replace(capture, session=session)


def _max_lac(value: int) -> Callable[[protobuf_wire.WireField], protobuf_wire.WireField]:
    def change(field: protobuf_wire.WireField) -> protobuf_wire.WireField:
        return dataclasses.replace(field, value=value) if field.name == "maxLAC" else field

    return change


def test_a_bookie_behind_in_the_read_back_is_timing_not_encoding(
    release_4_17: ReleaseCapture, slow_bookie_4_18: ReleaseCapture
) -> None:
    comparison = compare_captures(release_4_17, slow_bookie_4_18)
    differing = _differing(comparison)
    (lac,) = differing.pop("write: response EOK to READ_ENTRY entry 0")
    assert (lac.path, lac.what, lac.baseline, lac.candidate) == (
        "readResponse", "value", "maxLAC=3", "maxLAC=1",
    )  # fmt: skip
    assert lac.explanation is not None and lac.explanation.startswith(TIMING_EXPLANATION)
    assert "adds of e2, e3, e4 unanswered" in lac.explanation
    assert set(differing) == set(FLAGGED_REQUESTS)  # the field order, as on a quiet machine
    (retried,) = comparison.timing_only
    assert retried.kind == "write: response ENOENTRY to READ_ENTRY entry 3"
    assert (retried.baseline_count, retried.candidate_count) == (0, 1)
    assert "then read e3 from 127.0.0.1:33831" in (retried.differences[0].explanation or "")
    assert comparison.unexplained == [] and comparison.not_compared == []
    report = EncodingsReport(("4.17.3", "4.18.0"), "test", [comparison])
    assert report.verdict is Verdict.CLEAN, report.reasons()
    summary = summary_lines(report)
    assert summary[0].endswith("0 not compared, 1 not compared (timing)")
    assert any(line.endswith("maxLAC=3 -> maxLAC=1  (timing)") for line in summary)
    assert "Seen in one release only because of timing" in render_markdown(report)


def test_a_real_difference_in_a_read_answer_is_still_one(
    release_4_17: ReleaseCapture,
    release_4_18: ReleaseCapture,
    slow_bookie_4_18: ReleaseCapture,
) -> None:
    def verdict(candidate: ReleaseCapture) -> tuple[Verdict, list[str]]:
        comparison = compare_captures(release_4_17, candidate, groups=[SESSION])
        report = EncodingsReport(("4.17.3", "4.18.0"), "test", [comparison])
        return report.verdict, [k.kind for k in comparison.unexplained]

    e0 = "write: response EOK to READ_ENTRY entry 0"
    raced = _read_answer(slow_bookie_4_18, 0)
    # A maxLAC the bookie behind could not have answered (its adds carried LAC 3 at most).
    assert verdict(_changed(slow_bookie_4_18, raced, _max_lac(4))) == (Verdict.DIVERGENCE, [e0])

    # The same value under another field tag: not the maxLAC rule's to explain.
    def retag(field: protobuf_wire.WireField) -> protobuf_wire.WireField:
        return dataclasses.replace(field, number=6) if field.name == "maxLAC" else field

    assert verdict(_changed(slow_bookie_4_18, raced, retag)) == (Verdict.DIVERGENCE, [e0])
    # maxLAC=1 from a bookie that had answered every add: no timing explains it.
    quiet = _changed(release_4_18, _read_answer(release_4_18, 0), _max_lac(1))
    assert verdict(quiet) == (Verdict.DIVERGENCE, [e0])
    # An ENOENTRY the client did not read elsewhere: seen in one release only, undecided.
    enoentry = _read_answer(slow_bookie_4_18, 3, pb.ENOENTRY)
    retry = _read_answer(slow_bookie_4_18, 3)
    not_retried = dataclasses.replace(
        slow_bookie_4_18,
        session=tuple(
            f for i, f in enumerate(slow_bookie_4_18.session) if i not in (retry, retry - 1)
        ),
    )
    comparison = compare_captures(release_4_17, not_retried, groups=[SESSION])
    assert enoentry < retry - 1 and comparison.timing_only == []
    assert "write: response ENOENTRY to READ_ENTRY entry 3" in {
        k.kind for k in comparison.not_compared
    }
    report = EncodingsReport(("4.17.3", "4.18.0"), "test", [comparison])
    assert report.verdict is Verdict.UNDECIDED


# -- metadata ---------------------------------------------------------------------------------


def test_the_suites_reader_reads_4_18_0s_znodes_and_writes_their_bytes(
    release_4_18: ReleaseCapture,
) -> None:
    checks = reader_checks(release_4_18)
    assert len(checks) == 9 and all(c.ok and c.same_bytes_written for c in checks), checks
    closed = next(z for z in release_4_18.znodes if "/L0150" in z.path and z.stat_version == 2)
    metadata = parse_ledger_metadata(closed.data)
    assert (metadata.state, metadata.last_entry_id, metadata.length) == (
        LedgerState.CLOSED, 4, 35,
    )  # fmt: skip
    assert set(metadata.current_ensemble) == set(release_4_18.bookie_ids)
    assert (metadata.password, metadata.ack_quorum_size, metadata.ctoken) == (b"golden", 2, 0)


def test_each_releases_shell_read_the_others_ledger(
    release_4_17: ReleaseCapture, release_4_18: ReleaseCapture
) -> None:
    checks = shell_checks(release_4_17) + shell_checks(release_4_18)
    assert all(c.ok for c in checks), [c.problem for c in checks if not c.ok]
    read = {(c.reader, c.writer, c.written_as.split()[0]) for c in checks}
    assert read == {
        (reader, writer, state)
        for reader in ("4.17.3", "4.18.0")
        for writer in ("4.17.3", "4.18.0")
        for state in ("OPEN", "IN_RECOVERY", "CLOSED")
    }


# -- the command, on saved captures -----------------------------------------------------------


def test_the_command_compares_saved_captures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["encodings", "compare", "--bookkeeper", "4.17.3,4.18.0"]
    assert main([*argv, "--from-captures", str(CAPTURES), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "73 kinds equal, 4 differ (0 unexplained)" in out
    assert "shells 12/12 cross-release reads" in out
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["verdict"], report["findings"], report["undecided"]) == ("clean", [], [])
    markdown = (tmp_path / "report.md").read_text()
    assert "Verdict: **clean** (exit 0)" in markdown
    assert "| recovery-add-flag-first | EOK | EOK |" in markdown


def test_the_command_on_the_golden_names_the_cookie(tmp_path: Path) -> None:
    directories = f"{golden_dir()},{CAPTURES}"
    argv = ["encodings", "compare", "--bookkeeper", "4.17.4,4.18.0", "--from-captures"]
    assert main([*argv, directories, "--out", str(tmp_path)]) == 1
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["findings"] == ["4.17.4 vs 4.18.0: znode bookie cookie: unexplained difference"]
    assert len(report["undecided"]) == 8  # our probes, not in the golden


def test_the_command_refuses_what_it_cannot_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["encodings", "compare", "--bookkeeper", "4.18.0"]) == 2
    assert "two or more different releases" in capsys.readouterr().err
    argv = ["encodings", "compare", "--bookkeeper", "4.17.3,9.9.9", "--out", str(tmp_path)]
    assert main([*argv, "--from-captures", str(CAPTURES)]) == 2
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "undecided"
    assert any("no capture of 9.9.9" in reason for reason in report["undecided"])


def test_captured_frames_keep_the_golden_row_format(release_4_18: ReleaseCapture) -> None:
    row = release_4_18.probes[0].to_row()
    assert set(row) == {"version", "scenario", "conn", "dir", "bookie", "hex", "summary", "ending"}
    assert CapturedFrame.from_row(row) == release_4_18.probes[0]
