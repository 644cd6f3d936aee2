"""Where a Java-client example's wall time goes: one short search, its main thread's time split
into phases, in one run.

Runs ``bkconform run --client java`` in this process (the same command line, default the
writer on 4.17.3, E=2 WQ=1 AQ=1, seed 7, an empty example database, 120 s) with timers
wrapped around the functions that make up an example (nothing else changes: each wrapper
calls the original and notes the time). The search's main thread does one thing at a time, so
its wall time splits exactly: each moment is charged to the innermost wrapped function running
on it (exclusive time), the rest to "search loop" (Hypothesis between examples) or, inside an
example, "example: the rest". What other threads do (faults carried out off the main thread,
their heals) is counted beside the split, not in it.

Printed: the once-only costs (cluster, JVM, explorer), then per example the mean milliseconds
of each phase and its share; the same for the examples with and without a client timeout.
Written: ``--out`` (a JSON file: the totals, and each example's phases and facts). Numbers
only: nothing here asserts on time.

    python benchmarks/java_client_profile.py [--seconds 120] [--seed 7] [--out FILE]
        [-- extra bkconform run options]
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.cluster.local import LocalCluster
from adapters.javaclient.client import BookKeeperJavaClient, JavaLedger
from adapters.javaclient.pipelined_adds import PipelinedAdds, code_name
from adapters.netproxy import routing
from adapters.zookeeper.ledger_store import LedgerStore
from conformance import cli
from conformance.javaclient import run as java_run
from conformance.javaclient import search as java_search
from conformance.javaclient import writer_role
from conformance.javaclient.controller import ScheduleController
from conformance.javaclient.session import ClientSession, SessionFaults

SEARCH_LOOP = "search loop (Hypothesis, between examples)"
EXAMPLE_REST = "example: the rest (harness)"
STARTUP = "once: the rest (start-up before the search, finish, shut-down)"
WAIT = "client: waiting for the add callbacks"
SLEEP = "plan: its own sleeps (the delayed adds)"
#: An example whose add callbacks took this long had an add time out (the timeout is 1 s).
TIMEOUT_WAIT_S = 0.9

#: (owner, attribute, phase). Once-only phases start with "once:".
PHASES: list[tuple[Any, str, str]] = [
    (ClientSession, "_start", "once: session (proxies, routing, the rest)"),
    (LocalCluster, "start", "once: cluster (ZooKeeper, bookies)"),
    (BookKeeperJavaClient, "launch", "once: the JVM started"),
    (BookKeeperJavaClient, "connect", "once: the Java clients built in the JVM"),
    (java_run._Guidance, "result", "once: waiting for the model's explorer"),
    (BookKeeperJavaClient, "create_ledger", "client: create ledger (ZooKeeper write)"),
    (LedgerStore, "read", "ZooKeeper: harness reads the metadata"),
    (ScheduleController, "__enter__", "controller: start (rules at the proxies)"),
    (ScheduleController, "__exit__", "controller: stop"),
    (PipelinedAdds, "__init__", "client: add recorder created"),
    (PipelinedAdds, "add", "client: asyncAddEntry calls"),
    (PipelinedAdds, "wait", WAIT),
    (PipelinedAdds, "outcomes", "client: callbacks read"),
    (JavaLedger, "close", "client: ledger close"),
    (ClientSession, "settle", "controller: settle (held frames released)"),
    (SessionFaults, "close", "faults: healed at the run's end (pause expiry wait)"),
    (SessionFaults, "execute", "faults: carried out (fault thread, or main)"),
    (ClientSession, "frames_since", "proxies: the frame log read"),
    (ClientSession, "measure_coverage", "JaCoCo: coverage dumped and merged"),
    (writer_role.WriterRole, "_take_over", "client: the second client's recovery"),
    (writer_role, "stored_entries", "harness: entries read from every bookie"),
    (writer_role, "read_acknowledged", "client: entries read back by the client"),
    (writer_role.WriterRole, "judge", "model: the judge (writer story)"),
    (routing.ServiceInfoRewrite, "wait_routed", "proxies: waiting for the routing"),
    (routing.RegistrationReplace, "wait_routed", "proxies: waiting for the routing"),
]


class Phases:
    """Exclusive wall time of the main thread per phase, and per example."""

    def __init__(self) -> None:
        self.main = threading.main_thread()
        self.stack: list[str] = [STARTUP]
        self.mark = time.perf_counter()
        self.started = self.mark
        self.totals: defaultdict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        #: Phase -> seconds spent in it on other threads (beside the split, not in it).
        self.elsewhere: defaultdict[str, float] = defaultdict(float)
        self.elsewhere_calls: Counter[str] = Counter()
        self.current: defaultdict[str, float] | None = None
        self.examples: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def _charge(self, now: float) -> None:
        phase = self.stack[-1]
        spent = now - self.mark
        self.totals[phase] += spent
        if self.current is not None:
            self.current[phase] += spent
        self.mark = now

    def enter(self, phase: str) -> None:
        self._charge(time.perf_counter())
        self.stack.append(phase)
        self.calls[phase] += 1

    def leave(self) -> None:
        self._charge(time.perf_counter())
        self.stack.pop()

    def timed(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not self.main:
                started = time.perf_counter()
                try:
                    return function(*args, **kwargs)
                finally:
                    with self._lock:
                        self.elsewhere[phase] += time.perf_counter() - started
                        self.elsewhere_calls[phase] += 1
            self.enter(phase)
            try:
                return function(*args, **kwargs)
            finally:
                self.leave()

        return wrapper

    def install(self) -> None:
        for owner, name, phase in PHASES:
            raw = owner.__dict__[name]
            if isinstance(raw, staticmethod):
                setattr(owner, name, staticmethod(self.timed(phase, raw.__func__)))
            elif isinstance(raw, classmethod):
                setattr(owner, name, classmethod(self.timed(phase, raw.__func__)))
            else:
                setattr(owner, name, self.timed(phase, raw))
        original_run_plan = java_search.run_plan
        original_sink = java_run._ExampleSink.__call__
        original_search = java_search.search

        def run_plan(*args: Any, **kwargs: Any) -> Any:
            self._charge(time.perf_counter())
            self.current = defaultdict(float)
            self.stack.append(EXAMPLE_REST)
            started = time.perf_counter()
            try:
                example = original_run_plan(*args, **kwargs)
            finally:
                self.leave()
                phases, self.current = self.current, None
            self.examples.append(
                {
                    "seconds": time.perf_counter() - started,
                    "phases": dict(phases),
                    # The client's add timeout (1 s) fired: its callbacks took that long.
                    "client_timeout": phases[WAIT] >= TIMEOUT_WAIT_S,
                    "shrink": True,  # until the search's sink hears of it
                    **facts(example),
                }
            )
            return example

        def sink(this: Any, number: int, run: Any) -> None:
            if self.examples:
                self.examples[-1]["shrink"] = False
                self.examples[-1]["number"] = number
            original_sink(this, number, run)

        def search(*args: Any, **kwargs: Any) -> Any:
            self._charge(time.perf_counter())
            self.stack.append(SEARCH_LOOP)
            self.search_started = time.perf_counter()
            try:
                return original_search(*args, **kwargs)
            finally:
                self.leave()
                self.search_ended = time.perf_counter()

        java_search.run_plan = run_plan
        # The role's own sleeps (the plan's delayed adds): writer_role's ``time`` module, its
        # sleep timed, everything else the module's own.
        setattr(writer_role, "time", _Time(self.timed(SLEEP, time.sleep)))  # noqa: B010
        java_run._ExampleSink.__call__ = self.timed(  # type: ignore[method-assign]
            "run directory: example written", sink
        )
        setattr(java_run, "search", search)  # noqa: B010 (run.py's own name for it)


class _Time:
    def __init__(self, sleep: Callable[[float], None]) -> None:
        self.sleep = sleep

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def cause(example: dict[str, Any]) -> str:
    """What an example's plan does that costs time, the costliest first."""
    if example["events"]:
        return "fault events: " + ", ".join(sorted(set(example["events"])))
    if example["decisions"].get("drop"):
        return "a frame dropped"
    if example["hold_ms"] > 1000:
        return "a frame held past the add timeout"
    if example["decisions"].get("forge"):
        return "a forged error answer"
    if example["delay_ms"]:
        return "delayed adds only"
    return "holds within the timeout, or nothing"


def facts(example: Any) -> dict[str, Any]:
    """What an example was: its plan in words, its callbacks, whether one was a timeout."""
    plan, record = example.plan, example.record
    codes = [None if o.code is None else code_name(o.code) for o in record.outcomes]
    kinds = Counter(choice.action for choice in plan.schedule.decisions.values())
    return {
        "verdict": str(example.verdict),
        "plan": list(plan.describe()),
        "origin": plan.origin,
        "entries": plan.entries,
        "ledgers": plan.ledgers,
        "decisions": dict(kinds),
        "events": [event.kind.value for event in plan.schedule.events],
        "delay_ms": plan.delay_ms,
        "hold_ms": max((c.for_ms for c in plan.schedule.decisions.values()), default=0),
        "callbacks": codes,
        "ensemble_changes": None
        if example.judgement is None
        else example.judgement.ensemble_changes,
    }


def table(examples: list[dict[str, Any]], title: str) -> list[str]:
    if not examples:
        return [f"{title}: none"]
    summed: defaultdict[str, float] = defaultdict(float)
    for example in examples:
        for phase, seconds in example["phases"].items():
            summed[phase] += seconds
    total = sum(summed.values())
    lines = [
        f"{title}: {len(examples)} examples, mean {total / len(examples) * 1000:.0f} ms "
        f"(median {statistics.median(e['seconds'] for e in examples) * 1000:.0f} ms)"
    ]
    for phase, seconds in sorted(summed.items(), key=lambda kv: -kv[1]):
        lines.append(
            f"  {phase:58} {seconds / len(examples) * 1000:8.1f} ms {seconds / total:6.1%}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--bookkeeper", default="4.17.3")
    parser.add_argument("--out", type=Path, default=None, help="JSON of the phases (default: none)")
    parser.add_argument("extra", nargs="*", help="more bkconform run options (after --)")
    args = parser.parse_args()
    phases = Phases()
    phases.install()
    with tempfile.TemporaryDirectory(prefix="bkconform-java-profile-") as runs:
        argv = [
            "run",
            "--client",
            "java",
            "--role",
            "writer",
            "--bookkeeper",
            args.bookkeeper,
            "--target",
            "local",
            "--ensemble-size",
            "2",
            "--wq",
            "1",
            "--aq",
            "1",
            "--seed",
            str(args.seed),
            "--fresh",
            "--seconds",
            str(args.seconds),
            "--runs-dir",
            runs,
            "--quiet",
            *args.extra,
        ]
        code = cli.main(argv)
        phases.leave()  # the start-up's root, so the last moments are charged
        phases.stack.append(STARTUP)
    wall = time.perf_counter() - phases.started
    once = {k: v for k, v in phases.totals.items() if k.startswith("once:")}
    examples = phases.examples
    print(f"bkconform {' '.join(argv)}: exit {code}")
    print(f"wall {wall:.1f} s; once-only {sum(once.values()):.1f} s:")
    for phase, seconds in sorted(once.items(), key=lambda kv: -kv[1]):
        print(f"  {phase:58} {seconds:8.2f} s")
    print(f"  {SEARCH_LOOP:58} {phases.totals[SEARCH_LOOP]:8.2f} s (whole search)")
    searched = [e for e in examples if not e["shrink"]]
    for line in table(examples, "every example (search and shrink)"):
        print(line)
    for line in table([e for e in searched if e["client_timeout"]], "with a client timeout"):
        print(line)
    for line in table([e for e in searched if not e["client_timeout"]], "without one"):
        print(line)
    print("by what the plan does (examples; mean wall; mean callback wait; mean heal):")
    groups: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for example in examples:
        groups[cause(example)].append(example)
    heal = "faults: healed at the run's end (pause expiry wait)"
    for name, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        n = len(members)
        print(
            f"  {name:58} {n:4} {sum(e['seconds'] for e in members) / n * 1000:7.0f} ms "
            f"{sum(e['phases'].get(WAIT, 0.0) for e in members) / n * 1000:7.0f} ms "
            f"{sum(e['phases'].get(heal, 0.0) for e in members) / n * 1000:7.0f} ms"
        )
    print("on other threads (beside the split):")
    for phase, seconds in sorted(phases.elsewhere.items(), key=lambda kv: -kv[1]):
        print(f"  {phase:58} {seconds:8.2f} s in {phases.elsewhere_calls[phase]} calls")
    if args.out is not None:
        by_origin: dict[str, int] = defaultdict(int)
        for example in examples:
            by_origin[example["origin"]] += 1
        args.out.write_text(
            json.dumps(
                {
                    "argv": argv[:-3],
                    "exit": code,
                    "wall_s": wall,
                    "totals_s": dict(phases.totals),
                    "calls": dict(phases.calls),
                    "elsewhere_s": dict(phases.elsewhere),
                    "examples_by_origin": by_origin,
                    "examples": examples,
                },
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
