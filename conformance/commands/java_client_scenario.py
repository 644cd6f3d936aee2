"""``bkconform scenario defect1-java-client --target local``: the command's side of the scenario.

The run directory is started with the run: ``results.json`` says running (undecided) from the
start, with what is known then (the distribution's version, the expected verdict, the system
under test), so a run killed midway leaves a directory that reads as died. The run is judged
after the fact, from the frames the proxies recorded: at the end the judged steps are written to
``history.jsonl`` as example 1, ``frames.txt`` beside them, and ``results.json`` is finalised.

Exit codes as for every scenario: 0 = clean, 1 = a violation or a divergence, 2 = could not
decide (no distribution, a target other than ``local``, the cluster or the JVM failed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adapters.cluster.bookies import BookieSettings
from adapters.errors import ClusterError
from adapters.installations.bookkeeper import resolve_bookkeeper
from adapters.installations.zookeeper import ZooKeeperInstall
from adapters.javaclient import DistributionError, distribution_version
from conformance.commands.console import print_findings
from conformance.commands.options import (
    bookie_choice_from_args,
    bookie_settings_from_args,
    zookeeper_from_args,
)
from conformance.engine import Outcome
from conformance.errors import ConformanceError
from conformance.javaclient.model_replay import Judgement
from conformance.javaclient.run import java_client_system
from conformance.javaclient.scenario import (
    NAME,
    JavaScenarioOptions,
    expected_verdict,
    run_recovery,
)
from conformance.javaclient.session import RunUndecided
from conformance.javaclient.story import SPEC_CONFIG, judge
from conformance.rundir import RESULTS, RunWriter, add_to_results, new_run_dir, system_header
from conformance.verdict import Verdict
from model.bookkeeper.render import sequence_diagram


class CannotRun(ConformanceError):
    """The command line cannot run this scenario; the message says what to change."""


def bookkeeper_home(args: argparse.Namespace) -> Path:
    """The real BookKeeper the options name (``--bookkeeper VERSION|DIR``,
    ``--bookkeeper-home``, ``BOOKKEEPER_HOME``, else the default version, installed on first
    use); :class:`CannotRun` with ``--bookie-kind reference`` or a distribution that cannot be
    had."""
    try:
        choice = bookie_choice_from_args(args)
    except ValueError as exc:
        raise CannotRun(str(exc)) from exc
    if choice.home is None:
        raise CannotRun(
            f"{NAME} drives the real BookKeeper Java client, whose jars come from a BookKeeper "
            "binary distribution; --bookie-kind reference has none: pass --bookkeeper VERSION "
            "(e.g. 4.11.1, installed from Maven Central) or --bookkeeper-home DIR (4.11.x shows "
            "Defect 1, 4.14+ is safe)"
        )
    return choice.home


def client_home(args: argparse.Namespace) -> Path | None:
    """``--client-bookkeeper VERSION|DIR``: the Java client's own distribution (installed on
    first use), None when not given (the client is the bookies' release); :class:`CannotRun`
    when it cannot be had."""
    given = (getattr(args, "client_bookkeeper", None) or "").strip()
    if not given:
        return None
    if "," in given:
        raise CannotRun(
            f"--client-bookkeeper {given}: one release here (a list is for qualify --client java)"
        )
    try:
        return resolve_bookkeeper(given, progress=True)
    except ClusterError as exc:
        raise CannotRun(f"--client-bookkeeper {given}: {exc}") from exc


def check_arguments(args: argparse.Namespace) -> Path:
    if args.target != "local":
        raise CannotRun(
            f"{NAME} runs on --target local only (it starts bookies and proxies here and the "
            f"Java client against them); got --target {args.target}"
        )
    flags = ("no_recovery_read_fence", "no_recovery_fragment_fix", "no_limbo")
    switches = [flag for flag in flags if getattr(args, flag, False)]
    if switches:
        raise CannotRun(
            f"{NAME} takes no switches: the distribution's client decides whether recovery "
            f"reads fence (got {', '.join('--' + s.replace('_', '-') for s in switches)})"
        )
    home = bookkeeper_home(args)
    try:
        distribution_version(home)
    except DistributionError as exc:
        raise CannotRun(str(exc)) from exc
    return home


def bookie_settings_of(args: argparse.Namespace) -> BookieSettings:
    """``--ledger-storage`` and ``--settings-profile`` (the suite's by default); CannotRun for
    what they cannot name."""
    try:
        return bookie_settings_from_args(args)
    except ValueError as exc:
        raise CannotRun(str(exc)) from exc


def zookeeper_of(args: argparse.Namespace) -> ZooKeeperInstall | None:
    """``--zookeeper`` (None: the default); CannotRun when it cannot be had."""
    if not getattr(args, "zookeeper", None):
        return None
    try:
        return zookeeper_from_args(args)
    except ValueError as exc:
        raise CannotRun(str(exc)) from exc


def run_java_client_scenario(args: argparse.Namespace) -> int:
    try:
        home = check_arguments(args)
        zookeeper = zookeeper_of(args)
        client = client_home(args)
        bookie_settings = bookie_settings_of(args)
    except CannotRun as exc:
        print(f"bkconform scenario: {exc}", file=sys.stderr)
        return Verdict.UNDECIDED.exit_code
    version = distribution_version(client or home)
    expected = expected_verdict(version)
    print(f"Scenario {NAME}: Defect 1's recipe with the real Java client {version} as w2")
    system = java_client_system(
        home, str(version), zookeeper, client_home=client, bookie_settings=bookie_settings
    )
    print(system_header(system))
    print(f"Target: local, bookies and client from {home}; expected: {expected}", flush=True)
    run_dir = new_run_dir(args.runs_dir, "local", NAME)
    writer = RunWriter(
        run_dir,
        name=NAME,
        # The spec's configuration; the judged one (whether recovery reads fence, as the
        # client's frames show) replaces it at the end.
        cfg=SPEC_CONFIG,
        target={
            "target": "local",
            "bookkeeper": str(distribution_version(home)),
            "client_bookkeeper": str(version),
            "ledger_storage": bookie_settings.ledger_storage.short_name,
            "settings_profile": bookie_settings.profile.name,
        },
        system=system,
        extra={"expected_verdict": expected},
    )
    with writer:
        writer.start()
        try:
            run = run_recovery(
                JavaScenarioOptions(
                    bookkeeper_home=home,
                    log_dir=run_dir,
                    zookeeper=zookeeper,
                    client_home=client,
                    bookie_settings=bookie_settings,
                )
            )
        except RunUndecided as exc:
            print(f"could not decide: {exc}", file=sys.stderr)
            writer.finish(Outcome(Verdict.UNDECIDED, [], [], error=str(exc)), story=None)
            print(f"Run directory: {run_dir}")
            return Verdict.UNDECIDED.exit_code
        judgement = judge(run.record)
        outcome = judgement.outcome
        frames = [frame.describe() for frame in run.record.frames]
        (run_dir / "frames.txt").write_text("\n".join(frames) + "\n")
        for record in outcome.steps:
            writer.step(1, None, record)
        writer.example_done(1)
        writer.finish(
            outcome,
            cfg=judgement.cfg,
            target=run.describe(),
            extra={
                "expected_verdict": expected,
                "recovery_reads_fence": judgement.reads_fenced,
                "schedule": [rule.describe() for rule in run.schedule],
                "proxies": run.proxies,
                "java_error": run.record.java_error,
                "writer_adds": {
                    add.describe(): run.record.writer_answers[(add.entry, add.bookie)].name
                    for add in run.record.writer.adds
                    if (add.entry, add.bookie) in run.record.writer_answers
                },
                "closed_last_entry": run.record.closed_last_entry,
            },
            story=1,
        )
    _report(judgement, frames, run_dir, expected)
    return outcome.verdict.exit_code


def _report(judgement: Judgement, frames: list[str], run_dir: Path, expected: Verdict) -> None:
    outcome = judgement.outcome
    print("Frame log (the Java client's frames, as the proxies decoded them):")
    for line in frames:
        print(f"  {line}")
    print(f"{len(outcome.steps)} model steps replayed.")
    print_findings(outcome)
    if outcome.verdict.finding:
        print("\nSequence diagram (paste into https://sequencediagram.org/):\n")
        print(
            sequence_diagram(
                judgement.cfg,
                outcome.trace,
                title=NAME,
                final_note=f"VERDICT: {outcome.verdict}",
            )
        )
    matched = "as expected" if outcome.verdict == expected else f"expected {expected}"
    print(f"Verdict: {outcome.verdict} ({matched}). Run directory: {run_dir}")


def run_report_scenario(args: argparse.Namespace) -> int:
    """``bkconform scenario bk-NNNN-java-client`` (and the hypotheses tried like them): an
    upstream report's interleaving forced on the real Java client
    (:mod:`conformance.javaclient.reports`), judged. The exit code says what happened to the
    report's bug (:func:`~conformance.javaclient.reports.report_verdict`): 1 reproduced, 0 the
    window reached and clean, 2 not reached (or reached by a run that then diverged)."""
    from conformance.javaclient.divergences import count_classes
    from conformance.javaclient.reports import REPORTS, REPRODUCED, report_verdict, window_of
    from conformance.javaclient.run import run_once

    report = REPORTS[args.name]
    role = report.role()
    try:
        home = check_arguments(args)
        zookeeper = zookeeper_of(args)
        client = client_home(args)
        version = distribution_version(client or home)
        refusal = role.refusal(version)
        if refusal is not None:
            raise CannotRun(refusal)
        bookie_settings = bookie_settings_of(args)
    except CannotRun as exc:
        print(f"bkconform scenario: {exc}", file=sys.stderr)
        return Verdict.UNDECIDED.exit_code
    print(f"Scenario {report.name}: {report.source}: {report.title}")
    print(f"  {report.story}")
    system = java_client_system(
        home, str(version), zookeeper, client_home=client, bookie_settings=bookie_settings
    )
    print(system_header(system))
    for line in report.plan.describe():
        print(f"  {line}")
    run_dir = new_run_dir(args.runs_dir, "local", report.name)
    print(f"Run directory: {run_dir}", flush=True)
    outcome, example = run_once(
        role,
        report.plan,
        home,
        run_dir,
        name=report.name,
        extra={"report": report.source},
        zookeeper=zookeeper,
        client_home=client,
        bookie_settings=bookie_settings,
    )
    if example is not None:
        print(role.frame_lines(example.record), end="")
    window = window_of(report, example) if example is not None else None
    said = report_verdict(report, outcome, window)
    if said.exit_code != REPRODUCED and outcome.verdict.finding:
        print("Met on the way (the run's own findings, not the report's bug):")
    print_findings(outcome)
    for kind, count in sorted(count_classes(outcome.divergences).items()):
        print(f"  divergence class {kind}: {count}")
    if outcome.error:
        print(f"could not decide: {outcome.error}", file=sys.stderr)
    reached = window is not None and window.reached
    print(f"The interleaving reached: {'yes' if reached else 'no'}")
    for line in window.evidence if window is not None else ():
        print(f"  {line}")
    print(f"{report.source}: {said.says}")
    print(f"Verdict of the run: {outcome.verdict}. Run directory: {run_dir}")
    if (run_dir / RESULTS).exists():
        # What the run says of the report, for tables over releases and storages
        # (tools/findings_table.py) to read rather than the console.
        add_to_results(
            run_dir,
            "report_window",
            {
                "source": report.source,
                "reached": reached,
                "evidence": list(window.evidence) if window is not None else [],
                "exit_code": said.exit_code,
                "says": said.says,
            },
        )
    return said.exit_code


__all__ = [
    "CannotRun",
    "bookkeeper_home",
    "check_arguments",
    "client_home",
    "run_java_client_scenario",
    "run_report_scenario",
    "zookeeper_of",
]
