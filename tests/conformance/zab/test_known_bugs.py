"""ZOOKEEPER-4394 driven through the quorum proxy: the judge on recorded packets (every verdict
path, fast), and the schedule on real 3.9.2 (the bug: a divergence) and 3.9.3 (fixed: clean)."""

from __future__ import annotations

import pytest

from adapters.zkquorum.packets import PacketType, QuorumPacket
from adapters.zkquorum.proxy import Direction, QuorumLink, QuorumRecord
from conformance.cli import main
from conformance.verdict import Verdict
from conformance.zab.known_bugs import BugRun, _judge_4394

LINK = QuorumLink(1, 3)
NPE_LINE = 'java.lang.NullPointerException: Cannot read field "hdr" because "pif" is null'


def _records(*packets: tuple[int, int, PacketType, int]) -> list[QuorumRecord]:
    """(record id, connection, type, zxid), to the joiner unless an ACK."""
    return [
        QuorumRecord(
            number,
            LINK,
            connection,
            Direction.TO_LEADER if kind is PacketType.ACK else Direction.TO_LEARNER,
            QuorumPacket(kind, zxid),
            16,
            0.0,
        )
        for number, connection, kind, zxid in packets
    ]


SYNC = [(1, 1, PacketType.DIFF, 2), (2, 1, PacketType.NEWLEADER, 1 << 32)]
ACKED = [(3, 1, PacketType.ACK, 1 << 32)]
COMMIT = [(4, 1, PacketType.COMMIT, 3)]
UPTODATE = [(5, 1, PacketType.UPTODATE, -1)]


def _judged(records: list[QuorumRecord], log: str = "", evidence: str = "") -> BugRun:
    run = BugRun("ZOOKEEPER-4394", "3.9.x", records=records, evidence=evidence)
    _judge_4394(run, log)
    return run


def test_a_commit_in_the_window_on_one_connection_is_clean() -> None:
    run = _judged(_records(*SYNC, *ACKED, *COMMIT, *UPTODATE))
    assert run.verdict is Verdict.CLEAN and run.connections == 1
    assert run.window == [
        "NEWLEADER 0x100000000",
        "ACK 0x100000000",
        "COMMIT 0x3",
        "UPTODATE 0xffffffffffffffff",
    ]


def test_the_null_pointer_exception_is_a_divergence_with_its_evidence() -> None:
    again = [(6, 2, PacketType.DIFF, 3), (7, 2, PacketType.NEWLEADER, 1 << 32)]
    run = _judged(_records(*SYNC, *ACKED, *COMMIT, *again), log=f"x\n{NPE_LINE}\ny")
    assert run.verdict is Verdict.DIVERGENCE and run.connections == 2
    assert '"pif" is null' in run.evidence and run.window[-1] == "COMMIT 0x3"


def test_what_decides_nothing_is_undecided_and_says_why() -> None:
    outside = _judged(_records(*SYNC, *ACKED, *UPTODATE, (6, 1, PacketType.COMMIT, 3)))
    assert outside.verdict is Verdict.UNDECIDED and "no COMMIT reached" in outside.evidence
    broken = _judged(_records(*SYNC), evidence="the schedule could not be carried out: x")
    assert broken.verdict is Verdict.UNDECIDED and broken.evidence.startswith("the schedule")
    twice = [(6, 2, PacketType.DIFF, 3)]
    resynced = _judged(_records(*SYNC, *ACKED, *COMMIT, *UPTODATE, *twice))
    assert resynced.verdict is Verdict.UNDECIDED and "connected 2 times" in resynced.evidence


@pytest.mark.cluster
@pytest.mark.parametrize(("version", "verdict"), [("3.9.2", "divergence"), ("3.9.3", "clean")])
def test_zookeeper_4394_on_the_releases_around_its_fix(
    version: str, verdict: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["zab", "bug", "ZOOKEEPER-4394", "--zookeeper", version, "--attempts", "1"]
    assert main(argv) == Verdict(verdict).exit_code
    out = capsys.readouterr().out
    assert f"System under test: ZooKeeper {version} (Maven" in out
    assert f"ZOOKEEPER-4394 on ZooKeeper {version}: {verdict}; window: NEWLEADER" in out
    assert "COMMIT 0x100000003" in out  # the outstanding proposal's COMMIT, in the window
    if verdict == "divergence":
        assert '"pif" is null' in out and "hit in 1 of 1 attempts" in out


def test_the_command_refuses_what_it_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["zab", "bug", "ZOOKEEPER-4394", "--attempts", "0"]) == 2
    assert "--attempts must be at least 1" in capsys.readouterr().err
