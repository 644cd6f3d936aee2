"""Property: a search on the target finds nothing in the protocol's protected configurations.

Each configuration has every protection on (recovery reads fence, recovery starts at its
fragment, limbo on unclean shutdown): a violation here is data loss in the implementation under
test, and a divergence is an answer the protocol does not allow.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.scenarios import SCENARIOS
from conformance.search.runner import SearchSettings, run_search
from conformance.targets.base import Target
from conformance.verdict import Verdict
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.readings import BOOKIE_AS_IMPLEMENTED
from model.bookkeeper.render import sequence_diagram

pytestmark = pytest.mark.conformance

CONFIGURATIONS = {
    # A real bookie answers a fence read with its highest entry's LAC, and with limbo a
    # restarted real bookie recovers a limbo ledger by itself (BP-46; from 4.18.0 as soon as it
    # registers): the model has that client (docs/model.md, Readings).
    name: BOOKIE_AS_IMPLEMENTED.apply(cfg)
    for name, cfg in {
        # The TLC configuration the model's figures come from.
        "b2-wq2-aq1": ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1),
        # Defect 1's configuration, with the fix.
        "b3-wq3-aq2": SCENARIOS["defect1-fencing"].config(protected=True),
        # Ensemble changes (Defect 2's configuration, with the fix).
        "ensemble-change": SCENARIOS["defect2-invalid-fragment"].config(protected=True),
        # A bookie crashes and restarts empty; limbo protects the open ledger.
        "crash-with-limbo": SCENARIOS["limbo-crash"].config(protected=True),
    }.items()
}


@pytest.mark.parametrize("name", sorted(CONFIGURATIONS))
def test_search_finds_nothing_when_protected(
    name: str, bk_target: Target, bk_target_spec: Any, bk_search: SearchSettings
) -> None:
    # As the target's bookies store an entry sent again (SortedLedgerStorage: its first copy).
    cfg = bk_target_spec.as_stored(CONFIGURATIONS[name])
    bk_target.open(cfg)
    report = run_search(cfg, bk_target, bk_search)
    assert report.verdict is not Verdict.UNDECIDED, report.error
    assert report.examples > 0, "nothing was checked"
    if report.finding is not None:
        outcome = report.finding.run.outcome
        pytest.fail(
            f"{name} ({cfg.describe()}): {report.verdict}\n"
            f"violations: {outcome.violations}\ndivergences: {outcome.divergences}\n"
            f"replay blob: {report.finding.blob}\n\n"
            + sequence_diagram(cfg, outcome.trace, title=name)
        )
