"""Cluster targets: the search on a local cluster, and the external target on a running one."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.cluster import LocalCluster, LocalClusterOptions
from adapters.installations.system import BookieChoice
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.search.choices import from_blob
from conformance.search.runner import PROFILES, replay_choices, run_search
from conformance.targets.base import UnsupportedConfiguration
from conformance.targets.external_target import ExternalTarget
from conformance.targets.local_target import LocalTarget
from model.bookkeeper import interleavings

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
    cfg = interleavings.SEED_001.protected  # the qualification's limbo configuration
    target = LocalTarget(work_dir=tmp_path / "cluster")
    target.open(cfg)
    try:
        run = replay_choices(cfg, target, from_blob(LIMBO_WRITE_BACK), max_steps=60)
    finally:
        target.close()
    final = run.outcome.trace[-1].state
    assert final.b_limbo[0] and any(e.id == 1 for e in final.b_entries[0])
    assert run.outcome.verdict == "clean", run.outcome.divergences
