"""The race the race tests share: c1 has e1 on b1..b3 and its LAC at 1 and sends e2 (LAC 1); c2
starts recovering: at b1, c1's add of e2 and c2's fence read both wait (3 bookies, 2 clients,
E=WQ=3, AQ=2, send limit 2)."""

from __future__ import annotations

from model.bookkeeper.scripted import ScriptedStep, step

ADD_AND_FENCE_WAIT_AT_B1: tuple[ScriptedStep, ...] = (
    step("ClientCreatesLedger", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1"),
    step("BookieSendsAddConfirmedResponse", bookie="b1"),
    step("BookieSendsAddConfirmedResponse", bookie="b2"),
    step("BookieSendsAddConfirmedResponse", bookie="b3"),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1"),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2"),
    step("ClientSendsAddEntryRequests", client="c1"),
    step("ClientStartsRecovery", client="c2"),
)
