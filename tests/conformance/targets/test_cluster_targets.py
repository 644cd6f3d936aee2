"""Cluster targets: the search on a local cluster, and the external target on a running one."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.cluster import LocalCluster, LocalClusterOptions
from adapters.installations.system import BookieChoice
from conformance.distributed.plan import CONFIGURATIONS
from conformance.engine import Outcome
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.search.choices import from_blob
from conformance.search.runner import PROFILES, replay_choices, run_search
from conformance.targets.base import UnsupportedConfiguration
from conformance.targets.external_target import ExternalTarget
from conformance.targets.local_target import LocalTarget

DEFECT_1 = SCENARIOS["defect1-fencing"]


@pytest.mark.cluster
@pytest.mark.slow
def test_the_search_finds_defect_1_on_reference_bookies_and_they_answer_as_predicted(
    tmp_path: Path,
) -> None:
    cfg = DEFECT_1.config(protected=False)
    target = LocalTarget(bookies=BookieChoice.reference(), work_dir=tmp_path / "cluster")
    target.open(cfg)
    try:
        report = run_search(cfg, target, dataclasses.replace(PROFILES["ci"], time_budget=60.0))
    finally:
        target.close()
    assert report.verdict == "violation", report.notes
    assert report.finding is not None
    outcome = report.finding.run.outcome
    assert outcome.divergences == []
    assert len(outcome.steps) <= 20
    answered = [r for r in outcome.steps if r.observed is not None]
    assert answered, "the finding must have been replayed on the cluster"


@pytest.mark.cluster
@pytest.mark.slow
def test_the_search_reports_a_bookie_that_ignores_the_fence_as_a_divergence(
    tmp_path: Path,
) -> None:
    # With the fix on, the model is clean; Hypothesis's own examples must catch the bookie
    # that acknowledges a fencing read without fencing.
    cfg = SCENARIOS["defect1-fencing"].config(protected=True)
    target = LocalTarget(
        bookies=BookieChoice.reference(),  # the faulty modes are the test double's
        work_dir=tmp_path / "cluster",
        bookie_extra={"refbookie.faultyMode": "ignore-recovery-read-fence"},
    )
    target.open(cfg)
    try:
        report = run_search(
            cfg,
            target,
            dataclasses.replace(PROFILES["ci"], time_budget=90.0),
        )
    finally:
        target.close()
    assert report.verdict == "divergence", (report.verdict, report.examples)
    assert report.finding is not None
    assert report.finding.run.outcome.divergences


@pytest.fixture
def running_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(
        LocalClusterOptions(bookies=3, work_dir=tmp_path / "cluster", use_bookkeeper_home_env=False)
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.cluster
def test_the_external_target_runs_a_scenario_on_a_running_cluster(
    running_cluster: LocalCluster,
) -> None:
    connect = running_cluster.endpoints().zookeeper_connect
    for protected in (False, True):
        target = ExternalTarget(connect)
        target.open(DEFECT_1.config(protected=protected))
        try:
            outcome = run_scenario(DEFECT_1, target, protected=protected)
        finally:
            target.close()
        assert outcome.divergences == []
        assert outcome.verdict == DEFECT_1.expected_verdict(protected)
    # The cluster is not ours: the target left it running.
    assert running_cluster.registered_bookies()


@pytest.mark.cluster
def test_the_external_target_refuses_crashes_it_cannot_inject(
    running_cluster: LocalCluster,
) -> None:
    connect = running_cluster.endpoints().zookeeper_connect
    crashes = SCENARIOS["limbo-crash"].config(protected=True)
    target = ExternalTarget(connect)
    with pytest.raises(UnsupportedConfiguration, match="i-understand-this-destroys-data"):
        target.open(crashes)
    target.close()
    # Allowed to destroy, but with no agent to do it with.
    target = ExternalTarget(connect, destroy_data=True)
    with pytest.raises(UnsupportedConfiguration, match="cannot crash bookies"):
        target.open(crashes)
    target.close()


#: Found by a qualification on reference bookies (bkconform qualify, master seed 0, shard 5):
#: after a crash with limbo, the recovery writes e1 back to the limbo bookie b1. A plain v3
#: read of a ledger in limbo answers EUNKNOWNLEDGERSTATE even for a stored entry, so the final
#: state must be read over v2 (or b1 seems to hold nothing).
LIMBO_WRITE_BACK = (
    "AXicHY07CoAwEETjJ5AiKH4CktLCQiwEG0UQXukVxPufw4nF7r5ZdmYxGEZy9V5VsTDh2dipNT03JYGMSEFLgxMHXT"
    "YMJG+k45HyYsf17w55a2YlJeeq9BMrfpWR/tgPimoTwg=="
)


@pytest.mark.cluster
def test_entries_written_back_to_a_bookie_in_limbo_are_seen_in_the_final_state(
    tmp_path: Path,
) -> None:
    # The qualification's limbo configuration as the qualification runs it on real bookies
    # (CONFIGURATIONS: seed 001 read as the bookies implement it), not the bare seed: real
    # BookKeeper bookies (4.18.0, the local default) recover a ledger they have in limbo by
    # themselves (BP-46's data-integrity service, docs/findings/
    # limbo-ledger-recovered-by-the-bookie.md), and the restarted b1 sometimes closes the
    # ledger before c2 does. The bare seed has no actor for that: c2's close then finds the
    # metadata "changed outside the model" and the run is undecided (6 of 20 runs before this
    # fix). With ``bookie_recovers_limbo`` the model's bookies' own client explains it, as in
    # the qualification. The recorded choices replay the same 28 harness steps either way
    # (the bookies' own steps are never drawn).
    cfg = CONFIGURATIONS["limbo-crash"]
    assert cfg.internal_client is not None
    target = LocalTarget(work_dir=tmp_path / "cluster")
    target.open(cfg)
    try:
        run = replay_choices(cfg, target, from_blob(LIMBO_WRITE_BACK), max_steps=60)
    finally:
        target.close()
    assert run.outcome.verdict == "clean", _why(run.outcome)
    # e1 was written back to b1 while b1 had the ledger in limbo, and the final state (read
    # over v2: a v3 read of a limbo ledger answers EUNKNOWNLEDGERSTATE) shows it on b1. b1 may
    # have left limbo by then, its own recovery done (the model's BookieLeavesLimbo).
    states = [step.state for step in run.outcome.trace]
    assert any(s.b_limbo[0] and any(e.id == 1 for e in s.b_entries[0]) for s in states)
    assert any(e.id == 1 for e in states[-1].b_entries[0]), _why(run.outcome)


def _why(outcome: Outcome) -> str:
    """What decided a run's verdict: an undecided one says why (the target's error, what lay
    under it, the step it failed at), a finding its divergences and violations, and what the
    bookies did on their own (their limbo recovery) where the model has that actor."""
    failed = [f"step {r.index} {r.description}: {r.error}" for r in outcome.steps if r.error]
    own = [f"step {r.index}: {'; '.join(r.bookies_own)}" for r in outcome.steps if r.bookies_own]
    return (
        f"verdict {outcome.verdict}; error: {outcome.error} (cause: {outcome.cause}, "
        f"retriable: {outcome.retriable}); failed steps: {failed}; divergences: "
        f"{outcome.divergences}; violations: {outcome.violations}; the bookies' own: "
        f"{outcome.bookies_own} {own}; note: {outcome.note}; {len(outcome.steps)} steps, last: "
        f"{outcome.steps[-1].description if outcome.steps else None}"
    )
