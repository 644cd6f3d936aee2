"""The qualification report: one typed value (ReportData) written as report.json and rendered
as report.html by an autoescaping Jinja2 template, with the same tables and plots as before."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from adapters.installations.system import SystemUnderTest
from conformance.distributed.diff import aggregate
from conformance.distributed.plan import Plan, make_plan
from conformance.distributed.qualification import overall_verdict, run_qualification
from conformance.distributed.report import (
    ConfigurationEffort,
    FindingEntry,
    ReportData,
    ShardSummary,
    _environment,
    render_report,
    report_data,
    write_report,
)
from conformance.distributed.schema import RowStatus
from conformance.distributed.shard import ExecutionOptions
from conformance.distributed.store import read_rows, read_shard_rows, write_part
from conformance.verdict import Verdict
from tests.conformance.distributed import rows

ROOT = Path(__file__).resolve().parents[3]
TEMPLATES = ROOT / "conformance" / "distributed" / "templates"
SCRIPT = "<script>alert(1)</script>"


def sample_plan(target: str = "model") -> Plan:
    return make_plan(
        master_seed=2, shards=4, configurations=("fenced-recovery", "no-limbo"), target=target
    )


def sample_data(run_dir: Path, elapsed: float = 12.5, target: str = "model") -> ReportData:
    """The report of ``rows.write_sample_run``: 4 shards, 2 findings (one found twice), one
    shard in error; planned for ``target``."""
    rows.write_sample_run(run_dir)
    shards = read_shard_rows(run_dir)
    aggregates = aggregate(read_rows(run_dir, "steps"), shards, read_rows(run_dir, "findings"))
    return report_data(
        plan=sample_plan(target),
        master="none",
        verdict=overall_verdict(aggregates),
        aggregates=aggregates,
        shards=shards,
        elapsed=elapsed,
    )


def test_a_qualification_writes_report_json_with_the_data_report_html_shows(
    tmp_path: Path,
) -> None:
    rows.write_sample_run(tmp_path)  # every shard has its row: the run only reports
    plan = sample_plan()
    result = run_qualification(
        plan, tmp_path, master="none", options=ExecutionOptions(run_dir=str(tmp_path))
    )
    assert result.ran == 0
    back = ReportData.from_json((tmp_path / "report.json").read_text())
    assert back == report_data(
        plan=plan,
        master="none",
        verdict=result.verdict,
        aggregates=result.aggregates,
        shards=result.shards,
        elapsed=result.elapsed,
    )
    assert back.verdict is Verdict.VIOLATION and back.master == "none"
    assert [(s.shard, s.status, s.verdict) for s in back.shards] == [
        (0, RowStatus.DONE, Verdict.DIVERGENCE),
        (1, RowStatus.DONE, Verdict.VIOLATION),
        (2, RowStatus.ERROR, Verdict.UNDECIDED),
        (3, RowStatus.DONE, Verdict.VIOLATION),
    ]
    assert [e.shard for e in back.errors] == [2] and back.errors[0].error == "InjectedCrash: boom"
    assert [(f.trace_key, f.shards) for f in back.findings] == [
        ("k-divergence", [0]),
        ("k-same", [1, 3]),
    ]
    # The page shows that data.
    page = (tmp_path / "report.html").read_text()
    assert "<title>bkconform qualification: violation</title>" in page
    assert "Shards in error (1)" in page and "InjectedCrash: boom" in page
    assert "Findings (2, de-duplicated by shrunk trace)" in page
    # On disk: the words.
    stored = json.loads((tmp_path / "report.json").read_text())
    assert stored["verdict"] == "violation"
    assert [c["verdicts"] for c in stored["configurations"]] == [
        {"divergence": 1, "undecided": 1},
        {"violation": 2},
    ]
    assert [s["status"] for s in stored["shards"]] == ["done", "done", "error", "done"]


def test_report_json_reads_back_as_the_same_typed_data(tmp_path: Path) -> None:
    data = sample_data(tmp_path)
    back = ReportData.from_json(data.to_json())
    assert back == data
    # Equal and of the same types (a StrEnum equals its word: check the types themselves),
    # as made from the rows and as read back.
    for report in (data, back):
        assert type(report.verdict) is Verdict
        assert all(type(k) is Verdict for c in report.configurations for k in c.verdicts)
        assert all(type(c.verdict) is Verdict for c in report.configurations)
        assert all(type(f) is FindingEntry and type(f.verdict) is Verdict for f in report.findings)
        assert all(
            type(s) is ShardSummary and type(s.status) is RowStatus and type(s.verdict) is Verdict
            for s in report.shards
        )
        assert all(type(s) is SystemUnderTest for s in report.systems)
        assert all(type(e) is ConfigurationEffort for e in report.efforts)
    assert type(back.elapsed) is float and back.budget == data.budget
    # A report written before the budget named its time shares reads back with none.
    older = json.loads(data.to_json())
    del older["budget"]["time_shares"]
    assert ReportData.from_json(json.dumps(older)).budget.time_shares == ""
    assert sample_data(tmp_path / "local", target="local").budget.time_shares == (
        " (3x where bookies crash: no-limbo 90 s)"
    )
    # Optional fields, both ways: a time to first finding and none.
    assert [s.time_to_first_finding for s in back.shards] == [0.5, 0.5, None, 0.5]
    # A whole number in JSON is still a float (and None stays None).
    timed = ReportData.from_json(
        data.to_json().replace('"time_to_first_finding": 0.5', '"time_to_first_finding": 2')
    )
    assert [s.time_to_first_finding for s in timed.shards] == [2.0, 2.0, None, 2.0]
    assert type(timed.shards[0].time_to_first_finding) is float


def test_write_report_writes_both_files_from_the_same_data(tmp_path: Path) -> None:
    data = sample_data(tmp_path / "run")
    page = write_report(tmp_path, data)
    assert page == tmp_path / "report.html"
    assert page.read_text() == render_report(data)
    assert ReportData.from_json((tmp_path / "report.json").read_text()) == data


def hostile_run(run_dir: Path) -> None:
    """The sample run, with markup in every text a row carries into the page."""
    rows.write_sample_run(run_dir)
    for row in read_shard_rows(run_dir):
        hostile = {
            **row,
            "worker": SCRIPT,
            "config_summary": SCRIPT,
            "bookies": SCRIPT,
            "versions": json.dumps({"bookkeeper": SCRIPT}),
        }
        if row["status"] is RowStatus.ERROR:
            hostile.update(error=f"TargetError: {SCRIPT}", log=f"log {SCRIPT}\n")
        write_part(run_dir, "shards", row["shard"], [hostile])
    finding = {
        **rows.finding_row(2, "k-hostile"),
        "violations": [SCRIPT],
        "trace_text": SCRIPT,
        "sequence_text": SCRIPT,
        "blob": SCRIPT,
        "sequence_svg": '<svg id="diagram"><text>a &lt; b</text></svg>',
    }
    write_part(run_dir, "findings", 2, [finding])


def test_the_page_escapes_what_the_rows_say(tmp_path: Path) -> None:
    hostile_run(tmp_path)
    shards = read_shard_rows(tmp_path)
    aggregates = aggregate(read_rows(tmp_path, "steps"), shards, read_rows(tmp_path, "findings"))
    data = report_data(
        plan=sample_plan(),
        master=SCRIPT,
        verdict=overall_verdict(aggregates),
        aggregates=aggregates,
        shards=shards,
        elapsed=1.0,
    )
    page = render_report(data)
    assert "<script" not in page
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    # master, worker, error, log, config summary, bookies, violation, trace, sequence text, blob
    assert page.count(escaped) >= 10
    assert f"master <b>{escaped}</b>" in page
    assert f"<td>{escaped}</td>" in page  # the worker's cell
    assert f"<p>TargetError: {escaped}</p>" in page
    # The versions' JSON is escaped too (its quotes included).
    assert "&#34;bookkeeper&#34;: &#34;&lt;script&gt;" in page
    # The finding's diagram is the one piece of markup that goes in as it is.
    assert '<svg id="diagram"><text>a &lt; b</text></svg>' in page


def test_the_page_has_the_same_sections_tables_and_plots(tmp_path: Path) -> None:
    page = render_report(sample_data(tmp_path))
    headings = re.findall(
        r"<h2>(.*?)</h2>|<h3>(Model actions|Response kinds[^<]*|Per target)</h3>", page
    )
    assert [a or b for a, b in headings] == [
        "System under test",
        "Verdict per configuration",
        "Findings (2, de-duplicated by shrunk trace)",
        "Shards in error (1)",
        "Coverage",
        "Model actions",
        "Response kinds (observed status per action)",
        "Per target",
        "Steps and restarts per configuration",
        "Throughput and time to first finding",
        "Shards",
        "Versions",
    ]
    assert page.count("<table>") == 6
    assert page.count('<img alt="plot" src="data:image/png;base64,') == 2
    # As the f-string page wrote them (docs/distributed.md, The report).
    assert (
        "<p>Target <b>model</b>, master <b>none</b>, 4 shards from master seed 2; per shard: "
        "50 generated examples of up to 60 steps, 30.0 s budget, explorer on. Shards run now: 4 "
        "recorded, 3 done, 1 in error; wall time 12.5 s.</p>"
    ) in page
    # On a cluster the explorer's corpus runs after the generated examples until time is up.
    on_cluster = render_report(sample_data(tmp_path / "local", target="local"))
    assert (
        "50 generated examples of up to 60 steps, then the explorer's corpus while time is "
        "left, 30.0 s budget (3x where bookies crash: no-limbo 90 s), explorer on."
    ) in on_cluster
    assert (
        '<tr><td>fenced-recovery</td><td>summary 0</td><td><span class="divergence">divergence'
        '</span></td><td class="num">2</td><td class="num">1</td><td class="num">1</td>'
        '<td class="num">4</td><td class="num">1</td><td>divergence 1, undecided 1</td></tr>'
    ) in page
    assert (
        '<tr><td class="num">2</td><td>fenced-recovery</td><td></td><td class="num">2</td>'
        "<td>error</td>"
        '<td><span class="undecided">undecided</span></td><td class="num">1</td>'
        '<td class="num">3</td><td class="num">3</td><td class="num">1.0</td>'
        '<td class="num">1.5</td><td class="num">2</td><td>here:1</td></tr>'
    ) in page
    assert "<span class='zero'>0 (never exercised)</span>" in page
    assert "<td>BookieSendsReadResponse</td><td>ENOLEDGER: 1</td>" in page
    assert "<h2>System under test</h2><ul class='sut'><li>bookies <b>model (no bookies)</b>" in page


def test_the_page_is_self_contained(tmp_path: Path) -> None:
    page = render_report(sample_data(tmp_path))
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert "<link" not in page and "<script" not in page and "@import" not in page


def test_a_run_with_no_shard_renders_and_says_so() -> None:
    aggregates: dict[str, Any] = {
        "by_action": [],
        "by_configuration": [],
        "by_target": [],
        "responses": [],
        "findings": [],
    }
    data = report_data(
        plan=sample_plan(),
        master="none",
        verdict=overall_verdict(aggregates),
        aggregates=aggregates,
        shards=[],
        elapsed=0.0,
    )
    page = render_report(data)
    assert "<p>System under test: no shard recorded one.</p>" in page
    assert "<p>No finding.</p>" in page and "<p>None.</p>" in page
    assert "<title>bkconform qualification: undecided</title>" in page
    assert ReportData.from_json(data.to_json()) == data


def test_the_template_is_autoescaping_and_strict() -> None:
    environment = _environment()
    assert environment.autoescape is True
    with pytest.raises(Exception, match="undefined"):
        environment.from_string("{{ nothing.here }}").render()


def test_the_template_ships_as_package_data_with_jinja2_required() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_data = project["tool"]["setuptools"]["package-data"]["conformance.distributed"]
    templates = sorted(p.relative_to(TEMPLATES.parent) for p in TEMPLATES.rglob("*") if p.is_file())
    assert [str(p) for p in templates] == ["templates/report.html.j2"]
    for path in templates:
        assert any(fnmatch.fnmatch(str(path), pattern) for pattern in package_data), path
    assert "report.html.j2" in _environment().list_templates()
    assert any(d.lower().startswith("jinja2") for d in project["project"]["dependencies"])
