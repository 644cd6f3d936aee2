"""``bkconform scenario NAME --target model|local|external``: replay a seed's interleaving on a
target.

The run directory (``<runs-dir>/<UTC time>-<target>-<scenario>/``) is written as the scenario
goes: results.json says running (undecided) until the end, history.jsonl gets each step as it
is judged.

Exit codes: 0 = no finding; 1 = a violation or a divergence (the implementation did not answer
as the model predicts); 2 = could not decide (cluster unreachable, timeouts, a configuration
the target cannot run).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from conformance.commands.console import print_findings
from conformance.commands.options import (
    add_keep_ledgers_option,
    add_target_options,
    settings_record_from_args,
    target_from_args,
)
from conformance.commands.run import reap_leftovers
from conformance.engine import Outcome
from conformance.javaclient import REPORT_SCENARIOS, UPGRADE_SCENARIOS
from conformance.javaclient import SCENARIO_NAME as JAVA_CLIENT_SCENARIO
from conformance.run_ledgers import FindingLedgers, record_ledgers
from conformance.rundir import RunWriter, new_run_dir, system_header
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.targets.base import Target, TargetError, system_under_test
from conformance.verdict import Verdict
from model.bookkeeper.render import sequence_diagram

SWITCH_FLAGS = {
    "--no-recovery-read-fence": "no_recovery_read_fence",
    "--no-recovery-fragment-fix": "no_recovery_fragment_fix",
    "--no-limbo": "no_limbo",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "scenario",
        help="replay a named scenario from the seeds on a target",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "name",
        choices=sorted([*SCENARIOS, JAVA_CLIENT_SCENARIO, *REPORT_SCENARIOS, *UPGRADE_SCENARIOS]),
        help="the scenario",
    )
    add_target_options(parser)
    add_keep_ledgers_option(parser)
    for flag in SWITCH_FLAGS:
        parser.add_argument(flag, action="store_true", help="turn the scenario's protection off")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="default ./runs")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.name in UPGRADE_SCENARIOS:
        from conformance.commands.java_client_upgrade import run_rolling_scenario

        reap_leftovers()
        return run_rolling_scenario(args)
    if args.name in REPORT_SCENARIOS:
        from conformance.commands.java_client_scenario import run_report_scenario

        reap_leftovers()
        return run_report_scenario(args)
    if args.name == JAVA_CLIENT_SCENARIO:
        # Imported here: it loads the JVM adapter, which the other scenarios do not need.
        from conformance.commands.java_client_scenario import run_java_client_scenario

        reap_leftovers()  # what an earlier run that died left behind, as for every scenario
        return run_java_client_scenario(args)
    if getattr(args, "client_bookkeeper", None):
        print(
            f"bkconform scenario: {args.name} runs the model's client; --client-bookkeeper is "
            "for the *-java-client scenarios",
            file=sys.stderr,
        )
        return 2
    scenario = SCENARIOS[args.name]
    given = [flag for flag, attr in SWITCH_FLAGS.items() if getattr(args, attr)]
    if any(flag != scenario.switch_flag for flag in given):
        print(
            f"bkconform scenario: {args.name} is switched by {scenario.switch_flag} only "
            f"(got {', '.join(given)})",
            file=sys.stderr,
        )
        return 2
    protected = not given
    cfg = scenario.config(protected=protected)
    try:
        target: Target = target_from_args(args, cfg)
        recorded = {"target": args.target, **settings_record_from_args(args, cfg)}
    except ValueError as exc:
        print(f"bkconform scenario: {exc}", file=sys.stderr)
        return 2
    print(f"Scenario {scenario.name}: {scenario.interleaving.summary}")
    system = system_under_test(target)
    print(f"Target: {args.target}; model: {cfg.describe()}")
    print(system_header(system), flush=True)
    reap_leftovers()
    run_dir = new_run_dir(args.runs_dir, args.target, scenario.name)
    writer = RunWriter(
        run_dir,
        name=scenario.name,
        cfg=cfg,
        target=recorded,
        system=system,
        extra={"expected_verdict": scenario.expected_verdict(protected)},
    )
    ledgers = FindingLedgers(target)
    with writer:
        writer.start()
        failure: TargetError | None = None
        try:
            target.open(cfg)
            outcome = run_scenario(
                scenario, target, protected=protected, on_record=writer.recorder(1)
            )
            if outcome.verdict.finding:
                ledgers.keep_current()
            described = target.describe()
        except TargetError as exc:
            failure = exc
        finally:
            target.close()  # an external cluster's ledgers: deleted (or kept) here
            record_ledgers(writer, target)
        if failure is not None:
            print(f"could not decide: {failure}", file=sys.stderr)
            writer.finish(Outcome(Verdict.UNDECIDED, [], [], error=str(failure)), story=None)
            return Verdict.UNDECIDED.exit_code
        writer.example_done(1)
        writer.finish(outcome, target=described, story=1)
    _report(outcome, cfg, scenario.name, run_dir)
    return outcome.exit_code


def observed_answers(outcome: Outcome) -> str:
    """What the target answered, by status, in order of first appearance: the line that shows,
    for example, a limbo bookie's EUNKNOWNLEDGERSTATE without opening the history."""
    counts: dict[str, int] = {}
    for record in outcome.steps:
        if record.observed is not None:
            status = f"{record.observed['kind']} {record.observed['status']}"
            counts[status] = counts.get(status, 0) + 1
    return ", ".join(f"{status} x{n}" for status, n in counts.items()) or "none"


def _report(outcome: Outcome, cfg: Any, name: str, run_dir: Path) -> None:
    print(f"{len(outcome.steps)} steps run. Observed answers: {observed_answers(outcome)}")
    print_findings(outcome)
    if outcome.verdict.finding:
        print("\nSequence diagram (paste into https://sequencediagram.org/):\n")
        print(
            sequence_diagram(
                cfg, outcome.trace, title=name, final_note=f"VERDICT: {outcome.verdict}"
            )
        )
    print(f"Verdict: {outcome.verdict}. Run directory: {run_dir}")
