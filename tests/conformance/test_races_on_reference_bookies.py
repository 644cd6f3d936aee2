"""Races on reference bookies over the wire (in this process: :mod:`.inprocess_reference`): the
racy test double (``racy-fence-add``: fence versus add not atomic) is caught by a race and found
by the search from scratch; the correct one is clean with the same budget."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.installations.system import BookieChoice
from conformance.engine import Execution
from conformance.races import TWO_CLIENTS_TWO_ENTRIES, is_restart_step, member_of, raceable
from conformance.search.runner import SearchReport, SearchSettings, replay_choices, run_search
from conformance.targets.local_target import LocalTarget
from conformance.verdict import Verdict
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.scripted import step, take
from tests.conformance.inprocess_reference import InProcessReferenceTarget

# A writer and a recovering client, two entries, the bookie LAC of the highest entry: with the
# spec's (the last add's), a false divergence 3 searches in 4 met within 40 s (issue 46).
CFG = TWO_CLIENTS_TWO_ENTRIES
# Bounded by examples and the explorer's steps, not by time (issue 46): a slower or a faster
# machine runs the same examples and the same corpus. The racy bookie is found by the third
# example of the corpus's race proposals (about 2 s here); the correct one is clean after the
# 20 examples and the 20 proposals (about 3 s).
BUDGET = SearchSettings(
    max_examples=20,
    max_steps=30,
    seed=3,
    time_budget=None,
    races=True,
    shrink=False,
    explorer_steps=20_000,
)
SHRINKING_BUDGET = dataclasses.replace(BUDGET, shrink=True)
# The search's shrunk finding (seed 3): c1 writes e1 to b1..b3, c2 starts recovering, b1 and b2
# confirm e1, c1 sends e2 with LAC 1, then c1's add of e2 and c2's fence read race at b1.
FINDING = [0, 1, 9, 0, 0, 0, 0, 0, 95, 0, 0, 0, 0, 11, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 6, 0, 3, 0, 0]
FINDING += [0, 1, 0, 0, 0, 0]
ATTEMPTS = 5


@pytest.fixture
def racy() -> Iterator[InProcessReferenceTarget]:
    target = InProcessReferenceTarget(faulty_mode="racy-fence-add")
    target.open(CFG)
    yield target
    target.close()


@pytest.fixture
def correct() -> Iterator[InProcessReferenceTarget]:
    target = InProcessReferenceTarget()
    target.open(CFG)
    yield target
    target.close()


def test_the_race_catches_the_racy_bookie(racy: InProcessReferenceTarget) -> None:
    runs = [replay_choices(CFG, racy, FINDING, max_steps=30, races=True) for _ in range(ATTEMPTS)]
    hits = [r for r in runs if r.outcome.verdict is Verdict.DIVERGENCE]
    assert hits, [r.outcome.verdict for r in runs]
    outcome = hits[0].outcome
    (finding,) = outcome.divergences
    assert finding.startswith(
        "no serial order of the 2 concurrent requests (c1's add e2 (lac=1) to b1; c2's fence "
        "(read LAC) to b1) explains their answers (2 orders tried)"
    )
    assert "lac: predicted 1, observed 0" in finding and "success: predicted False" in finding
    race = outcome.steps[-1].race
    assert race is not None and [a["observed"]["kind"] for a in race["answers"]] == [
        "add",
        "fence",
    ]
    assert outcome.races is not None and outcome.races.unexplained == 1


def test_the_same_race_on_the_correct_bookie_is_explained(
    correct: InProcessReferenceTarget,
) -> None:
    for _ in range(ATTEMPTS):
        run = replay_choices(CFG, correct, FINDING, max_steps=30, races=True)
        assert run.outcome.verdict is Verdict.CLEAN, run.outcome.divergences
        races = run.outcome.races
        assert races is not None and races.races == 1 and races.unexplained == 0


def _the_race_in(report: SearchReport) -> str:
    assert report.verdict is Verdict.DIVERGENCE, report.error
    assert report.finding is not None and report.races is not None
    (finding,) = report.finding.run.outcome.divergences
    assert finding.startswith("no serial order of the 2 concurrent requests")
    # An add raced against a request that fences the same bookie: the fence read of LAC
    # (FINDING's race) or a recovery read with the fence flag, whichever the search met.
    requests = finding.split(" explains ", 1)[0]
    assert "'s add e" in finding and "fence" in requests, finding
    return finding


def test_the_search_finds_the_racy_bookie_from_scratch(racy: InProcessReferenceTarget) -> None:
    report = run_search(CFG, racy, BUDGET)
    _the_race_in(report)
    assert report.finding is not None and report.finding.found_by == "corpus"


@pytest.mark.slow
def test_shrinking_keeps_the_race(racy: InProcessReferenceTarget) -> None:
    report = run_search(CFG, racy, SHRINKING_BUDGET)
    _the_race_in(report)
    assert report.finding is not None
    # The race needs 8 steps before it. Shrinking a race stops where a replay misses the race,
    # and whether the racy bookie's threads race again is timing: 12 to 14 steps on an idle
    # machine, 21 on a loaded one (two Java-client searches beside the suite). So the bound
    # is what holds whatever the load: the shrunk race is no longer than the race found.
    assert len(report.finding.run.outcome.steps) <= report.finding.found_steps


def test_the_correct_reference_bookie_is_clean_with_the_same_budget(
    correct: InProcessReferenceTarget,
) -> None:
    report = run_search(CFG, correct, BUDGET)
    assert report.verdict is Verdict.CLEAN, (report.error, report.finding)
    assert report.races is not None and report.races.races > 0
    assert report.races.unexplained == 0


@pytest.mark.cluster
def test_races_on_a_local_cluster_of_reference_bookies(tmp_path: Path) -> None:
    """The same race through the local target's processes (real ZooKeeper, reference bookies
    as processes of their own): caught on the racy bookie, explained on the correct one."""
    # A race window: the racy bookie is caught only when c2's fence arrives within the 5 ms
    # between the add's fence check and its write (RACY_ADD_WINDOW_S); one hit in ATTEMPTS
    # replays is needed. The correct bookie is clean in either order.
    verdicts = {}
    for mode in ("racy-fence-add", "none"):
        target = LocalTarget(
            bookies=BookieChoice.reference(),
            work_dir=tmp_path / mode,
            bookie_extra={"refbookie.faultyMode": mode} if mode != "none" else None,
        )
        target.open(CFG)
        try:
            runs = [
                replay_choices(CFG, target, FINDING, max_steps=30, races=True)
                for _ in range(ATTEMPTS)
            ]
        finally:
            target.close()
        verdicts[mode] = [r.outcome.verdict for r in runs]
        assert all(r.outcome.races is not None for r in runs)
    assert Verdict.DIVERGENCE in verdicts["racy-fence-add"], verdicts
    assert set(verdicts["none"]) == {Verdict.CLEAN}, verdicts


@pytest.mark.cluster
def test_a_request_racing_a_restart_of_its_bookie_is_judged(tmp_path: Path) -> None:
    """A restart races c1's add at b1 (the reference bookies' processes, a real restart):
    answered before it, or lost under it; either way one of the model's orders explains it."""
    cfg = ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2, max_crashes=1)
    target = LocalTarget(bookies=BookieChoice.reference(), work_dir=tmp_path)
    target.open(cfg)
    seen = set()
    try:
        for restart_ahead_s in (0.0, 0.005):
            execution = Execution(cfg, target)
            assert execution.begin()
            for scripted in (
                step("ClientCreatesLedger", client="c1"),
                step("ClientSendsAddEntryRequests", client="c1"),
            ):
                execution.apply(take(cfg, execution.state, scripted))
            racing = raceable(execution.enabled())
            restart = next(t for t in racing if is_restart_step(t) and t.label.bookie == 0)
            add = next(t for t in racing if not is_restart_step(t) and member_of(t).bookie == 0)
            records = execution.apply_race([add, restart], [restart_ahead_s, 0.0])
            outcome = execution.finish()
            assert outcome.verdict is Verdict.CLEAN, (outcome.divergences, outcome.error)
            seen.add(tuple(r.action for r in records))
    finally:
        target.close()
    assert all("BookieRestartsEmpty" in actions for actions in seen), seen
