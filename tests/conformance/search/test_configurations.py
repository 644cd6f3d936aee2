"""The documented configuration space."""

from __future__ import annotations

from hypothesis import given, settings

from conformance.search.configurations import SeededChooser, configurations, draw_configuration
from model.bookkeeper.config import ModelConfig


@settings(max_examples=200)
@given(configurations(defects=True))
def test_every_drawn_configuration_is_valid(cfg: ModelConfig) -> None:
    assert 2 <= cfg.bookies <= 5 and cfg.clients == 2
    assert 1 <= cfg.ack_quorum <= cfg.write_quorum <= cfg.effective_ensemble_size <= cfg.bookies
    assert 1 <= cfg.inflight_limit <= cfg.send_limit <= 3


def test_protections_stay_on_unless_defects_are_allowed() -> None:
    drawn = [draw_configuration(SeededChooser(s)) for s in range(200)]
    assert all(c.recovery_reads_fence and c.recovery_starts_at_fragment for c in drawn)
    assert all(c.limbo_on_unclean_shutdown for c in drawn if c.max_crashes)
    assert any(c.max_crashes for c in drawn) and any(c.striped for c in drawn)
    with_defects = [draw_configuration(SeededChooser(s), defects=True) for s in range(200)]
    assert any(not c.recovery_reads_fence for c in with_defects)
    assert any(not c.recovery_starts_at_fragment for c in with_defects)


def test_a_seed_names_one_configuration() -> None:
    assert draw_configuration(SeededChooser(7)) == draw_configuration(SeededChooser(7))


def test_the_simplest_draw_is_the_smallest_protected_configuration() -> None:
    class Zeros:
        def integer(self, low: int, high: int) -> int:
            return low

    cfg = draw_configuration(Zeros(), defects=True)
    assert (cfg.bookies, cfg.write_quorum, cfg.ack_quorum, cfg.send_limit) == (2, 1, 1, 1)
    assert cfg.recovery_reads_fence and cfg.max_crashes == 0
