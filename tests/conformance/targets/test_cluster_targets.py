"""Cluster targets: the search on a local cluster, and the external target on a running one."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.cluster import LocalCluster, LocalClusterOptions
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.search.runner import PROFILES, run_search
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
    target = LocalTarget(work_dir=tmp_path / "cluster")
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
    target = ExternalTarget(running_cluster.endpoints().zookeeper_connect)
    with pytest.raises(UnsupportedConfiguration, match="cannot crash bookies"):
        target.open(SCENARIOS["limbo-crash"].config(protected=True))
    target.close()
