"""Property: each named scenario of the seeds gives its expected verdict on the target."""

from __future__ import annotations

import pytest

from conformance.scenarios import SCENARIOS, run_scenario
from conformance.targets.base import Target
from model.bookkeeper.render import sequence_diagram

pytestmark = pytest.mark.conformance


@pytest.mark.parametrize("protected", [True, False], ids=["protected", "unprotected"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_gives_its_expected_verdict(name: str, protected: bool, bk_target: Target) -> None:
    scenario = SCENARIOS[name]
    cfg = scenario.config(protected=protected)
    bk_target.open(cfg)
    outcome = run_scenario(scenario, bk_target, protected=protected)
    expected = scenario.expected_verdict(protected)
    assert outcome.verdict is expected, (
        f"{name} ({'protected' if protected else scenario.switch_flag}): expected {expected}, "
        f"got {outcome.verdict}\n"
        f"violations: {outcome.violations}\ndivergences: {outcome.divergences}\n"
        f"error: {outcome.error}\n\n" + sequence_diagram(cfg, outcome.trace, title=name)
    )
