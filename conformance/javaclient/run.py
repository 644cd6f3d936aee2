"""One search or replay of the real Java client, written as a run directory: the same for
every role.

What ``bkconform run --client java [--role R]`` does, and each shard of the version matrix
(:mod:`conformance.distributed.java_matrix`): the model's explorer proposes the role's plans in
a process of its own while a local cluster of the release, its proxies and its Java client
start; the search runs (:func:`~conformance.javaclient.search.search`); the run directory
streams as for every run (``results.json`` running from the start, ``history.jsonl`` with each
example's judged steps, ``examples.jsonl`` with each example's plan, verdict and the role's
facts); every example that was not clean keeps its frames and record under ``frames/``; a
finding is written with its plan (``plan.json``, what ``bkconform replay`` runs again), record
(``record.json``, to judge again offline), frames (``frames.txt``) and diagram, and
``results.json`` carries the coverage the examples reached (``java_search.coverage``). Nothing
is printed here: ``say`` gets the progress lines.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from adapters.cluster.bookies import BookieSettings
from adapters.cluster.local import describe_mixed_bookies
from adapters.errors import ClusterError
from adapters.installations.source_builds import read_source_build
from adapters.installations.system import (
    BookieChoice,
    SystemUnderTest,
    describe_java_client,
    describe_zookeeper,
    zookeeper_version,
)
from adapters.installations.zookeeper import ZooKeeperInstall, locate_zookeeper
from adapters.javaclient import distribution_version
from conformance.engine import Outcome
from conformance.errors import ConformanceError
from conformance.javaclient.delivery_order import with_delivery_order
from conformance.javaclient.role import Example, Role
from conformance.javaclient.search import SearchResult, run_plan, search
from conformance.javaclient.session import (
    INFRASTRUCTURE_ERRORS,
    ClientSession,
    SessionOptions,
)
from conformance.rundir import FINDING, RunWriter
from conformance.verdict import Verdict

CLIENT = "java"
PLAN_FILE = "plan.json"
#: The shrunk finding's run as observed (:mod:`conformance.javaclient.recording`).
RECORD_FILE = "record.json"
FRAMES_FILE = "frames.txt"
EXAMPLES_FILE = "examples.jsonl"
#: How much longer than its own budget the model's explorer may take before it is a bug.
GUIDANCE_GRACE_S = 90.0


class GuidanceError(ConformanceError, RuntimeError):
    """The model's explorer failed or did not answer in time (a bug: never retried)."""


#: What makes a run undecided instead of raising (the guidance's failure included: the run
#: says why and decides nothing).
RUN_ERRORS: tuple[type[Exception], ...] = (GuidanceError, *INFRASTRUCTURE_ERRORS)


def java_client_system(
    home: Path,
    version: str,
    zookeeper_install: ZooKeeperInstall | None = None,
    *,
    client_home: Path | None = None,
    bookie_homes: Sequence[Path] = (),
    bookie_settings: BookieSettings | None = None,
) -> SystemUnderTest:
    """Bookies of ``home`` (or each of ``bookie_homes``), the Java client of ``client_home``
    (None: ``home``'s, of ``version``), and the local ZooKeeper (``zookeeper_install``, else the
    default one). A client of another release than the bookies says where it comes from.
    ``bookie_settings``: the bookies' storage and settings profile (None: the suite's)."""
    try:
        install = zookeeper_install or locate_zookeeper()
        zookeeper = describe_zookeeper(install.classpath, install.source)
    except Exception as exc:
        zookeeper = f"unknown ({exc})"
    if bookie_homes and len(set(bookie_homes)) > 1:
        names = {f"bookie{i + 1}": bookie_home for i, bookie_home in enumerate(bookie_homes)}
        bookies = describe_mixed_bookies(dict(names))
    else:
        bookies = BookieChoice.bookkeeper(bookie_homes[0] if bookie_homes else home).describe()
    client = describe_java_client(version)
    built = read_source_build(client_home if client_home is not None else home)
    if built is not None:  # a source build's client: its build, not the release it says it is
        client = f"{describe_java_client(built.name)} ({built.describe()})"
    elif client_home is not None and client_home != home:
        client = (
            f"{describe_java_client(str(distribution_version(client_home)))} ("
            + (BookieChoice.bookkeeper(client_home).describe().split(" (", 1)[-1])
        )
    settings = (bookie_settings or BookieSettings()).describe()
    return SystemUnderTest(bookies, client, zookeeper, settings)


def session_options(
    role: Role[Any, Any],
    home: Path,
    run_dir: Path,
    *,
    measures_coverage: bool = False,
    zookeeper: ZooKeeperInstall | None = None,
    client_home: Path | None = None,
    bookie_settings: BookieSettings | None = None,
) -> SessionOptions:
    return SessionOptions(
        bookie_settings=bookie_settings or BookieSettings(),
        bookkeeper_home=home,
        zookeeper=zookeeper,
        log_dir=run_dir,
        layout=role.layout(),
        measures_coverage=measures_coverage,
        client_home=client_home,
    )


def write_example(
    run_dir: Path, role: Role[Any, Any], example: Example[Any, Any], stem: str
) -> None:
    """``<stem>.txt`` (the frames and the client's story) and ``<stem>.json`` (the record)."""
    (run_dir / f"{stem}.txt").write_text(role.frame_lines(example.record))
    record = role.record_to_json(example.record)
    (run_dir / f"{stem}.json").write_text(json.dumps(record) + "\n")


@dataclass(frozen=True)
class SearchRunOptions:
    home: Path
    run_dir: Path
    role: Role[Any, Any]
    #: The cluster's ZooKeeper (None: ZOOKEEPER_HOME, else the default release).
    zookeeper: ZooKeeperInstall | None = None
    seed: int = 0
    #: The time budget (None: ``max_examples`` only).
    seconds: float | None = 300.0
    max_examples: int = 10_000
    model_guidance: bool = True
    #: Measure the client's code coverage (JaCoCo), and steer the search towards new code.
    client_coverage: bool = True
    #: Progress lines (the command prints them; a shard keeps them quiet).
    say: Callable[[str], None] = field(default=lambda line: None, compare=False)
    #: The Java client's own distribution (None: the bookies', ``home``).
    client_home: Path | None = None
    #: The bookies' ledger storage and settings profile (the default: the suite's).
    bookie_settings: BookieSettings = field(default_factory=BookieSettings)
    #: Searches side by side (:mod:`.side_by_side`): asked before each example, True stops
    #: the search; called when an example found something, before it is shrunk.
    halt: Callable[[], bool] | None = field(default=None, compare=False)
    on_finding: Callable[[], None] | None = field(default=None, compare=False)

    def settings(self) -> dict[str, Any]:
        return {
            "client": CLIENT,
            **self.role.settings(),
            "seed": self.seed,
            "seconds": self.seconds,
            "max_examples": self.max_examples,
            "model_guidance": self.model_guidance,
            "client_coverage": self.client_coverage,
        }


@dataclass
class SearchRunResult:
    run_dir: Path
    version: str
    system: SystemUnderTest
    outcome: Outcome
    stats: dict[str, Any]
    #: The shrunk finding's plan, and the plan as found (None: no finding).
    finding_plan: Any = None
    found_plan: Any = None
    #: The Java client's release ("": the bookies', ``version``).
    client_version: str = ""

    @property
    def verdict(self) -> Verdict:
        return self.outcome.verdict

    def summary(self) -> dict[str, Any]:
        """What a matrix row keeps of the run."""
        outcome, stats = self.outcome, self.stats
        system = self.system
        return {
            "verdict": outcome.verdict,
            "run_dir": str(self.run_dir),
            "bookkeeper": self.version,
            "client_bookkeeper": self.client_version or self.version,
            "system": "; ".join(
                part
                for part in (
                    system.bookies,
                    system.client,
                    system.zookeeper,
                    system.bookie_settings,
                )
                if part
            ),
            "violations": list(outcome.violations),
            "divergences": len(outcome.divergences),
            "error": outcome.error,
            "examples": stats.get("examples", 0),
            "guided_examples": stats.get("guided_examples", 0),
            "first_finding_example": stats.get("first_finding_example"),
            "seconds_to_first_finding_from_start": stats.get("seconds_to_first_finding_from_start"),
            "finding_plan": None if self.finding_plan is None else self.finding_plan.to_json(),
            "coverage": stats.get("coverage"),
            "client_coverage": stats.get("client_coverage"),
        }


def _located(zookeeper: ZooKeeperInstall | None) -> ZooKeeperInstall | None:
    """The ZooKeeper a run uses, located once (None: the default cannot be had; the run
    itself will say why when it starts ZooKeeper)."""
    if zookeeper is not None:
        return zookeeper
    try:
        return locate_zookeeper()
    except ClusterError:
        return None


def _target(
    role: Role[Any, Any],
    version: str,
    zookeeper: ZooKeeperInstall | None,
    client_version: str | None = None,
    bookie_settings: BookieSettings | None = None,
) -> dict[str, str]:
    """What the run's ``results.json`` says it ran against (a replay runs the same):
    ``bookkeeper`` the bookies' release, ``client_bookkeeper`` the Java client's;
    ``zookeeper`` as :func:`_located` gave it; ``ledger_storage`` and ``settings_profile``
    the bookies' (``sorted``, ``suite`` by default)."""
    target = {
        "target": "local",
        "bookkeeper": version,
        "client": CLIENT,
        "client_bookkeeper": client_version or version,
        "role": role.name,
    }
    settings = bookie_settings or BookieSettings()
    target["ledger_storage"] = settings.ledger_storage.short_name
    target["settings_profile"] = settings.profile.name
    found = zookeeper_version(zookeeper.classpath) if zookeeper is not None else None
    if found is not None:
        target["zookeeper"] = found
    return target


def search_run(options: SearchRunOptions) -> SearchRunResult:
    """One search on a fresh cluster of ``options.home``, written to ``options.run_dir``. A
    cluster, proxy, JVM or ZooKeeper failure is an undecided result, never an exception."""
    home, run_dir, say, role = options.home, options.run_dir, options.say, options.role
    version = str(distribution_version(home))
    client_home = options.client_home
    client_version = str(distribution_version(client_home)) if client_home else version
    zookeeper = _located(options.zookeeper)
    bookie_settings = options.bookie_settings
    system = java_client_system(
        home, version, zookeeper, client_home=client_home, bookie_settings=bookie_settings
    )
    writer = RunWriter(
        run_dir,
        name="run-java",
        cfg=role.config(),
        target=_target(role, version, zookeeper, client_version, bookie_settings),
        system=system,
        extra={"search": options.settings(), "role_settings": role.settings()},
    )
    started = time.monotonic()
    with writer, contextlib.ExitStack() as stack:
        writer.start()
        planned = (
            stack.enter_context(_Guidance(role, options.seed)) if options.model_guidance else None
        )
        with (run_dir / EXAMPLES_FILE).open("w", encoding="utf-8") as examples_log:
            sink = _ExampleSink(writer, role, examples_log, started, say)
            guided: list[Any] = []
            try:
                measured = session_options(
                    role,
                    home,
                    run_dir,
                    measures_coverage=options.client_coverage,
                    zookeeper=zookeeper,
                    client_home=client_home,
                    bookie_settings=bookie_settings,
                )
                with ClientSession(measured) as session:
                    if planned is not None:
                        guided = planned.result()
                        say(f"Model explorer: {len(guided)} {role.name} plans")
                    result = search(
                        session,
                        role,
                        max_examples=options.max_examples,
                        seconds=options.seconds,
                        seed=options.seed,
                        guided=guided,
                        on_example=sink,
                        # A Java-client example may take minutes: the search says what it
                        # is doing at least every 10 s all the same.
                        progress=lambda report: say(f"Search {report.describe()}"),
                        halt=options.halt,
                        on_finding=options.on_finding,
                    )
                    described = session.describe()
                    client_coverage = _client_coverage(session, run_dir, result.examples)
            except RUN_ERRORS as exc:
                error = f"{type(exc).__name__}: {exc}"
                outcome = Outcome(Verdict.UNDECIDED, [], [], error=error)
                writer.finish(outcome, story=None)
                return SearchRunResult(
                    run_dir,
                    version,
                    system,
                    outcome,
                    {"error": error},
                    client_version=client_version,
                )
        finished = _finish(
            writer, role, result, described, len(guided), started, version, system, client_coverage
        )
        finished.client_version = client_version
        return finished


def _client_coverage(session: ClientSession, run_dir: Path, examples: int) -> dict[str, Any] | None:
    """The client's coverage over the run's examples (``jacoco.exec`` beside it), or None."""
    tracker = session.coverage
    if tracker is None or not examples:
        return None
    (run_dir / "jacoco.exec").write_bytes(tracker.exec_bytes)
    return tracker.total.as_dict()


class _Guidance:
    """``python -m conformance.javaclient.roles`` in a process of its own; killed on exit if
    it is still running."""

    def __init__(self, role: Role[Any, Any], seed: int) -> None:
        self.role = role
        self.seed = seed
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> _Guidance:
        settings = self.role.settings()
        command = [
            sys.executable,
            "-m",
            "conformance.javaclient.roles",
            "--role",
            self.role.name,
            "--seed",
            str(self.seed),
            "--budget",
            str(self.role.guidance_budget_s),
        ]
        if "shape" in settings:
            command += ["--shape", str(settings["shape"])]
        command += ["--settings", json.dumps(settings)]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        return self

    def result(self) -> list[Any]:
        assert self.process is not None
        timeout = self.role.guidance_budget_s + GUIDANCE_GRACE_S
        try:
            out, err = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise GuidanceError(
                f"the model's explorer gave no plans within {timeout:.0f} s"
            ) from exc
        if self.process.returncode != 0:
            raise GuidanceError(
                f"the model's explorer exited {self.process.returncode}: {err.strip()[-2000:]}"
            )
        return [self.role.plan_from_json(item) for item in json.loads(out)]

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


class _ExampleSink:
    """Each example as it ends: its steps to history.jsonl, its line to examples.jsonl, and
    (when it was not clean) its frames and record to frames/."""

    def __init__(
        self,
        writer: RunWriter,
        role: Role[Any, Any],
        log: IO[str],
        started: float,
        say: Callable[[str], None],
    ) -> None:
        self.writer, self.role, self.log, self.started, self.say = writer, role, log, started, say

    def __call__(self, number: int, run: Example[Any, Any]) -> None:
        writer = self.writer
        judgement = run.judgement
        if judgement is not None:
            for step in judgement.outcome.steps:
                writer.step(number, None, step)
        writer.example_done(number)
        facts = self.role.example_facts(run)
        entry = {
            "example": number,
            "verdict": run.verdict,
            "seconds": round(run.seconds, 3),
            "at": round(time.monotonic() - self.started, 3),
            "plan": run.plan.to_json(),
            "unapplied": run.unapplied,
            **({"untriggered": list(run.untriggered)} if run.untriggered else {}),
            **facts,
            "violations": judgement.outcome.violations if judgement else [],
            "divergences": judgement.outcome.divergences if judgement else [],
        }
        self.log.write(json.dumps(entry) + "\n")
        self.log.flush()
        if run.verdict is not Verdict.CLEAN:
            # What the proxies saw, for every example that was not clean (the shrunk finding's
            # own is frames.txt).
            frames_dir = writer.path / "frames"
            frames_dir.mkdir(exist_ok=True)
            write_example(frames_dir, self.role, run, f"example-{number}")
        changes = "" if judgement is None else f"; {judgement.ensemble_changes} ensemble changes"
        never = f"; never triggered: {', '.join(run.untriggered)}" if run.untriggered else ""
        self.say(
            f"  example {number}: {run.verdict} ({run.plan.origin}{changes}{never}; "
            f"{run.seconds:.1f} s)"
        )


def _finish(
    writer: RunWriter,
    role: Role[Any, Any],
    result: SearchResult[Any, Any],
    described: dict[str, str],
    guided_plans: int,
    started: float,
    version: str,
    system: SystemUnderTest,
    client_coverage: dict[str, Any] | None,
) -> SearchRunResult:
    run_dir = writer.path
    # From the start to the search's: cluster, proxies, JVM (and the model's explorer).
    startup = max(0.0, time.monotonic() - started - result.seconds)
    stats: dict[str, Any] = {
        "startup_seconds": round(startup, 3),
        "examples": result.examples,
        "guided_examples": result.guided_examples,
        "untriggered_examples": result.untriggered_examples,
        "guided_plans": guided_plans,
        "verdicts": {str(verdict): count for verdict, count in sorted(result.verdicts.items())},
        "stopped": result.stopped,
        "search_seconds": round(result.seconds, 3),
        "errors": result.errors,
        "coverage": result.coverage.as_dict(),
        "client_coverage": client_coverage,
    }
    finding = result.finding
    if finding is None:
        error = None
        if result.verdict is Verdict.UNDECIDED:
            error = "; ".join(result.errors) or "no example was judged clean within the budget"
        outcome = Outcome(result.verdict, [], [], error=error)
        writer.finish(outcome, target=described, extra={"java_search": stats}, story=None)
        return SearchRunResult(run_dir, version, system, outcome, stats)
    shrunk = finding.shrunk
    judgement = shrunk.judgement
    assert judgement is not None
    # The finding's plan with the order its answers reached the client in, which a replay
    # enforces: the timing that decided the finding is then not left to chance.
    plan = with_delivery_order(shrunk.plan, shrunk.record)
    stats.update(
        {
            "first_finding_example": finding.example,
            "seconds_to_first_finding": round(finding.seconds_to_find, 3),
            "seconds_to_first_finding_from_start": round(startup + finding.seconds_to_find, 3),
            "found_plan": finding.found.plan.to_json(),
            "shrink_runs": finding.shrink_runs,
        }
    )
    (run_dir / PLAN_FILE).write_text(json.dumps(plan.to_json(), indent=2) + "\n")
    (run_dir / FRAMES_FILE).write_text(role.frame_lines(shrunk.record))
    (run_dir / RECORD_FILE).write_text(json.dumps(role.record_to_json(shrunk.record)) + "\n")
    writer.finish(
        judgement.outcome,
        cfg=judgement.cfg,
        target=described,
        extra={
            "java_search": stats,
            "finding_plan": plan.to_json(),
            # The shrunk finding's faults as carried out (when, what), as a scenario records
            # them.
            "faults": [[at, what] for at, what in shrunk.faults],
            **role.finding_facts(judgement),
        },
        story=FINDING,
    )
    return SearchRunResult(
        run_dir,
        version,
        system,
        judgement.outcome,
        stats,
        finding_plan=plan,
        found_plan=finding.found.plan,
    )


def replay_run(
    role: Role[Any, Any],
    plan: Any,
    home: Path,
    run_dir: Path,
    source: Path,
    zookeeper: ZooKeeperInstall | None = None,
    client_home: Path | None = None,
    bookie_settings: BookieSettings | None = None,
) -> Outcome:
    """``plan`` once on a fresh cluster of ``home`` (and ``zookeeper``; the client of
    ``client_home``, None: ``home``'s), written to ``run_dir`` as a replay of ``source``; a
    cluster, proxy, JVM or ZooKeeper failure, or a schedule not applied, is an undecided
    outcome (with its error), never an exception."""
    outcome, _example = run_once(
        role,
        plan,
        home,
        run_dir,
        name="replay-java",
        extra={"replayed_from": str(source)},
        zookeeper=zookeeper,
        client_home=client_home,
        bookie_settings=bookie_settings,
    )
    return outcome


def run_once(
    role: Role[Any, Any],
    plan: Any,
    home: Path,
    run_dir: Path,
    *,
    name: str,
    extra: dict[str, Any] | None = None,
    zookeeper: ZooKeeperInstall | None = None,
    client_home: Path | None = None,
    after: Callable[[ClientSession, Example[Any, Any]], dict[str, Any]] | None = None,
    bookie_settings: BookieSettings | None = None,
) -> tuple[Outcome, Example[Any, Any] | None]:
    """``plan`` once on a fresh cluster of ``home`` (and ``zookeeper``: None, the default; the
    Java client of ``client_home``, None: ``home``'s), written to ``run_dir`` (``name``: the
    run directory's); its outcome, and the example (None when it could not run). ``after``,
    called with the session and the example once the plan ran (the cluster still up), returns
    more for ``results.json``; it may add findings of its own (``"violations"``: a list of
    texts, each a broken invariant on the real cluster) to the run's outcome, or make it
    undecided (``"undecided"``: why)."""
    version = str(distribution_version(home))
    client_version = str(distribution_version(client_home)) if client_home else version
    zookeeper = _located(zookeeper)
    writer = RunWriter(
        run_dir,
        name=name,
        cfg=role.config(),
        target=_target(role, version, zookeeper, client_version, bookie_settings),
        system=java_client_system(
            home, version, zookeeper, client_home=client_home, bookie_settings=bookie_settings
        ),
        extra={
            **(extra or {}),
            "finding_plan": plan.to_json(),
            "role_settings": role.settings(),
        },
    )
    with writer:
        writer.start()
        afterwards: dict[str, Any] = {}
        try:
            options = session_options(
                role,
                home,
                run_dir,
                zookeeper=zookeeper,
                client_home=client_home,
                bookie_settings=bookie_settings,
            )
            with ClientSession(options) as session:
                run = run_plan(session, role, plan)
                described = session.describe()
                if after is not None and run.judgement is not None:
                    afterwards = after(session, run)
        except RUN_ERRORS as exc:
            outcome = Outcome(Verdict.UNDECIDED, [], [], error=f"{type(exc).__name__}: {exc}")
            writer.finish(outcome, story=None)
            return outcome, None
        (run_dir / FRAMES_FILE).write_text(role.frame_lines(run.record))
        (run_dir / RECORD_FILE).write_text(json.dumps(role.record_to_json(run.record)) + "\n")
        if run.judgement is None:
            outcome = Outcome(
                Verdict.UNDECIDED, [], [], error=run.unapplied or "the run was not judged"
            )
            writer.finish(outcome, story=None)
            return outcome, run
        outcome = with_violations(
            run.judgement.outcome,
            afterwards.pop("violations", []),
            undecided=afterwards.pop("undecided", None),
        )
        # The plan as run, with the order its answers reached the client in: replaying this
        # run (a scenario's, or a replay's) enforces it.
        ordered = with_delivery_order(plan, run.record)
        (run_dir / PLAN_FILE).write_text(json.dumps(ordered.to_json(), indent=2) + "\n")
        for step in outcome.steps:
            writer.step(1, None, step)
        writer.example_done(1)
        writer.finish(
            outcome,
            cfg=run.judgement.cfg,
            target=described,
            extra={
                "faults": [[at, what] for at, what in run.faults],
                **role.finding_facts(run.judgement),
                **afterwards,
                "finding_plan": ordered.to_json(),
            },
            story=1,
        )
    return outcome, run


def with_violations(
    outcome: Outcome, violations: Sequence[str], *, undecided: str | None = None
) -> Outcome:
    """``outcome`` with more broken invariants, found on the real cluster after the judged
    run, and an error that leaves it undecided (``undecided``: why), by the rule within any
    run (conformance.verdict): an error makes the run undecided, its findings still reported;
    otherwise a broken invariant makes it a violation."""
    if not violations and undecided is None:
        return outcome
    error = outcome.error or undecided
    verdict = Verdict.UNDECIDED if error is not None else Verdict.VIOLATION
    return dataclasses.replace(
        outcome, verdict=verdict, violations=[*outcome.violations, *violations], error=error
    )


__all__ = [
    "CLIENT",
    "EXAMPLES_FILE",
    "FRAMES_FILE",
    "PLAN_FILE",
    "RECORD_FILE",
    "RUN_ERRORS",
    "GuidanceError",
    "SearchRunOptions",
    "SearchRunResult",
    "java_client_system",
    "replay_run",
    "run_once",
    "search_run",
    "session_options",
    "with_violations",
    "write_example",
]
