"""The divergence classes (conformance/javaclient/divergences.py): each judge's fixed forms."""

from __future__ import annotations

import pytest

from conformance.javaclient.divergences import CLASSES, UNCLASSIFIED, classify, count_classes

EXAMPLES = {
    "race-no-serial-order": "no serial order of the 2 concurrent requests (a; b) explains ...",
    "fence-lost-on-restart": (
        "b3 accepted the writer's add of e1 (frame #15537) after the recovery fenced it and the "
        "plan restarted it with its data: the fence was lost on the restart "
        "(docs/findings/fence-lost-on-restart.md)"
    ),
    "request-sent-again": (
        "frame #3303 to b1: READ_ENTRY fence -1 again: the spec's client sends one fence read "
        "per bookie"
    ),
    "request-the-recovering-client-never-sends": (
        "frame #12 to b2: ADD e0: the spec's recovering client sends no such request"
    ),
    "request-not-sent-here": (
        "frame #9 to b3: READ e1: the spec's client (RecoveryReadsFence=TRUE) sends nothing to "
        "that bookie here"
    ),
    "writer-request-not-an-add": "frame #4 to b1: READ_LAC: the spec's writer sends only adds",
    "writer-add-not-sent-here": (
        "frame #88 to b4: the spec's writer sends no such add here (e0's write set in its "
        "current ensemble: b1, b2; each add is sent once per ensemble)"
    ),
    "acknowledged-beyond-the-model-writer": (
        "the Java client acknowledged e5 to its caller when the model's writer had confirmed "
        "only up to e4 (its LAC): ..."
    ),
    "bookie-answer-neither-confirmed-nor-fenced": (
        "b2 answered the add of e3 ETOOMANYREQUESTS: the model's bookie confirms it or answers "
        "EFENCED"
    ),
    "close-not-the-model-s": (
        "the Java client closed the ledger at e4; the model's writer closes it at e3 (its LAC)"
    ),
    "ensembles-not-the-model-s": "the ledger's ensembles are e0: b1,b2; the model's are e0: b1,b3",
    "no-model-step": "the model allows no step for b4's answer to an add of e0: ...",
    "fence-lac-not-the-model-s": (
        "frame #17476: b1 answered the fence read with LAC e-1; the model's b1 answers LAC e0"
    ),
    "recovery-end-not-the-model-s": (
        "the second client's recovery closed the ledger at e-1; the model's recovery closes it "
        "at e1"
    ),
    "metadata-written-outside": (
        "the ledger's metadata was written outside the harness (CLOSED at version 3), and no "
        "sequence of the bookies' own recovery steps from a model state still possible writes it"
    ),
    "final-state": "final state: metadata status CLOSED, model IN_RECOVERY",
    "answer-not-predicted": "step 26: lac: predicted 0, observed 1 (EOK)",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_form_is_its_class(name: str) -> None:
    assert classify(EXAMPLES[name]) == name


def test_every_class_has_an_example_and_other_texts_are_unclassified() -> None:
    assert {kind.name for kind in CLASSES} == set(EXAMPLES)
    assert classify("something else entirely") == UNCLASSIFIED


def test_counts_by_class() -> None:
    counts = count_classes([EXAMPLES["final-state"], EXAMPLES["final-state"], "x"])
    assert counts == {"final-state": 2, UNCLASSIFIED: 1}
