"""Every finding judged again: each finding x release x ledger storage, run as a user runs it.

A finding is the command that shows it (docs/findings/):

- the upstream reports and the suite's own hypotheses that the real Java client replays
  (``bkconform scenario <name>-java-client``): #3005, #4097, #4812, the throttled add, and the
  lost fence three ways (b3 killed before its next checkpoint, killed after it, stopped cleanly
  with SIGTERM); each cell is the scenario's exit code (1 reproduced, 0 reached and clean,
  2 not reached or undecided), its verdict and whether its interleaving was reached, read from
  the run's ``results.json`` (``report_window``);
- the shutdown crash (``benchmarks/shutdown_crash.py --no-workaround``: in-JVM restarts of a
  bookie whose data-integrity check is running, JVM deaths counted): DbLedgerStorage only, the
  one storage with a data-integrity check;
- the races at the bookie (``bkconform run --races``, a short race-biased search on our wire
  client): its verdict and the races it ran.

Each run has its own directory under ``--out``; ``table.json`` and ``table.md`` (a table per
finding: releases down, storages across) are written as cells finish, so that a run stopped
midway keeps what it decided; run again with the same ``--out``, it resumes: decided cells are
kept, the others run again. A cell that decides nothing (a window not reached, a run in
error) is run again up to ``--attempts`` runs in all, and says what each run said. Long
(about 35 minutes for the default four releases and two storages): a ``make findings-table``
target, not part of CI.

    python tools/findings_table.py [--releases 4.14.7,4.16.6,4.17.3,4.18.0]
        [--storages sorted,db] [--findings all|name,...] [--race-seconds 60]
        [--shutdown-restarts 30] [--attempts 2] [--out runs/findings-table]

Exit 0 when every cell was decided (whatever the findings' verdicts), 2 when a cell could not
be run or judged (bad options too).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the project's packages come from the tree
    sys.path.insert(0, str(ROOT))

from adapters.installations.maven import version_key  # noqa: E402

DEFAULT_RELEASES = ("4.14.7", "4.16.6", "4.17.3", "4.18.0")
STORAGES = ("sorted", "db")
#: A run that takes longer than this (s) is stopped and its cell undecided.
RUN_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Finding:
    """One finding and the command that shows it."""

    key: str
    title: str
    doc: str
    #: ``scenario`` (a Java-client scenario), ``shutdown`` or ``races``.
    how: str
    scenario: str = ""
    #: The storages it applies to, and why the others are not (empty: all).
    only_on: tuple[str, ...] = ()
    why_not: str = ""
    #: The first release that has what it needs, and why the older ones do not ("": all).
    since: str = ""
    why_not_before: str = ""

    def not_applicable(self, release: str, storage: str) -> str | None:
        """Why the finding cannot be shown on this release and storage (None: it can)."""
        if self.only_on and storage not in self.only_on:
            return self.why_not
        if self.since and _release_key(release) < _release_key(self.since):
            return self.why_not_before
        return None


def _release_key(release: str) -> tuple[int, ...]:
    """``4.16.6`` as (4, 16, 6) (the installer's order); a directory or another name sorts
    after every release."""
    return version_key(release) if release[:1].isdigit() else (sys.maxsize,)


FINDINGS: tuple[Finding, ...] = (
    Finding(
        "bk-3005",
        "#3005: an acknowledged entry no reader finds",
        "bk-3005-acknowledged-entry-unreadable.md",
        "scenario",
        "bk-3005-java-client",
    ),
    Finding(
        "bk-4097",
        "#4097: entries on bookies the metadata does not name",
        "bk-4097-entries-on-bookies-the-metadata-does-not-name.md",
        "scenario",
        "bk-4097-java-client",
    ),
    Finding(
        "bk-4812",
        "#4812: acknowledged after recovery, on replaced bookies",
        "bk-4812-acknowledged-after-recovery-on-replaced-bookies.md",
        "scenario",
        "bk-4812-java-client",
    ),
    Finding(
        "throttle",
        "The throttled add goes to the replaced bookie",
        "throttled-add-goes-to-the-replaced-bookie.md",
        "scenario",
        "throttle-stale-ensemble-java-client",
    ),
    Finding(
        "fence-lost-crash",
        "The lost fence: b3 killed before its next checkpoint",
        "fence-lost-on-restart.md",
        "scenario",
        "fence-lost-on-restart-java-client",
    ),
    Finding(
        "fence-lost-after-checkpoint",
        "The lost fence: b3 killed after flushInterval (DbLedgerStorage's next checkpoint; "
        "SortedLedgerStorage has no periodic one)",
        "fence-lost-on-restart.md",
        "scenario",
        "fence-lost-after-checkpoint-java-client",
    ),
    Finding(
        "fence-lost-clean-restart",
        "The lost fence: b3 stopped cleanly (SIGTERM) and started again",
        "fence-lost-on-restart.md",
        "scenario",
        "fence-lost-on-clean-restart-java-client",
    ),
    Finding(
        "shutdown-crash",
        "The shutdown crash: the data-integrity check reads a closed RocksDB",
        "bookie-shutdown-sigsegv-4.17.3.md",
        "shutdown",
        only_on=("db",),
        why_not="no data-integrity check: it runs on DbLedgerStorage only",
        since="4.15.0",
        why_not_before="no data-integrity check before 4.15.0 (bookie/datainteg/ is first in "
        "release-4.15.0)",
    ),
    Finding(
        "races",
        "Races at the bookie (a race-biased search of our wire client)",
        "races-4.17.3.md",
        "races",
    ),
)


@dataclass
class Cell:
    finding: str
    release: str
    storage: str
    #: The command's exit code (None: not applicable, or it did not end).
    exit_code: int | None
    verdict: str
    #: Whether the scenario's interleaving was reached (None: not a scenario, or unknown).
    reached: bool | None
    detail: str
    seconds: float
    run_dir: str = ""
    #: What the earlier runs of this cell said, when they decided nothing (a window not
    #: reached, a run in error): a cell is run again until decided or out of attempts, and
    #: its table cell shows them all (a hit rate, not a best of N).
    earlier: tuple[str, ...] = ()

    @property
    def decided(self) -> bool:
        return self.verdict == "not applicable" or self.exit_code in (0, 1)

    def summary(self) -> str:
        """``exit 1, violation, reached``: what this run said."""
        if self.verdict == "not applicable":
            return f"n/a: {self.detail}"
        ended = "did not end" if self.exit_code is None else f"exit {self.exit_code}"
        parts = [ended, self.verdict]
        if self.reached is not None:
            parts.append("reached" if self.reached else "NOT reached")
        if self.detail:
            parts.append(self.detail)
        return ", ".join(parts)

    def text(self) -> str:
        """What a table cell says: this run's summary, and the earlier runs'."""
        text = self.summary()
        if self.earlier:
            runs = len(self.earlier) + 1
            text += f" (run {runs} of {runs}; before: {'; '.join(self.earlier)})"
        return text


def _command(*words: str) -> list[str]:
    """The suite's command line, run by this interpreter from this checkout."""
    return [sys.executable, "-m", "conformance", *words]


def _run(command: Sequence[str], log: Path, timeout: float) -> tuple[int | None, str]:
    """Run ``command`` (its output to ``log``): its exit code (None after ``timeout``, the
    process stopped) and its output."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        try:
            done = subprocess.run(
                list(command),
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
                # This checkout's packages, whichever the interpreter's install points at.
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            code: int | None = done.returncode
        except subprocess.TimeoutExpired:
            code = None
    return code, log.read_text(errors="replace")


def _run_dir(output: str) -> Path | None:
    """The run directory a command printed last (``Run directory: ...``)."""
    found = re.findall(r"Run directory: (\S+)", output)
    return Path(found[-1].rstrip(".")) if found else None


def _results(run_dir: Path | None) -> dict[str, Any]:
    if run_dir is None:
        return {}
    try:
        results = json.loads((run_dir / "results.json").read_text())
    except (OSError, ValueError):
        return {}
    return results if isinstance(results, dict) else {}


def run_cell(
    finding: Finding, release: str, storage: str, out: Path, args: argparse.Namespace
) -> Cell:
    where = out / finding.key / f"{release}-{storage}"
    why_not = finding.not_applicable(release, storage)
    if why_not is not None:
        return Cell(finding.key, release, storage, None, "not applicable", None, why_not, 0)
    started = time.monotonic()
    if finding.how == "scenario":
        command = _command(
            "scenario",
            finding.scenario,
            "--target",
            "local",
            "--bookkeeper",
            release,
            "--ledger-storage",
            storage,
            "--runs-dir",
            str(where),
        )
    elif finding.how == "races":
        command = _command(
            "run",
            "--target",
            "local",
            "--bookkeeper",
            release,
            "--ledger-storage",
            storage,
            "--races",
            "--send-limit",
            "2",
            "--seconds",
            str(args.race_seconds),
            "--seed",
            "1",
            "--fresh",
            "--runs-dir",
            str(where),
        )
    else:
        command = [
            sys.executable,
            str(ROOT / "benchmarks" / "shutdown_crash.py"),
            "--bookkeeper",
            release,
            "--restarts",
            str(args.shutdown_restarts),
            "--no-workaround",
            "--quiet",
            "--work-dir",
            str(where / "work"),
        ]
    code, output = _run(command, where / "console.txt", args.timeout)
    seconds = time.monotonic() - started
    if code is None:
        return Cell(finding.key, release, storage, None, "undecided", None, "timed out", seconds)
    if finding.how == "shutdown":
        summary = next((line for line in output.splitlines() if " crashes (" in line), "")
        verdict = {0: "no crash", 1: "crash"}.get(code, "undecided")
        detail = summary.split(": ", 1)[-1] if summary else output.strip().splitlines()[-1:]
        return Cell(finding.key, release, storage, code, verdict, None, str(detail), seconds)
    run_dir = _run_dir(output)
    results = _results(run_dir)
    verdict = str(results.get("verdict", "undecided"))
    window = results.get("report_window") or {}
    reached = window.get("reached") if finding.how == "scenario" else None
    detail = ""
    if finding.how == "races":
        races = re.search(r"^Races: (.*)\.$", output, re.MULTILINE)
        detail = races.group(1) if races else ""
    if code not in (0, 1):
        # A scenario whose window was not reached says so itself; anything else says why.
        error = results.get("error") or (
            "" if window else (output.strip().splitlines() or ["no output"])[-1]
        )
        if error:
            detail = f"{detail}; {error}" if detail else str(error)
    return Cell(
        finding.key,
        release,
        storage,
        code,
        verdict,
        reached,
        detail,
        seconds,
        str(run_dir or ""),
    )


def markdown(cells: Sequence[Cell], releases: Sequence[str], storages: Sequence[str]) -> str:
    """A table per finding: releases down, storages across."""
    by_key = {(c.finding, c.release, c.storage): c for c in cells}
    lines: list[str] = []
    for finding in FINDINGS:
        if not any(c.finding == finding.key for c in cells):
            continue
        lines += [f"### {finding.title}", "", f"[{finding.doc}]({finding.doc})", ""]
        lines.append("| release | " + " | ".join(storages) + " |")
        lines.append("|---|" + "---|" * len(storages))
        for release in releases:
            row = [
                by_key[(finding.key, release, s)].text()
                if (finding.key, release, s) in by_key
                else "not run"
                for s in storages
            ]
            lines.append(f"| {release} | " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def write(out: Path, cells: Sequence[Cell], args: argparse.Namespace) -> None:
    """``table.json`` and ``table.md`` of every cell (a resumed table's too), releases in
    release order, storages in the tool's."""
    releases = sorted({*args.releases, *(c.release for c in cells)}, key=_release_key)
    named = {*args.storages, *(c.storage for c in cells)}
    storages = [s for s in STORAGES if s in named]
    (out / "table.json").write_text(
        json.dumps(
            {
                "releases": releases,
                "storages": storages,
                "race_seconds": args.race_seconds,
                "shutdown_restarts": args.shutdown_restarts,
                "cells": [dataclasses.asdict(c) for c in cells],
            },
            indent=2,
        )
        + "\n"
    )
    (out / "table.md").write_text(markdown(cells, releases, storages))


def read_cells(out: Path) -> list[Cell]:
    """The cells of the table already in ``out`` (none when there is none)."""
    try:
        data = json.loads((out / "table.json").read_text())
    except (OSError, ValueError):
        return []
    return [Cell(**{**c, "earlier": tuple(c.get("earlier", ()))}) for c in data.get("cells", [])]


def _list(text: str) -> list[str]:
    return [word.strip() for word in text.split(",") if word.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", type=_list, default=list(DEFAULT_RELEASES))
    parser.add_argument("--storages", type=_list, default=list(STORAGES))
    parser.add_argument(
        "--findings",
        default="all",
        help="comma-separated, from: " + ", ".join(f.key for f in FINDINGS),
    )
    parser.add_argument("--race-seconds", type=int, default=60, help="per races cell")
    parser.add_argument("--shutdown-restarts", type=int, default=30, help="per shutdown cell")
    parser.add_argument("--timeout", type=float, default=RUN_TIMEOUT_S, help="per run (s)")
    parser.add_argument(
        "--attempts", type=int, default=2, help="runs of a cell until one decides (default 2)"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "findings-table")
    args = parser.parse_args(argv)
    known = {f.key: f for f in FINDINGS}
    wanted = list(known) if args.findings == "all" else _list(args.findings)
    unknown = [w for w in wanted if w not in known]
    bad_storages = [s for s in args.storages if s not in STORAGES]
    if unknown or bad_storages or not args.releases:
        print(
            f"findings_table: unknown findings {unknown} or storages {bad_storages}, or no "
            f"release (findings: {', '.join(known)}; storages: {', '.join(STORAGES)})",
            file=sys.stderr,
        )
        return 2
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    # A table already in --out is resumed: its decided cells are kept, the others run again
    # (their earlier runs kept in the cell).
    cells = {(c.finding, c.release, c.storage): c for c in read_cells(out)}
    for key in wanted:
        for release in args.releases:
            for storage in args.storages:
                before = cells.get((key, release, storage))
                if before is not None and before.decided:
                    continue
                earlier = (*before.earlier, before.summary()) if before is not None else ()
                for _attempt in range(args.attempts):
                    cell = run_cell(known[key], release, storage, out, args)
                    cell.earlier = earlier
                    cells[(key, release, storage)] = cell
                    print(
                        f"{key} {release} {storage}: {cell.text()} ({cell.seconds:.0f} s)",
                        flush=True,
                    )
                    write(out, list(cells.values()), args)
                    if cell.decided:
                        break
                    earlier = (*earlier, cell.summary())
    write(out, list(cells.values()), args)
    print(f"\nTable: {out / 'table.md'}")
    return 0 if all(c.decided for c in cells.values()) else 2


if __name__ == "__main__":
    sys.exit(main())
