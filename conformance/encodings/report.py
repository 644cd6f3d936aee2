"""The encodings comparison's verdict, its Markdown report and its JSON.

Verdict (the suite's one vocabulary, :mod:`conformance.verdict`):

* ``clean`` (exit 0): every kind seen was compared, each difference is explained, every frame
  decodes with the suite's codec, and every reader read every release's metadata;
* ``divergence`` (exit 1): a difference no rule explains, a frame the codec cannot decode or
  re-encode faithfully, or metadata a reader could not read as written;
* ``undecided`` (exit 2): a kind seen in one release only, a frame or znode that could not be
  read as a kind, a capture that failed, or nothing compared at all. Never clean then.

A kind seen in one release only *because of timing* (``not compared (timing)``: a read
answered ahead of its bookie's own add and read elsewhere, checked on the frames, see
:data:`.compare.TIMING_EVIDENCE`) is listed with its evidence and does not make the verdict
undecided: the rest of what was compared decides it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.encodings.compare import (
    FIELD_ORDER_EVIDENCE,
    TIMING_EVIDENCE,
    TIMING_EXPLANATION,
    Comparison,
    KindComparison,
    Outcome,
)
from conformance.encodings.kinds import PROBE, SESSION, ZNODE
from conformance.encodings.metadata_reads import ReaderCheck, ShellCheck
from conformance.verdict import Verdict

REPORT_MD = "report.md"
REPORT_JSON = "report.json"
_GROUP_TITLES = {SESSION: "Session frames", PROBE: "Probe frames", ZNODE: "Znodes"}


@dataclass
class EncodingsReport:
    versions: tuple[str, ...]
    command: str
    comparisons: list[Comparison] = field(default_factory=list)
    reader_checks: list[ReaderCheck] = field(default_factory=list)
    shell_checks: list[ShellCheck] = field(default_factory=list)
    #: What could not be captured or compared at all (each makes the verdict undecided).
    errors: list[str] = field(default_factory=list)
    #: What the captures ran against (per version), and where they came from.
    systems: dict[str, str] = field(default_factory=dict)
    storage: str = ""

    def reasons(self) -> tuple[list[str], list[str]]:
        """(findings, undecided reasons)."""
        findings: list[str] = []
        undecided: list[str] = list(self.errors)
        for comparison in self.comparisons:
            pair = f"{comparison.baseline} vs {comparison.candidate}"
            undecided += [f"{pair}: {item}" for item in comparison.unreadable]
            undecided += [f"{pair}: {k.kind}: {k.outcome.value}" for k in comparison.not_compared]
            findings += [
                f"{pair}: {k.kind}: unexplained difference" for k in comparison.unexplained
            ]
            for version, checks in comparison.codec_checks.items():
                findings += [
                    f"the suite's codec on {version} {c.label}: {c.result} {c.detail[:120]}"
                    for c in checks
                    if not c.ok
                ]
        findings += [
            f"our reader on {c.writer} {c.path} v{c.stat_version}: {c.problem}"
            for c in self.reader_checks
            if not c.ok
        ]
        findings += [
            f"{c.reader}'s shell on {c.writer}'s ledger {c.ledger_id} ({c.written_as}): {c.problem}"
            for c in self.shell_checks
            if not c.ok
        ]
        return findings, undecided

    @property
    def verdict(self) -> Verdict:
        findings, undecided = self.reasons()
        compared = sum(len(c.compared) for c in self.comparisons)
        if findings:
            return Verdict.DIVERGENCE
        if undecided or compared == 0:
            return Verdict.UNDECIDED
        return Verdict.CLEAN

    def to_dict(self) -> dict[str, Any]:
        findings, undecided = self.reasons()
        return {
            "verdict": self.verdict.value,
            "exit_code": self.verdict.exit_code,
            "versions": list(self.versions),
            "command": self.command,
            "systems": self.systems,
            "storage": self.storage,
            "findings": findings,
            "undecided": undecided,
            "normalized": NORMALIZED,
            "field_order_evidence": list(FIELD_ORDER_EVIDENCE),
            "timing_evidence": list(TIMING_EVIDENCE),
            "comparisons": [c.to_dict() for c in self.comparisons],
            "reader_checks": [c.to_dict() for c in self.reader_checks],
            "shell_checks": [c.to_dict() for c in self.shell_checks],
        }

    def write(self, directory: Path) -> tuple[Path, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        markdown = directory / REPORT_MD
        markdown.write_text(render_markdown(self))
        data = directory / REPORT_JSON
        data.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return markdown, data


#: What the comparison replaces before it compares bytes (nothing else).
NORMALIZED = (
    "v3 header txnId (a JVM-wide counter)",
    "the session's ledger id: ledgerId fields, and an entry body's first 8 bytes with the CRC32 "
    "digest that covers them (zeroed once it verified)",
    "znodes: bookie ids (ensemble members, cookie bookieHost), registration ports, the OPEN "
    "ledger's random cToken, ctime if stored, cookie directories (but their last component) "
    "and instance id",
)


def _cell(text: str, limit: int = 160) -> str:
    text = text.replace("|", "\\|").replace("\n", " / ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind_line(kind: KindComparison) -> str:
    return f"{kind.kind} ({kind.baseline_count}/{kind.candidate_count})"


def render_markdown(report: EncodingsReport) -> str:
    findings, undecided = report.reasons()
    verdict = report.verdict
    lines = [
        f"# Wire and metadata encodings: BookKeeper {' vs '.join(report.versions)}",
        "",
        f"Verdict: **{verdict.value}** (exit {verdict.exit_code}).",
        "",
        f"Command: `{report.command}`",
        "",
    ]
    for version, system in report.systems.items():
        lines.append(f"* {version}: {system}")
    if report.storage:
        lines.append(f"* storage: {report.storage}")
    lines += ["", "Normalised before comparing (nothing else is):", ""]
    lines += [f"* {item}" for item in NORMALIZED]
    if findings or undecided:
        lines += ["", "## Findings and what could not be decided", ""]
        lines += [f"* finding: {_cell(item, 400)}" for item in findings]
        lines += [f"* undecided: {_cell(item, 400)}" for item in undecided]
    for comparison in report.comparisons:
        lines += _comparison_section(comparison)
    lines += _metadata_section(report)
    return "\n".join(lines) + "\n"


def _comparison_section(comparison: Comparison) -> list[str]:
    counts = Counter(k.outcome for k in comparison.kinds)
    differing = [k for k in comparison.kinds if k.outcome is Outcome.DIFFERS]
    lines = [
        "",
        f"## {comparison.baseline} (baseline) vs {comparison.candidate}",
        "",
        f"{len(comparison.kinds)} kinds: {counts[Outcome.EQUAL]} equal byte for byte, "
        f"{counts[Outcome.DIFFERS]} different ({len(comparison.unexplained)} unexplained), "
        f"{len(comparison.not_compared)} seen in one release only"
        + (
            f", {len(comparison.timing_only)} seen in one release only because of timing"
            if comparison.timing_only
            else ""
        )
        + ". Counts are baseline/candidate frames or znodes of the kind.",
        "",
    ]
    if differing:
        lines += [
            "### Kinds that differ",
            "",
            "| kind | where | what | baseline | candidate | explanation |",
            "|---|---|---|---|---|---|",
        ]
        for kind in differing:
            for difference in kind.differences:
                lines.append(
                    f"| {_cell(_kind_line(kind))} | {difference.path} | {difference.what} | "
                    f"{_cell(difference.baseline)} | {_cell(difference.candidate)} | "
                    f"{_cell(difference.explanation or 'UNEXPLAINED', 300)} |"
                )
        lines += ["", "Decoded in wire order (normalised), first differing pair of each kind:", ""]
        for kind in differing:
            lines += [
                f"* {kind.kind}",
                f"  * {comparison.baseline}: `{_cell(kind.baseline_text, 400)}`",
                f"  * {comparison.candidate}: `{_cell(kind.candidate_text, 400)}`",
            ]
        if any(
            d.explanation and not d.explanation.startswith(TIMING_EXPLANATION)
            for k in differing
            for d in k.differences
        ):
            lines += ["", "Evidence for the field-order rule:", ""]
            lines += [f"* {item}" for item in FIELD_ORDER_EVIDENCE]
    if comparison.timing_only:
        lines += ["", "### Seen in one release only because of timing (not compared)", ""]
        for kind in comparison.timing_only:
            lines += [f"* {_kind_line(kind)}: {d.explanation}" for d in kind.differences]
    if any(
        (d.explanation or "").startswith(TIMING_EXPLANATION)
        for k in [*differing, *comparison.timing_only]
        for d in k.differences
    ):
        lines += ["", "Evidence for the timing rules:", ""]
        lines += [f"* {item}" for item in TIMING_EVIDENCE]
    for group in (SESSION, PROBE, ZNODE):
        equal = [k for k in comparison.kinds if k.group == group and k.outcome is Outcome.EQUAL]
        if equal:
            lines += ["", f"### {_GROUP_TITLES[group]}: equal", ""]
            lines += [f"* {_kind_line(k)}" for k in equal]
    if comparison.not_compared:
        lines += ["", "### Seen in one release only (not compared)", ""]
        lines += [f"* {_kind_line(k)}: {k.outcome.value}" for k in comparison.not_compared]
    if comparison.field_order_probes:
        versions = sorted(
            {v for answers in comparison.field_order_probes.values() for v in answers}
        )
        lines += [
            "",
            "### Both field orders, to each release's bookie",
            "",
            "| probe | " + " | ".join(versions) + " |",
        ]
        lines.append("|---|" + "---|" * len(versions))
        for name, answers in comparison.field_order_probes.items():
            lines.append(f"| {name} | " + " | ".join(answers.get(v, "-") for v in versions) + " |")
    lines += ["", "### The suite's codec on every frame", ""]
    for version, checks in comparison.codec_checks.items():
        tally = Counter(c.result for c in checks)
        lines.append(
            f"* {version}: {len(checks)} frames: "
            + ", ".join(f"{count} {result}" for result, count in sorted(tally.items()))
        )
        reordered = [c for c in checks if c.result == "field-number order"]
        if reordered:
            lines.append(
                "  * re-encoded in field-number order (protobuf-java's, which our encoder "
                "writes; the bytes differ from these frames only in the order of the fields, "
                "and both orders are accepted by both releases' bookies, see the probes "
                "above): " + "; ".join(c.label for c in reordered)
            )
        lines += [f"  * {c.label}: {c.result} {c.detail[:160]}" for c in checks if not c.ok]
    return lines


def _metadata_section(report: EncodingsReport) -> list[str]:
    lines = ["", "## Metadata: who reads what each release wrote", ""]
    if report.reader_checks:
        lines += [
            "The suite's reader (adapters/zookeeper) on every znode each release wrote; "
            "'same bytes' says whether the suite's writer gives the znode's bytes back for the "
            "value it read.",
            "",
            "| writer | znode | version | read | as | same bytes |",
            "|---|---|---|---|---|---|",
        ]
        for check in report.reader_checks:
            lines.append(
                f"| {check.writer} | {check.path} | {check.stat_version} | "
                f"{'ok' if check.ok else 'FAILED: ' + _cell(check.problem)} | "
                f"{_cell(check.read_as)} | {check.same_bytes_written} |"
            )
    if report.shell_checks:
        lines += [
            "",
            "Each release's `bookkeeper shell ledgermetadata` on the ledger each release's "
            "clients wrote (CLOSED) and on byte-for-byte copies of its OPEN and IN_RECOVERY "
            "versions:",
            "",
            "| reader (shell) | writer | ledger | written as | read | shown |",
            "|---|---|---|---|---|---|",
        ]
        for shell in report.shell_checks:
            lines.append(
                f"| {shell.reader} | {shell.writer} | {shell.ledger_id} | {shell.written_as} | "
                f"{'ok' if shell.ok else 'FAILED: ' + _cell(shell.problem)} | "
                f"{_cell(shell.shown, 240)} |"
            )
    return lines


def summary_lines(report: EncodingsReport) -> list[str]:
    """What the console says at the end."""
    lines = []
    for comparison in report.comparisons:
        counts = Counter(k.outcome for k in comparison.kinds)
        lines.append(
            f"{comparison.baseline} vs {comparison.candidate}: {counts[Outcome.EQUAL]} kinds "
            f"equal, {counts[Outcome.DIFFERS]} differ ({len(comparison.unexplained)} "
            f"unexplained), {len(comparison.not_compared)} not compared"
            + (
                f", {len(comparison.timing_only)} not compared (timing)"
                if comparison.timing_only
                else ""
            )
        )
        for kind in comparison.kinds:
            if kind.outcome in (Outcome.DIFFERS, Outcome.ONLY_TIMING):
                for difference in kind.differences:
                    lines.append(
                        f"  {kind.kind}: {difference.path} {difference.what}: "
                        f"{difference.baseline[:60]} -> {difference.candidate[:60]}"
                        + ("" if difference.explained else "  (UNEXPLAINED)")
                        + (
                            "  (timing)"
                            if (difference.explanation or "").startswith(TIMING_EXPLANATION)
                            else ""
                        )
                    )
    readers_ok = sum(c.ok for c in report.reader_checks)
    shells_ok = sum(c.ok for c in report.shell_checks)
    lines.append(
        f"metadata: our reader {readers_ok}/{len(report.reader_checks)} znodes read as written; "
        f"shells {shells_ok}/{len(report.shell_checks)} cross-release reads"
    )
    return lines


__all__ = [
    "NORMALIZED",
    "REPORT_JSON",
    "REPORT_MD",
    "EncodingsReport",
    "render_markdown",
    "summary_lines",
]
