"""Record one real Java-client writer run per fault kind, for the judge's fast tests.

Each plan below puts one fault of the extended fault set (issue 29) on a ledger of
E=3 WQ=2 AQ=2 over four bookies (e0's write set b1, b2; e1's b2, b3; the spare b4): a request
or an answer dropped, held by frames, held for a time within and past the client's add
timeout, answered by a forged error of each status; a bookie crashed, paused, restarted with
and without its data; a connection reset, refused, stalled; the client's ZooKeeper writes
held, its session expired. The runs are written as JSON lines (the plan, the role's settings,
the faults as carried out, the record) to ``--out``, gzipped when the name ends in ``.gz``:
``tests/conformance/javaclient/test_fault_runs.py`` judges them offline.

    .venv/bin/python tools/record_fault_runs.py --bookkeeper 4.17.3 \\
        --out tests/conformance/javaclient/recorded_runs/bookkeeper-4.17.3-fault-runs.jsonl.gz

``--role both`` records the fail-over runs instead (a second client recovers the ledger while
the writer writes, some with a fault: ``FAILOVER_PLANS``), which
``tests/conformance/javaclient/test_failover_runs.py`` judges:

    .venv/bin/python tools/record_fault_runs.py --bookkeeper 4.17.3 --role both \\
        --out tests/conformance/javaclient/recorded_runs/bookkeeper-4.17.3-failover-runs.jsonl.gz

Exit 0 when every plan ran and applied; 2 when one could not (the others are still written).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from pathlib import Path
from typing import IO

from adapters.installations.bookkeeper import BookKeeperInstallError, resolve_bookkeeper
from adapters.installations.errors import BookKeeperNotFound
from adapters.javaclient import distribution_version
from conformance.javaclient.failover_role import FailoverRole
from conformance.javaclient.plans import (
    DROP,
    FaultKind,
    FrameKey,
    FrameSchedule,
    PlannedFault,
    forge,
    hold,
    hold_for,
)
from conformance.javaclient.role import Example
from conformance.javaclient.run import session_options
from conformance.javaclient.search import run_plan
from conformance.javaclient.session import INFRASTRUCTURE_ERRORS, ClientSession
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape
from conformance.javaclient.writer_role import WriterRole
from conformance.javaclient.writer_story import WriterRecord

SHAPE = WriterShape(3, 2, 2)
ENTRIES = 4


def _request(bookie: str, entry: int) -> FrameKey:
    return FrameKey("add", bookie, entry)


def _answer(bookie: str, entry: int) -> FrameKey:
    return FrameKey("add", bookie, entry, answer=True)


def _event(
    kind: FaultKind, at: FrameKey | None = None, bookie: str | None = None, ms: int = 0
) -> PlannedFault:
    return PlannedFault(kind, at, bookie, ms)


#: Name -> the schedule of the run (every fault kind at least once).
PLANS: dict[str, FrameSchedule] = {
    "drop request": FrameSchedule({_request("b2", 0): DROP}),
    "drop answer": FrameSchedule({_answer("b2", 0): DROP}),
    "hold request by frames": FrameSchedule({_request("b2", 0): hold(3)}),
    "hold answer briefly": FrameSchedule({_answer("b2", 1): hold_for(300)}),
    "hold request past the timeout": FrameSchedule({_request("b2", 0): hold_for(3000)}),
    "hold answer past the timeout": FrameSchedule({_answer("b2", 0): hold_for(3000)}),
    **{
        f"forge {status} answer": FrameSchedule({_answer("b2", 0): forge(status)})
        for status in ("EIO", "ETOOMANYREQUESTS", "EUA", "EFENCED", "ENOLEDGER")
    },
    "forge EIO in place of the request": FrameSchedule({_request("b2", 1): forge("EIO")}),
    "crash at the start": FrameSchedule(events=(_event(FaultKind.CRASH, None, "b2"),)),
    "crash after an answer": FrameSchedule(
        events=(_event(FaultKind.CRASH, _answer("b2", 0), "b2"),)
    ),
    "pause from the start": FrameSchedule(events=(_event(FaultKind.PAUSE, None, "b2", 3000),)),
    "pause at a request": FrameSchedule(
        events=(_event(FaultKind.PAUSE, _request("b2", 1), "b2", 3000),)
    ),
    "restart at a request": FrameSchedule(
        events=(_event(FaultKind.RESTART, _request("b2", 1), "b2"),)
    ),
    "clean restart at a request": FrameSchedule(
        events=(_event(FaultKind.CLEAN_RESTART, _request("b2", 1), "b2"),)
    ),
    # The bookies' checkpoint interval passes before the client starts (nothing else changes:
    # what a checkpoint decides shows in the lost-fence scenarios, recorded apart).
    "await a checkpoint first": FrameSchedule(events=(_event(FaultKind.AWAIT_CHECKPOINT),)),
    "restart empty after an answer": FrameSchedule(
        events=(_event(FaultKind.RESTART_EMPTY, _answer("b2", 0), "b2"),)
    ),
    "reset at a request": FrameSchedule(
        {_request("b2", 0): hold_for(300)}, (_event(FaultKind.RESET, _request("b2", 0), "b2"),)
    ),
    "refuse and reset": FrameSchedule(
        events=(
            _event(FaultKind.REFUSE, None, "b2", 3000),
            _event(FaultKind.RESET, None, "b2"),
        )
    ),
    "stall from the start": FrameSchedule(events=(_event(FaultKind.STALL, None, "b2", 3000),)),
    "hold metadata with a forged error": FrameSchedule(
        {_answer("b2", 0): forge("EIO")}, (_event(FaultKind.HOLD_METADATA, None, None, 2500),)
    ),
    "expire session": FrameSchedule(events=(_event(FaultKind.EXPIRE_SESSION),)),
}

#: Name -> a fail-over run (``--role both``): its schedule, after how many of the writer's
#: adds the second client recovers the ledger, and how long after them.
FAILOVER_PLANS: dict[str, tuple[FrameSchedule, int, int]] = {
    "recovery after every add": (FrameSchedule(), ENTRIES, 0),
    "recovery after every add, a second later": (FrameSchedule(), ENTRIES, 1000),
    "recovery in the middle": (FrameSchedule(), 2, 300),
    "recovery after the first add": (FrameSchedule(), 1, 0),
    "answer held past the recovery": (
        FrameSchedule({_answer("b2", 1): hold_for(3000)}),
        ENTRIES,
        200,
    ),
    "request dropped, recovery around the timeout": (
        FrameSchedule({_request("b2", 0): DROP}),
        ENTRIES,
        1000,
    ),
    "forged error, metadata held, recovery": (
        FrameSchedule(
            {_answer("b2", 0): forge("EIO")}, (_event(FaultKind.HOLD_METADATA, None, None, 2500),)
        ),
        ENTRIES,
        300,
    ),
    "crash, then recovery": (
        FrameSchedule(events=(_event(FaultKind.CRASH, _answer("b3", 1), "b3"),)),
        ENTRIES,
        500,
    ),
    "pause through the recovery": (
        FrameSchedule(events=(_event(FaultKind.PAUSE, _request("b1", 3), "b1", 3000),)),
        ENTRIES,
        100,
    ),
    "restart empty, then recovery": (
        FrameSchedule(events=(_event(FaultKind.RESTART_EMPTY, _answer("b2", 1), "b2"),)),
        ENTRIES,
        1000,
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--bookkeeper", default="4.17.3", help="a release (installed from Maven Central) or a home"
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=None, help="the plans to run, by name")
    parser.add_argument(
        "--role",
        choices=(WriterRole.name, FailoverRole.name),
        default=WriterRole.name,
        help="writer: one run per fault kind; both: the fail-over runs",
    )
    args = parser.parse_args(argv)
    plans = _plans(args.role)
    unknown = sorted(set(args.only or ()) - set(plans))
    if unknown:
        parser.error(f"no plan named {unknown}; the plans: {sorted(plans)}")
    try:
        home = resolve_bookkeeper(args.bookkeeper)
    except (BookKeeperInstallError, BookKeeperNotFound) as exc:
        print(f"record_fault_runs: {exc}", file=sys.stderr)
        return 2
    version = distribution_version(home)
    role = FailoverRole(SHAPE) if args.role == FailoverRole.name else WriterRole(SHAPE)
    names = args.only or list(plans)
    failed: list[str] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if args.out.suffix == ".gz" else open
    with (
        tempfile.TemporaryDirectory(prefix="bkconform-fault-runs-") as run_dir,
        opener(args.out, "wt") as sink,
        ClientSession(session_options(role, home, Path(run_dir))) as session,
    ):
        for name in names:
            plan = plans[name]
            try:
                example = run_plan(session, role, plan)
            except INFRASTRUCTURE_ERRORS as exc:
                print(f"{name}: could not run: {exc}", file=sys.stderr)
                failed.append(name)
                continue
            if example.unapplied is not None:
                print(f"{name}: not applied: {example.unapplied}", file=sys.stderr)
                failed.append(name)
                continue
            _write(sink, name, str(version), role, example)
            print(f"{name}: {example.verdict.value}", flush=True)
    return 2 if failed else 0


def _plans(role: str) -> dict[str, WriterRunPlan]:
    """The runs of a role, by name."""
    if role == FailoverRole.name:
        return {
            name: WriterRunPlan(
                SHAPE,
                ENTRIES,
                schedule,
                origin=f"fail-over run: {name}",
                recover_after=after,
                recover_delay_ms=delay_ms,
            )
            for name, (schedule, after, delay_ms) in FAILOVER_PLANS.items()
        }
    return {
        name: WriterRunPlan(SHAPE, ENTRIES, schedule, origin=f"fault run: {name}")
        for name, schedule in PLANS.items()
    }


def _write(
    sink: IO[str],
    name: str,
    version: str,
    role: WriterRole,
    example: Example[WriterRunPlan, WriterRecord],
) -> None:
    row = {
        "name": name,
        "bookkeeper": version,
        "plan": example.plan.to_json(),
        "role_settings": role.settings(),
        "faults": [list(fault) for fault in example.faults],
        "record": role.record_to_json(example.record),
    }
    sink.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    sys.exit(main())
