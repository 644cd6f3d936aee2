"""Mixed releases under the real Java client (cluster): a writer of 4.18.0 on bookies of 4.17.3
and 4.18.0, and the rolling upgrade (4.17.3 -> 4.18.0) and downgrade (4.18.0 -> 4.17.3)
scenarios end to end, each judged by the model and read back by a client of each release."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.javaclient.plans import FrameSchedule
from conformance.javaclient.run import session_options
from conformance.javaclient.search import run_plan
from conformance.javaclient.session import ClientSession
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape
from conformance.javaclient.writer_role import WriterRole
from conformance.rundir import read_results
from conformance.verdict import Verdict
from tests.bookkeeper_fixtures import installed_home

pytestmark = pytest.mark.cluster


def test_a_writer_of_one_release_on_bookies_of_two(tmp_path: Path) -> None:
    old, new = installed_home("4.17.3"), installed_home("4.18.0")
    role = WriterRole(WriterShape(3, 2, 2))
    options = dataclasses.replace(
        session_options(role, old, tmp_path, client_home=new),
        bookie_homes=(old, new, old, new),
    )
    with ClientSession(options) as session:
        assert str(session.version) == "4.18.0" and str(session.bookie_version) == "4.17.3"
        releases = session.releases()
        assert releases["client"] == "4.18.0"
        assert sorted(releases["bookies_at_start"].values()) == ["4.17.3"] * 2 + ["4.18.0"] * 2
        example = run_plan(session, role, WriterRunPlan(role.shape, 4, FrameSchedule()))
        described = session.describe()
    assert example.judgement is not None
    assert example.judgement.verdict is Verdict.CLEAN, example.judgement.outcome
    assert [o.acknowledged for o in example.record.outcomes] == [True] * 4
    assert set(example.record.client_reads.values()) == {"OK"}
    assert described["client_release"] == "4.18.0"
    assert described["bookie_releases"].count("4.17.3") == 2


@pytest.mark.parametrize(
    ("name", "start", "target"),
    [
        ("rolling-upgrade-java-client", "4.17.3", "4.18.0"),
        ("rolling-downgrade-java-client", "4.18.0", "4.17.3"),
    ],
)
def test_a_rolling_change_of_release_under_the_writer_is_judged_clean(
    name: str, start: str, target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    code = main(["scenario", name, "--target", "local", "--runs-dir", str(runs)])
    (run_dir,) = runs.iterdir()
    results: dict[str, Any] = read_results(run_dir)
    assert code == 0, (results["verdict"], results["error"], results["divergences"])
    rolling = results["rolling"]
    assert (rolling["from"], rolling["to"], rolling["client"]) == (start, target, start)
    assert rolling["completed"] and set(rolling["bookies_at_end"].values()) == {target}
    assert set(rolling["bookies_at_start"].values()) == {start}
    assert len(rolling["steps"]) == 4
    assert rolling["entries_written"] == 8 and rolling["entries_acknowledged"] >= 1
    for release in (start, target):
        reads = rolling["read_back"][release]["reads"]
        assert set(reads) == set(rolling["acknowledged"]) and set(reads.values()) == {"OK"}
    assert results["target"]["client_bookkeeper"] == start
    assert results["target"]["bookie_releases_at_end"].count(target) == 4
    assert (
        f"each restarted with its data into BookKeeper {target}"
        in (results["system_under_test"]["bookies"])
    )
    assert (run_dir / "rolling.txt").read_text().startswith(f"{name}: bookies {start} -> {target}")
    assert f"Verdict: clean. Run directory: {run_dir}" in capsys.readouterr().out
