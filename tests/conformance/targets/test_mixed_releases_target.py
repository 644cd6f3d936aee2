"""The suite's own client (the engine, the seeds' scenarios) on a local cluster of mixed
releases: one bookie of 4.17.3, the others of 4.18.0 (cluster). The scenarios' verdicts are the ones
each release gives alone: clean with every protection on."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from adapters.cluster import LocalClusterOptions
from adapters.installations.system import BookieChoice
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.targets.local_target import LocalTarget
from conformance.verdict import Verdict
from tests.bookkeeper_fixtures import installed_home

pytestmark = pytest.mark.cluster


class MixedLocalTarget(LocalTarget):
    """The local target with a release per bookie (``bookie_homes``, bookie1's first)."""

    def __init__(self, homes: tuple[Path, ...], **kwargs: Any) -> None:
        super().__init__(bookies=BookieChoice.bookkeeper(homes[-1]), **kwargs)
        self.homes = homes

    def _options(self, bookies: int, settings: Any = None) -> LocalClusterOptions:
        options = super()._options(bookies, settings)
        if bookies != len(self.homes):
            return options
        return dataclasses.replace(options, bookie_homes=self.homes)


@pytest.mark.parametrize("name", ["defect1-fencing", "limbo-crash"])
def test_the_seeds_scenarios_on_bookies_of_two_releases(name: str, tmp_path: Path) -> None:
    scenario = SCENARIOS[name]
    cfg = scenario.config(protected=True)
    # One bookie of 4.17.3, the others of 4.18.0 (limbo-crash runs two bookies).
    homes = (installed_home("4.17.3"), *[installed_home("4.18.0")] * (cfg.bookies - 1))
    target = MixedLocalTarget(homes, work_dir=tmp_path / "cluster")
    try:
        target.open(cfg)
        system = target.system_under_test()
        outcome = run_scenario(scenario, target, protected=True)
    finally:
        target.close()
    assert "BookKeeper 4.17.3" in system.bookies and "BookKeeper 4.18.0" in system.bookies
    assert outcome.verdict is Verdict.CLEAN, (outcome.violations, outcome.divergences)
