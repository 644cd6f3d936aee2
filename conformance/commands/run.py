"""``bkconform run``: search for action sequences that break the protocol on a target;
``bkconform replay``: run a recorded finding again.

``run`` generates examples with Hypothesis on the target (every bookie answer diffed against
the model, every step's state checked against the invariants); when that finds nothing, the
model's archive-guided explorer proposes traces, and Hypothesis replays any failure on the
target and shrinks it. The run directory is written as the run goes: results.json (undecided
and running until the end), history.jsonl (every example's steps as they are judged; the
shrunk finding's steps at the end); then the shrunk example as a numbered trace, a sequence
diagram (text and SVG), and the blob that replays it. A run killed midway leaves its history
and reads undecided.

Exit codes: 0 = no finding; 1 = a violation or a divergence; 2 = could not decide (cluster
unreachable, timeouts, a bad configuration); never 0 when nothing was checked.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from hypothesis.database import DirectoryBasedExampleDatabase

from adapters.cluster.bookie_profiles import DEFAULT_PROFILE
from adapters.process_records import reap_orphans_once
from conformance.commands.options import (
    add_keep_ledgers_option,
    add_model_options,
    add_target_options,
    config_from_args,
    search_overrides,
    settings_record_from_args,
    stored_config_from_args,
    target_from_args,
)
from conformance.commands.zab_search import is_search_run, replay_run_dir
from conformance.engine import Outcome
from conformance.run_ledgers import FindingLedgers, record_ledgers
from conformance.rundir import (
    FINDING,
    FINISHED,
    RunWriter,
    new_run_dir,
    read_results,
    system_header,
)
from conformance.search import runner as search_runner
from conformance.search.choices import from_blob
from conformance.search.configurations import SeededChooser, draw_configuration
from conformance.search.portfolio import MAX_DEFAULT_WORKERS, default_workers
from conformance.search.runner import (
    PROFILES,
    SearchProgress,
    SearchSettings,
    replay_choices,
    run_search,
)
from conformance.search.verdict import SearchReport
from conformance.targets.base import Target, TargetError, system_under_test
from conformance.verdict import Verdict
from model.bookkeeper.config import ConfigError, ModelConfig
from model.bookkeeper.render import numbered_trace, sequence_diagram

EXIT_UNDECIDED = Verdict.UNDECIDED.exit_code


def register(subparsers: Any) -> None:
    run = subparsers.add_parser(
        "run",
        help="search for findings on a target (Hypothesis + the model's explorer)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_target_options(run)
    add_keep_ledgers_option(run)
    add_model_options(run, bookies=3, clients=2, wq=3, aq=2)
    search = run.add_argument_group("search")
    search.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default="ci",
        help="budget: ci (50 examples, 60 steps, 30 s), nightly, qualify (default ci)",
    )
    search.add_argument("--max-examples", type=int, default=None, help="Hypothesis examples")
    search.add_argument("--steps", type=int, default=None, help="maximum steps per example")
    search.add_argument("--seed", type=int, default=None, help="seed (default 0)")
    search.add_argument(
        "--seconds", type=float, default=None, help="time budget for finding (not shrinking)"
    )
    search.add_argument(
        "--no-explore", action="store_true", help="Hypothesis only, no explorer proposals"
    )
    search.add_argument(
        "--explorer-workers",
        type=int,
        default=None,
        help="explorers run at once, each seeded its own way; the finding is the one with the "
        f"fewest model steps (default: one per core, at most {MAX_DEFAULT_WORKERS}; 1: one "
        "explorer)",
    )
    search.add_argument(
        "--explorer-steps",
        type=int,
        default=None,
        help="the explorer's model steps at most, per worker (default: half of the time left "
        "on a cluster target): with --max-examples, a search whose verdict does not depend on "
        "the machine's speed",
    )
    search.add_argument(
        "--no-shrink",
        action="store_true",
        help="keep a finding as first found, unshrunk (a quick answer; shrinking a race "
        "replays many examples)",
    )
    search.add_argument(
        "--races",
        action="store_true",
        help="steps may put requests to bookies in flight together (races), each judged by "
        "the serial orders the model allows (docs/races.md)",
    )
    search.add_argument(
        "--gates",
        action="store_true",
        help="with --races, --target local and real bookies: the bookies' JVMs load the gate "
        "agent, and a race of two requests to one bookie may hold its threads where they meet "
        "shared state, every schedule of each pair of request kinds first (docs/races.md)",
    )
    search.add_argument(
        "--race-attempts",
        type=int,
        default=10,
        help="with --races: a finding's example is replayed this many times, to say how often "
        "its race hits (default 10; 0: not replayed)",
    )
    search.add_argument(
        "--java-faults",
        choices=("requests", "extended"),
        default=None,
        help="with --client java --role writer: the faults Hypothesis draws: requests (dropped "
        "or held, issue 15's) or extended (the default: answers too, forged errors, crashes, "
        "restarts, resets, refused connections, held ZooKeeper writes, session expiry; "
        "docs/javaclient-search.md)",
    )
    search.add_argument(
        "--side-by-side",
        type=int,
        default=1,
        metavar="N",
        help="with --client java: N searches at once, each with its own cluster and Java "
        "client, seeded --seed, --seed + 1, ...; the first finding stops the others (an "
        "example mostly waits for the client's timeouts; docs/javaclient-search.md)",
    )
    search.add_argument(
        "--no-client-coverage",
        action="store_true",
        help="with --client java: do not measure the client's code coverage (JaCoCo, installed "
        "from Maven Central on first use; measured by default, and steering the search)",
    )
    search.add_argument(
        "--client",
        choices=("python", "java"),
        default="python",
        help="who plays the spec's clients: python (our wire client, every role; the default) "
        "or java (the real BookKeeper Java client of --bookkeeper as the recovering client, "
        "--target local; docs/javaclient-search.md)",
    )
    search.add_argument(
        "--role",
        choices=("recovery", "writer", "both"),
        default="recovery",
        help="with --client java: the Java client's role (recovery: it recovers the ledger "
        "w1 wrote; writer: it writes a ledger of --ensemble/--wq/--aq on E + 1 bookies, "
        "pipelined, through ensemble changes; both: that writer, and a second Java client "
        "recovering its ledger while it writes)",
    )
    search.add_argument(
        "--random-config",
        action="store_true",
        help="draw the configuration from the documented space (conformance/search/"
        "configurations.py) with the seed, instead of the constants above",
    )
    search.add_argument(
        "--with-defects",
        action="store_true",
        help="with --random-config: the known defects' switches may be drawn off too",
    )
    search.add_argument(
        "--fresh",
        action="store_true",
        help="ignore failures saved by earlier runs (the example database)",
    )
    _add_output_options(run)
    run.set_defaults(func=run_command)

    replay = subparsers.add_parser(
        "replay",
        help="replay a finding from a run directory or a blob",
        description="Replay a recorded example: RUN_DIR (its configuration, target and blob) "
        "or a blob with the configuration given as options. Exit codes as for run.",
    )
    replay.add_argument("source", help="a run directory, or an example blob")
    add_target_options(replay, default="")
    add_keep_ledgers_option(replay)
    add_model_options(replay, bookies=3, clients=2, wq=3, aq=2)
    replay.add_argument("--steps", type=int, default=60, help="the run's --steps (blob only)")
    replay.add_argument(
        "--races", action="store_true", help="the run's --races (blob only: a run directory says)"
    )
    replay.add_argument(
        "--gates", action="store_true", help="the run's --gates (blob only: a run directory says)"
    )
    _add_output_options(replay)
    replay.set_defaults(func=replay_command)


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="default ./runs")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def _settings(args: argparse.Namespace) -> SearchSettings:
    search = search_overrides(PROFILES[args.profile], args)
    if args.seed is not None:
        search = dataclasses.replace(search, seed=args.seed)
    if args.explorer_workers is None:
        search = dataclasses.replace(search, explorer_workers=default_workers())
    search.check()
    return search


class _ProgressLine:
    """Progress on long runs (:meth:`SearchProgress.describe`): one line, rewritten in place
    on a terminal while a phase lasts and the line fits; each phase's last line stays."""

    def __init__(self, out: TextIO, quiet: bool) -> None:
        self.out = out
        self.quiet = quiet
        self.terminal = out.isatty()
        self._open: str | None = None  # the phase of the line rewritten in place

    def __call__(self, p: SearchProgress) -> None:
        if self.quiet:
            return
        line = "  " + p.describe(rate=True)
        if not self.terminal:
            print(line, file=self.out, flush=True)
            return
        width = max(40, shutil.get_terminal_size().columns - 1)
        if self._open is not None and self._open != p.phase:
            print(file=self.out)  # the phase before keeps its last line
            self._open = None
        if len(line) <= width:
            print("\r" + line.ljust(width), end="", file=self.out, flush=True)
            self._open = p.phase
        else:  # too long to rewrite in place: a line of its own
            print("\r" + line, file=self.out, flush=True)
            self._open = None

    def done(self) -> None:
        if self._open is not None:
            print(file=self.out)
            self._open = None


def run_command(args: argparse.Namespace) -> int:
    if args.client == "java":
        # Imported here: the JVM adapter loads only when the Java client is chosen.
        from conformance.commands.java_client_run import run_java_client_search

        return run_java_client_search(args)
    if args.role != "recovery":
        print("bkconform run: --role needs --client java", file=sys.stderr)
        return EXIT_UNDECIDED
    if getattr(args, "client_bookkeeper", None):
        print("bkconform run: --client-bookkeeper needs --client java", file=sys.stderr)
        return EXIT_UNDECIDED
    try:
        search = _settings(args)
        cfg = (
            draw_configuration(SeededChooser(search.seed), defects=args.with_defects)
            if args.random_config
            else config_from_args(args)
        )
        cfg = stored_config_from_args(args, cfg)
        target = target_from_args(args, cfg)
        recorded = {"target": args.target, **settings_record_from_args(args, cfg)}
    except (ConfigError, ValueError) as exc:
        print(f"bkconform run: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    reap_leftovers()
    database = None
    if not args.fresh:
        database = DirectoryBasedExampleDatabase(args.runs_dir / "hypothesis-examples")
    system = system_under_test(target)
    print(f"Target: {args.target}; model: {cfg.describe()}")
    print(system_header(system))
    print(
        f"Search: {search.max_examples} examples of up to {search.max_steps} steps, seed "
        f"{search.seed}, budget {search.describe_budget()}, explorer "
        f"{'on' if search.explore else 'off'}"
        + (", races" if search.races else "")
        + (", gates in the bookies' JVMs" if search.gates else ""),
    )
    run_dir = new_run_dir(args.runs_dir, args.target, "run")
    print(f"Run directory: {run_dir} (the history streams to {run_dir / 'history.jsonl'})")
    sys.stdout.flush()
    progress = _ProgressLine(sys.stderr, args.quiet)
    writer = RunWriter(
        run_dir,
        name="run",
        cfg=cfg,
        target=recorded,
        system=system,
        extra={"search": search.as_dict()},
    )
    ledgers = FindingLedgers(target)
    with writer:
        writer.start()
        failure: TargetError | None = None
        try:
            target.open(cfg)
            report = run_search(
                cfg,
                target,
                search,
                database=database,
                progress=progress,
                sink=writer,
                on_example=ledgers.remember,
            )
            if report.finding is not None:
                ledgers.keep(report.finding.run)
            hits = _race_hits(cfg, target, report, search, args.race_attempts, progress=progress)
            described = target.describe()
        except TargetError as exc:
            failure = exc
        finally:
            target.close()  # an external cluster's ledgers: deleted (or kept) here
            record_ledgers(writer, target)
        if failure is not None:
            progress.done()
            print(f"could not decide: {failure}", file=sys.stderr)
            _finish_undecided(writer, str(failure))
            return EXIT_UNDECIDED
        progress.done()
        _write(writer, run_dir, report, described, search, hits)
    _print_report(cfg, report, run_dir, hits)
    return report.exit_code


#: How much later than its recorded offset each raced request may be sent in a finding's
#: replays: half a millisecond, the scale of the search's own offsets (0 to 5 ms).
RACE_JITTER_S = 0.0005


def _race_hits(
    cfg: ModelConfig,
    target: Target,
    report: SearchReport,
    search: SearchSettings,
    attempts: int,
    *,
    progress: Callable[[SearchProgress], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[int, int] | None:
    """A race is a probability: the finding's example replayed ``attempts`` times, each
    raced request sent up to :data:`RACE_JITTER_S` later than the finding's offset (the
    attempt's own random draw, seeded by its number), and how many of them gave its verdict
    again (None: no finding with a race, or no attempts). ``progress``: the ``replays``
    phase, when the first starts, then at least every ``PROGRESS_INTERVAL_S`` seconds (the
    search's elapsed time goes on from its end)."""
    finding = report.finding
    if finding is None or finding.run.outcome.races is None or attempts <= 0:
        return None
    hits = 0
    beat = None if progress is None else _ReplaysProgress(progress, report, attempts, clock)
    for attempt in range(attempts):
        if beat is not None:
            beat.attempt(attempt)
        jitter = functools.partial(random.Random(attempt).uniform, 0.0, RACE_JITTER_S)
        again = replay_choices(
            cfg,
            target,
            finding.choices,
            max_steps=search.max_steps,
            races=search.races,
            race_jitter=jitter,
            gates=search.gates,
            on_record=None if beat is None else beat.step,
        )
        hits += again.outcome.verdict is finding.run.outcome.verdict
    return hits, attempts


class _ReplaysProgress:
    """The progress of a finding's replays: a report when an attempt starts if none was made
    for ``PROGRESS_INTERVAL_S``, and as often while its steps run."""

    def __init__(
        self,
        progress: Callable[[SearchProgress], None],
        report: SearchReport,
        attempts: int,
        clock: Callable[[], float],
    ) -> None:
        self.progress = progress
        self.report = report
        self.attempts = attempts
        self.clock = clock
        self.started = clock()
        self.interval = search_runner.PROGRESS_INTERVAL_S
        self.done = 0
        self.steps = 0
        self._last: float | None = None

    def attempt(self, number: int) -> None:
        self.done = number
        self._maybe_report()

    def step(self, _record: object) -> None:
        self.steps += 1
        self._maybe_report()

    def _maybe_report(self) -> None:
        now = self.clock()
        if self._last is not None and now - self._last < self.interval:
            return
        self._last = now
        self.progress(
            SearchProgress(
                "replays",
                self.done,
                self.steps,
                self.report.elapsed + now - self.started,
                1,
                examples_left=self.attempts - self.done,
            )
        )


def reap_leftovers() -> None:
    """Stop what earlier runs that died (``kill -9``) left running: their ZooKeeper servers and
    bookies (:mod:`adapters.process_records`); say so on stderr. Once per process (a
    local cluster's first start would do it otherwise)."""
    for reaped in reap_orphans_once():
        print(f"bkconform: a run that died left {reaped.describe()}", file=sys.stderr)


def _finish_undecided(writer: RunWriter, error: str) -> None:
    """The target failed before the run decided anything: the run directory says so."""
    writer.finish(Outcome(Verdict.UNDECIDED, [], [], error=error), story=None)


def _write(
    writer: RunWriter,
    run_dir: Path,
    report: SearchReport,
    target: dict[str, str],
    search: SearchSettings,
    hits: tuple[int, int] | None = None,
) -> None:
    extra: dict[str, Any] = {
        "search": search.as_dict(),
        "examples": report.examples,
        "steps_run": report.steps,
        "explorer_steps": report.explorer_steps,
        "elapsed_seconds": round(report.elapsed, 3),
        "steps_per_second": round(report.steps_per_second, 1),
        "notes": report.notes,
    }
    if report.races is not None:
        extra["races"] = report.races.as_dict()
    if report.bookies_own is not None:
        extra["bookies_own"] = report.bookies_own.as_dict()
    if hits is not None:
        extra["race_replays"] = {"hits": hits[0], "attempts": hits[1]}
    finding = report.finding
    if finding is not None:
        extra["finding"] = {
            "found_by": finding.found_by,
            "found_after_seconds": round(finding.found_after, 3),
            "found_steps": finding.found_steps,
            "shrunk_steps": len(finding.run.outcome.steps),
            "swarm": finding.run.swarm.describe(),
            "blob": finding.blob,
            "choices": finding.choices,
        }
        (run_dir / "example.blob").write_text(finding.blob + "\n")
        outcome = finding.run.outcome
    else:
        outcome = Outcome(report.verdict, [], [], error=report.error)
    outcome.verdict = report.verdict
    writer.finish(
        outcome, target=target, extra=extra, story=FINDING if finding is not None else None
    )


def _print_report(
    cfg: ModelConfig, report: SearchReport, run_dir: Path, hits: tuple[int, int] | None = None
) -> None:
    print(
        f"{report.examples} examples, {report.steps} steps on the target in "
        f"{report.elapsed:.1f} s ({report.steps_per_second:,.0f} steps/s); the explorer took "
        f"{report.explorer_steps} steps in the model."
    )
    if report.races is not None:
        print(f"Races: {report.races.describe()}.")
    if report.bookies_own is not None:
        print(f"Bookies' own: {report.bookies_own.describe()}.")
    for note in report.notes:
        print(f"NOTE {note}")
    if report.error:
        print(f"UNDECIDED {report.error}")
    finding = report.finding
    if finding is not None:
        outcome = finding.run.outcome
        print(
            f"Found by the {finding.found_by} after {finding.found_after:.1f} s "
            f"({finding.found_steps} steps), shrunk to {len(outcome.steps)} steps."
        )
        for violation in outcome.violations:
            print(f"VIOLATION {violation}")
        for divergence in outcome.divergences:
            print(f"DIVERGENCE {divergence}")
        for record in outcome.steps:
            if record.race is not None and "answers" in record.race:
                print(f"The race (step {record.index}), its requests in flight together:")
                for answer in record.race["answers"]:
                    print(
                        f"  {answer['request']}: sent +{answer['sent_ms']} ms, answered "
                        f"+{answer['answered_ms']} ms: {answer['observed']}"
                    )
        if hits is not None:
            print(
                f"The race hit in {hits[0]} of {hits[1]} replays of the shrunk example (each "
                f"raced request sent up to {RACE_JITTER_S * 1000:g} ms later than recorded)."
            )
        print(numbered_trace(cfg, outcome.trace))
        print("\nSequence diagram (paste into https://sequencediagram.org/):\n")
        print(
            sequence_diagram(
                cfg, outcome.trace, title="bkconform run", final_note=f"VERDICT: {report.verdict}"
            )
        )
        print(f"\nReplay: bkconform replay {run_dir}")
    print(f"Verdict: {report.verdict}. Run directory: {run_dir}")


def _blob(source: str) -> list[int]:
    """The choices of an example blob; a source that is no blob and looks like a path is named
    as the path it is (a blob's base64 may hold ``/`` too, so only a failed decode says so)."""
    try:
        return from_blob(source)
    except ValueError:
        path = Path(source).expanduser()
        if path.is_file():
            raise ValueError(
                f"{source} is a file: replay takes a run directory or an example blob"
            ) from None
        if "/" in source or source.startswith((".", "~")):
            raise ValueError(
                f"{source}: no such run directory (replay takes a run directory or an example blob)"
            ) from None
        raise


def replay_command(args: argparse.Namespace) -> int:
    source = Path(args.source)
    if source.is_dir() and is_search_run(source):
        return replay_run_dir(args, source)
    if source.is_dir() and _is_java_client_run(source):
        from conformance.commands.java_client_run import replay_java_run

        return replay_java_run(args, source)
    try:
        if source.is_dir():
            cfg, choices, max_steps, target_name, races, gates = _from_run_dir(source)
            if args.target:
                target_name = args.target
            _recorded_bookie_settings(args, source, target_name)
            args.gates = gates
        else:
            cfg, choices, max_steps = config_from_args(args), _blob(args.source), args.steps
            target_name = args.target or "model"
            races = bool(getattr(args, "races", False))
            gates = bool(getattr(args, "gates", False))
            args.target = target_name
            cfg = stored_config_from_args(args, cfg)
        args.target = target_name
        target = target_from_args(args, cfg)
        recorded = {"target": target_name, **settings_record_from_args(args, cfg)}
    except (ConfigError, ValueError, OSError, KeyError) as exc:
        print(f"bkconform replay: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    reap_leftovers()
    system = system_under_test(target)
    print(f"Replaying on {target_name}; model: {cfg.describe()}")
    print(system_header(system), flush=True)
    run_dir = new_run_dir(args.runs_dir, target_name, "replay")
    writer = RunWriter(
        run_dir,
        name="replay",
        cfg=cfg,
        target=recorded,
        system=system,
        extra={"replayed_from": str(source), "choices": choices},
    )
    ledgers = FindingLedgers(target)
    with writer:
        writer.start()
        failure: TargetError | None = None
        try:
            target.open(cfg)
            run = replay_choices(
                cfg,
                target,
                choices,
                max_steps=max_steps,
                on_record=writer.recorder(1),
                races=races,
                gates=gates,
            )
            if run.finding:
                ledgers.keep(run, just_ran=True)
            described = target.describe()
        except TargetError as exc:
            failure = exc
        finally:
            target.close()  # an external cluster's ledgers: deleted (or kept) here
            record_ledgers(writer, target)
        if failure is not None:
            print(f"could not decide: {failure}", file=sys.stderr)
            _finish_undecided(writer, str(failure))
            return EXIT_UNDECIDED
        writer.example_done(1)
        writer.finish(run.outcome, target=described, story=1)
    report = SearchReport(
        run.outcome.verdict, None, 1, len(run.outcome.steps), 0.0, run.outcome.error
    )
    outcome = run.outcome
    for violation in outcome.violations:
        print(f"VIOLATION {violation}")
    for divergence in outcome.divergences:
        print(f"DIVERGENCE {divergence}")
    print(numbered_trace(cfg, outcome.trace))
    print(f"Verdict: {outcome.verdict}. Run directory: {run_dir}")
    return report.exit_code


def _recorded_bookie_settings(args: argparse.Namespace, source: Path, target: str) -> None:
    """A replay of a run directory runs the bookies' storage and settings profile it recorded,
    unless the options name others (or the replay runs on a target whose bookies the suite
    does not configure)."""
    recorded = read_results(source).get("target", {})
    if target not in ("local", "docker") or getattr(args, "bookie_kind", None) == "reference":
        return
    if getattr(args, "ledger_storage", None) is None and recorded.get("ledger_storage"):
        args.ledger_storage = str(recorded["ledger_storage"])
    if getattr(args, "settings_profile", DEFAULT_PROFILE) == DEFAULT_PROFILE and recorded.get(
        "settings_profile"
    ):
        args.settings_profile = str(recorded["settings_profile"])


def _is_java_client_run(path: Path) -> bool:
    """Whether ``path`` is a ``run --client java`` directory (replayed by its own command)."""
    try:
        return bool(read_results(path).get("target", {}).get("client") == "java")
    except (OSError, ValueError, KeyError):
        return False


def _from_run_dir(path: Path) -> tuple[ModelConfig, list[int], int, str, bool, bool]:
    results = read_results(path)
    if results["state"] != FINISHED:
        raise ValueError(f"{path} holds no finding to replay: {results['error']}")
    finding = results.get("finding")
    if not finding:
        raise ValueError(f"{path} holds no finding to replay (verdict {results['verdict']})")
    cfg = ModelConfig(**results["config"])
    return (
        cfg,
        list(finding["choices"]),
        int(results["search"]["max_steps"]),
        str(results["target"]["target"]),
        bool(results["search"].get("races", False)),
        bool(results["search"].get("gates", False)),
    )
