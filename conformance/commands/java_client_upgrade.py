"""``bkconform scenario rolling-upgrade-java-client --target local`` (and
``rolling-downgrade-java-client``): the bookies restarted one by one into another release, with
their data, while the real Java client writes and a second client recovers its ledger
(:mod:`conformance.javaclient.upgrades`).

The bookies start on the scenario's release (4.17.3 for the upgrade, 4.18.0 for the downgrade;
``--bookkeeper`` names another) and are each restarted into the other (4.18.0, 4.17.3); the
Java client is the starting release's unless ``--client-bookkeeper`` names another. The model
judges the run as any fail-over run; then every acknowledged entry is read back by a Java
client of each release. The run directory has what every Java-client run has (``frames.txt``,
``record.json``, ``history.jsonl``, ``results.json`` with the system under test and the
releases each bookie and the client ran) and ``rolling.txt``: the steps, the entries written
and acknowledged, and each release's reads.

Exit codes: 0 = clean; 1 = a violation or a divergence (the model's, or an acknowledged entry
a reader of either release could not read); 2 = could not decide (a release that cannot be
had, the cluster or a JVM failed, or a bookie was never restarted into the target release).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from adapters.installations.system import BookieChoice
from adapters.javaclient import distribution_version
from conformance.commands.console import print_findings
from conformance.commands.java_client_scenario import (
    CannotRun,
    check_arguments,
    client_home,
    zookeeper_of,
)
from conformance.javaclient.role import Example
from conformance.javaclient.run import java_client_system, run_once
from conformance.javaclient.session import ClientSession, RunUndecided, resolve_release
from conformance.javaclient.upgrades import (
    ROLLING,
    RollingReport,
    check_releases,
    read_back,
    report_of,
)
from conformance.rundir import new_run_dir, system_header, system_record
from conformance.verdict import Verdict

REPORT_FILE = "rolling.txt"


def run_rolling_scenario(args: argparse.Namespace) -> int:
    scenario = ROLLING[args.name]
    role = scenario.role()
    try:
        if args.target != "local":
            raise CannotRun(
                f"{scenario.name} runs on --target local only (it starts bookies of two "
                f"releases, proxies and the Java client here); got --target {args.target}"
            )
        if not getattr(args, "bookkeeper", None) and not getattr(args, "bookkeeper_home", None):
            args.bookkeeper = scenario.start
        home = check_arguments(args)
        zookeeper = zookeeper_of(args)
        client = client_home(args)
        start = str(distribution_version(home))
        target_home = resolve_release(scenario.target)
        target = str(distribution_version(target_home))
        check_releases(scenario, start, target)
        version = distribution_version(client or home)
        refusal = role.refusal(version)
        if refusal is not None:
            raise CannotRun(refusal)
    except (CannotRun, RunUndecided, ValueError) as exc:
        print(f"bkconform scenario: {exc}", file=sys.stderr)
        return Verdict.UNDECIDED.exit_code
    plan = scenario.plan(target)
    print(f"Scenario {scenario.name}: {scenario.title}")
    started_on = java_client_system(home, str(version), zookeeper, client_home=client)
    # Every bookie runs both releases, one after the other.
    system = dataclasses.replace(
        started_on,
        bookies=f"{started_on.bookies}, each restarted with its data into "
        f"{BookieChoice.bookkeeper(target_home).describe()}",
    )
    print(system_header(system))
    for line in plan.describe():
        print(f"  {line}")
    run_dir = new_run_dir(args.runs_dir, "local", scenario.name)
    print(f"Run directory: {run_dir}", flush=True)
    reports: list[RollingReport] = []

    def after(session: ClientSession, example: Example[Any, Any]) -> dict[str, Any]:
        backs = read_back(session, example.record, [home, target_home], run_dir)
        report = report_of(scenario, target, session, example, backs)
        reports.append(report)
        (run_dir / REPORT_FILE).write_text("\n".join(report.lines()) + "\n")
        return {
            "system_under_test": system_record(system),
            "rolling": report.as_dict(),
            "violations": [v for back in backs for v in back.violations()],
            "undecided": report.incomplete_reason(),
        }

    outcome, example = run_once(
        role,
        plan,
        home,
        run_dir,
        name=scenario.name,
        extra={"rolling": {"from": start, "to": target, "client": str(version)}},
        zookeeper=zookeeper,
        client_home=client,
        after=after,
    )
    if example is not None:
        print(role.frame_lines(example.record), end="")
    for report in reports:
        for line in report.lines():
            print(line)
    print_findings(outcome)
    if outcome.error:
        print(f"could not decide: {outcome.error}", file=sys.stderr)
    print(f"Verdict: {outcome.verdict}. Run directory: {run_dir}")
    return outcome.verdict.exit_code


__all__ = ["REPORT_FILE", "run_rolling_scenario"]
