"""The space of model configurations a search may draw from, when not fixed by flags.

Drawn from choices like everything else (so a configuration shrinks toward the simplest):

- bookies 2..5; write quorum 1..min(bookies, 3); ack quorum 1..WQ; ensemble size WQ..bookies
  (striping when larger than WQ);
- two clients (the writer and one recovery client); entries 1..3, in flight 1..entries;
- the protocol's protections on, unless ``defects`` allows the switches: then each of the
  recovery-read fence and the recovery fragment fix may be off;
- crash faults (``crashes``): a budget of 0..1 crashes, in phases drawn from open, recovery and
  closed, with limbo and fencing on unclean shutdown on (or, with ``defects``, off).
"""

from __future__ import annotations

import random

from hypothesis import strategies as st

from conformance.search.choices import Chooser, DataChooser
from model.bookkeeper.config import ModelConfig


def draw_configuration(
    chooser: Chooser, *, defects: bool = False, crashes: bool = True
) -> ModelConfig:
    bookies = 2 + chooser.integer(0, 3)
    write_quorum = 1 + chooser.integer(0, min(bookies, 3) - 1)
    ack_quorum = 1 + chooser.integer(0, write_quorum - 1)
    ensemble = write_quorum + chooser.integer(0, bookies - write_quorum)
    send_limit = 1 + chooser.integer(0, 2)
    inflight = 1 + chooser.integer(0, send_limit - 1)
    fence = not (defects and chooser.integer(0, 1))
    fragment_fix = not (defects and chooser.integer(0, 1))
    max_crashes = chooser.integer(0, 1) if crashes else 0
    phases = (True, True, True)
    limbo = fence_on_crash = False
    if max_crashes:
        phases = (bool(chooser.integer(0, 1)), bool(chooser.integer(0, 1)), True)
        limbo = fence_on_crash = not (defects and chooser.integer(0, 1))
    return ModelConfig(
        bookies=bookies,
        clients=2,
        write_quorum=write_quorum,
        ack_quorum=ack_quorum,
        ensemble_size=ensemble if ensemble != write_quorum else None,
        send_limit=send_limit,
        inflight_limit=inflight,
        recovery_reads_fence=fence,
        recovery_starts_at_fragment=fragment_fix,
        max_crashes=max_crashes,
        crash_when_open=phases[0],
        crash_in_recovery=phases[1],
        crash_when_closed=phases[2],
        limbo_on_unclean_shutdown=limbo,
        fence_on_unclean_shutdown=fence_on_crash,
    )


def configurations(
    *, defects: bool = False, crashes: bool = True
) -> st.SearchStrategy[ModelConfig]:
    """The configuration space as a Hypothesis strategy."""
    return st.composite(
        lambda draw: draw_configuration(DataChooser(draw), defects=defects, crashes=crashes)
    )()


class SeededChooser:
    """Choices from a seeded generator: a configuration per seed, for the command line."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        return self._rng.randint(low, high)
