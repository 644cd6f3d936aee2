"""The shapes of the Java-client judges' divergences, so that a search's divergences can be
counted by class (``benchmarks/false_alarms.py``) and a scenario can say which class a
divergence met on the way is.

A class is named by what the judge saw, read off the divergence's text: the judges write each
kind of divergence in one fixed form (:mod:`conformance.javaclient.story`,
:mod:`conformance.javaclient.writer_story`, the engine's answer comparison). What each class
*means* (a reading of the spec the judge lacks, or a finding about BookKeeper) is decided by
looking at its examples against BookKeeper's source: ``docs/findings/`` has what is known, and
a class with no such write-up is **open** (issue 46).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class DivergenceClass:
    """One shape of divergence: its name, how its text reads, and where it is explained
    (``None``: open, no write-up yet)."""

    name: str
    pattern: str
    explained_in: str | None = None

    def matches(self, text: str) -> bool:
        return re.search(self.pattern, text) is not None


#: The classes, the most specific first: a text is the first class it matches.
CLASSES: tuple[DivergenceClass, ...] = (
    DivergenceClass("race-no-serial-order", r"no serial order of the \d+ concurrent requests"),
    DivergenceClass(
        "fence-lost-on-restart",
        r"after the recovery fenced it and the plan restarted it with its data",
        "docs/findings/fence-lost-on-restart.md",
    ),
    DivergenceClass("request-sent-again", r"again: the spec's client sends one [\w ]+ per bookie"),
    DivergenceClass(
        "request-the-recovering-client-never-sends",
        r"the spec's recovering client sends no such request",
    ),
    DivergenceClass("request-not-sent-here", r"the spec's client \(RecoveryReadsFence=\w+\) sends"),
    DivergenceClass("writer-request-not-an-add", r"the spec's writer sends only adds"),
    DivergenceClass("writer-add-not-sent-here", r"the spec's writer sends no such add here"),
    DivergenceClass(
        "acknowledged-beyond-the-model-writer",
        r"acknowledged e\d+ to its caller when the model's writer had confirmed only",
    ),
    DivergenceClass(
        "bookie-answer-neither-confirmed-nor-fenced",
        r"the model's bookie confirms it or answers EFENCED",
    ),
    DivergenceClass(
        "recovery-end-not-the-model-s",
        r"recovery closed the ledger at e-?\d+; the model's recovery closes it at",
    ),
    DivergenceClass(
        "close-not-the-model-s", r"closed the ledger at e?\d+.*the model's (writer|recovery)"
    ),
    DivergenceClass("ensembles-not-the-model-s", r"the ledger's ensembles are .*the model's are"),
    DivergenceClass("fence-lac-not-the-model-s", r"answered the fence read with LAC"),
    DivergenceClass("no-model-step", r"the model allows no step for"),
    DivergenceClass("metadata-written-outside", r"no sequence of the bookies' own recovery steps"),
    DivergenceClass("final-state", r"^(step \d+: )?final state: "),
    DivergenceClass("answer-not-predicted", r"predicted .*, observed"),
)
#: What a text that matches no class is.
UNCLASSIFIED = "unclassified"


def classify(text: str) -> str:
    """The class of one divergence's text (:data:`UNCLASSIFIED` if none matches)."""
    for kind in CLASSES:
        if kind.matches(text):
            return kind.name
    return UNCLASSIFIED


def count_classes(divergences: Iterable[str]) -> Counter[str]:
    """How many of ``divergences`` are of each class."""
    return Counter(classify(text) for text in divergences)


__all__ = ["CLASSES", "UNCLASSIFIED", "DivergenceClass", "classify", "count_classes"]
