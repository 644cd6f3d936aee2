"""Traces as text and as diagrams: the same events, in both renderings."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from model.bookkeeper import interleavings
from model.bookkeeper.render import diagram_arrows, numbered_trace, sequence_diagram
from model.bookkeeper.scripted import run_script
from model.bookkeeper.svg import sequence_svg

CFG = interleavings.DEFECT_1.unprotected
TRACE = run_script(CFG, list(interleavings.DEFECT_1.steps))


def test_text_diagram_draws_lost_messages_as_in_the_seeds() -> None:
    text = sequence_diagram(CFG, TRACE, title="t", final_note="end")
    lines = text.splitlines()
    assert lines[:2] == ["title t", "participant w1"] and "participant zk" in lines
    assert "w1--xb1: add e1 (lac=0)" in lines and "w2--xb3: fence (read LAC)" in lines
    assert "w2->zk: close ledger empty" in lines
    assert lines[-1] == "note over w1,zk: end"
    body = [line for line in lines if not line.startswith(("title", "participant", "note"))]
    assert len(body) == len(diagram_arrows(TRACE))


def test_svg_is_well_formed_and_draws_every_arrow() -> None:
    svg = sequence_svg(CFG, TRACE, title="Defect <1> & co", final_note="VERDICT")
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    arrows = diagram_arrows(TRACE)
    assert "Defect <1> & co" in texts and "VERDICT" in texts
    assert all(arrow.text in texts for arrow in arrows)
    lost = [a for a in arrows if a.lost and a.source != a.target]
    dashed = [
        el for el in root.iter("{http://www.w3.org/2000/svg}line") if el.get("stroke") == "#b22"
    ]
    assert len(dashed) == len(lost) == 3


def test_numbered_trace_lists_every_step_and_the_final_state() -> None:
    text = numbered_trace(CFG, TRACE)
    assert f"{len(TRACE) - 1:3d}. ClientReceivesAddConfirmedResponse(c1)" in text
    assert "metadata: status=CLOSED" in text and "c1: status=OPEN lac=1" in text
